//! One stable name per measured value of a verdict, for the dashboards
//! that keep trends (Bencher, github-action-benchmark, and the Python
//! `metrics()` dicts): `TARGET/SNAPSHOT/deviceN/FIGURE`, e.g.
//! `train/rank0/device0/allocated-peak`.
//!
//! A name is fixed by what was measured, never by a value, so a dashboard
//! keeps one line per figure across runs. Every part is escaped as on the
//! terminal (a hidden character shows as its Rust escape). A second
//! snapshot of a target under the same name gets ` (2)` after its name, as
//! in the JUnit and metrics reports.
//!
//! Only values a dashboard can plot as they are: the `baseline` and
//! `window` checks measure nothing and have no series, and a current value
//! that is only a lower bound (its trace started mid-run) is left out
//! rather than drawn as if it were the figure.

use std::collections::HashSet;

use super::escape::terminal;
use crate::compare::{Check, CheckId, Finding, Verdict};

/// One plotted value: its name and the check it comes from.
pub(crate) struct Series<'a> {
    pub(crate) name: String,
    pub(crate) check: &'a Check,
}

/// Whether the check's current value is only a lower bound.
fn lower_bound(c: &Check) -> bool {
    c.findings
        .iter()
        .any(|f| matches!(f, Finding::LowerBound { current: true, .. }))
}

/// Every plotted value of the verdict, in the order of the JSON report.
pub(crate) fn series(v: &Verdict) -> Vec<Series<'_>> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for (t, s, d, c) in v.checks() {
        if matches!(c.id, CheckId::Baseline | CheckId::Window) || lower_bound(c) {
            continue;
        }
        let mut n = 1;
        let name = loop {
            let snapshot = if n == 1 {
                terminal(&s.name).into_owned()
            } else {
                format!("{} ({n})", terminal(&s.name))
            };
            let name = format!(
                "{}/{snapshot}/device{}/{}",
                terminal(&t.name),
                d.device,
                terminal(&c.id.to_string())
            );
            if seen.insert(name.clone()) {
                break name;
            }
            n += 1;
        };
        out.push(Series { name, check: c });
    }
    out
}
