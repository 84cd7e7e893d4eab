//! Judging figures that are only lower bounds (a trace that started
//! mid-run): they may fail a check, never pass one.

use std::path::Path;

use super::level_and_trace_tests::{checks, find};
use super::tests::{budget, MIB};
use super::*;
use crate::budget;

/// A device at `peak` whose trace is complete or started mid-run.
fn dev(peak: u64, complete: bool) -> DeviceReport {
    DeviceReport {
        trace_complete: complete,
        ..super::level_and_trace_tests::dev(peak, 9)
    }
}

fn lower(current: bool, baseline: bool, judged: bool) -> Finding {
    Finding::LowerBound {
        current,
        baseline,
        judged,
    }
}

const BUDGETS: &str = "[[target]]\nname = \"t\"\n[target.budget]\n\
    allocated-peak = \"208 MiB\"\nreserved-peak = \"300 MiB\"\n\
    category.activation = \"208 MiB\"\n";

#[test]
fn a_lower_bound_under_its_budget_is_not_judged_and_an_exact_figure_still_is() {
    let c = checks(&budget(BUDGETS), dev(99 * MIB, false), None);
    for id in ["allocated-peak", "category.activation", "oom-events"] {
        let check = find(&c, id);
        assert_eq!(check.status, Status::Error, "{id}");
        assert_eq!(check.findings, [lower(true, false, false)], "{id}");
    }
    // The reserved peak is read from the segments at dump time: exact.
    assert_eq!(find(&c, "reserved-peak").status, Status::Pass);
    assert!(matches!(
        find(&c, "reserved-peak").findings[..],
        [Finding::Within { .. }]
    ));
    // A complete trace judges the same figures as before.
    let c = checks(&budget(BUDGETS), dev(99 * MIB, true), None);
    assert_eq!(find(&c, "allocated-peak").status, Status::Pass);
    assert_eq!(find(&c, "oom-events").status, Status::Pass);
}

#[test]
fn a_lower_bound_over_its_budget_fails_and_says_it_is_a_lower_bound() {
    let c = checks(&budget(BUDGETS), dev(250 * MIB, false), None);
    let check = find(&c, "allocated-peak");
    assert_eq!(check.status, Status::Fail);
    assert!(matches!(
        &check.findings[..],
        [
            Finding::LowerBound { judged: true, .. },
            Finding::OverBudget { .. }
        ]
    ));
}

#[test]
fn a_warn_level_budget_on_a_lower_bound_is_not_judged_either() {
    let b = budget(
        "[[target]]\nname = \"t\"\n[target.budget]\n\
         allocated-peak = { limit = \"208 MiB\", level = \"warn\" }\n",
    );
    let c = checks(&b, dev(99 * MIB, false), None);
    assert_eq!(find(&c, "allocated-peak").status, Status::Error);
}

const GROWTH: &str = "[[target]]\nname = \"t\"\n";

#[test]
fn growth_from_an_exact_baseline_fails_on_a_lower_bound_and_never_passes_on_one() {
    let b = budget(GROWTH);
    let grown = checks(&b, dev(150 * MIB, false), Some(dev(100 * MIB, true)));
    let c = find(&grown, "allocated-peak");
    assert_eq!(c.status, Status::Fail);
    assert_eq!(c.findings[0], lower(true, false, true));
    let within = checks(&b, dev(100 * MIB, false), Some(dev(100 * MIB, true)));
    let c = find(&within, "allocated-peak");
    assert_eq!(c.status, Status::Error);
    assert_eq!(c.findings, [lower(true, false, false)]);
    let shrank = checks(&b, dev(50 * MIB, false), Some(dev(100 * MIB, true)));
    assert_eq!(find(&shrank, "allocated-peak").status, Status::Error);
}

#[test]
fn a_lower_bound_baseline_can_pass_a_growth_check_but_never_fail_one() {
    let b = budget(GROWTH);
    // The real baseline is at least 100 MiB: the real growth is smaller.
    let within = checks(&b, dev(100 * MIB, true), Some(dev(100 * MIB, false)));
    let c = find(&within, "allocated-peak");
    assert_eq!(c.status, Status::Pass);
    assert_eq!(c.findings[0], lower(false, true, true));
    let grown = checks(&b, dev(150 * MIB, true), Some(dev(100 * MIB, false)));
    let c = find(&grown, "allocated-peak");
    assert_eq!(c.status, Status::Error);
    assert_eq!(c.findings[0], lower(false, true, false));
    // Both lower bounds: nothing can be read from their difference.
    for now in [100, 150] {
        let both = checks(&b, dev(now * MIB, false), Some(dev(100 * MIB, false)));
        let c = find(&both, "allocated-peak");
        assert_eq!(c.status, Status::Error, "{now} MiB");
        assert_eq!(c.findings[0], lower(true, true, false));
    }
    // The reserved peak is exact on both sides, so it is judged: by
    // default its growth warns (docs/gate.md#noise).
    let grown = checks(&b, dev(150 * MIB, false), Some(dev(100 * MIB, false)));
    assert_eq!(find(&grown, "reserved-peak").status, Status::Warn);
}

#[test]
fn oom_events_allowed_by_a_lower_bound_baseline_cannot_fail_and_a_lower_bound_count_cannot_pass() {
    let b = budget(GROWTH);
    let mut cur = dev(MIB, true);
    cur.figures.oom_events = 2;
    let mut base = dev(MIB, false);
    base.figures.oom_events = 1;
    let c = checks(&b, cur, Some(base));
    let c = find(&c, "oom-events");
    assert_eq!(c.status, Status::Error);
    assert_eq!(c.findings[0], lower(false, true, false));
    let c = checks(&b, dev(MIB, false), Some(dev(MIB, true)));
    assert_eq!(find(&c, "oom-events").status, Status::Error);
}

#[test]
fn accept_lower_bounds_judges_the_bounds_as_they_are_and_says_so() {
    let b = budget(&BUDGETS.replace(
        "[target.budget]",
        "accept-lower-bounds = true\n[target.budget]",
    ));
    assert!(b.targets[0].accept_lower_bounds);
    let c = checks(&b, dev(99 * MIB, false), None);
    let check = find(&c, "allocated-peak");
    assert_eq!(check.status, Status::Pass);
    assert!(matches!(
        &check.findings[..],
        [
            Finding::LowerBound { judged: true, .. },
            Finding::Within { .. }
        ]
    ));
    assert_eq!(find(&c, "oom-events").status, Status::Pass);
}

#[test]
fn accept_lower_bounds_is_a_boolean() {
    let e = budget::parse(
        "[[target]]\nname = \"t\"\naccept-lower-bounds = \"yes\"\n",
        "memgate.toml",
        Path::new(""),
        false,
    )
    .unwrap_err();
    let e: Vec<String> = e.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        e,
        ["memgate.toml:3:23: `target.accept-lower-bounds`: must be true or false, not string"]
    );
}
