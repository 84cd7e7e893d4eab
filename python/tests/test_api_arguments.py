"""What the API refuses, and the arguments it takes as they are: whatever
stops it from judging is a MemgateError, never a verdict it did not reach."""

import json
import os
import shutil
import subprocess

import pytest

import memgate


def cli_json(binary, *args):
    done = subprocess.run([binary, *args], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize("flag", ["warn_only", "require_baseline", "comment_size", "github"])
@pytest.mark.parametrize("value", ["false", "", 0, 1, None])
def test_a_flag_that_is_not_a_bool_is_refused(examples, flag, value):
    # "false" is truthy: taken as a flag, it turned a failing gate green.
    with pytest.raises(memgate.MemgateError) as e:
        memgate.check(config=examples / "memgate-regressed.toml", **{flag: value})
    assert e.value.exit_code == 2
    assert flag in e.value.message and "True or False" in e.value.message


def test_the_regressed_example_still_fails_with_warn_only_false(examples):
    verdict = memgate.check(config=examples / "memgate-regressed.toml", warn_only=False)
    assert not verdict.passed and verdict.exit_code == 1


@pytest.mark.parametrize(
    "call",
    [
        lambda ex: memgate.peak(b"/tmp/\xff.pickle"),
        lambda ex: memgate.peak("/tmp/\udcff.pickle"),
        lambda ex: memgate.inspect([ex / "snapshots" / "rank0.pickle", b"\xfe.pickle"]),
        lambda ex: memgate.diff(b"\xff.json", ex / "snapshots" / "rank0.pickle"),
        lambda ex: memgate.summarize(b"\xff.pickle"),
        lambda ex: memgate.summarize(ex / "snapshots" / "rank0.pickle", b"/tmp/\xff-out"),
        lambda ex: memgate.check(config=b"\xff.toml"),
        lambda ex: memgate.check(config=ex / "memgate.toml", baseline=b"\xff"),
        lambda ex: memgate.check(config=ex / "memgate.toml", markdown=b"/tmp/\xff.md"),
    ],
)
def test_a_path_that_is_not_utf8_is_a_memgate_error(examples, call):
    with pytest.raises(memgate.MemgateError) as e:
        call(examples)
    assert e.value.exit_code == 2
    assert "UTF-8" in e.value.message


@pytest.mark.parametrize(
    "call",
    [
        lambda ex: memgate.peak(ex / "snapshots" / "rank0.pickle", top=True),
        lambda ex: memgate.peak(ex / "snapshots" / "rank0.pickle", top="5"),
        lambda ex: memgate.peak(ex / "snapshots" / "rank0.pickle", top=-1),
        lambda ex: memgate.peak(ex / "snapshots" / "rank0.pickle", rules=3),
        lambda ex: memgate.peak(42),
        lambda ex: memgate.peak([ex / "snapshots" / "rank0.pickle", None]),
        lambda ex: memgate.profile(ex / "snapshots" / "rank0.pickle", group_by=None),
        lambda ex: memgate.phases(ex / "snapshots" / "rank0.pickle", annotation=5),
        lambda ex: memgate.phases(ex / "snapshots" / "rank0.pickle", iteration_boundary=b"Profiler"),
        lambda ex: memgate.check(config=123),
    ],
)
def test_an_argument_of_the_wrong_type_is_a_memgate_error(examples, call):
    with pytest.raises(memgate.MemgateError) as e:
        call(examples)
    assert e.value.exit_code == 2


def test_a_rule_set_option_value_starting_with_a_dash_is_a_value(examples, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(memgate.MemgateError) as e:
        memgate.peak(examples / "snapshots" / "rank0.pickle", rules="--help")
    assert "--help" in e.value.message


def test_one_annotation_string_is_one_annotation(examples, memgate_bin):
    path = str(examples / "snapshots" / "rank0.pickle")
    expected = cli_json(memgate_bin, "phases", "--format", "json", "--annotation", "## forward ##", path)
    assert memgate.phases(path, annotation="## forward ##").to_dict() == expected
    assert memgate.phases(path, annotation=["## forward ##"]).to_dict() == expected


def test_summarize_a_snapshot_whose_name_has_a_newline(examples, tmp_path):
    odd = tmp_path / "in" / "step\n::error::x.pickle"
    odd.parent.mkdir()
    shutil.copyfile(examples / "snapshots" / "rank0.pickle", odd)
    plain = tmp_path / "in" / "rank1.pickle"
    shutil.copyfile(examples / "snapshots" / "rank1.pickle", plain)
    out = tmp_path / "out"
    out.mkdir()
    (out / "unrelated.json").write_text('{"not": "a summary"}')

    summaries = memgate.summarize([odd, plain], out)
    assert sorted(os.listdir(out)) == ["rank1.json", "step\n::error::x.json", "unrelated.json"]
    on_disk = [json.loads((out / name).read_text()) for name in ("rank1.json", "step\n::error::x.json")]
    assert sorted(json.dumps(s.to_dict(), sort_keys=True) for s in summaries) == sorted(
        json.dumps(d, sort_keys=True) for d in on_disk
    )
    # Written again over the same files: both are this call's summaries.
    assert len(memgate.summarize([odd, plain], out)) == 2
    # Without an output directory too.
    assert [s.kind for s in memgate.summarize(odd)] == ["memgate-summary"]


def test_json_report_dash_prints_the_verdict_and_returns_it(examples, capsys):
    verdict = memgate.check(config=examples / "memgate.toml", json_report="-")
    assert verdict.passed and verdict.exit_code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == verdict.to_dict()
    # A failing gate is a verdict too, printed the same way.
    failed = memgate.check(config=examples / "memgate-regressed.toml", markdown="-")
    assert not failed.passed
    assert capsys.readouterr().out.startswith("## memgate")


def test_check_names_no_file_it_made_and_removed_but_names_the_reports_asked_for(examples, tmp_path, capfd):
    snaps = [str(examples / "snapshots" / "rank0.pickle")]
    memgate.check(snapshots=snaps, budget={"allocated_peak": "1 GiB"})
    memgate.check(config=examples / "memgate.toml", junit="-")
    captured = capfd.readouterr()
    assert "wrote" not in captured.err and "verdict.json" not in captured.err, captured.err
    assert "<testsuites" in captured.out
    # A report the caller asked for is still named where it went.
    memgate.check(snapshots=snaps, budget={"allocated_peak": "1 GiB"}, json_report=tmp_path / "v.json")
    assert capfd.readouterr().err == f"wrote {tmp_path / 'v.json'}\n"


def test_two_reports_for_stdout_are_refused(examples):
    with pytest.raises(memgate.MemgateError) as e:
        memgate.check(config=examples / "memgate.toml", json_report="-", junit="-")
    assert e.value.exit_code == 2 and "stdout" in e.value.message


@pytest.fixture
def github_env(tmp_path, monkeypatch):
    """GitHub Actions' files, named by the environment as on a runner."""
    files = {"GITHUB_STEP_SUMMARY": tmp_path / "step-summary.md", "GITHUB_OUTPUT": tmp_path / "github-output"}
    for name, path in files.items():
        path.write_text("")
        monkeypatch.setenv(name, str(path))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    return files


def test_check_writes_github_files_only_when_asked(examples, github_env):
    verdict = memgate.check(config=examples / "memgate-regressed.toml")
    assert not verdict.passed
    assert github_env["GITHUB_STEP_SUMMARY"].read_text() == ""
    assert github_env["GITHUB_OUTPUT"].read_text() == ""
    assert "::error" not in verdict.text

    asked = memgate.check(config=examples / "memgate-regressed.toml", github=True)
    assert not asked.passed
    assert github_env["GITHUB_STEP_SUMMARY"].read_text().startswith("## memgate")
    assert "verdict=fail" in github_env["GITHUB_OUTPUT"].read_text().splitlines()
    assert "::error" in asked.text
