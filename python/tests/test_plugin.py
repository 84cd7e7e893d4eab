"""The pytest plugin (@pytest.mark.memgate) against a fake torch."""

import sys
import tempfile

import pytest

from fakes import fake_torch

TEST_FILE = """
import pytest

@pytest.mark.memgate({kwargs})
def test_train_step():
    pass
"""


@pytest.fixture
def scratch(monkeypatch, tmp_path):
    """tempfile's directory, to see what the plugin leaves there."""
    where = tmp_path / "tmp"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def run(pytester, monkeypatch, torch, kwargs, *options):
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch_npu", None)
    pytester.makepyfile(test_gated=TEST_FILE.format(kwargs=kwargs))
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rs", *options)


@pytest.mark.parametrize("asked", [False, True])
def test_github_files_are_written_only_with_memgate_github(
    pytester, monkeypatch, examples, scratch, no_rank_env, tmp_path, asked
):
    summary, output = tmp_path / "step-summary.md", tmp_path / "github-output"
    summary.write_text("")
    output.write_text("")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    options = ["--memgate-github"] if asked else []
    run(pytester, monkeypatch, torch, 'allocated_peak="256 MiB"', *options).assert_outcomes(passed=1)
    if asked:
        assert summary.read_text().startswith("## memgate")
        assert "verdict=pass" in output.read_text().splitlines()
    else:
        assert summary.read_text() == "" and output.read_text() == ""


def test_a_test_within_its_budget_passes(pytester, monkeypatch, examples, scratch, no_rank_env):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    result = run(pytester, monkeypatch, torch, 'allocated_peak="256 MiB", oom_events=0')
    result.assert_outcomes(passed=1)
    assert [c[0] for c in torch.cuda.memory.calls] == ["record", "dump", "record"]
    assert list(scratch.iterdir()) == []


def test_a_test_over_its_budget_fails_naming_figure_limit_and_growing_sites(
    pytester, monkeypatch, examples, scratch, no_rank_env
):
    torch = fake_torch(str(examples / "snapshots-regressed" / "rank0.pickle"))
    golden = examples / "golden"
    result = run(pytester, monkeypatch, torch, f'allocated_peak="208 MiB", baseline={str(golden)!r}, tolerance="2%"')
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "allocated-peak: 212.10 MiB is over its budget of 208 MiB by 4.10 MiB" in out
    assert "more than the 2% tolerance" in out
    assert "top growing sites, rank0 dev0:" in out
    assert "+12.00 MiB  forward (/workspace/nanogpt/model.py)" in out
    assert list(scratch.iterdir()) == []


def test_without_a_baseline_the_failure_lists_the_top_sites_at_the_peak(
    pytester, monkeypatch, examples, scratch, no_rank_env
):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    result = run(pytester, monkeypatch, torch, 'allocated_peak="100 MiB"')
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "allocated-peak: 200.10 MiB is over its budget of 100 MiB" in out
    assert "top sites at the peak, rank0 dev0:" in out
    assert "train_step (/workspace/nanogpt/train.py)" in out


def test_a_baseline_path_is_relative_to_the_test_file(pytester, monkeypatch, examples, scratch, no_rank_env):
    torch = fake_torch(str(examples / "snapshots-regressed" / "rank0.pickle"))
    golden = pytester.mkdir("golden")
    (golden / "rank0.json").write_bytes((examples / "golden" / "rank0.json").read_bytes())
    result = run(pytester, monkeypatch, torch, 'baseline="golden"')
    result.assert_outcomes(failed=1)
    assert "dynamic-peak: grew +12 MiB" in result.stdout.str()


def test_a_bad_budget_is_reported_as_could_not_judge(pytester, monkeypatch, examples, scratch, no_rank_env):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    result = run(pytester, monkeypatch, torch, 'allocated_peek="1 GiB"')
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "memgate could not judge (exit 2)" in out
    assert "allocated-peek" in out


def test_without_a_device_the_test_is_skipped_and_nothing_is_written(
    pytester, monkeypatch, examples, scratch, no_rank_env
):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"), cuda=False)
    before = sorted(p.name for p in pytester.path.iterdir())
    result = run(pytester, monkeypatch, torch, 'allocated_peak="1 MiB"')
    result.assert_outcomes(skipped=1)
    assert "memgate: no CUDA or Ascend NPU device" in result.stdout.str()
    assert torch.cuda.memory.calls == []
    assert list(scratch.iterdir()) == []
    after = sorted(p.name for p in pytester.path.iterdir() if p.name != "__pycache__")
    assert after == sorted(before + ["test_gated.py"])


def test_without_torch_the_test_is_skipped(pytester, monkeypatch, scratch):
    monkeypatch.setitem(sys.modules, "torch", None)
    pytester.makepyfile(test_gated=TEST_FILE.format(kwargs='allocated_peak="1 MiB"'))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=1)


def test_unmarked_tests_are_left_alone(pytester, monkeypatch, examples):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    monkeypatch.setitem(sys.modules, "torch", torch)
    pytester.makepyfile("def test_plain():\n    pass\n")
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert torch.cuda.memory.calls == []


def test_the_marker_is_registered(pytester):
    result = pytester.runpytest_inprocess("--markers")
    assert "@pytest.mark.memgate(**budget)" in result.stdout.str()
