"""``python -m crashlab`` = the ``crashlab`` command (``docs/crashlab.md``)."""

from crashlab._lab.cli import console_main

if __name__ == "__main__":
    console_main()
