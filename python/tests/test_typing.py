"""`mypy --strict` on the package (with the native module's stub) and on
a user's script; a mistyped call must be an error, so the check can fail."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
PACKAGE = HERE.parent / "memgate"


def mypy(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("SKIPPED LOUDLY: mypy is not installed here; the typing check did not run")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *args],
        capture_output=True, text=True, cwd=cwd,
    )


def test_the_package_and_its_stub_pass_mypy_strict():
    done = mypy(str(PACKAGE), cwd=PACKAGE.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (PACKAGE / "py.typed").is_file() and (PACKAGE / "_native.pyi").is_file()


def test_a_users_script_passes_mypy_strict():
    done = mypy(str(HERE / "typed_user_script.py"), cwd=PACKAGE.parent)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_mistyped_call_is_a_mypy_error(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('import memgate\nmemgate.profile("x.pickle", group_by="categroy")\n')
    done = mypy(str(bad), cwd=PACKAGE.parent)
    assert done.returncode == 1 and "group_by" in done.stdout, done.stdout


def test_an_axis_that_is_not_one_of_the_three_is_a_mypy_error(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('import memgate\nmemgate.diff("a.pickle", "b.pickle", html="d.html", x="clock")\n')
    done = mypy(str(bad), cwd=PACKAGE.parent)
    assert done.returncode == 1 and '"x"' in done.stdout, done.stdout
