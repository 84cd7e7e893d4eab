//! Judging one device: report-only figures, the figures judged by default,
//! and a device without an allocation trace.

use std::path::Path;

use super::*;
use crate::analysis::{Categories, Figures, PeakEntry};
use crate::budget;

const MIB: u64 = 1 << 20;

fn budget(text: &str) -> Budget {
    budget::parse(text, "memgate.toml", Path::new(""), false).unwrap()
}

/// A device at `peak`, with a trace of `entries` entries.
pub(super) fn dev(peak: u64, entries: u64) -> DeviceReport {
    let mut categories = Categories::default();
    categories.peaks.insert("activation".into(), peak);
    DeviceReport {
        device: crate::vocab::Device::new(0),
        figures: Figures {
            dynamic_peak: peak,
            static_memory: MIB,
            overall_peak: peak,
            allocated_peak: peak,
            reserved_peak: peak,
            trace_entries: entries,
            ..Figures::default()
        },
        categories,
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

/// Every check of the one device: id, status, findings.
pub(super) fn checks(b: &Budget, cur: DeviceReport, base: Option<DeviceReport>) -> Vec<Check> {
    let base: Vec<DeviceReport> = base.into_iter().collect();
    let against = Against {
        budget: b,
        target: &b.targets[0],
        baseline: (!base.is_empty()).then_some(("golden.json", base.as_slice())),
        require_baseline: false,
        lookup: None,
    };
    let v = judge("rank0".into(), "rank0.json".into(), &[cur], &against);
    v.devices[0].checks.clone()
}

pub(super) fn find<'a>(checks: &'a [Check], id: &str) -> &'a Check {
    checks.iter().find(|c| c.id.to_string() == id).unwrap()
}

const BASE: &str = "[[target]]\nname = \"t\"\n";

#[test]
fn a_warn_level_budget_makes_the_figures_growth_warn_too() {
    let b = budget(&format!(
        "{BASE}[target.budget]\ndynamic-peak = {{ limit = \"1 GiB\", level = \"warn\" }}\n"
    ));
    let c = checks(&b, dev(200 * MIB, 9), Some(dev(100 * MIB, 9)));
    assert_eq!(find(&c, "dynamic-peak").status, Status::Warn);
    assert!(matches!(
        find(&c, "dynamic-peak").findings[..],
        [Finding::Grew { .. }]
    ));
    // The figures without a warn-level budget still fail on the same growth.
    assert_eq!(find(&c, "overall-peak").status, Status::Fail);
}

#[test]
fn an_explicit_tolerance_keeps_its_own_level_beside_a_warn_level_budget() {
    let b = budget(&format!(
        "{BASE}[target.budget]\ndynamic-peak = {{ limit = \"1 GiB\", level = \"warn\" }}\n\
         [target.tolerance]\ndynamic-peak = \"5%\"\n"
    ));
    let c = checks(&b, dev(200 * MIB, 9), Some(dev(100 * MIB, 9)));
    assert_eq!(find(&c, "dynamic-peak").status, Status::Fail);
}

#[test]
fn a_warn_level_category_budget_makes_the_categorys_growth_warn_too() {
    let b = budget(&format!(
        "{BASE}[target.budget.category]\nactivation = {{ limit = \"1 GiB\", level = \"warn\" }}\n"
    ));
    let c = checks(&b, dev(200 * MIB, 9), Some(dev(100 * MIB, 9)));
    assert_eq!(find(&c, "category.activation").status, Status::Warn);
}

#[test]
fn defaults_figures_chooses_the_judged_figures_and_a_budgeted_one_is_judged_anyway() {
    let b = budget(&format!(
        "[defaults]\nfigures = [\"allocated-peak\"]\n{BASE}[target.budget]\nstatic-memory = \"1 GiB\"\n"
    ));
    let c = checks(&b, dev(200 * MIB, 9), Some(dev(100 * MIB, 9)));
    let ids: Vec<String> = c.iter().map(|c| c.id.to_string()).collect();
    assert_eq!(ids, ["static-memory", "allocated-peak"]);
    // One regression, one failure (the three peaks moved together).
    assert_eq!(c.iter().filter(|c| c.status == Status::Fail).count(), 1);
}

#[test]
fn without_defaults_figures_the_gated_figures_are_judged() {
    let c = checks(&budget(BASE), dev(MIB, 9), None);
    let ids: Vec<String> = c.iter().map(|c| c.id.to_string()).collect();
    let gated: Vec<&str> = Figure::ALL
        .iter()
        .filter(|f| f.gated_by_default())
        .map(|f| f.id())
        .collect();
    assert_eq!(ids, gated);
}

#[test]
fn an_empty_trace_fails_the_trace_based_figures_and_judges_the_dump_time_ones() {
    let b = budget(&format!(
        "{BASE}[target.budget]\nallocated-peak = \"1 GiB\"\nreserved-peak = \"1 GiB\"\n"
    ));
    let c = checks(&b, dev(100 * MIB, 0), None);
    for id in [
        "dynamic-peak",
        "overall-peak",
        "allocated-peak",
        "oom-events",
    ] {
        let check = find(&c, id);
        assert_eq!(check.status, Status::Fail, "{id}");
        assert_eq!(check.findings, [Finding::NoTrace { judged: false }], "{id}");
    }
    assert_eq!(find(&c, "reserved-peak").status, Status::Pass);
    assert_eq!(find(&c, "static-memory").status, Status::Reported);
    assert!(!find(&c, "static-memory")
        .findings
        .contains(&Finding::NoTrace { judged: false }));
}

#[test]
fn require_trace_false_judges_an_empty_trace_on_the_dump_time_numbers_and_says_so() {
    let b = budget(&format!(
        "{BASE}require-trace = false\n[target.budget]\nallocated-peak = \"1 GiB\"\n"
    ));
    let c = checks(&b, dev(100 * MIB, 0), None);
    let check = find(&c, "allocated-peak");
    assert_eq!(check.status, Status::Pass);
    assert_eq!(
        check.findings.last(),
        Some(&Finding::NoTrace { judged: true })
    );
    let over = checks(&b, dev(2048 * MIB, 0), None);
    assert_eq!(find(&over, "allocated-peak").status, Status::Fail);
}

#[test]
fn an_empty_trace_only_warns_for_a_report_only_figure_and_a_trace_is_judged_as_usual() {
    let b = budget(&format!(
        "{BASE}[target.budget]\nallocated-peak = {{ limit = \"1 GiB\", level = \"warn\" }}\n"
    ));
    let c = checks(&b, dev(100 * MIB, 0), None);
    assert_eq!(find(&c, "allocated-peak").status, Status::Warn);
    let traced = checks(&b, dev(100 * MIB, 1), None);
    assert_eq!(find(&traced, "allocated-peak").status, Status::Pass);
    assert!(traced.iter().all(|c| !c
        .findings
        .iter()
        .any(|f| matches!(f, Finding::NoTrace { .. }))));
}
