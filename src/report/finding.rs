//! The English of a verdict: a check's findings as one line, and its values
//! in their unit. Every renderer that writes a sentence takes it from here.

use super::frames;
use super::peak::{oom_cause, peak_name, place};
use crate::analysis::{OomDetail, Place, OOM_DETAILS};
use crate::compare::{AllowedBy, Check, Finding};
use crate::units::Bytes;
use crate::vocab::Device;
use crate::vocab::Unit;

pub use super::amount::{delta, value};

/// The check's current value, with the leak fit's residual beside it when
/// the check has one (`10 MiB (residual 14 MiB)`).
pub fn current(c: &Check) -> String {
    let shown = value(c.unit, c.current);
    let residual = c.findings.iter().find_map(|f| match f {
        Finding::LeakFit { residual } | Finding::LeakInconclusive { residual, .. } => {
            Some(*residual)
        }
        _ => None,
    });
    match residual {
        Some(r) => format!("{shown} (residual {})", value(c.unit, r)),
        None => shown,
    }
}

/// The check's verdict as one line, without a status prefix (the
/// renderers add where and how bad): its findings, joined by `; `.
pub fn sentence(c: &Check) -> String {
    let room = super::regression::headroom(c);
    let mut said = false;
    let mut parts: Vec<String> = c
        .findings
        .iter()
        .map(|f| match (f, &room) {
            // The budget as written, and how much of it is used.
            (Finding::OverBudget { .. }, Some(room)) => {
                said = true;
                room.clone()
            }
            (Finding::Within { baseline, .. }, Some(room)) => {
                said = true;
                within_baseline(c, *baseline).map_or(room.clone(), |b| format!("{room}, {b}"))
            }
            // An OOM clause says the count against what is allowed.
            (Finding::OomOverAllowed { .. } | Finding::OomWithinAllowed { .. }, _) => {
                said = true;
                clause(c.unit, f)
            }
            _ => clause(c.unit, f),
        })
        .collect();
    if let (Some(room), false) = (room, said) {
        parts.insert(0, room);
    }
    parts.join("; ")
}

/// `+0 B vs the baseline (tolerance 5%)`.
fn within_baseline(c: &Check, baseline: Option<u64>) -> Option<String> {
    let (b, t) = (baseline?, c.tolerance?);
    let d = delta(c.unit, i128::from(c.current) - i128::from(b));
    Some(format!("{d} vs the baseline (tolerance {t}%)"))
}

/// What an empty trace means for the figures.
const NO_TRACE: &str = "no allocation trace: figures are the state at dump time";

fn allowed_by(source: AllowedBy) -> &'static str {
    match source {
        AllowedBy::Budget => "its budget",
        AllowedBy::Baseline => "the baseline",
        AllowedBy::Default => "the default budget",
    }
}

/// `dev0, dev1`, or `no device`.
fn device_list(devices: &[Device]) -> String {
    if devices.is_empty() {
        return "no device".into();
    }
    let names: Vec<String> = devices.iter().map(|d| format!("dev{d}")).collect();
    names.join(", ")
}

/// `; the first: requested … at entry …, in f (m.py:3); 2 more (…)`,
/// or nothing when no detail was kept.
fn first_oom(total: u64, first: &[OomDetail]) -> String {
    let Some(o) = first.first() else {
        return String::new();
    };
    let p = Place {
        annotation: o.phase.clone(),
        iteration: o.iteration,
        entry: o.entry,
        rel_s: o.rel_s,
    };
    let mut s = format!(
        "; the first: requested {} with {} free on the device (allocated {}, reserved {}) at {}",
        Bytes(o.requested),
        Bytes(o.device_free),
        Bytes(o.allocated),
        Bytes(o.reserved),
        place(&p)
    );
    if let Some(f) = frames::innermost(&o.frames) {
        s.push_str(&format!(", in {}", frames::cut(f)));
    }
    s.push_str(&oom_cause(o));
    if total > 1 {
        s.push_str(&format!(
            "; {} more (`memgate peak` details the first {})",
            total - 1,
            OOM_DETAILS
        ));
    }
    s
}

