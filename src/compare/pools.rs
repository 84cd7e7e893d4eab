//! The checks of a device's memory pools (docs/figures.md#pools): each
//! `[target.budget.pool."NAME"]` limit, and with a baseline each pool's
//! allocated peak against the baseline's, a pool that appeared or vanished
//! said as such.

use super::{judge_value, lower_bounds, Against, Bounds, Check, CheckId, Finding, Status};
use crate::analysis::{DeviceReport, Figure, PoolFigures, PoolKind};
use crate::budget::Limit;
use crate::vocab::Unit;

/// The pool checks of `cur`, judged against its budget and `base`.
pub(super) fn pool_checks(
    cur: &DeviceReport,
    base: Option<&DeviceReport>,
    a: &Against,
) -> Vec<Check> {
    let mut checks = Vec::new();
    for l in &a.target.pool_budget {
        checks.push(pool_check(&l.pool, l.figure, Some(&l.limit), cur, base, a));
    }
    // With a baseline, every pool either side has is compared on its
    // allocated peak, unless a budget above already judged it.
    let Some(base) = base.filter(|b| !b.pools.is_empty() || !cur.pools.is_empty()) else {
        return checks;
    };
    let mut names: Vec<&str> = (cur.pools.iter().chain(&base.pools))
        .filter(|p| p.kind != PoolKind::Unknown)
        .map(|p| p.name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let judged = checks.iter().any(|c| {
            matches!(&c.id, CheckId::Pool { pool, figure } if pool == name && *figure == Figure::AllocatedPeak)
        });
        if !judged {
            checks.push(pool_check(
                name,
                Figure::AllocatedPeak,
                None,
                cur,
                Some(base),
                a,
            ));
        }
    }
    checks
}

/// A pool's figure by name, in a device's report.
fn pool_of<'a>(d: &'a DeviceReport, name: &str) -> Option<&'a PoolFigures> {
    d.pools.iter().find(|p| p.name == name)
}

/// The bytes no entry or dumped segment places in a pool: every pool's
/// figures are then lower bounds.
fn unplaced(d: &DeviceReport) -> Option<u64> {
    (d.pools.iter())
        .find(|p| p.kind == PoolKind::Unknown)
        .map(|p| p.allocated_peak.max(p.reserved_peak))
}

/// One pool figure's check: against its limit and the baseline's pool;
/// an error when the pool is not on the device and a limit names it, a
/// report when it appeared or vanished since the baseline.
fn pool_check(
    name: &str,
    figure: Figure,
    limit: Option<&Limit>,
    cur: &DeviceReport,
    base: Option<&DeviceReport>,
    a: &Against,
) -> Check {
    let id = CheckId::Pool {
        pool: name.to_string(),
        figure,
    };
    let value = |p: &PoolFigures| match figure {
        Figure::ReservedPeak => p.reserved_peak,
        _ => p.allocated_peak,
    };
    let baseline = base.and_then(|b| pool_of(b, name)).map(value);
    let Some(current) = pool_of(cur, name).map(value) else {
        return absent(id, name, limit, baseline, cur, a);
    };
    let tol = match limit {
        Some(l) if !a.target.tolerance.contains_key(&figure) => a.budget.tolerance.under(Some(l)),
        _ => a.target.tolerance_of(figure, a.budget),
    };
    let bounds = Bounds {
        current: lower_bounds(cur) || unplaced(cur).is_some(),
        baseline: base.is_some_and(|b| lower_bounds(b) || unplaced(b).is_some()),
        accepted: a.target.accept_lower_bounds,
    };
    let mut check = judge_value(
        id,
        Unit::Bytes,
        current,
        baseline,
        limit,
        &tol,
        a.budget.noise_floor.0,
        a.target,
        bounds,
    );
    if let Some(bytes) = unplaced(cur) {
        check.findings.push(Finding::PoolUnplaced { bytes });
    }
    if baseline.is_none() && base.is_some() {
        check.findings.push(Finding::PoolAppeared {
            pool: name.to_string(),
        });
    }
    check
}

/// The check of a pool the device does not have: an error when a limit
/// names it (nothing was judged), reported when only the baseline had it.
fn absent(
    id: CheckId,
    name: &str,
    limit: Option<&Limit>,
    baseline: Option<u64>,
    cur: &DeviceReport,
    a: &Against,
) -> Check {
    let pools = cur.pools.iter().map(|p| p.name.clone()).collect();
    let mut check = Check {
        baseline,
        budget: limit.map(|l| l.value.raw()),
        budget_written: limit.map(|l| l.written.clone()),
        config_line: Some(limit.map_or_else(|| a.target.loc.clone(), |l| l.loc.clone())),
        ..Check::new(id, Status::Reported, Unit::Bytes, 0)
    };
    if let Some(b) = baseline {
        check.findings.push(Finding::PoolVanished {
            pool: name.to_string(),
            baseline: b,
        });
    }
    if limit.is_some() {
        check.status = Status::Error;
        check.findings.insert(
            0,
            Finding::NoSuchPool {
                pool: name.to_string(),
                pools,
            },
        );
    }
    check
}
