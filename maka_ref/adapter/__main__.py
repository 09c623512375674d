"""``python -m maka_ref.adapter``: the reference implementation behind the wire protocol."""

from maka_ref.adapter._server import main

if __name__ == "__main__":
    main()