/// The clause of a finding about the baseline entry of a snapshot.
fn baseline_clause(f: &Finding) -> String {
    match f {
        Finding::NoBaseline {
            looked_for: Some(name),
            in_dir,
            close,
            close_not_searched,
        } => {
            let near = if *close_not_searched {
                "its names not compared: the run's search for near names was spent".to_string()
            } else if close.is_empty() {
                "nothing close there".to_string()
            } else {
                format!("closest there: {}", close.join(", "))
            };
            format!(
                "no baseline named {name:?} in {} ({near})",
                in_dir.as_deref().unwrap_or("the baselines")
            )
        }
        Finding::NoBaseline { .. } => {
            "no baseline for this snapshot and device (--require-baseline)".into()
        }
        Finding::BaselineLacksDevice { baseline, devices } => format!(
            "the baseline {baseline} has no such device (it holds {})",
            device_list(devices)
        ),
        Finding::DeviceNotInRun { baseline, devices } => format!(
            "the baseline {baseline} has this device, the snapshot does not (it holds {})",
            device_list(devices)
        ),
        Finding::NoSnapshot { name, baseline } => {
            format!("the baseline {baseline} ({name:?}) has no snapshot of that name in this run")
        }
        Finding::DeviceListedTwice { file } => {
            format!("{file} lists this device more than once: which one to judge is unknown")
        }
        Finding::RulesDiffer { baseline, current } => format!(
            "the baseline's categories come from the {baseline:?} rules, this run's from \
             {current:?}: category bytes cannot be compared (summarize the baseline with the \
             run's rules)"
        ),
        _ => String::new(),
    }
}

/// The clause of a finding about the device, its environment or the leak fit.
fn device_clause(unit: Unit, f: &Finding) -> String {
    let show = |v: &u64| value(unit, *v);
    match f {
        Finding::EnvironmentDiffers {
            differences,
            required,
        } => {
            let each: Vec<String> = differences
                .iter()
                .map(|d| {
                    let v = |x: &Option<String>| x.clone().unwrap_or_else(|| "(not set)".into());
                    format!("{} {} → {}", d.key, v(&d.baseline), v(&d.current))
                })
                .collect();
            let then = if *required {
                "the target requires the same environment (`same-environment = true`)"
            } else {
                "figures may differ for that reason alone"
            };
            format!(
                "the baseline was recorded in another environment: {}; {then}",
                each.join(", ")
            )
        }
        Finding::DeviceHeadroom {
            peak,
            outside,
            device,
        } => {
            let used = peak.saturating_add(*outside);
            let pct = if *device == 0 {
                0.0
            } else {
                used as f64 * 100.0 / *device as f64
            };
            let outside = if *outside > 0 {
                format!(" + {} outside the allocator", Bytes(*outside))
            } else {
                String::new()
            };
            format!(
                "{}{outside} of {} device memory ({pct:.0}%)",
                Bytes(*peak),
                Bytes(*device)
            )
        }
        Finding::NoDeviceMemory { share } => format!(
            "not judged: the budget is {share}% of the device and no device memory is known \
             (set `device-memory` on the target or in [defaults], or record with memgate's \
             record(), which writes it beside the snapshot)"
        ),
        Finding::LeakFit { residual } => format!("fit residual {}", show(residual)),
        Finding::LeakInconclusive { slope, residual } => format!(
            "not judged: the leak fit's residual {} is larger than its slope {} per \
             iteration, so the live bytes did not grow in a line (a one-off step after \
             warm-up, or noise) and cannot support a leak verdict (see `memgate phases` \
             for the live bytes at each iteration's start)",
            show(residual),
            show(slope)
        ),
        _ => String::new(),
    }
}

