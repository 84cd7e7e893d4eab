//! Figures + budget + baseline → [`Verdict`]: the findings of `check`, as
//! data. Every reporter renders this one struct.

mod finding;
#[cfg(test)]
mod level_and_trace_tests;
#[cfg(test)]
mod tests;
mod verdict;

use std::collections::{BTreeMap, BTreeSet};

use crate::analysis::{DeviceReport, Figure};
use crate::budget::{Budget, Level, Limit, Target, Tolerance};
use crate::vocab::Unit;

pub use finding::{AllowedBy, Finding};
pub use verdict::*;

/// What one snapshot is judged against.
pub struct Against<'a> {
    pub budget: &'a Budget,
    pub target: &'a Target,
    /// The baseline's path and devices, when there is one.
    pub baseline: Option<(&'a str, &'a [DeviceReport])>,
    pub require_baseline: bool,
}

/// Judge every device of one snapshot.
pub fn judge(
    name: String,
    path: String,
    current: &[DeviceReport],
    against: &Against,
) -> SnapshotVerdict {
    let devices: Vec<DeviceVerdict> = current
        .iter()
        .filter(|d| against.target.device.is_none_or(|want| want == d.device))
        .map(|d| {
            let base = against
                .baseline
                .and_then(|(_, b)| b.iter().find(|x| x.device == d.device));
            judge_device(d, base, against)
        })
        .collect();
    let status = devices
        .iter()
        .flat_map(|d| &d.checks)
        .map(|c| c.status)
        .max()
        .unwrap_or(Status::Skipped);
    SnapshotVerdict {
        name,
        path,
        status,
        baseline: against.baseline.map(|(p, _)| p.to_string()),
        error: None,
        devices,
    }
}

fn judge_device(cur: &DeviceReport, base: Option<&DeviceReport>, a: &Against) -> DeviceVerdict {
    let t = a.target;
    let mut checks = Vec::new();
    if a.require_baseline && base.is_none() {
        checks.push(Check {
            id: "baseline".into(),
            status: Status::Fail,
            unit: Unit::Count,
            current: 0,
            baseline: None,
            budget: None,
            tolerance: None,
            findings: vec![Finding::NoBaseline],
            config_line: Some(t.loc.clone()),
        });
    }
    // An empty trace (history recording off, or cleared): the figures are
    // the state at dump time, not peaks over a run.
    let no_trace = cur.figures.trace_entries == 0;
    for f in Figure::ALL {
        if !t.judges(f, a.budget) {
            continue;
        }
        let current = f.of(&cur.figures);
        let baseline = base.map(|b| f.of(&b.figures));
        let mut check = if f == Figure::OomEvents {
            oom_check(current, baseline, t.budget.get(&f), t)
        } else {
            let floor = if f.is_bytes() {
                a.budget.noise_floor.0
            } else {
                0
            };
            let tol = t.tolerance_of(f, a.budget);
            judge_value(
                f.id(),
                f.unit(),
                current,
                baseline,
                t.budget.get(&f),
                &tol,
                floor,
                t,
            )
        };
        if no_trace && f.is_trace_based() {
            without_trace(&mut check, t, t.level_of(f));
        }
        checks.push(check);
    }
    for (name, limit) in &t.category_budget {
        let current = cur.categories.peaks.get(name).copied().unwrap_or(0);
        let baseline = base.map(|b| b.categories.peaks.get(name).copied().unwrap_or(0));
        let id = format!("category.{name}");
        let tol = a.budget.tolerance.under(Some(limit));
        let mut check = judge_value(
            &id,
            Unit::Bytes,
            current,
            baseline,
            Some(limit),
            &tol,
            a.budget.noise_floor.0,
            t,
        );
        // A category's peak is over the trace, like the trace-based figures.
        if no_trace {
            without_trace(&mut check, t, limit.level);
        }
        checks.push(check);
    }
    DeviceVerdict {
        device: cur.device,
        trace_complete: cur.trace_complete,
        warnings: cur.warnings.clone(),
        checks,
        categories: category_rows(cur, base),
        sites: site_rows(cur, base),
    }
}

/// A trace-based check of a device without a trace: a failure at the
/// figure's level, unless the target's `require-trace = false` has it
/// judged on the dump-time figures (and says so).
fn without_trace(check: &mut Check, t: &Target, level: Level) {
    if t.require_trace {
        check.status = status_of(level);
        check.findings = vec![Finding::NoTrace { judged: false }];
        check.config_line = Some(t.require_trace_loc.clone().unwrap_or_else(|| t.loc.clone()));
    } else {
        check.findings.push(Finding::NoTrace { judged: true });
    }
}

fn status_of(level: Level) -> Status {
    match level {
        Level::Fail => Status::Fail,
        Level::Warn => Status::Warn,
    }
}

