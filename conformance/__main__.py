"""``python -m conformance`` is ``maka-conformance``."""

from conformance._cli.main import main

main()
