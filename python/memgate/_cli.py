"""The ``memgate`` console script: the command line, run by the Rust core
in this process, with the binary's output and exit codes."""

import signal
import sys

from . import _name, _native


def main() -> None:
    # Ctrl-C stops memgate as it stops the binary: the Rust code does not
    # return to Python's signal handler while it works.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    code = _native.main(["memgate", *sys.argv[1:]])
    if sys.argv[1:] in (["--version"], ["-V"]):
        # stdout stays `memgate X.Y.Z`; the name clash goes to stderr.
        clash = _name.clash()
        if clash:
            print(f"warning: {clash}", file=sys.stderr)
    sys.exit(code)


if __name__ == "__main__":
    main()