/// The clause of a finding about where or how a figure was measured.
fn context_clause(unit: Unit, f: &Finding) -> String {
    match f {
        Finding::NotMeasured { iterations, needed } => format!(
            "not measured: the trace has {} ({needed} needed; iterations start at \
             ProfilerStep#, else Optimizer.zero_grad, else Optimizer.step annotations: \
             see `memgate phases`)",
            crate::units::counted(*iterations, "iteration", "iterations")
        ),
        Finding::NoHostMemory { recorded: false } => "not measured: the snapshot records no \
             pinned host memory (record it with record_pinned_host_memory=True, torch 2.14+; \
             docs/figures.md#pinned-host-memory)"
            .to_string(),
        Finding::NoHostMemory { recorded: true } => "not measured: the host trace or the \
             device trace has no `time_us`, so the host bytes at the device's peak cannot be \
             placed (docs/figures.md#pinned-host-memory)"
            .to_string(),
        Finding::HostOnly => "not measured: the snapshot records no device, only pinned host \
             memory (record_cuda=False); budget its host figures \
             (docs/figures.md#pinned-host-memory)"
            .to_string(),
        Finding::PeakAt {
            peak,
            place: here,
            baseline,
        } => {
            let mut s = format!(
                "the {} peak was reached at {}",
                peak_name(*peak),
                place(here)
            );
            if let Some(b) = baseline {
                s.push_str(&format!(" (the baseline's at {})", place(b)));
            }
            s
        }
        Finding::BoundaryDiffers { baseline, current } => format!(
            "the baseline's iterations start at {baseline}, the run's at {current}: \
             per-iteration figures are not compared (summarize the baseline with \
             the target's `iteration-boundary`)"
        ),
        Finding::EnvironmentDiffers { .. }
        | Finding::DeviceHeadroom { .. }
        | Finding::NoDeviceMemory { .. }
        | Finding::LeakFit { .. }
        | Finding::LeakInconclusive { .. } => device_clause(unit, f),
        Finding::WindowNotPlaced { window, problem } => format!(
            "not judged: the window {window} places nothing on this device ({problem}); \
             the other devices are judged in it"
        ),
        Finding::InWindow { window: w } => format!(
            "judged in the window {}..{} (entries {}..{})",
            w.from, w.to, w.from_entry, w.to_entry
        ),
        Finding::NoSuchPool { pool, pools } => {
            let held = if pools.is_empty() {
                "it has only the default pool".to_string()
            } else {
                format!("it has {}", pools.join(", "))
            };
            format!("no pool {pool:?} on this device ({held})")
        }
        Finding::PoolAppeared { pool } => format!("pool {pool:?} is new: the baseline has none"),
        Finding::PoolVanished { pool, baseline } => format!(
            "pool {pool:?} is gone: the baseline had it at {}",
            Bytes(*baseline)
        ),
        Finding::PoolUnplaced { bytes } => format!(
            "up to {} lie in no pool the snapshot names (segments made and freed by entries \
             without pool_id): each pool's figure is at least this",
            Bytes(*bytes)
        ),
        Finding::NoSuchPhase { phase, phases } => {
            let held = if phases.is_empty() {
                "it has no annotation spans".to_string()
            } else {
                format!("it has {}", phases.join(", "))
            };
            format!("no phase {phase:?} on this device ({held})")
        }
        _ => String::new(),
    }
}

