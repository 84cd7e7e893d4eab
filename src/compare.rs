//! Figures + budget + baseline → [`Verdict`]: the findings of `check`, as
//! data. Every reporter renders this one struct.

#[cfg(test)]
mod accounting_tests;
mod capacity;
mod finding;
mod group;
#[cfg(test)]
mod level_and_trace_tests;
#[cfg(test)]
mod lower_bound_tests;
mod natural;
mod pools;
mod ranks;
mod reading;
pub mod repeats;
#[cfg(test)]
mod tests;
mod verdict;
pub mod waivers;

use crate::vocab::Device;
use std::collections::{BTreeMap, BTreeSet};

use crate::analysis::{DeviceReport, Figure, OomDetail, PeakAt};
use crate::budget::{Budget, Level, Limit, Target, Tolerance};
use crate::vocab::Unit;

pub use finding::{AllowedBy, Finding, Lookup};
pub use group::{figure_names, Regression};
pub use ranks::{
    judge_ranks, saturating_u64, GroupFigures, RankCheckId, RankInput, RankRow, RanksVerdict,
};
pub use reading::{Cause, CauseRow};
pub use verdict::*;

/// What one snapshot is judged against.
pub struct Against<'a> {
    pub budget: &'a Budget,
    pub target: &'a Target,
    /// The baseline's path and devices, when there is one.
    pub baseline: Option<(&'a str, &'a [DeviceReport])>,
    /// Where the baseline was looked for in vain, when it was.
    pub lookup: Option<&'a Lookup>,
    pub require_baseline: bool,
}

impl Against<'_> {
    /// Whether a baseline was expected: configured for the snapshot, or
    /// required.
    fn expects_baseline(&self) -> bool {
        self.baseline.is_some() || self.lookup.is_some() || self.require_baseline
    }

    /// A missing baseline entry warns, or fails with `--require-baseline`.
    fn missing_status(&self) -> Status {
        if self.require_baseline {
            Status::Fail
        } else {
            Status::Warn
        }
    }
}

