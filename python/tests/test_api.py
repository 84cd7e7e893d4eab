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
    # One line for the figures that moved together, with the headroom.
    assert "212.10 MiB of 208 MiB (102%, over by 4.10 MiB)" in verdict.text
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


def test_profile_rules_as_a_mapping_equal_the_cli_with_the_same_rules_file(examples, memgate_bin, tmp_path):
    snap = str(examples / "snapshots" / "rank0.pickle")
    rules = {"zeta": "model", "attn": "attention", "alpha": "."}
    rules_file = tmp_path / "rules.toml"
    rules_file.write_text('[categories]\nzeta = "model"\nattn = "attention"\nalpha = "."\n')
    expected = cli_json(memgate_bin, "profile", "--format", "json", "--rules", str(rules_file), snap)
    got = memgate.profile(snap, rules=rules).to_dict()
    # The mapping goes as --categories: the same document as the CLI's...
    inline = cli_json(memgate_bin, "profile", "--format", "json", "--categories", json.dumps(rules), snap)
    assert got == inline
    # ...whose rule set is named by its rules (never a temporary file), the
    # one difference from the rules file's.
    for device in got["snapshots"][0]["devices"]:
        assert device["categories"]["rules"] == "default + " + json.dumps(rules, separators=(",", ":"))
    for doc in (got, expected):
        for device in doc["snapshots"][0]["devices"]:
            device["categories"]["rules"] = "RULES"
    assert got == expected
    # The order is the mapping's: first match wins, so another order differs.
    reordered = memgate.profile(snap, rules={"alpha": ".", "zeta": "model", "attn": "attention"}).to_dict()
    assert reordered != expected


def test_a_rules_mapping_with_a_bad_regex_is_could_not_judge(examples):
    with pytest.raises(memgate.MemgateError) as e:
        memgate.peak(examples / "snapshots" / "rank0.pickle", rules={"bad": "("})
    assert e.value.exit_code == 2 and "bad" in e.value.message


def test_check_takes_a_budget_mapping_and_snapshots(examples):
    snaps = [str(examples / "snapshots-regressed" / "rank0.pickle")]
    verdict = memgate.check(
        snapshots=snaps,
        budget={"allocated_peak": "208 MiB", "phase": {"Optimizer.step#AdamW.step": {"allocated_peak": "1 GiB"}}},
    )
    assert not verdict.passed
    failures = verdict.failures()
    assert [(f.snapshot, f.device, f.check.id if f.check else None) for f in failures] == [
        ("rank0", 0, "allocated-peak")
    ]
    assert str(failures[0]) == (
        "FAIL budget/rank0 dev0 allocated-peak: 212.10 MiB; headroom against the budget 208 MiB: -4.10 MiB (-2.0%)"
    )
    judged = [(c.id, c.status) for t in verdict.targets for s in t.snapshots for d in s.devices for c in d.checks]
    # Only what the mapping names: no dynamic/overall peak although they grew.
    assert judged == [("allocated-peak", "fail"), ("phase.Optimizer.step#AdamW.step.allocated-peak", "pass")]


def test_str_of_a_failure_is_its_fail_line_with_the_bytes_the_budget_and_each_headroom_named(examples):
    # examples/memgate-regressed.toml: allocated-peak is 222406148 bytes
    # (212.10 MiB) against a 208 MiB budget (over by 4302340 bytes, 2.0% of
    # it) and a 209823236-byte golden (200.10 MiB) + 2% tolerance, whose
    # ceiling 214019700.72 it passes by 8386447.28 bytes (3.9% of it).
    verdict = memgate.check(config=examples / "memgate-regressed.toml")
    line = str(next(f for f in verdict.failures() if f.check and f.check.id == "allocated-peak"))
    assert line == (
        "FAIL toy-gpt-2rank/rank0 dev0 allocated-peak: 212.10 MiB; "
        "headroom against the budget 208 MiB: -4.10 MiB (-2.0%); "
        "headroom against the baseline's tolerance (200.10 MiB +2%): -8.00 MiB (-3.9%)"
    )
    assert "\n" not in line


