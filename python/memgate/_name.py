"""The name clash with PyPI's ``memgate``: an unrelated project that
installs the same top-level module ``memgate`` and the same ``memgate``
command as ``memgate-ci``. With both installed, whichever was installed last
overwrote the other's files and one of them (or both) is broken. memgate-ci
cannot prevent that, so it says so: a warning at import, and a note on
stderr after ``memgate --version``. Fix: ``pip uninstall memgate memgate-ci``
then ``pip install memgate-ci`` (or keep the two in separate environments).
"""

from importlib import metadata
from typing import Optional

MESSAGE = (
    "the unrelated PyPI project 'memgate' {version} is installed in this environment beside "
    "memgate-ci; both install the module 'memgate' and the command 'memgate', so one of them "
    "is broken. Keep them in separate environments, or run: pip uninstall memgate memgate-ci "
    "&& pip install memgate-ci"
)


def other_memgate() -> Optional[str]:
    """The version of PyPI's unrelated ``memgate`` when it is installed."""
    try:
        return metadata.version("memgate")
    except metadata.PackageNotFoundError:
        return None


def clash() -> Optional[str]:
    """What to tell the user about the clash, or ``None`` when there is none."""
    version = other_memgate()
    return None if version is None else MESSAGE.format(version=version)