/// Judge every device of one snapshot, and account for every device of
/// its baseline: one the run lacks, or one listed twice, is a check of its
/// own, never skipped silently.
pub fn judge(
    name: String,
    path: String,
    current: &[DeviceReport],
    against: &Against,
) -> SnapshotVerdict {
    let wanted = |d: &&DeviceReport| against.target.device.is_none_or(|want| want == d.device);
    let now: Vec<&DeviceReport> = current.iter().filter(wanted).collect();
    let then: Vec<&DeviceReport> = against
        .baseline
        .map(|(_, b)| b.iter().filter(wanted).collect())
        .unwrap_or_default();
    let twice_now = listed_twice(&now);
    let twice_then = listed_twice(&then);
    let mut devices: Vec<DeviceVerdict> = now
        .iter()
        .map(|d| {
            let twice = if twice_now.contains(&d.device) {
                Some(path.clone())
            } else if twice_then.contains(&d.device) {
                against.baseline.map(|(p, _)| p.to_string())
            } else {
                None
            };
            match twice {
                Some(file) => account(d.device, Status::Error, Finding::DeviceListedTwice { file }),
                None => judge_device(
                    d,
                    then.iter().copied().find(|b| b.device == d.device),
                    against,
                ),
            }
        })
        .collect();
    if let Some((base_path, _)) = against.baseline {
        let gone: BTreeSet<Device> = then
            .iter()
            .map(|b| b.device)
            .filter(|dev| !now.iter().any(|d| d.device == *dev))
            .collect();
        for dev in gone {
            let finding = Finding::DeviceNotInRun {
                baseline: base_path.to_string(),
                devices: now.iter().map(|d| d.device).collect(),
            };
            devices.push(account(dev, against.missing_status(), finding));
        }
    }
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

/// The devices of a judged snapshot that its window places nothing on
/// (`missed`): each is listed with one skipped `window` check saying why,
/// in place of anything else said of it (its baseline entry has nothing
/// of this window to compare either). Not judged, never passed.
pub fn window_not_placed(v: &mut SnapshotVerdict, missed: Vec<crate::analysis::WindowError>) {
    for e in missed {
        v.devices.retain(|d| d.device != e.device);
        let check = Check {
            findings: vec![Finding::WindowNotPlaced {
                window: e.window,
                problem: e.problem,
            }],
            ..Check::new(CheckId::Window, Status::Skipped, Unit::Count, 0)
        };
        v.devices.push(DeviceVerdict {
            device: e.device,
            peak_phase: None,
            oom: Vec::new(),
            trace_complete: true,
            warnings: Vec::new(),
            checks: vec![check],
            categories: Vec::new(),
            sites: Vec::new(),
            window: None,
            pools: Vec::new(),
        });
    }
    v.devices.sort_by_key(|d| d.device);
    v.status = v.worst_check();
}

/// A baseline entry no snapshot of the run is named after: it warns, or
/// fails with `--require-baseline`, once per device it holds.
pub fn no_snapshot(
    name: String,
    baseline: String,
    devices: &[DeviceReport],
    require_baseline: bool,
) -> SnapshotVerdict {
    let status = if require_baseline {
        Status::Fail
    } else {
        Status::Warn
    };
    let finding = Finding::NoSnapshot {
        name: name.clone(),
        baseline: baseline.clone(),
    };
    let mut seen = BTreeSet::new();
    let devices: Vec<DeviceVerdict> = devices
        .iter()
        .filter(|d| seen.insert(d.device))
        .map(|d| account(d.device, status, finding.clone()))
        .collect();
    SnapshotVerdict {
        name,
        path: baseline.clone(),
        status: if devices.is_empty() {
            Status::Skipped
        } else {
            status
        },
        baseline: Some(baseline),
        error: None,
        devices,
    }
}

/// The devices listed more than once.
fn listed_twice(devices: &[&DeviceReport]) -> BTreeSet<Device> {
    let mut seen = BTreeSet::new();
    devices
        .iter()
        .filter(|d| !seen.insert(d.device))
        .map(|d| d.device)
        .collect()
}

/// A device with one `baseline` check saying what is wrong with its
/// baseline entry (no figures judged).
fn account(device: Device, status: Status, finding: Finding) -> DeviceVerdict {
    DeviceVerdict {
        device,
        peak_phase: None,
        oom: Vec::new(),
        trace_complete: true,
        warnings: Vec::new(),
        checks: vec![baseline_check(status, finding, None)],
        categories: Vec::new(),
        sites: Vec::new(),
        window: None,
        pools: Vec::new(),
    }
}

fn baseline_check(status: Status, finding: Finding, line: Option<crate::budget::Loc>) -> Check {
    Check {
        findings: vec![finding],
        config_line: line,
        ..Check::new(CheckId::Baseline, status, Unit::Count, 0)
    }
}

/// Why a device is judged without a baseline, when one was expected.
fn no_base_device(a: &Against) -> Option<Finding> {
    match (a.baseline, a.lookup) {
        (Some((path, devices)), _) => Some(Finding::BaselineLacksDevice {
            baseline: path.to_string(),
            devices: devices.iter().map(|d| d.device).collect(),
        }),
        (None, Some(lookup)) => Some(lookup.finding()),
        (None, None) if a.require_baseline => Some(Finding::NoBaseline {
            looked_for: None,
            in_dir: None,
            close: Vec::new(),
            close_not_searched: false,
        }),
        (None, None) => None,
    }
}

fn judge_device(cur: &DeviceReport, base: Option<&DeviceReport>, a: &Against) -> DeviceVerdict {
    let t = a.target;
    let mut checks = Vec::new();
    let missing = if base.is_none() && a.expects_baseline() {
        no_base_device(a)
    } else {
        None
    };
    if let Some(why) = &missing {
        checks.push(baseline_check(
            a.missing_status(),
            why.clone(),
            Some(t.loc.clone()),
        ));
    }
    if let Some(c) = environment_check(cur, base, t) {
        checks.push(c);
    }
    let capacity = capacity::Capacity::of(cur, t, a.budget);
    for f in Figure::ALL {
        match judged_here(f, cur, a) {
            Judged::No => {}
            Judged::NotMeasured => checks.push(not_measured(f, cur, t)),
            Judged::Yes => checks.push(figure_check(f, cur, base, a, capacity)),
        }
    }
    let (category_checks, category_base) = category_checks(cur, base, a);
    checks.extend(category_checks);
    for (phase, figure, limit, tol) in t.phase_checks(a.budget) {
        checks.push(phase_check(
            &phase,
            figure,
            limit.as_ref(),
            &tol,
            cur,
            base,
            a,
        ));
    }
    checks.extend(pools::pool_checks(cur, base, a));
    // A figure only reported for want of a baseline says which one was
    // missing.
    if let Some(why) = missing {
        for c in checks.iter_mut().skip(1) {
            if c.status == Status::Reported {
                c.findings.push(why.clone());
            }
        }
    }
    for c in checks.iter_mut().filter(|c| c.status >= Status::Warn) {
        explain_when(c, cur, base);
    }
    DeviceVerdict {
        device: cur.device,
        peak_phase: cur.peak_phase.clone(),
        oom: cur.oom.clone(),
        trace_complete: cur.trace_complete,
        warnings: cur.warnings.clone(),
        checks,
        categories: category_rows(cur, category_base),
        sites: site_rows(cur, base),
        window: cur.window.clone(),
        pools: cur.pools.clone(),
    }
}

/// Whether figure `f` is judged on `cur`.
enum Judged {
    Yes,
    No,
    /// Named by the target, but not what this snapshot has.
    NotMeasured,
}

/// Whether the target judges figure `f` on `cur`: a host-only snapshot
/// (docs/figures.md#pinned-host-memory) is judged on its host figures
/// alone; a device figure the target names is not judged there, and says
/// so; one judged by default is left out.
fn judged_here(f: Figure, cur: &DeviceReport, a: &Against) -> Judged {
    let t = a.target;
    let host_only = cur.host.is_some_and(|h| h.only);
    if !(t.judges(f, a.budget) || (host_only && f.gated_on_host_only())) {
        return Judged::No;
    }
    if host_only && !f.is_host() {
        let named = t.budget.contains_key(&f) || t.tolerance.contains_key(&f);
        return if named {
            Judged::NotMeasured
        } else {
            Judged::No
        };
    }
    Judged::Yes
}

/// The check of figure `f` of `cur`: against its budget (a share of a
/// device capacity resolved first) and the baseline's value.
fn figure_check(
    f: Figure,
    cur: &DeviceReport,
    base: Option<&DeviceReport>,
    a: &Against,
    capacity: Option<capacity::Capacity>,
) -> Check {
    let t = a.target;
    // An empty trace (history recording off, or cleared): the figures are
    // the state at dump time, not peaks over a run.
    let no_trace = cur.figures.trace_entries == 0;
    let Some(current) = f.value(cur) else {
        return not_measured(f, cur, t);
    };
    let limit = match t
        .budget
        .get(&f)
        .map(|l| capacity::resolve(l, capacity, cur.figures.reserved_peak))
    {
        Some(Err(share)) => {
            let why = Finding::NoDeviceMemory { share };
            return no_capacity(f, current, why, t);
        }
        Some(Ok(l)) => Some(l),
        None => None,
    };
    let baseline = base.and_then(|b| f.value(b));
    let bounds = if f.is_trace_based() {
        Bounds::of(cur, base, t)
    } else {
        Bounds::default()
    };
    let mut check = if f == Figure::OomEvents {
        oom_check(current, baseline, limit.as_deref(), t, &cur.oom, bounds)
    } else {
        let floor = if f.is_bytes() {
            a.budget.noise_floor.0
        } else {
            0
        };
        let tol = t.tolerance_of(f, a.budget);
        judge_value(
            CheckId::Figure(f),
            f.unit(),
            current,
            baseline,
            limit.as_deref(),
            &tol,
            floor,
            t,
            bounds,
        )
    };
    if no_trace && f.is_trace_based() {
        without_trace(&mut check, t, t.level_of(f));
    }
    if f == Figure::LeakPerIteration {
        leak_fit(&mut check, cur);
    }
    if let Some(c) = capacity.filter(|_| capacity::is_peak(f)) {
        check.findings.push(c.headroom(current));
    }
    if f.needs_iterations() {
        if let Some(differ) = boundary_differs(cur, base) {
            check.status = Status::Error;
            check.findings.insert(0, differ);
        }
    }
    check
}

/// `[target.budget.category]`: each category's peak against its limit and
/// the baseline's, and the baseline compared (none when its categories
/// come from other rules).
fn category_checks<'a>(
    cur: &DeviceReport,
    base: Option<&'a DeviceReport>,
    a: &Against,
) -> (Vec<Check>, Option<&'a DeviceReport>) {
    let t = a.target;
    let no_trace = cur.figures.trace_entries == 0;
    let mut checks = Vec::new();
    // Category bytes from other rules are other categories: no growth
    // can be read from them.
    let other_rules = base
        .filter(|b| b.categories.rules != cur.categories.rules)
        .map(|b| Finding::RulesDiffer {
            baseline: b.categories.rules.clone(),
            current: cur.categories.rules.clone(),
        });
    let category_base = if other_rules.is_some() { None } else { base };
    for (name, limit) in &t.category_budget {
        let current = cur.categories.peaks.get(name).copied().unwrap_or(0);
        let baseline = category_base.map(|b| b.categories.peaks.get(name).copied().unwrap_or(0));
        let id = CheckId::Category(name.clone());
        let tol = a.budget.tolerance.under(Some(limit));
        let mut check = judge_value(
            id,
            Unit::Bytes,
            current,
            baseline,
            Some(limit),
            &tol,
            a.budget.noise_floor.0,
            t,
            Bounds::of(cur, category_base, t),
        );
        // A category's peak is over the trace, like the trace-based figures.
        if no_trace {
            without_trace(&mut check, t, limit.level);
        }
        if let Some(differ) = &other_rules {
            check.status = Status::Error;
            check.findings.insert(0, differ.clone());
        }
        checks.push(check);
    }
    (checks, category_base)
}