def test_figure_ids_are_taken_in_both_spellings_in_a_budget_and_its_phase_dicts(examples):
    snaps = [str(examples / "snapshots-regressed" / "rank0.pickle")]
    kebab = {"allocated-peak": "208 MiB", "phase": {"## forward ##": {"allocated-peak": "1 GiB"}}}
    snake = {"allocated_peak": "208 MiB", "phase": {"## forward ##": {"allocated_peak": "1 GiB"}}}

    def judged(budget):
        v = memgate.check(snapshots=snaps, budget=budget)
        return [(c.id, c.status, c.budget) for t in v.targets for s in t.snapshots for d in s.devices for c in d.checks]

    assert judged(kebab) == judged(snake) == [
        ("allocated-peak", "fail", 208 << 20),
        ("phase.## forward ##.allocated-peak", "pass", 1 << 30),
    ]
    with pytest.raises(memgate.MemgateError) as e:
        memgate.check(snapshots=snaps, budget={"allocated_peak": "1 GiB", "allocated-peak": "2 GiB"})
    assert e.value.messages == ["allocated-peak: allocated-peak is given twice (as allocated_peak too)"]
    with pytest.raises(memgate.MemgateError) as e:
        memgate.check(snapshots=snaps, budget={"phase": {"## forward ##": {"allocated-pe_ak": "1 GiB"}}})
    assert e.value.messages[0].startswith("phase['## forward ##']: allocated-pe_ak: unknown keyword")


def test_check_reports_budget_mistakes_in_keyword_names(examples):
    snaps = [str(examples / "snapshots" / "rank0.pickle")]
    with pytest.raises(memgate.MemgateError) as e:
        memgate.check(snapshots=snaps, budget={"allocated_peek": "1 GiB", "dynamic_peak": "3 parsecs"})
    assert e.value.messages[0].startswith("allocated_peek: unknown keyword (did you mean allocated_peak?)")
    with pytest.raises(memgate.MemgateError) as e:
        memgate.check(snapshots=snaps, budget={"dynamic_peak": "3 parsecs"})
    assert e.value.messages == [e.value.messages[0]] and e.value.messages[0].startswith("dynamic_peak: ")
    with pytest.raises(memgate.MemgateError, match="not both"):
        memgate.check(config="memgate.toml", snapshots=snaps, budget={"dynamic_peak": "1 GiB"})
    with pytest.raises(memgate.MemgateError, match="needs the snapshots"):
        memgate.check(budget={"dynamic_peak": "1 GiB"})


def test_check_budget_mapping_reads_device_memory_shares_and_same_environment(examples):
    snaps = [str(examples / "snapshots" / "rank0.pickle")]
    # rank0's allocated peak is 209823236 bytes; 20% of 1 GiB is 214748364.
    budget = {"allocated_peak": "20% of device", "device_memory": "1 GiB", "same_environment": True}
    assert memgate.check(snapshots=snaps, budget=budget).passed
    # 16 MiB outside the allocator leaves 197971148 bytes: the peak fails.
    verdict = memgate.check(snapshots=snaps, budget={**budget, "outside_allocator": "16 MiB"})
    assert not verdict.passed
    assert [f.check.id for f in verdict.failures() if f.check] == ["allocated-peak"]
    # No device memory known: the share is not judged, never passed.
    try:
        verdict = memgate.check(snapshots=snaps, budget={"allocated_peak": "20% of device"})
    except memgate.MemgateError as e:
        assert e.exit_code == 2 and "no device memory is known" in e.message
    else:
        assert not verdict.passed


def test_failures_lists_warnings_on_request(examples):
    snaps = [str(examples / "snapshots" / "rank0.pickle")]
    verdict = memgate.check(snapshots=snaps, budget={"reserved_peak": {"limit": "100 MiB", "level": "warn"}})
    assert verdict.passed and verdict.failures() == []
    assert [f.check.id for f in verdict.failures(warnings=True) if f.check] == ["reserved-peak"]


