"""The plugin's session-wide default budget, its figures in pytest's own
JUnit, and baselines under pytest-xdist (issue 35 item 5), against a fake
torch that dumps the bundled example snapshots."""

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fakes import fake_torch

UNMARKED_AND_MARKED = """
import pytest

def test_unmarked():
    pass

@pytest.mark.memgate(allocated_peak="256 MiB")
def test_marked():
    pass
"""

FAKES_DIR = Path(__file__).resolve().parent


def run(pytester, monkeypatch, torch, *options):
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch_npu", None)
    pytester.makepyfile(test_gated=UNMARKED_AND_MARKED)
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rs", *options)


def golden_allocated_peak(examples: Path) -> int:
    """The example's allocated peak as `memgate summarize` committed it."""
    summary = json.loads((examples / "golden" / "rank0.json").read_text())
    return summary["devices"][0]["figures"]["allocated-peak"]


def test_a_default_budget_fails_an_unmarked_test_over_it_and_a_marker_overrides_it(
    pytester, monkeypatch, examples, no_rank_env
):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    result = run(pytester, monkeypatch, torch, "--memgate-default-budget", "allocated_peak=100 MiB, oom_events=0")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "test_unmarked" in out and "allocated-peak: 200.10 MiB of 100 MiB (200%, over by 100.10 MiB)" in out
    # The marker's allocated_peak replaced the default's; its oom_events stayed.
    marked = [line for line in out.splitlines() if line.startswith("test_gated.py::test_marked")]
    assert marked == ["test_gated.py::test_marked: pass"], out
    assert "oom-events" in out.split("test_gated.py::test_marked: pass")[1]


def test_the_ini_key_sets_the_default_budget_and_the_option_wins_over_it(pytester, monkeypatch, examples, no_rank_env):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    pytester.makeini("[pytest]\nmemgate_default_budget = allocated_peak=100 MiB\n")
    run(pytester, monkeypatch, torch).assert_outcomes(passed=1, failed=1)
    run(pytester, monkeypatch, torch, "--memgate-default-budget", "allocated_peak=1 GiB").assert_outcomes(passed=2)


@pytest.mark.parametrize(
    "budget, said",
    [
        ("allocated_peak", "'allocated_peak' is not keyword=value"),
        ("allocated_peak=1 GiB, allocated_peak=2 GiB", "'allocated_peak' is given twice"),
        (" , ", "names no keyword"),
        ("allocated_peek=1 GiB", "allocated_peek"),
    ],
)
def test_a_wrong_default_budget_stops_the_session_saying_what_is_wrong(
    pytester, monkeypatch, examples, no_rank_env, budget, said
):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    result = run(pytester, monkeypatch, torch, "--memgate-default-budget", budget)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert said in result.stderr.str() + result.stdout.str()
    assert torch.cuda.memory.calls == []


def test_each_tests_figures_are_properties_of_its_testcase_in_pytests_junit(
    pytester, monkeypatch, examples, no_rank_env, tmp_path
):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    junit = tmp_path / "junit.xml"
    result = run(pytester, monkeypatch, torch, "--memgate-default-budget", "allocated_peak=1 GiB", f"--junitxml={junit}")
    result.assert_outcomes(passed=2)
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert set(cases) == {"test_unmarked", "test_marked"}
    for case in cases.values():
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert props["memgate.verdict"] == "pass"
        assert props["memgate.dev0.allocated-peak"] == str(golden_allocated_peak(examples))
        assert props["memgate.dev0.allocated-peak.status"] == "pass"


def test_without_a_device_an_unmarked_test_runs_unjudged_and_the_session_says_so(
    pytester, monkeypatch, examples, no_rank_env
):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"), cuda=False)
    result = run(pytester, monkeypatch, torch, "--memgate-default-budget", "allocated_peak=1 MiB")
    result.assert_outcomes(passed=1, skipped=1)
    assert "1 test(s) not judged by the default budget: no CUDA or Ascend NPU device" in result.stdout.str()
    assert torch.cuda.memory.calls == []


# Unmarked: the session's default budget reaches every xdist worker.
XDIST_TESTS = """
import pytest

@pytest.mark.parametrize("n", range(2))
def test_plain(n):
    pass

@pytest.mark.parametrize("n", range(2))
def test_regressed(n):
    pass
"""

XDIST = ("-p", "no:cacheprovider", "-n", "2", "--memgate-default-budget", "tolerance=2%")

# A fake torch each xdist worker imports from the test folder: test_plain
# dumps the example's rank0 snapshot, test_regressed its regressed one
# (12 MiB more), so a baseline shared between them fails one of them.
FAKE_TORCH_MODULE = """
import os, shutil, sys
sys.path.insert(0, {fakes!r})
from fakes import fake_torch

_fake = fake_torch({plain!r})

def _dump_snapshot(filename="dump_snapshot.pickle"):
    regressed = "test_regressed" in os.environ.get("PYTEST_CURRENT_TEST", "")
    shutil.copyfile({regressed!r} if regressed else {plain!r}, filename)

_fake.cuda.memory._dump_snapshot = _dump_snapshot
sys.modules[__name__] = _fake
"""


def test_under_xdist_each_test_saves_and_compares_its_own_baseline(pytester, examples, no_rank_env):
    # pytest-xdist is a test requirement (pyproject's `test` extra,
    # .ci/run): without it this fails rather than skips.
    import xdist  # noqa: F401
    pytester.makepyfile(
        torch=FAKE_TORCH_MODULE.format(
            fakes=str(FAKES_DIR),
            plain=str(examples / "snapshots" / "rank0.pickle"),
            regressed=str(examples / "snapshots-regressed" / "rank0.pickle"),
        ),
        test_parallel=XDIST_TESTS,
    )
    baselines = pytester.path / "baselines"
    first = pytester.runpytest_subprocess(*XDIST, f"--memgate-save-baselines={baselines}")
    first.assert_outcomes(passed=4)
    saved = sorted(baselines.glob("*.json"))
    assert len(saved) == 4, saved
    peaks = {}
    for f in saved:
        figures = json.loads(f.read_text())["devices"][0]["figures"]
        peaks[f.name] = figures["allocated-peak"]
    plain = golden_allocated_peak(examples)
    assert sorted(peaks.values()) == [plain] * 2 + [plain + (12 << 20)] * 2, peaks
    assert all((v == plain) == name.startswith("test_parallel.py__test_plain") for name, v in peaks.items())
    second = pytester.runpytest_subprocess(*XDIST, f"--memgate-baselines={baselines}")
    second.assert_outcomes(passed=4)
    assert "no baseline" not in second.stdout.str()
    # One baseline in the wrong place is caught: the regressed run against
    # the plain baseline grows 6%, past the 2% tolerance.
    swapped = baselines / next(n for n in peaks if n.startswith("test_parallel.py__test_regressed"))
    swapped.write_bytes((baselines / next(n for n in peaks if n.startswith("test_parallel.py__test_plain"))).read_bytes())
    third = pytester.runpytest_subprocess(*XDIST, f"--memgate-baselines={baselines}")
    third.assert_outcomes(passed=3, failed=1)
