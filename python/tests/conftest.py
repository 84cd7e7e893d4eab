import os
import shutil
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

sys.path.insert(0, str(Path(__file__).parent))

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def examples() -> Path:
    return EXAMPLES


def installed_memgate() -> str:
    """The wheel's `memgate` script, beside this interpreter."""
    found = shutil.which("memgate", path=os.path.dirname(sys.executable))
    if not found:
        pytest.fail(f"no memgate script beside {sys.executable}: is the wheel installed?")
    return found


@pytest.fixture
def memgate_script() -> str:
    return installed_memgate()


@pytest.fixture
def memgate_bin() -> str:
    """The command whose JSON the API must reproduce: $MEMGATE_BIN (the
    cargo-built binary in .ci/run), else the wheel's script."""
    return os.environ.get("MEMGATE_BIN") or installed_memgate()


@pytest.fixture
def no_rank_env(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
