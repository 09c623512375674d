"""The ``maka-ref`` command line: argument parsing, exit codes and printing over the pure core.

The only I/O in the core package lives here (reading ledger files, writing stdout/stderr).
"""
