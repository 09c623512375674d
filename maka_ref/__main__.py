"""``python -m maka_ref`` runs the ``maka-ref`` command line."""

from maka_ref._cli.main import main

if __name__ == "__main__":
    main()