/// Put the leak fit's residual beside the leak figure, and refuse a leak
/// verdict the fit cannot support: a slope that would fail, from a fit
/// whose residual is larger than the slope, is no line of growth (a one-off
/// step after warm-up, or noise) and is not judged (an error, never a pass
/// and never a fail). At `level = "warn"` it still only warns, saying so.
/// A summary written before the residual was kept has none to show.
fn leak_fit(check: &mut Check, cur: &DeviceReport) {
    let Some(residual) = cur.time.as_ref().and_then(|t| t.leak_residual) else {
        return;
    };
    let slope = check.current;
    if check.status >= Status::Warn && residual > slope {
        if check.status == Status::Fail {
            check.status = Status::Error;
        }
        check
            .findings
            .insert(0, Finding::LeakInconclusive { slope, residual });
    } else {
        check.findings.push(Finding::LeakFit { residual });
    }
}

/// A check saying how the baseline's environment differs from the run's,
/// when both are known and differ: a warning, or a failure when the
/// target sets `same-environment = true`.
fn environment_check(cur: &DeviceReport, base: Option<&DeviceReport>, t: &Target) -> Option<Check> {
    let (b, c) = (base?.environment.as_ref()?, cur.environment.as_ref()?);
    let differences = crate::analysis::environment::Fingerprint::differences(b, c);
    if differences.is_empty() {
        return None;
    }
    let status = if t.same_environment {
        Status::Fail
    } else {
        Status::Warn
    };
    let mut check = baseline_check(
        status,
        Finding::EnvironmentDiffers {
            differences,
            required: t.same_environment,
        },
        Some(t.loc.clone()),
    );
    check.id = CheckId::Environment;
    Some(check)
}

