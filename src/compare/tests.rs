//! Judging one device: budgets, tolerance, noise floor, levels.

use crate::vocab::Device;
use std::path::Path;

use super::*;
use crate::analysis::{Categories, Figures, PeakEntry};
use crate::budget;

pub(super) const MIB: u64 = 1 << 20;

pub(super) fn budget(text: &str) -> Budget {
    budget::parse(text, "memgate.toml", Path::new(""), false).unwrap()
}

pub(super) fn dev(device: u32, peak: u64) -> DeviceReport {
    DeviceReport {
        device: Device::new(device),
        figures: Figures {
            dynamic_peak: peak,
            overall_peak: peak,
            allocated_peak: peak,
            reserved_peak: peak,
            trace_entries: 10,
            ..Figures::default()
        },
        categories: Categories::default(),
        peak_entry: PeakEntry::default(),
        peak_time_us: None,
        trace_complete: true,
        stacks_at_peak: Vec::new(),
        sites_at_peak: Vec::new(),
        time: None,
        peak_phase: None,
        stacks_at_moment: None,
        oom: Vec::new(),
        warnings: Vec::new(),
        dump: None,
        window: None,
        environment: None,
        pools: Vec::new(),
        spreads: Default::default(),
        host: None,
    }
}

fn statuses(
    b: &Budget,
    cur: &[DeviceReport],
    base: Option<&[DeviceReport]>,
) -> Vec<(String, Status)> {
    let against = Against {
        budget: b,
        target: &b.targets[0],
        baseline: base.map(|d| ("golden.json", d)),
        lookup: None,
        require_baseline: false,
    };
    let v = judge("rank0".into(), "rank0.json".into(), cur, &against);
    v.devices
        .iter()
        .flat_map(|d| {
            d.checks
                .iter()
                .map(move |c| (format!("dev{}.{}", d.device, c.id), c.status))
        })
        .collect()
}

fn status_of_check(list: &[(String, Status)], id: &str) -> Status {
    list.iter().find(|(i, _)| i == id).unwrap().1
}

pub(super) const BASE: &str =
    "[defaults]\ntolerance = \"5%\"\nnoise-floor = \"1 MiB\"\n[[target]]\nname = \"t\"\n";

#[test]
fn growth_of_exactly_the_tolerance_passes_and_a_byte_more_fails() {
    let b = budget(BASE);
    let base = [dev(0, 100 * MIB)];
    let at = statuses(&b, &[dev(0, 105 * MIB)], Some(&base));
    assert_eq!(status_of_check(&at, "dev0.dynamic-peak"), Status::Pass);
    let over = statuses(&b, &[dev(0, 105 * MIB + 1)], Some(&base));
    assert_eq!(status_of_check(&over, "dev0.dynamic-peak"), Status::Fail);
}

#[test]
fn growth_from_a_zero_baseline_fails_once_over_the_noise_floor() {
    let b = budget(BASE);
    let base = [dev(0, 0)];
    let small = statuses(&b, &[dev(0, MIB)], Some(&base));
    assert_eq!(status_of_check(&small, "dev0.dynamic-peak"), Status::Pass);
    let big = statuses(&b, &[dev(0, 2 * MIB)], Some(&base));
    assert_eq!(status_of_check(&big, "dev0.dynamic-peak"), Status::Fail);
}

#[test]
fn a_warn_level_tolerance_warns_instead_of_failing() {
    let b = budget(&format!(
        "{BASE}[target.tolerance]\ndynamic-peak = {{ limit = \"1%\", level = \"warn\" }}\n"
    ));
    let s = statuses(&b, &[dev(0, 200 * MIB)], Some(&[dev(0, 100 * MIB)]));
    assert_eq!(status_of_check(&s, "dev0.dynamic-peak"), Status::Warn);
    assert_eq!(status_of_check(&s, "dev0.overall-peak"), Status::Fail);
}

#[test]
fn count_figures_are_judged_only_when_the_budget_file_names_them() {
    let plain = statuses(&budget(BASE), &[dev(0, MIB)], None);
    assert!(!plain.iter().any(|(id, _)| id == "dev0.alloc-events"));
    let b = budget(&format!("{BASE}[target.budget]\nalloc-events = 10\n"));
    let mut d = dev(0, MIB);
    d.figures.alloc_events = 11;
    assert_eq!(
        status_of_check(&statuses(&b, &[d], None), "dev0.alloc-events"),
        Status::Fail
    );
}

