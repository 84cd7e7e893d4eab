//! Judging one device: budgets, tolerance, noise floor, levels.

use std::path::Path;

use super::*;
use crate::analysis::{Categories, Figures, PeakEntry};
use crate::budget;

const MIB: u64 = 1 << 20;

fn budget(text: &str) -> Budget {
    budget::parse(text, "memgate.toml", Path::new(""), false).unwrap()
}

fn dev(device: u32, peak: u64) -> DeviceReport {
    DeviceReport {
        device,
        figures: Figures {
            dynamic_peak: peak,
            overall_peak: peak,
            allocated_peak: peak,
            reserved_peak: peak,
            ..Figures::default()
        },
        categories: Categories::default(),
        peak_entry: PeakEntry::default(),
        peak_time_us: None,
        trace_complete: true,
        stacks_at_peak: Vec::new(),
        sites_at_peak: Vec::new(),
        warnings: Vec::new(),
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

const BASE: &str =
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
fn without_budget_or_baseline_a_figure_is_skipped_but_oom_events_are_still_judged() {
    let s = statuses(&budget(BASE), &[dev(0, MIB)], None);
    assert_eq!(status_of_check(&s, "dev0.dynamic-peak"), Status::Skipped);
    assert_eq!(status_of_check(&s, "dev0.oom-events"), Status::Pass);
}