def test_parse_size_is_memgates_parser():
    assert memgate.parse_size("8 GiB") == 8 << 30
    assert memgate.parse_size("512 MB") == 512_000_000
    with pytest.raises(ValueError):
        memgate.parse_size("8 parsecs")
    with pytest.raises(ValueError):
        memgate.parse_size(8)  # type: ignore[arg-type]


def test_figures_take_snake_case_and_every_json_key_is_an_attribute(examples):
    device = memgate.peak(examples / "snapshots" / "rank0.pickle").snapshots[0].devices[0]
    assert device.figures["allocated_peak"] == device.figures["allocated-peak"]
    assert "allocated_peak" in device.figures and device.figures.get("no_such") is None
    with pytest.raises(KeyError):
        device.figures["no_such_figure"]
    diff = memgate.diff(examples / "snapshots" / "rank0.pickle", examples / "snapshots-regressed" / "rank0.pickle")
    assert diff.devices[0].peak_moved == diff.devices[0].to_dict().get("peak-moved")


def _fields(cls):
    import dataclasses

    return {f.metadata.get("key") or f.name.replace("_", "-") for f in dataclasses.fields(cls) if not f.metadata.get("skip")}


def test_every_key_of_the_documents_is_a_field(examples, tmp_path):
    snap = examples / "snapshots" / "rank0.pickle"
    regressed = examples / "snapshots-regressed" / "rank0.pickle"
    pairs = []
    peak = memgate.peak(snap)
    pairs += [(peak, memgate.PeakReport)] + [(d, memgate.AnalysedDevice) for s in peak.snapshots for d in s.devices]
    pairs += [(s, memgate.AnalysedSnapshot) for s in peak.snapshots]
    diff = memgate.diff(snap, regressed)
    pairs += [(diff, memgate.DiffReport)] + [(d, memgate.DeviceDiff) for d in diff.devices]
    verdict = memgate.check(snapshots=[str(regressed)], baseline=examples / "golden", budget={"allocated_peak": "1 GiB"})
    pairs += [(verdict, memgate.Verdict)]
    for everything in (False, True):
        phases = memgate.phases(snap, all=everything)
        pairs += [(phases, memgate.PhasesReport)] + [(s, memgate.PhasesSnapshot) for s in phases.snapshots]
        for d in phases.snapshots[0].devices:
            pairs.append((d, memgate.PhasesDevice))
            if d.iterations is not None:
                pairs.append((d.iterations, memgate.Iterations))
    for t in verdict.targets:
        pairs.append((t, memgate.TargetVerdict))
        for s in t.snapshots:
            pairs.append((s, memgate.CheckedSnapshot))
            for d in s.devices:
                pairs += [(d, memgate.CheckedDevice)] + [(c, memgate.Check) for c in d.checks]
    for doc, cls in pairs:
        missing = set(doc.to_dict()) - _fields(cls)
        assert not missing, f"{cls.__name__} lacks {missing}"


def test_check_takes_ranks_and_names_the_heaviest_rank(root):
    # The 8-rank job of tests/fixtures/ranks (generate.py --ranks): rank6
    # is 20% heavier than rank0, 16.08% above the mean of the 8.
    run = root / "tests" / "fixtures" / "ranks" / "run"
    snaps = [str(run / f"rank{k}.pickle") for k in range(8)]
    verdict = memgate.check(
        snapshots=snaps,
        budget={"allocated_peak": "10 GiB", "ranks": {"figures": ["allocated_peak"], "imbalance": "15%"}},
    )
    assert not verdict.passed
    ranks = verdict.targets[0].ranks
    assert ranks is not None and ranks.status == "fail"
    assert [(f.snapshot, f.check.id if f.check else None) for f in verdict.failures()] == [
        ("ranks", "ranks.allocated-peak.imbalance")
    ]
    assert ranks.checks[0].findings[0]["heaviest"] == "rank6"
    # The heaviest rank is 16.08% over the mean, the ceiling the mean + 15%:
    # (1.15 - 1.1608) / 1.15 = -0.9% of the ceiling left.
    line = str(verdict.failures()[0])
    assert line.startswith("FAIL budget/ranks ranks.allocated-peak.imbalance: "), line
    assert "; headroom against the budget " in line and line.endswith(" (-0.9%)"), line
    verdict = memgate.check(snapshots=snaps, budget={"allocated_peak": "10 GiB", "ranks": {"imbalance": "17%"}})
    assert verdict.passed


