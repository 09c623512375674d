"""``python -m crashlab`` = the ``crashlab`` command (``docs/crashlab.md``)."""

import sys

from crashlab._lab.cli import main

if __name__ == "__main__":
    sys.exit(main())