/// The baseline's and the run's iteration boundaries, when both have
/// iterations and they differ.
fn boundary_differs(cur: &DeviceReport, base: Option<&DeviceReport>) -> Option<Finding> {
    let of = |d: &DeviceReport| d.time.as_ref().and_then(|t| t.boundary.clone());
    match (base.and_then(of), of(cur)) {
        (Some(baseline), Some(current)) if baseline != current => {
            Some(Finding::BoundaryDiffers { baseline, current })
        }
        _ => None,
    }
}

/// Say when a failing or warning figure was reached: the place of the peak
/// it is read at (and the baseline's, when that lies in another phase or
/// iteration), and the window it was judged in.
fn explain_when(c: &mut Check, cur: &DeviceReport, base: Option<&DeviceReport>) {
    let peak = match c.id {
        CheckId::Figure(Figure::AllocatedPeak) => Some(PeakAt::AllocatedPeak),
        // The overall peak is static memory plus the dynamic peak.
        CheckId::Figure(Figure::DynamicPeak | Figure::OverallPeak) => Some(PeakAt::DynamicPeak),
        CheckId::Figure(Figure::ReservedPeak) => Some(PeakAt::ReservedPeak),
        _ => None,
    };
    let place_of = |d: &DeviceReport, at| d.peak_phase.as_ref().and_then(|p| p.of(at)).cloned();
    if let Some(at) = peak {
        if let Some(place) = place_of(cur, at) {
            let baseline = base
                .and_then(|b| place_of(b, at))
                .filter(|b| b.annotation != place.annotation || b.iteration != place.iteration);
            c.findings.push(Finding::PeakAt {
                peak: at,
                place,
                baseline,
            });
        }
    }
    if let Some(w) = &cur.window {
        c.findings.push(Finding::InWindow { window: w.clone() });
    }
}

