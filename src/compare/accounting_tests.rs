//! Every baseline entry accounted for: devices the baseline lacks or the
//! run lacks, devices listed twice, category rules that differ.

use super::tests::{budget, dev, BASE, MIB};
use super::*;
use crate::vocab::Device;

fn verdict(
    b: &Budget,
    cur: &[DeviceReport],
    base: Option<&[DeviceReport]>,
    lookup: Option<&Lookup>,
    require_baseline: bool,
) -> SnapshotVerdict {
    let against = Against {
        budget: b,
        target: &b.targets[0],
        baseline: base.map(|d| ("golden/rank0.json", d)),
        lookup,
        require_baseline,
    };
    judge("rank0".into(), "rank0.json".into(), cur, &against)
}

fn check<'a>(v: &'a SnapshotVerdict, device: u32, id: &str) -> &'a Check {
    v.devices
        .iter()
        .filter(|d| d.device == device)
        .flat_map(|d| &d.checks)
        .find(|c| c.id.to_string() == id)
        .unwrap_or_else(|| panic!("no dev{device}.{id}"))
}

#[test]
fn a_snapshot_device_the_baseline_lacks_warns_and_its_skips_say_which_baseline() {
    let b = budget(BASE);
    let v = verdict(&b, &[dev(0, MIB)], Some(&[dev(1, MIB)]), None, false);
    let lacks = Finding::BaselineLacksDevice {
        baseline: "golden/rank0.json".into(),
        devices: vec![Device::new(1)],
    };
    let c = check(&v, 0, "baseline");
    assert_eq!(
        (c.status, &c.findings),
        (Status::Warn, &vec![lacks.clone()])
    );
    let skipped = check(&v, 0, "dynamic-peak");
    assert_eq!(skipped.status, Status::Reported);
    assert!(skipped.findings.contains(&lacks), "{:?}", skipped.findings);
}

#[test]
fn a_baseline_device_gone_from_the_run_is_reported_and_fails_when_baselines_are_required() {
    let b = budget(BASE);
    let base = [dev(0, MIB), dev(1, MIB)];
    let gone = Finding::DeviceNotInRun {
        baseline: "golden/rank0.json".into(),
        devices: vec![Device::new(0)],
    };
    let warned = verdict(&b, &[dev(0, MIB)], Some(&base), None, false);
    let c = check(&warned, 1, "baseline");
    assert_eq!((c.status, &c.findings), (Status::Warn, &vec![gone]));
    assert_eq!(warned.status, Status::Warn);
    let required = verdict(&b, &[dev(0, MIB)], Some(&base), None, true);
    assert_eq!(check(&required, 1, "baseline").status, Status::Fail);
}

#[test]
fn a_device_listed_twice_in_the_baseline_or_the_run_is_an_error_not_a_guess() {
    let b = budget(BASE);
    let in_base = verdict(
        &b,
        &[dev(0, MIB)],
        Some(&[dev(0, MIB), dev(0, 2 * MIB)]),
        None,
        false,
    );
    let c = check(&in_base, 0, "baseline");
    assert_eq!(c.status, Status::Error);
    assert_eq!(
        c.findings,
        [Finding::DeviceListedTwice {
            file: "golden/rank0.json".into()
        }]
    );
    let in_run = verdict(&b, &[dev(0, MIB), dev(0, MIB)], None, None, false);
    assert_eq!(in_run.status, Status::Error);
    assert_eq!(
        check(&in_run, 0, "baseline").findings,
        [Finding::DeviceListedTwice {
            file: "rank0.json".into()
        }]
    );
}

#[test]
fn a_snapshot_without_its_baseline_file_warns_with_the_name_looked_for() {
    let b = budget(BASE);
    let lookup = Lookup {
        looked_for: "rank3".into(),
        in_dir: "golden/".into(),
        close: vec!["rank2.json".into()],
        close_not_searched: false,
    };
    let v = verdict(&b, &[dev(0, MIB)], None, Some(&lookup), false);
    let c = check(&v, 0, "baseline");
    assert_eq!(
        (c.status, &c.findings),
        (Status::Warn, &vec![lookup.finding()])
    );
    assert!(check(&v, 0, "dynamic-peak")
        .findings
        .contains(&lookup.finding()));
    let required = verdict(&b, &[dev(0, MIB)], None, Some(&lookup), true);
    assert_eq!(check(&required, 0, "baseline").status, Status::Fail);
}

#[test]
fn without_a_configured_baseline_nothing_is_said_about_one() {
    let b = budget(BASE);
    let v = verdict(&b, &[dev(0, MIB)], None, None, false);
    assert!(v.devices[0]
        .checks
        .iter()
        .all(|c| c.id != CheckId::Baseline));
}

#[test]
fn category_checks_against_a_baseline_of_other_rules_are_errors_naming_both() {
    let b = budget(&format!(
        "{BASE}[target.budget.category]\nactivation = \"1 GiB\"\n"
    ));
    let with_rules = |rules: &str, activation: u64| {
        let mut d = dev(0, MIB);
        d.categories.rules = rules.into();
        d.categories.peaks.insert("activation".into(), activation);
        d.categories
            .at_allocated_peak
            .insert("activation".into(), activation);
        d
    };
    let v = verdict(
        &b,
        &[with_rules("default", 4 * MIB)],
        Some(&[with_rules("mosaic", 0)]),
        None,
        false,
    );
    let c = check(&v, 0, "category.activation");
    assert_eq!(c.status, Status::Error);
    assert_eq!(c.baseline, None);
    assert_eq!(
        c.findings[0],
        Finding::RulesDiffer {
            baseline: "mosaic".into(),
            current: "default".into()
        }
    );
    assert!(!c.findings.iter().any(|f| matches!(f, Finding::Grew { .. })));
    assert_eq!(v.devices[0].categories[0].baseline, None);
    let same = verdict(
        &b,
        &[with_rules("default", 4 * MIB)],
        Some(&[with_rules("default", 0)]),
        None,
        false,
    );
    assert_eq!(check(&same, 0, "category.activation").status, Status::Fail);
}

#[test]
fn a_baseline_entry_without_a_snapshot_is_accounted_per_device() {
    let v = no_snapshot(
        "rank7".into(),
        "golden/rank7.json".into(),
        &[dev(0, MIB), dev(1, MIB)],
        false,
    );
    assert_eq!(v.status, Status::Warn);
    assert_eq!(v.devices.len(), 2);
    let required = no_snapshot(
        "rank7".into(),
        "golden/rank7.json".into(),
        &[dev(0, MIB)],
        true,
    );
    assert_eq!(required.status, Status::Fail);
    assert_eq!(
        required.devices[0].checks[0].findings,
        [Finding::NoSnapshot {
            name: "rank7".into(),
            baseline: "golden/rank7.json".into()
        }]
    );
}
