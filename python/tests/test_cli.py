"""The installed `memgate` command behaves like the binary."""

import re
import subprocess
import sys

import memgate
from conftest import installed_memgate


def run(*args):
    return subprocess.run([installed_memgate(), *args], capture_output=True, text=True)


def test_the_version_is_the_crates(root):
    cargo = (root / "Cargo.toml").read_text()
    version = re.search(r'^version = "([^"]+)"', cargo, re.M).group(1)
    done = run("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"memgate {version}"
    assert memgate.__version__ == version


def test_the_bundled_example_passes_and_its_regressed_twin_fails(examples):
    ok = run("check", "--config", str(examples / "memgate.toml"))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = run("check", "--config", str(examples / "memgate-regressed.toml"))
    assert bad.returncode == 1
    assert "FAIL toy-gpt-2rank rank0 dev0 allocated-, dynamic-, overall-" in bad.stdout


def test_a_missing_snapshot_exits_2_with_the_binarys_error_line(tmp_path):
    done = run("peak", str(tmp_path / "missing.pickle"))
    assert done.returncode == 2
    assert done.stderr.startswith("error: ")
    assert "missing.pickle" in done.stderr


def test_a_bad_command_line_exits_2_and_help_exits_0():
    assert run("no-such-command").returncode == 2
    helped = run("check", "--help")
    assert helped.returncode == 0
    assert "Exit codes:" in helped.stdout


def test_the_module_entry_point_is_the_same_command(examples):
    done = subprocess.run(
        [sys.executable, "-m", "memgate._cli", "check", "--config", str(examples / "memgate-regressed.toml")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1


def test_pypis_unrelated_memgate_is_named_after_the_version_and_at_import(tmp_path):
    # A stand-in for PyPI's `memgate` distribution: its metadata on the path.
    info = tmp_path / "memgate-9.9.9.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: memgate\nVersion: 9.9.9\n")
    import os

    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    done = subprocess.run([installed_memgate(), "--version"], capture_output=True, text=True, env=env)
    assert done.returncode == 0
    assert done.stdout.startswith("memgate ") and "9.9.9" not in done.stdout
    assert "unrelated PyPI project 'memgate' 9.9.9" in done.stderr
    imported = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", "import memgate"], capture_output=True, text=True, env=env
    )
    assert imported.returncode != 0 and "unrelated PyPI project 'memgate'" in imported.stderr
    clean = subprocess.run([installed_memgate(), "--version"], capture_output=True, text=True)
    assert clean.stderr == ""
