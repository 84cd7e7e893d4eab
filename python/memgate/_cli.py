"""The ``memgate`` console script: the command line, run by the Rust core
in this process, with the binary's output and exit codes."""

import signal
import sys

from . import _native


def main() -> None:
    # Ctrl-C stops memgate as it stops the binary: the Rust code does not
    # return to Python's signal handler while it works.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(_native.main(["memgate", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