#[test]
fn the_device_key_restricts_the_judged_devices_and_baselines_match_by_device() {
    let b = budget(&BASE.replace("name = \"t\"", "name = \"t\"\ndevice = 1"));
    let s = statuses(
        &b,
        &[dev(0, 900 * MIB), dev(1, 100 * MIB)],
        Some(&[dev(1, 100 * MIB)]),
    );
    assert!(s.iter().all(|(id, _)| id.starts_with("dev1.")));
    assert_eq!(status_of_check(&s, "dev1.dynamic-peak"), Status::Pass);
}

#[test]
fn without_budget_or_baseline_a_figure_is_reported_but_oom_events_are_still_judged() {
    let s = statuses(&budget(BASE), &[dev(0, MIB)], None);
    assert_eq!(status_of_check(&s, "dev0.dynamic-peak"), Status::Reported);
    assert_eq!(status_of_check(&s, "dev0.oom-events"), Status::Pass);
}

#[test]
fn a_budget_only_target_whose_checks_pass_is_pass_and_its_unbudgeted_figures_reported() {
    let b = budget(&format!(
        "{BASE}[target.budget]\nallocated-peak = \"2 MiB\"\n"
    ));
    let against = Against {
        budget: &b,
        target: &b.targets[0],
        baseline: None,
        lookup: None,
        require_baseline: false,
    };
    let s = judge(
        "rank0".into(),
        "rank0.json".into(),
        &[dev(0, MIB)],
        &against,
    );
    let of = |id: &str| {
        s.devices[0]
            .checks
            .iter()
            .find(|c| c.id.to_string() == id)
            .unwrap()
            .status
    };
    assert_eq!(of("allocated-peak"), Status::Pass);
    assert_eq!(of("dynamic-peak"), Status::Reported);
    assert_eq!(s.status, Status::Pass);
    let t = TargetVerdict::new("t".into(), vec![s]);
    assert_eq!(t.status, Status::Pass);
    let v = Verdict::new(&b, 0, vec![t]);
    assert_eq!(v.verdict, Status::Pass);
    assert_eq!((v.counts.pass, v.counts.skipped), (2, 0), "{:?}", v.counts);
    assert!(v.counts.reported > 0);
}

fn findings_of(
    b: &Budget,
    cur: &[DeviceReport],
    base: Option<&[DeviceReport]>,
    id: &str,
) -> Vec<Finding> {
    let against = Against {
        budget: b,
        target: &b.targets[0],
        baseline: base.map(|d| ("golden.json", d)),
        lookup: None,
        require_baseline: false,
    };
    let v = judge("rank0".into(), "rank0.json".into(), cur, &against);
    let check = v.devices[0]
        .checks
        .iter()
        .find(|c| c.id.to_string() == id)
        .unwrap();
    check.findings.clone()
}

#[test]
fn a_value_over_its_budget_that_also_grew_past_the_tolerance_carries_both_findings() {
    let b = budget(&format!(
        "{BASE}[target.budget]\ndynamic-peak = \"150 MiB\"\n"
    ));
    let found = findings_of(
        &b,
        &[dev(0, 200 * MIB)],
        Some(&[dev(0, 100 * MIB)]),
        "dynamic-peak",
    );
    assert_eq!(
        found,
        [
            Finding::OverBudget {
                limit: 150 * MIB,
                current: 200 * MIB,
                over: 50 * MIB,
            },
            Finding::Grew {
                baseline: 100 * MIB,
                current: 200 * MIB,
                grew: 100 * MIB,
                percent: Some(100.0),
                tolerance: 5.0,
            },
        ]
    );
}

#[test]
fn growth_within_the_tolerance_is_within_and_shrinking_says_by_how_much() {
    let b = budget(BASE);
    let base = [dev(0, 100 * MIB)];
    assert_eq!(
        findings_of(&b, &[dev(0, 104 * MIB)], Some(&base), "dynamic-peak"),
        [Finding::Within {
            current: 104 * MIB,
            budget: None,
            baseline: Some(100 * MIB),
            tolerance: Some(5.0),
        }]
    );
    assert_eq!(
        findings_of(&b, &[dev(0, 75 * MIB)], Some(&base), "dynamic-peak"),
        [Finding::Shrank {
            baseline: 100 * MIB,
            current: 75 * MIB,
            shrank: 25 * MIB,
            percent: 25.0,
        }]
    );
}

