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

TWO_TESTS = """
import pytest

@pytest.mark.memgate(allocated_peak="256 MiB")
def test_train_step():
    pass

@pytest.mark.memgate(allocated_peak="256 MiB")
@pytest.mark.parametrize("n", [1, 2])
def test_other(n):
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
    assert "212.10 MiB of 208 MiB (102%, over by 4.10 MiB)" in out
    assert "more than the 2% tolerance" in out
    assert "top growing sites, rank0 dev0:" in out
    assert "+12.00 MiB  forward (model.py)" in out
    assert list(scratch.iterdir()) == []


def test_without_a_baseline_the_failure_lists_the_top_sites_at_the_peak(
    pytester, monkeypatch, examples, scratch, no_rank_env
):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    result = run(pytester, monkeypatch, torch, 'allocated_peak="100 MiB"')
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "allocated-peak: 200.10 MiB of 100 MiB (200%, over by 100.10 MiB)" in out
    assert "top sites at the peak, rank0 dev0:" in out
    assert "train_step (train.py)" in out


def test_a_baseline_path_is_relative_to_the_test_file(pytester, monkeypatch, examples, scratch, no_rank_env):
    torch = fake_torch(str(examples / "snapshots-regressed" / "rank0.pickle"))
    golden = pytester.mkdir("golden")
    (golden / "rank0.json").write_bytes((examples / "golden" / "rank0.json").read_bytes())
    result = run(pytester, monkeypatch, torch, 'baseline="golden"')
    result.assert_outcomes(failed=1)
    assert "peak +12 MiB: grew +12 MiB (6.0%)" in result.stdout.str()


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


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ('allocated_peek="1 GiB"', "allocated_peek: unknown keyword (did you mean allocated_peak?)"),
        ('"300 MiB"', "takes keywords only"),
        ('phase={"## forward ##": {"allocated_peak": "300 parsecs"}}', "phase['## forward ##']['allocated_peak']: "),
        ('phase={"x": {"overall_peak": "1 GiB"}}', "phase['x']: overall_peak: unknown keyword"),
        ('allocated_peak=None', "allocated_peak=None"),
    ],
)
def test_a_marker_mistake_stops_the_session_at_collection_even_without_torch(pytester, monkeypatch, kwargs, expected):
    monkeypatch.setitem(sys.modules, "torch", None)
    pytester.makepyfile(test_gated=TEST_FILE.format(kwargs=kwargs))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "test_gated.py::test_train_step: @pytest.mark.memgate: " in err
    assert expected in err
    assert "memgate.toml" not in err and "allocated-peek" not in err


def test_phase_names_with_any_characters_are_judged_and_their_figures_take_either_spelling(
    pytester, monkeypatch, examples, scratch, no_rank_env
):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    # The figure as the TOML, JUnit and JSON write it, and as the keyword.
    kwargs = 'phase={"Optimizer.step#AdamW.step": {"allocated_peak": "100 MiB"}, "## forward ##": {"allocated-peak": "1 MiB"}}'
    result = run(pytester, monkeypatch, torch, kwargs)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    summary = out[out.index("= memgate =") :]
    assert "  fail  rank0 dev0 phase.## forward ##.allocated-peak:" in summary, out
    assert "  pass  rank0 dev0 phase.Optimizer.step#AdamW.step.allocated-peak:" in summary, out


def test_a_failing_test_prints_no_wrote_line_for_the_verdict_the_plugin_removed(
    pytester, monkeypatch, examples, scratch, no_rank_env, capfd
):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    result = run(pytester, monkeypatch, torch, 'allocated_peak="100 MiB"')
    result.assert_outcomes(failed=1)
    err = capfd.readouterr().err
    assert "wrote " not in err and "verdict.json" not in err, err
    out = result.stdout.str()
    assert not [line for line in out.splitlines() if line.startswith("wrote ")], out
    assert "verdict.json" not in out


def test_the_marker_judges_only_the_figures_it_names(pytester, monkeypatch, examples, scratch, no_rank_env):
    torch = fake_torch(str(examples / "snapshots-regressed" / "rank0.pickle"))
    golden = examples / "golden" / "rank0.json"
    # Regressed: dynamic, overall and allocated all grew; only allocated is named.
    result = run(pytester, monkeypatch, torch, f'allocated_peak="1 GiB", baseline={str(golden)!r}, tolerance="10%"')
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    summary = out[out.index("= memgate =") :].splitlines()
    judged = [line.split()[3] for line in summary if line.startswith("  ") and line[2] != " "]
    assert judged == ["allocated-peak:"], out
    # One headroom per line, each named by its ceiling: 1 GiB - 222406148
    # bytes, and 209823236 bytes + 10% - 222406148.
    assert "  headroom against the budget 1 GiB: +811.90 MiB (+79.3%)" in out
    assert "  headroom against the baseline's tolerance (200.10 MiB +10%): +8.01 MiB (+3.6%)" in out
    tolerance_too = run(pytester, monkeypatch, torch, f'allocated_peak="1 GiB", baseline={str(golden)!r}, tolerance="2%"')
    tolerance_too.assert_outcomes(failed=1)
    assert "allocated-peak: 212.10 MiB of 1 GiB (21%, 811.90 MiB left); grew" in tolerance_too.stdout.str()
    assert "dynamic-peak" not in tolerance_too.stdout.str()


def test_save_baselines_then_compare_then_a_regression_fails_naming_figure_budget_headroom_and_site(
    pytester, monkeypatch, examples, scratch, no_rank_env
):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch_npu", None)
    pytester.makepyfile(test_gated=TWO_TESTS)
    first = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--memgate-save-baselines", "golden")
    first.assert_outcomes(passed=3)
    saved = sorted(p.name for p in (pytester.path / "golden").iterdir())
    assert len(saved) == 3 and all(n.startswith("test_gated.py__test_") and n.endswith(".json") for n in saved)
    assert len({n.rsplit("-", 1)[0] for n in saved}) == 3, saved
    again = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--memgate-baselines", "golden")
    again.assert_outcomes(passed=3)
    assert "headroom against the baseline's tolerance (200.10 MiB +5%)" in again.stdout.str()
    monkeypatch.setitem(sys.modules, "torch", fake_torch(str(examples / "snapshots-regressed" / "rank0.pickle")))
    regressed = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--memgate-baselines", "golden")
    regressed.assert_outcomes(failed=3)
    out = regressed.stdout.str()
    # 256 MiB - 222406148 bytes; 209823236 bytes + 5% - 222406148.
    lines = out.splitlines()
    at = lines.index("rank0 dev0 allocated-peak: 212.10 MiB")
    assert lines[at + 1 : at + 3] == [
        "  headroom against the budget 256 MiB: +43.90 MiB (+17.1%)",
        "  headroom against the baseline's tolerance (200.10 MiB +5%): -1.99 MiB (-0.9%)",
    ]
    assert "top growing sites, rank0 dev0:" in out
    assert "forward (model.py)" in out


def test_baseline_options_have_ini_equivalents(pytester, monkeypatch, examples, scratch, no_rank_env):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    pytester.makeini("[pytest]\nmemgate_save_baselines = golden\n")
    run(pytester, monkeypatch, torch, 'allocated_peak="256 MiB"').assert_outcomes(passed=1)
    assert len(list((pytester.path / "golden").glob("test_gated.py__test_train_step-*.json"))) == 1


def test_a_missing_baseline_is_a_warning_not_silence(pytester, monkeypatch, examples, scratch, no_rank_env):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    pytester.mkdir("golden")
    result = run(pytester, monkeypatch, torch, 'allocated_peak="256 MiB"', "--memgate-baselines", "golden")
    result.assert_outcomes(passed=1, warnings=1)
    assert "MemgateWarning: memgate: no baseline golden/test_gated.py__test_train_step-" in result.stdout.str()


@pytest.mark.parametrize("keep_all", [False, True])
def test_keep_keeps_failing_snapshots_or_all(pytester, monkeypatch, examples, scratch, no_rank_env, keep_all):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch_npu", None)
    pytester.makepyfile(
        test_gated="""
