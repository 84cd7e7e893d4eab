//! The sentences of noise-aware judging (docs/gate.md#repeated-runs,
//! docs/gate.md#waivers): the spread of repeated runs beside the
//! tolerance, and what a waiver did to a failure.

use crate::compare::waivers::WaiverState;
use crate::compare::{Check, DeviceVerdict, Finding, Verdict};
use crate::vocab::Unit;

use super::amount::value;

/// The clause of a repeats or waiver finding; `None` for any other.
pub(super) fn clause(unit: Unit, f: &Finding) -> Option<String> {
    let show = |v: &u64| value(unit, *v);
    Some(match f {
        Finding::Repeats {
            runs,
            min,
            median,
            max,
            statistic,
            spread,
            tolerance,
            wider,
        } => {
            let spread = spread.map_or("no spread from a zero median".into(), |s| {
                format!("spread {s:.1}%")
            });
            let beside = tolerance.map_or(String::new(), |t| format!(" (tolerance {t}%)"));
            let mut s = format!(
                "{runs} runs, {} judged: min {}, median {}, max {}; {spread}{beside}",
                statistic.id(),
                show(min),
                show(median),
                show(max)
            );
            if *wider {
                s.push_str(
                    ": the runs differ by more than the tolerance, so growth within it may be \
                     noise (judge a steadier figure, or widen the tolerance)",
                );
            }
            s
        }
        Finding::Waived {
            reason,
            until,
            maximum,
            at,
        } => {
            let most = maximum.map_or(String::new(), |m| format!(" up to {}", show(&m)));
            format!("waived{most} until {until} by the waiver at {at}: {reason}")
        }
        Finding::WaiverExpired { reason, until, at } => format!(
            "the waiver at {at} expired after {until}, so this fails again (it said: {reason})"
        ),
        Finding::WaiverExceeded {
            reason,
            until,
            maximum,
            at,
        } => format!(
            "exceeded the waiver at {at}, which allows at most {} until {until} (it said: \
             {reason})",
            show(maximum)
        ),
        _ => return None,
    })
}

/// `5 runs, widest spread 3.0% (allocated-peak, tolerance 5%)`: the spread
/// of a device's repeated runs, for the one line a passing device gets.
pub(super) fn widest_spread(d: &DeviceVerdict) -> Option<String> {
    let mut widest: Option<(&Check, usize, f64, Option<f64>)> = None;
    for c in &d.checks {
        for f in &c.findings {
            if let Finding::Repeats {
                runs,
                spread: Some(p),
                tolerance,
                ..
            } = f
            {
                if widest.as_ref().is_none_or(|w| *p > w.2) {
                    widest = Some((c, *runs, *p, *tolerance));
                }
            }
        }
    }
    let (c, runs, p, tolerance) = widest?;
    let beside = tolerance.map_or(String::new(), |t| format!(", tolerance {t}%"));
    Some(format!(
        "{runs} runs, widest spread {p:.1}% ({}{beside})",
        c.id
    ))
}

/// One sentence per waiver that matched no failing check: it can go.
pub(crate) fn unused_waivers(v: &Verdict) -> Vec<String> {
    v.waivers
        .iter()
        .filter(|w| w.state == WaiverState::Unused)
        .map(|w| {
            let expired = if w.expired {
                format!(", and it expired after {}", w.until)
            } else {
                String::new()
            };
            format!(
                "the waiver at {} (target {}, {}) matches no failing check{expired}: remove it",
                w.at, w.target, w.check
            )
        })
        .collect()
}