def test_ranks_mistakes_are_reported_in_keyword_names(root):
    snaps = [str(root / "tests" / "fixtures" / "ranks" / "run" / "rank0.pickle")]
    with pytest.raises(memgate.MemgateError) as e:
        memgate.check(snapshots=snaps, budget={"ranks": {"imbalanse": "5%"}})
    assert e.value.messages[0].startswith("ranks: imbalanse: unknown keyword (did you mean imbalance?)")
    with pytest.raises(memgate.MemgateError) as e:
        memgate.check(snapshots=snaps, budget={"ranks": {"stage_imbalance": 5}})
    assert any(m.startswith("ranks['stage_imbalance']") for m in e.value.messages), e.value.messages
def test_every_json_object_is_a_record_reachable_by_snake_case(examples):
    snap = examples / "snapshots" / "rank0.pickle"
    device = memgate.peak(snap).snapshots[0].devices[0]
    assert isinstance(device.categories, memgate.Record)
    cats = device.categories
    assert cats.at_allocated_peak == cats["at-allocated-peak"] == device.to_dict()["categories"]["at-allocated-peak"]
    assert cats.at_allocated_peak.optimizer_state == cats["at-allocated-peak"]["optimizer-state"]
    assert device.figures.allocated_peak == device.figures["allocated-peak"]
    assert device.peak_phase.allocated_peak.entry == device.to_dict()["peak-phase"]["allocated-peak"]["entry"]
    assert device.stacks_at_peak[0].frames == device.to_dict()["stacks-at-peak"][0]["frames"]
    with pytest.raises(AttributeError, match="no key 'no_such'"):
        cats.no_such
    phases = memgate.phases(snap, all=True).snapshots[0].devices[0]
    raw = phases.to_dict()
    assert phases.iterations is not None
    assert phases.iterations.items[1].allocated_peak == raw["iterations"]["items"][1]["allocated-peak"]
    assert phases.summary[0].largest_allocated_peak == raw["summary"][0]["largest-allocated-peak"]
    assert phases.phases[0].from_entry == raw["phases"][0]["from-entry"]
    cut = memgate.phases(snap).snapshots[0].devices[0]
    assert len(cut.annotations) == min(20, len(phases.annotations))
    assert len(cut.annotations) + cut.annotations_left_out == len(phases.annotations)


def test_metrics_are_the_bencher_files_values_under_the_same_names(examples, memgate_bin, tmp_path):
    verdict = memgate.check(config=examples / "memgate-regressed.toml")
    bmf = tmp_path / "bmf.json"
    subprocess.run(
        [memgate_bin, "check", "--config", str(examples / "memgate-regressed.toml"), "--bencher", str(bmf)],
        check=False,
        capture_output=True,
    )
    want = {name: next(iter(measures.values()))["value"] for name, measures in json.loads(bmf.read_text()).items()}
    assert len(want) >= 20
    assert verdict.metrics() == want
    assert all("/device" in name for name in want)


def test_peak_metrics_are_its_figures_by_snapshot_device_and_figure(examples):
    report = memgate.peak(examples / "snapshots" / "rank0.pickle")
    metrics = report.metrics()
    device = report.snapshots[0].devices[0]
    path = report.snapshots[0].path
    assert metrics[f"{path}/device{device.device}/allocated-peak"] == device.figures["allocated-peak"]
    assert len(metrics) == sum(v is not None for s in report.snapshots for d in s.devices for v in d.figures.values())