import pytest

@pytest.mark.memgate(allocated_peak="1 MiB")
def test_over():
    pass

@pytest.mark.memgate(allocated_peak="1 GiB")
def test_under():
    pass
"""
    )
    options = ["--memgate-keep", "kept"] + (["--memgate-keep-all"] if keep_all else [])
    pytester.runpytest_inprocess("-p", "no:cacheprovider", *options).assert_outcomes(passed=1, failed=1)
    kept = sorted(p.name for p in (pytester.path / "kept").iterdir())
    over = [n for n in kept if n.startswith("test_gated.py__test_over-")]
    under = [n for n in kept if n.startswith("test_gated.py__test_under-")]
    assert len(over) == 1 and over[0].endswith(".pickle")
    assert len(under) == (1 if keep_all else 0)
    assert any(n.startswith(".test_gated.py__test_over-") and n.endswith(".env.json") for n in kept)


def test_a_warn_level_result_is_a_pytest_warning_and_in_the_session_summary(
    pytester, monkeypatch, examples, scratch, no_rank_env
):
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"))
    result = run(pytester, monkeypatch, torch, 'reserved_peak={"limit": "100 MiB", "level": "warn"}')
    result.assert_outcomes(passed=1, warnings=1)
    out = result.stdout.str()
    assert "MemgateWarning: memgate: rank0 dev0 reserved-peak:" in out
    summary = out[out.index("= memgate ="):]
    assert "test_gated.py::test_train_step: warn" in summary
    assert "  warn  rank0 dev0 reserved-peak:" in summary
    assert "        headroom against the budget 100 MiB: -" in summary


def test_node_names_are_file_names_and_never_shared():
    from memgate.pytest_plugin import node_name

    ids = ["t.py::test[a/b]", "t.py::test[a_b]", "t.py::test[a b]", "d/t.py::C::test[\u00e9\U0001f9ea]"]
    names = [node_name(i) for i in ids]
    assert len(set(names)) == len(names)
    for n in names:
        assert "/" not in n and "::" not in n and n.isascii() and len(n) < 140
    assert names[0].startswith("t.py__test_a_b-")
    assert node_name("x" * 1000).startswith("x" * 120 + "-")


def test_names_are_shown_on_one_terminal_line():
    from memgate.pytest_plugin import _shown

    assert _shown("a\x1b[31mb\nc") == "a\\x1b[31mb\\nc"
    assert _shown("Optimizer.step#AdamW.step é") == "Optimizer.step#AdamW.step é"