#[test]
fn oom_events_name_where_the_allowed_count_comes_from() {
    let mut oom = dev(0, MIB);
    oom.figures.oom_events = 2;
    let by_default = findings_of(&budget(BASE), &[oom.clone()], None, "oom-events");
    assert_eq!(
        by_default,
        [Finding::OomOverAllowed {
            current: 2,
            allowed: 0,
            allowed_by: AllowedBy::Default,
            first: vec![],
        }]
    );
    let mut base = dev(0, MIB);
    base.figures.oom_events = 2;
    let by_baseline = findings_of(&budget(BASE), &[oom.clone()], Some(&[base]), "oom-events");
    assert_eq!(
        by_baseline,
        [Finding::OomWithinAllowed {
            current: 2,
            allowed: 2,
            allowed_by: AllowedBy::Baseline,
        }]
    );
    let b = budget(&format!("{BASE}[target.budget]\noom-events = 1\n"));
    assert_eq!(
        findings_of(&b, &[oom], None, "oom-events"),
        [Finding::OomOverAllowed {
            current: 2,
            allowed: 1,
            allowed_by: AllowedBy::Budget,
            first: vec![],
        }]
    );
}

#[test]
fn a_required_baseline_that_is_missing_is_a_failed_finding_of_its_own() {
    let b = budget(BASE);
    let against = Against {
        budget: &b,
        target: &b.targets[0],
        baseline: None,
        lookup: None,
        require_baseline: true,
    };
    let v = judge(
        "rank0".into(),
        "rank0.json".into(),
        &[dev(0, MIB)],
        &against,
    );
    let first = &v.devices[0].checks[0];
    assert_eq!(
        (&first.id, first.status),
        (&CheckId::Baseline, Status::Fail)
    );
    assert_eq!(
        first.findings,
        [Finding::NoBaseline {
            looked_for: None,
            in_dir: None,
            close: Vec::new(),
            close_not_searched: false,
        }]
    );
}

#[test]
fn check_ids_status_ids_and_peak_ids_are_written_as_their_json_values() {
    let ids = [
        (CheckId::Figure(Figure::AllocatedPeak), "allocated-peak"),
        (CheckId::Category("hccl".into()), "category.hccl"),
        (
            CheckId::Phase {
                phase: "## forward ##".into(),
                figure: Figure::DynamicPeak,
            },
            "phase.## forward ##.dynamic-peak",
        ),
        (CheckId::Baseline, "baseline"),
        (CheckId::Window, "window"),
    ];
    for (id, want) in ids {
        assert_eq!(id.to_string(), want);
        assert_eq!(serde_json::to_value(&id).unwrap(), want);
    }
    for s in [
        Status::Reported,
        Status::Pass,
        Status::Skipped,
        Status::Warn,
        Status::Fail,
        Status::Error,
    ] {
        assert_eq!(serde_json::to_value(s).unwrap(), s.id());
    }
    for p in [
        PeakAt::AllocatedPeak,
        PeakAt::DynamicPeak,
        PeakAt::ReservedPeak,
    ] {
        assert_eq!(serde_json::to_value(p).unwrap(), p.id());
        assert!(Figure::from_id(p.id()).is_some(), "{}", p.id());
    }
}

#[test]
fn a_snapshot_error_is_written_as_its_sentence_in_the_json_too() {
    let e = SnapshotError::NoSuchDevice {
        want: crate::vocab::Device::new(2),
        holds: vec![crate::vocab::Device::new(0), crate::vocab::Device::new(1)],
    };
    let want = "the target asks for dev2 (`device = 2`), but the snapshot holds only dev0, dev1";
    assert_eq!(e.to_string(), want);
    assert_eq!(serde_json::to_value(&e).unwrap(), want);
    let e = SnapshotError::Baseline("g.json: truncated".into());
    assert_eq!(e.to_string(), "baseline g.json: truncated");
}