/// A budget written as a share of the device, on a device whose memory
/// nothing states: not judged (docs/figures.md#device-capacity), never passed.
fn no_capacity(f: Figure, current: u64, why: Finding, t: &Target) -> Check {
    Check {
        findings: vec![why],
        config_line: Some(t.budget.get(&f).map_or(t.loc.clone(), |l| l.loc.clone())),
        budget_written: t.budget.get(&f).map(|l| l.written.clone()),
        ..Check::new(CheckId::Figure(f), Status::Error, f.unit(), current)
    }
}

/// A time-structure figure the device lacks: the target asked for it, so
/// the gate cannot judge (never green on nothing).
fn not_measured(f: Figure, cur: &DeviceReport, t: &Target) -> Check {
    let iterations = cur.time.as_ref().map_or(0, |x| x.iterations);
    // A steady state needs a second iteration; a leak fit three after the first.
    let needed = match f {
        Figure::LeakPerIteration => crate::analysis::phases::MIN_LEAK_POINTS as u64 + 1,
        _ => 2,
    };
    let why = if cur.host.is_some_and(|h| h.only) && !f.gated_on_host_only() {
        Finding::HostOnly
    } else if f.is_host() {
        Finding::NoHostMemory {
            recorded: cur.host.is_some(),
        }
    } else {
        Finding::NotMeasured { iterations, needed }
    };
    Check {
        budget: t.budget.get(&f).map(|l| l.value.raw()),
        findings: vec![why],
        config_line: Some(t.budget.get(&f).map_or(t.loc.clone(), |l| l.loc.clone())),
        ..Check::new(CheckId::Figure(f), Status::Error, f.unit(), 0)
    }
}