#[allow(clippy::too_many_arguments)]
fn judge_value(
    id: &str,
    unit: Unit,
    current: u64,
    baseline: Option<u64>,
    limit: Option<&Limit>,
    tol: &Tolerance,
    noise_floor: u64,
    target: &Target,
) -> Check {
    let mut check = Check {
        id: id.to_string(),
        status: Status::Pass,
        unit,
        current,
        baseline,
        budget: limit.map(|l| l.value.raw()),
        tolerance: baseline.map(|_| tol.pct.0),
        findings: Vec::new(),
        config_line: None,
    };
    if limit.is_none() && baseline.is_none() {
        check.status = Status::Skipped;
        check.findings.push(Finding::NothingToCompare { current });
        return check;
    }
    let mut worst = Status::Pass;
    if let Some(l) = limit {
        if current > l.value.raw() {
            worst = worst.max(status_of(l.level));
            check.config_line = Some(l.loc.clone());
            check.findings.push(Finding::OverBudget {
                limit: l.value.raw(),
                current,
                over: current - l.value.raw(),
            });
        }
    }
    if let Some(b) = baseline {
        let grew = current.saturating_sub(b);
        let over_tol = grew as f64 * 100.0 > tol.pct.0 * b as f64;
        if grew > 0 && over_tol && grew > noise_floor {
            let s = status_of(tol.level);
            if s > worst || check.config_line.is_none() {
                check.config_line = Some(tol.loc.clone().unwrap_or_else(|| target.loc.clone()));
            }
            worst = worst.max(s);
            check.findings.push(Finding::Grew {
                baseline: b,
                current,
                grew,
                percent: check.delta_pct(),
                tolerance: tol.pct.0,
            });
        } else if current < b {
            check.findings.push(Finding::Shrank {
                baseline: b,
                current,
                shrank: b - current,
                percent: -check.delta_pct().unwrap_or(0.0),
            });
        }
    }
    check.status = worst;
    if check.findings.is_empty() {
        check.findings.push(Finding::Within {
            current,
            budget: check.budget,
            baseline,
            tolerance: check.tolerance,
        });
    }
    check
}

/// OOM events: over the explicit budget, else over the baseline's count,
/// else over 0, fails.
fn oom_check(current: u64, baseline: Option<u64>, limit: Option<&Limit>, target: &Target) -> Check {
    let (allowed, level, loc, allowed_by) = match limit {
        Some(l) => (l.value.raw(), l.level, l.loc.clone(), AllowedBy::Budget),
        None => match baseline {
            Some(b) => (b, Level::Fail, target.loc.clone(), AllowedBy::Baseline),
            None => (0, Level::Fail, target.loc.clone(), AllowedBy::Default),
        },
    };
    let over = current > allowed;
    let finding = if over {
        Finding::OomOverAllowed {
            current,
            allowed,
            allowed_by,
        }
    } else {
        Finding::OomWithinAllowed {
            current,
            allowed,
            allowed_by,
        }
    };
    Check {
        id: Figure::OomEvents.id().into(),
        status: if over { status_of(level) } else { Status::Pass },
        unit: Unit::Count,
        current,
        baseline,
        budget: Some(allowed),
        tolerance: None,
        findings: vec![finding],
        config_line: over.then_some(loc),
    }
}

fn category_rows(cur: &DeviceReport, base: Option<&DeviceReport>) -> Vec<CategoryRow> {
    let now = &cur.categories.at_allocated_peak;
    let then = base.map(|b| &b.categories.at_allocated_peak);
    let names: BTreeSet<&String> = now
        .keys()
        .chain(then.into_iter().flat_map(|t| t.keys()))
        .collect();
    names
        .into_iter()
        .map(|n| CategoryRow {
            category: n.clone(),
            baseline: then.map(|t| t.get(n).copied().unwrap_or(0)),
            current: now.get(n).copied().unwrap_or(0),
        })
        .collect()
}

fn site_rows(cur: &DeviceReport, base: Option<&DeviceReport>) -> Vec<SiteRow> {
    let mut rows: BTreeMap<&str, SiteRow> = BTreeMap::new();
    for s in &cur.sites_at_peak {
        rows.entry(&s.site)
            .or_insert_with(|| SiteRow {
                site: s.site.clone(),
                baseline: None,
                current: None,
            })
            .current = Some(s.bytes);
    }
    for s in base.iter().flat_map(|b| &b.sites_at_peak) {
        rows.entry(&s.site)
            .or_insert_with(|| SiteRow {
                site: s.site.clone(),
                baseline: None,
                current: None,
            })
            .baseline = Some(s.bytes);
    }
    let mut rows: Vec<SiteRow> = rows.into_values().collect();
    rows.sort_by(|a, b| {
        b.growth()
            .cmp(&a.growth())
            .then_with(|| a.site.cmp(&b.site))
    });
    rows
}