/// The clause of a finding that judges the value against its budget or baseline.
fn judged_clause(unit: Unit, f: &Finding) -> String {
    let show = |v: &u64| value(unit, *v);
    match f {
        Finding::OverBudget {
            limit,
            current,
            over,
        } => format!(
            "{} is over its budget of {} by {}",
            show(current),
            show(limit),
            show(over)
        ),
        Finding::Grew {
            baseline,
            current,
            grew,
            percent,
            tolerance,
        } => format!(
            "grew {} ({}) over the baseline {} → {}, more than the {tolerance}% tolerance",
            delta(unit, i128::from(*grew)),
            percent.map_or("new".into(), |p| format!("{p:.1}%")),
            show(baseline),
            show(current)
        ),
        Finding::Shrank {
            baseline,
            shrank,
            percent,
            ..
        } => format!(
            "shrank {} ({:.1}%) from the baseline {}",
            delta(unit, -i128::from(*shrank)),
            -*percent,
            show(baseline)
        ),
        Finding::Within {
            current,
            budget,
            baseline,
            tolerance,
        } => {
            let mut parts = vec![show(current)];
            if let Some(b) = budget {
                parts.push(format!("within the budget of {}", show(b)));
            }
            if let (Some(b), Some(t)) = (baseline, tolerance) {
                let d = delta(unit, i128::from(*current) - i128::from(*b));
                parts.push(format!("{d} vs the baseline (tolerance {t}%)"));
            }
            parts.join(", ")
        }
        Finding::NothingToCompare { current } => format!(
            "{} (no budget and no baseline to compare with)",
            show(current)
        ),
        _ => String::new(),
    }
}