/// `[target.budget.phase."NAME"]` / `[target.tolerance.phase."NAME"]`: the
/// figure over the phase's spans (the maximum over its occurrences),
/// against its limit and the baseline's.
fn phase_check(
    phase: &str,
    figure: Figure,
    limit: Option<&Limit>,
    tol: &Tolerance,
    cur: &DeviceReport,
    base: Option<&DeviceReport>,
    a: &Against,
) -> Check {
    let id = CheckId::Phase {
        phase: phase.to_string(),
        figure,
    };
    let of = |d: &DeviceReport| {
        d.time
            .as_ref()
            .and_then(|t| t.phases.get(phase))
            .and_then(|x| x.value(figure))
    };
    let Some(current) = of(cur) else {
        let phases = cur
            .time
            .as_ref()
            .map(|t| t.phases.keys().cloned().collect())
            .unwrap_or_default();
        return Check {
            id,
            status: Status::Error,
            unit: Unit::Bytes,
            current: 0,
            baseline: None,
            budget: limit.map(|l| l.value.raw()),
            tolerance: None,
            findings: vec![Finding::NoSuchPhase {
                phase: phase.to_string(),
                phases,
            }],
            config_line: Some(
                limit
                    .map(|l| l.loc.clone())
                    .or_else(|| tol.loc.clone())
                    .unwrap_or_else(|| a.target.loc.clone()),
            ),
            budget_written: None,
            headroom: None,
            echo_of: None,
            regression: None,
        };
    };
    judge_value(
        id,
        Unit::Bytes,
        current,
        base.and_then(of),
        limit,
        tol,
        a.budget.noise_floor.0,
        a.target,
        Bounds::of(cur, base, a.target),
    )
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

/// Whether the trace-based figures of `d` are only lower bounds: its trace
/// started mid-run (docs/figures.md#lower-bounds). An empty trace is not a
/// partial one: `require-trace` judges it.
pub fn lower_bounds(d: &DeviceReport) -> bool {
    !d.trace_complete && d.figures.trace_entries > 0
}

/// Which sides of a comparison are only lower bounds: their trace started
/// mid-run (the ring buffer dropped its start), so the real figure is at
/// least that. A lower bound can fail a check (over a budget, or grown
/// from an exact baseline) but never pass one; a baseline that is a lower
/// bound can pass a growth check (the real growth is smaller) but never
/// fail one. Static memory and the reserved peak are exact (dump-time
/// facts of the segments); every trace-based figure, category peak and
/// phase figure is a lower bound of a trace that started mid-run.
#[derive(Debug, Clone, Copy, Default)]
struct Bounds {
    current: bool,
    baseline: bool,
    /// The target's `accept-lower-bounds = true`: judged as they are.
    accepted: bool,
}

impl Bounds {
    /// The bounds of a trace-based figure of `cur` against `base`. An
    /// empty trace is not a partial one: `require-trace` judges it.
    fn of(cur: &DeviceReport, base: Option<&DeviceReport>, t: &Target) -> Bounds {
        Bounds {
            current: lower_bounds(cur),
            baseline: base.is_some_and(lower_bounds),
            accepted: t.accept_lower_bounds,
        }
    }

    /// Whether a value on this side is taken as it is.
    fn exact(self, lower: bool) -> bool {
        !lower || self.accepted
    }

    /// Give `check` its status: `worst`, what it surely is, unless `open`,
    /// the worst its lower bounds leave possible, is worse; then it could
    /// not be judged. Either way it says which figures are lower bounds.
    fn settle(self, check: &mut Check, worst: Status, open: Status, target: &Target) {
        let baseline = self.baseline && check.baseline.is_some();
        if !self.current && !baseline {
            check.status = worst;
            return;
        }
        let judged = open <= worst;
        check.status = if judged { worst } else { Status::Error };
        if !judged {
            // What was found is moot: only why it could not be judged.
            check.findings.retain(|f| {
                !matches!(f, Finding::Within { .. } | Finding::OomWithinAllowed { .. })
            });
            check.config_line.get_or_insert_with(|| target.loc.clone());
        }
        check.findings.insert(
            0,
            Finding::LowerBound {
                current: self.current,
                baseline,
                judged,
            },
        );
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
    id: CheckId,
    unit: Unit,
    current: u64,
    baseline: Option<u64>,
    limit: Option<&Limit>,
    tol: &Tolerance,
    noise_floor: u64,
    target: &Target,
    bounds: Bounds,
) -> Check {
    let mut check = Check {
        baseline,
        budget: limit.map(|l| l.value.raw()),
        tolerance: baseline.map(|_| tol.pct.0),
        budget_written: limit.map(|l| l.written.clone()),
        ..Check::new(id, Status::Pass, unit, current)
    };
    if limit.is_none() && baseline.is_none() {
        check.status = Status::Reported;
        check.findings.push(Finding::NothingToCompare { current });
        return check;
    }
    let mut worst = Status::Pass;
    // The worst the check may be where a lower bound passed a test.
    let mut open = Status::Pass;
    if let Some(l) = limit {
        if current > l.value.raw() {
            worst = worst.max(status_of(l.level));
            check.config_line = Some(l.loc.clone());
            check.findings.push(Finding::OverBudget {
                limit: l.value.raw(),
                current,
                over: current - l.value.raw(),
            });
        } else if !bounds.exact(bounds.current) {
            open = open.max(status_of(l.level));
        }
    }
    if let Some(b) = baseline {
        let grew = current.saturating_sub(b);
        let over_tol = grew as f64 * 100.0 > tol.pct.0 * b as f64;
        if grew > 0 && over_tol && grew > noise_floor {
            let s = status_of(tol.level);
            if !bounds.exact(bounds.baseline) {
                open = open.max(s);
            } else {
                if s > worst || check.config_line.is_none() {
                    check.config_line = Some(tol.loc.clone().unwrap_or_else(|| target.loc.clone()));
                }
                worst = worst.max(s);
            }
            check.findings.push(Finding::Grew {
                baseline: b,
                current,
                grew,
                percent: check.delta_pct(),
                tolerance: tol.pct.0,
            });
        } else if !bounds.exact(bounds.current) {
            open = open.max(status_of(tol.level));
        }
        if current < b {
            check.findings.push(Finding::Shrank {
                baseline: b,
                current,
                shrank: b - current,
                percent: -check.delta_pct().unwrap_or(0.0),
            });
        }
    }
    if check.findings.is_empty() {
        check.findings.push(Finding::Within {
            current,
            budget: check.budget,
            baseline,
            tolerance: check.tolerance,
        });
    }
    bounds.settle(&mut check, worst, open, target);
    check
}

/// OOM events: over the explicit budget, else over the baseline's count,
/// else over 0, fails; a failure carries the `details` of the first ones.
fn oom_check(
    current: u64,
    baseline: Option<u64>,
    limit: Option<&Limit>,
    target: &Target,
    details: &[OomDetail],
    bounds: Bounds,
) -> Check {
    let (allowed, level, loc, allowed_by) = match limit {
        Some(l) => (l.value.raw(), l.level, l.loc.clone(), AllowedBy::Budget),
        None => match baseline {
            Some(b) => (b, Level::Fail, target.loc.clone(), AllowedBy::Baseline),
            None => (0, Level::Fail, target.loc.clone(), AllowedBy::Default),
        },
    };
    let over = current > allowed;
    // More events than a lower-bound baseline allowed may still be fewer
    // than the real baseline; fewer than allowed may still be more.
    let unsure = if over {
        allowed_by == AllowedBy::Baseline && !bounds.exact(bounds.baseline)
    } else {
        !bounds.exact(bounds.current)
    };
    let finding = if over {
        Finding::OomOverAllowed {
            current,
            allowed,
            allowed_by,
            first: details.to_vec(),
        }
    } else {
        Finding::OomWithinAllowed {
            current,
            allowed,
            allowed_by,
        }
    };
    let mut check = Check {
        baseline,
        budget: Some(allowed),
        findings: vec![finding],
        config_line: (over && !unsure).then_some(loc),
        budget_written: limit.map(|l| l.written.clone()),
        ..Check::new(
            CheckId::Figure(Figure::OomEvents),
            Status::Pass,
            Unit::Count,
            current,
        )
    };
    let (worst, open) = match (over, unsure) {
        (true, false) => (status_of(level), Status::Pass),
        (_, true) => (Status::Pass, status_of(level)),
        (false, false) => (Status::Pass, Status::Pass),
    };
    // Only the sides that bear on this count are lower bounds here.
    let bounds = Bounds {
        baseline: bounds.baseline && allowed_by == AllowedBy::Baseline,
        ..bounds
    };
    bounds.settle(&mut check, worst, open, target);
    check
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
