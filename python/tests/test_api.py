"""The Python API returns the documents of `--format json`."""

import json
import subprocess
from pathlib import Path

import pytest

import memgate

# The shared fixtures sit beside the checkout (../shared), as on CI.
REAL = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "real"


def cli_json(binary, *args):
    done = subprocess.run([binary, *args], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_peak_is_the_json_of_memgate_peak(examples, memgate_bin):
    paths = [str(examples / "snapshots" / "rank0.pickle"), str(examples / "snapshots" / "rank1.pickle")]
    report = memgate.peak(paths)
    assert isinstance(report, memgate.PeakReport)
    assert report.to_dict() == cli_json(memgate_bin, "peak", "--format", "json", *paths)
    device = report.snapshots[1].devices[0]
    assert isinstance(device, memgate.AnalysedDevice)
    assert device.device == 1
    assert device.figures["allocated-peak"] == 209823236
    assert device.trace_complete is True


def test_every_real_fixture_has_the_figures_of_memgate_peak(memgate_bin):
    if not REAL.is_dir():
        pytest.skip(f"SKIPPED LOUDLY: {REAL} is absent, the real-fixture parity check did not run")
    fixtures = sorted(p for p in REAL.iterdir() if p.is_file())
    assert fixtures
    for path in fixtures:
        expected = cli_json(memgate_bin, "peak", "--format", "json", str(path))
        got = memgate.peak(path)
        assert got.to_dict() == expected, path
        figures = [d.figures for s in got.snapshots for d in s.devices]
        assert figures == [d["figures"] for s in expected["snapshots"] for d in s["devices"]], path


def test_profile_and_phases_and_inspect_are_their_commands_json(examples, memgate_bin):
    path = str(examples / "snapshots" / "rank0.pickle")
    assert memgate.profile(path, group_by="annotation").to_dict() == cli_json(
        memgate_bin, "profile", "--format", "json", "--group-by", "annotation", path
    )
    phases = memgate.phases(path)
    assert phases.to_dict() == cli_json(memgate_bin, "phases", "--format", "json", path)
    assert phases.snapshots[0].devices[0].phases
    assert memgate.inspect(path).snapshots[0]["pickle-protocol"] == 4


def test_diff_names_the_figure_that_grew(examples):
    report = memgate.diff(examples / "snapshots" / "rank0.pickle", examples / "snapshots-regressed" / "rank0.pickle")
    grew = {d.id: d.delta for d in report.devices[0].figures}
    assert grew["allocated-peak"] == 12 * 1024 * 1024
    assert report.devices[0].sites[0].change == "grew"


def test_summarize_writes_the_golden_files_it_returns(examples, tmp_path):
    summaries = memgate.summarize(str(examples / "snapshots" / "rank*.pickle"), tmp_path)
    assert [s.kind for s in summaries] == ["memgate-summary"] * 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank0.json", "rank1.json"]
    on_disk = json.loads((tmp_path / "rank0.json").read_text())
    assert summaries[0].to_dict() == on_disk
    assert summaries[0].devices[0].figures == on_disk["devices"][0]["figures"]


def test_check_returns_a_passing_verdict_for_the_bundled_example(examples):
    verdict = memgate.check(config=examples / "memgate.toml")
    assert verdict.passed and verdict.exit_code == 0
    assert verdict.verdict == "pass"
    assert verdict.counts["fail"] == 0


def test_check_returns_a_failing_verdict_for_the_regressed_example(examples, tmp_path):
    verdict = memgate.check(config=examples / "memgate-regressed.toml", junit=tmp_path / "junit.xml")
    assert not verdict.passed and verdict.exit_code == 1
    failed = [
        c.id
        for t in verdict.targets
        for s in t.snapshots
        for d in s.devices
        for c in d.checks
        if c.status == "fail"
    ]
    assert "allocated-peak" in failed
    assert "allocated-peak: 212.10 MiB is over its budget of 208 MiB" in verdict.text
    # The regression doubles an activation of the last of the 5 steps: the
    # gate says the peak was reached there, in the backward pass.
    device = verdict.targets[0].snapshots[0].devices[0]
    place = device.peak_phase["allocated-peak"]
    assert (place["annotation"], place["iteration"]) == ("## backward ##", 4)
    assert (tmp_path / "junit.xml").is_file()


def test_check_takes_snapshots_and_a_baseline_that_replace_the_configs(examples):
    verdict = memgate.check(
        config=examples / "memgate.toml",
        snapshots=[examples / "snapshots-regressed" / "rank0.pickle"],
        baseline=examples / "golden",
    )
    assert not verdict.passed
    judged = {s.name: s for s in verdict.targets[0].snapshots}
    assert judged["rank0"].path.endswith("snapshots-regressed/rank0.pickle")
    assert judged["rank0"].status == "fail"
    # The baseline's rank1 has no snapshot in this run: a warning.
    assert judged["rank1"].status == "warn"


def test_bad_input_raises_memgate_error_with_exit_code_2(tmp_path, examples):
    with pytest.raises(memgate.MemgateError) as missing:
        memgate.peak(tmp_path / "missing.pickle")
    assert missing.value.exit_code == 2
    assert "missing.pickle" in str(missing.value)

    not_a_snapshot = tmp_path / "evil.pickle"
    not_a_snapshot.write_bytes(b"cos\nsystem\n(S'touch pwned'\ntR.")
    with pytest.raises(memgate.MemgateError):
        memgate.peak(not_a_snapshot)
    assert not (Path.cwd() / "pwned").exists()

    bad_config = tmp_path / "memgate.toml"
    bad_config.write_text('[[target]]\nname = "x"\nsnapshots = "*.pickle"\n[target.budget]\nno-such-figure = 1\n')
    with pytest.raises(memgate.MemgateError) as config_error:
        memgate.check(config=bad_config)
    assert config_error.value.exit_code == 2
    assert "no-such-figure" in config_error.value.message


def test_a_path_that_looks_like_an_option_is_still_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(memgate.MemgateError) as e:
        memgate.peak("--help")
    assert "--help" in e.value.message


def test_documents_are_frozen_dataclasses():
    import dataclasses

    delta = memgate.Delta(id="allocated-peak", base=1, new=2, delta=1, percent=100.0)
    assert delta.to_dict() == {"id": "allocated-peak", "base": 1, "new": 2, "delta": 1, "percent": 100.0}
    with pytest.raises(dataclasses.FrozenInstanceError):
        delta.base = 3