fn clause(unit: Unit, f: &Finding) -> String {
    match f {
        Finding::NoBaseline { .. }
        | Finding::BaselineLacksDevice { .. }
        | Finding::DeviceNotInRun { .. }
        | Finding::NoSnapshot { .. }
        | Finding::DeviceListedTwice { .. }
        | Finding::RulesDiffer { .. } => baseline_clause(f),
        Finding::Repeats { .. }
        | Finding::Waived { .. }
        | Finding::WaiverExpired { .. }
        | Finding::WaiverExceeded { .. } => super::noise::clause(unit, f).unwrap_or_default(),
        Finding::NotMeasured { .. }
        | Finding::NoHostMemory { .. }
        | Finding::HostOnly
        | Finding::PeakAt { .. }
        | Finding::BoundaryDiffers { .. }
        | Finding::EnvironmentDiffers { .. }
        | Finding::DeviceHeadroom { .. }
        | Finding::NoDeviceMemory { .. }
        | Finding::WindowNotPlaced { .. }
        | Finding::LeakFit { .. }
        | Finding::LeakInconclusive { .. }
        | Finding::InWindow { .. }
        | Finding::NoSuchPool { .. }
        | Finding::PoolAppeared { .. }
        | Finding::PoolVanished { .. }
        | Finding::PoolUnplaced { .. }
        | Finding::NoSuchPhase { .. } => context_clause(unit, f),
        Finding::OverBudget { .. }
        | Finding::Grew { .. }
        | Finding::Shrank { .. }
        | Finding::Within { .. }
        | Finding::NothingToCompare { .. } => judged_clause(unit, f),
        Finding::OomOverAllowed {
            current,
            allowed,
            allowed_by: source,
            first,
        } => format!(
            "{current} OOM events, more than the {allowed} allowed by {}{}",
            allowed_by(*source),
            first_oom(*current, first)
        ),
        Finding::OomWithinAllowed {
            current, allowed, ..
        } => format!("{current} OOM events (at most {allowed})"),
        Finding::NoTrace { judged: false } => format!(
            "{NO_TRACE}, so this trace-based figure is not judged \
             (`require-trace = false` judges it on them)"
        ),
        Finding::NoTrace { judged: true } => {
            format!("{NO_TRACE} (judged on them: `require-trace = false`)")
        }
        Finding::RankImbalance { .. }
        | Finding::HeaviestRank { .. }
        | Finding::RankMissing { .. }
        | Finding::RanksPresent { .. }
        | Finding::RanksIncomplete { .. }
        | Finding::StageEmpty { .. } => super::ranks::clause(unit, f).unwrap_or_default(),
        Finding::LowerBound {
            current,
            baseline,
            judged,
        } => {
            let what = match (current, baseline) {
                (true, true) => {
                    "the run's and the baseline's traces started mid-run, so both figures are \
                     only lower bounds"
                }
                (false, true) => {
                    "the baseline's trace started mid-run, so its figure is only a lower bound"
                }
                _ => "the trace started mid-run, so the figure is only a lower bound",
            };
            if *judged {
                what.to_string()
            } else {
                format!(
                    "not judged: {what}, which cannot settle this check (the allocator's ring \
                     buffer dropped the start of the run, or recording started during it); \
                     record the whole run, with a larger `max_entries` in \
                     `_record_memory_history`, or set `accept-lower-bounds = true` on the target"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::OomCause;
    use crate::compare::Status;

    const MIB: u64 = 1 << 20;

    fn check(unit: Unit, current: u64, baseline: Option<u64>, findings: Vec<Finding>) -> Check {
        Check {
            baseline,
            tolerance: baseline.map(|_| 5.0),
            findings,
            ..Check::new("dynamic-peak".into(), Status::Fail, unit, current)
        }
    }

    #[test]
    fn over_budget_and_grown_past_the_tolerance_read_as_one_line_joined_by_a_semicolon() {
        let c = check(
            Unit::Bytes,
            1200 * MIB,
            Some(1000 * MIB),
            vec![
                Finding::OverBudget {
                    limit: 1024 * MIB,
                    current: 1200 * MIB,
                    over: 176 * MIB,
                },
                Finding::Grew {
                    baseline: 1000 * MIB,
                    current: 1200 * MIB,
                    grew: 200 * MIB,
                    percent: Some(20.0),
                    tolerance: 5.0,
                },
            ],
        );
        assert_eq!(
            sentence(&c),
            "1.17 GiB is over its budget of 1 GiB by 176 MiB; grew +200 MiB (20.0%) over \
             the baseline 1000 MiB → 1.17 GiB, more than the 5% tolerance"
        );
    }

    #[test]
    fn growth_from_a_zero_baseline_is_called_new() {
        let grew = Finding::Grew {
            baseline: 0,
            current: 2 * MIB,
            grew: 2 * MIB,
            percent: None,
            tolerance: 2.5,
        };
        assert_eq!(
            sentence(&check(Unit::Bytes, 2 * MIB, Some(0), vec![grew])),
            "grew +2 MiB (new) over the baseline 0 B → 2 MiB, more than the 2.5% tolerance"
        );
    }

    #[test]
    fn shrinking_is_written_as_a_negative_change() {
        let shrank = Finding::Shrank {
            baseline: 200 * MIB,
            current: 100 * MIB,
            shrank: 100 * MIB,
            percent: 50.0,
        };
        assert_eq!(
            sentence(&check(
                Unit::Bytes,
                100 * MIB,
                Some(200 * MIB),
                vec![shrank]
            )),
            "shrank -100 MiB (-50.0%) from the baseline 200 MiB"
        );
    }

    #[test]
    fn within_names_only_what_there_was_to_judge_by() {
        let both = Finding::Within {
            current: 108 * MIB,
            budget: Some(1024 * MIB),
            baseline: Some(108 * MIB),
            tolerance: Some(5.0),
        };
        assert_eq!(
            sentence(&check(Unit::Bytes, 108 * MIB, Some(108 * MIB), vec![both])),
            "108 MiB, within the budget of 1 GiB, +0 B vs the baseline (tolerance 5%)"
        );
        let budget_only = Finding::Within {
            current: 50 * MIB,
            budget: Some(512 * MIB),
            baseline: None,
            tolerance: None,
        };
        assert_eq!(
            sentence(&check(Unit::Bytes, 50 * MIB, None, vec![budget_only])),
            "50 MiB, within the budget of 512 MiB"
        );
        let nothing = Finding::NothingToCompare { current: 8 * MIB };
        assert_eq!(
            sentence(&check(Unit::Bytes, 8 * MIB, None, vec![nothing])),
            "8 MiB (no budget and no baseline to compare with)"
        );
    }

    #[test]
    fn counts_are_written_as_plain_signed_numbers() {
        let grew = Finding::Grew {
            baseline: 10,
            current: 13,
            grew: 3,
            percent: Some(30.0),
            tolerance: 5.0,
        };
        assert_eq!(
            sentence(&check(Unit::Count, 13, Some(10), vec![grew])),
            "grew +3 (30.0%) over the baseline 10 → 13, more than the 5% tolerance"
        );
    }

    #[test]
    fn a_failed_oom_check_details_the_first_oom_and_counts_the_others() {
        let first = OomDetail {
            entry: 590,
            rel_s: Some(3.2),
            requested: 4096 * MIB,
            device_free: 91 * MIB,
            allocated: 7168 * MIB,
            reserved: 8192 * MIB,
            cached_free: 1024 * MIB,
            largest_free_block: 512 * MIB,
            cause: Some(OomCause::Capacity),
            phase: "forward".into(),
            iteration: Some(0),
            frames: vec!["at::empty (a.cpp:1)".into(), "forward (model.py:39)".into()].into(),
        };
        let over = Finding::OomOverAllowed {
            current: 3,
            allowed: 0,
            allowed_by: AllowedBy::Default,
            first: vec![first],
        };
        assert_eq!(
            sentence(&check(Unit::Count, 3, None, vec![over])),
            "3 OOM events, more than the 0 allowed by the default budget; the first: requested \
             4 GiB with 91 MiB free on the device (allocated 7 GiB, reserved 8 GiB) at entry 590, \
             +3.200 s, phase: forward, iteration 0, in forward (model.py:39); cause: capacity \
             (1 GiB cached free, largest free block 512 MiB); 2 more (`memgate peak` details the \
             first 20)"
        );
    }

    #[test]
    fn oom_findings_say_who_allowed_how_many() {
        let sentences: Vec<String> = [AllowedBy::Budget, AllowedBy::Baseline, AllowedBy::Default]
            .into_iter()
            .map(|by| {
                let over = Finding::OomOverAllowed {
                    current: 2,
                    allowed: 1,
                    allowed_by: by,
                    first: vec![],
                };
                sentence(&check(Unit::Count, 2, None, vec![over]))
            })
            .collect();
        assert_eq!(
            sentences,
            [
                "2 OOM events, more than the 1 allowed by its budget",
                "2 OOM events, more than the 1 allowed by the baseline",
                "2 OOM events, more than the 1 allowed by the default budget",
            ]
        );
        let within = Finding::OomWithinAllowed {
            current: 0,
            allowed: 0,
            allowed_by: AllowedBy::Default,
        };
        assert_eq!(
            sentence(&check(Unit::Count, 0, None, vec![within])),
            "0 OOM events (at most 0)"
        );
    }

    #[test]
    fn a_missing_required_baseline_says_which_flag_asked_for_it() {
        assert_eq!(
            sentence(&check(
                Unit::Count,
                0,
                None,
                vec![Finding::NoBaseline {
                    looked_for: None,
                    in_dir: None,
                    close: Vec::new(),
                    close_not_searched: false,
                }]
            )),
            "no baseline for this snapshot and device (--require-baseline)"
        );
    }

    #[test]
    fn a_missing_trace_says_the_figures_are_the_state_at_dump_time_and_what_was_done() {
        let unjudged = check(
            Unit::Bytes,
            MIB,
            None,
            vec![Finding::NoTrace { judged: false }],
        );
        assert_eq!(
            sentence(&unjudged),
            "no allocation trace: figures are the state at dump time, so this trace-based \
             figure is not judged (`require-trace = false` judges it on them)"
        );
        let within = Finding::Within {
            current: MIB,
            budget: Some(2 * MIB),
            baseline: None,
            tolerance: None,
        };
        let judged = check(
            Unit::Bytes,
            MIB,
            None,
            vec![within, Finding::NoTrace { judged: true }],
        );
        assert_eq!(
            sentence(&judged),
            "1 MiB, within the budget of 2 MiB; no allocation trace: figures are the state \
             at dump time (judged on them: `require-trace = false`)"
        );
    }
}
