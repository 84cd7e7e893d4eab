//! One finding per regression: the checks of one device that moved
//! together (same status, same nonzero byte change, same peak entry) are
//! one finding, led by one check; the others stay in the verdict, each
//! marked as an echo of it (docs/figures.md#findings).

use serde::Serialize;

use super::reading::{Cause, CAUSE_SITES};
use super::{Check, CheckId, DeviceVerdict, Finding, Headroom, Status};
use crate::vocab::{Figure, Unit};

/// What a check that leads a finding says of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct Regression {
    /// Every check of the finding, the leading one first.
    pub figures: Vec<CheckId>,
    /// The bytes they moved by, when there is a baseline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<i64>,
    /// Which allocation sites moved, when the figure is one of the device's
    /// peaks and the baseline has sites.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
}

/// The entry a check's peak was reached at, when it says.
fn peak_entry(c: &Check) -> Option<u64> {
    c.findings.iter().find_map(|f| match f {
        Finding::PeakAt { place, .. } => Some(place.entry),
        _ => None,
    })
}

/// The byte change a check can be grouped by.
fn groupable(c: &Check) -> Option<i128> {
    let d = c.delta()?;
    (c.status >= Status::Warn && c.unit == Unit::Bytes && d != 0 && c.echo_of.is_none())
        .then_some(d)
}

/// The check that leads a group: one over its budget, else one with a
/// budget (its headroom is worth the line), else the first.
fn lead(checks: &[Check], members: &[usize]) -> usize {
    let over = |i: &&usize| {
        checks[**i]
            .findings
            .iter()
            .any(|f| matches!(f, Finding::OverBudget { .. }))
    };
    let budgeted = |i: &&usize| checks[**i].budget.is_some();
    *members
        .iter()
        .find(over)
        .or_else(|| members.iter().find(budgeted))
        .unwrap_or(&members[0])
}

/// A finding's cause: the sites live at the allocated peak (memory from
/// before recording included) explain the peaks of all live memory and
/// its phases' peaks; not `dynamic-peak` (it leaves that memory out),
/// static memory, the reserved peak (segments), a category or a count.
fn cause_of(d: &DeviceVerdict, c: &Check) -> Option<Cause> {
    let peak_like = matches!(
        c.id,
        CheckId::Figure(Figure::AllocatedPeak | Figure::OverallPeak | Figure::SteadyStatePeak)
            | CheckId::Phase { .. }
    );
    let has_base = d.sites.iter().any(|s| s.baseline.is_some());
    let change = c.delta()?;
    (peak_like && c.unit == Unit::Bytes && has_base && change != 0)
        .then(|| Cause::of(&d.sites, change, CAUSE_SITES))
}

/// Group the device's warning and failing checks into findings, and give
/// every judged check with a budget its headroom.
pub fn read(d: &mut DeviceVerdict) {
    // A check that was not judged on its value has no headroom to show.
    let unjudged = |c: &Check| {
        c.findings.iter().any(|f| {
            matches!(
                f,
                Finding::NoTrace { judged: false } | Finding::LowerBound { judged: false, .. }
            )
        })
    };
    for c in &mut d.checks {
        if matches!(c.status, Status::Pass | Status::Warn | Status::Fail) && !unjudged(c) {
            c.headroom = c.budget.map(|b| Headroom::of(c.current, b));
        }
    }
    // (status, change, peak entry, members).
    let mut groups: Vec<(Status, i128, Option<u64>, Vec<usize>)> = Vec::new();
    for (i, c) in d.checks.iter().enumerate() {
        let Some(change) = groupable(c) else {
            continue;
        };
        let entry = peak_entry(c);
        let same = groups.iter_mut().find(|(s, d, e, _)| {
            *s == c.status && *d == change && (e.is_none() || entry.is_none() || *e == entry)
        });
        match same {
            Some(g) => {
                g.2 = g.2.or(entry);
                g.3.push(i);
            }
            None => groups.push((c.status, change, entry, vec![i])),
        }
    }
    for (_, change, _, members) in groups {
        let head = lead(&d.checks, &members);
        let mut figures = vec![d.checks[head].id.clone()];
        figures.extend(
            members
                .iter()
                .filter(|i| **i != head)
                .map(|i| d.checks[*i].id.clone()),
        );
        let id = d.checks[head].id.to_string();
        for i in members.iter().filter(|i| **i != head) {
            d.checks[*i].echo_of = Some(id.clone());
        }
        // They moved by the same bytes: any member's sites explain them.
        let cause = std::iter::once(&head)
            .chain(&members)
            .find_map(|i| cause_of(d, &d.checks[*i]));
        d.checks[head].regression = Some(Regression {
            figures,
            change: i64::try_from(change).ok(),
            cause,
        });
    }
    // A warning or failure of a figure that moved with nothing is a finding
    // of its own (a `baseline` or `window` check judges no figure).
    for i in 0..d.checks.len() {
        let c = &d.checks[i];
        let judged = !matches!(c.id, CheckId::Baseline | CheckId::Window);
        if judged && c.status >= Status::Warn && c.echo_of.is_none() && c.regression.is_none() {
            let regression = Regression {
                figures: vec![c.id.clone()],
                change: c
                    .delta()
                    .filter(|_| c.unit == Unit::Bytes)
                    .and_then(|x| i64::try_from(x).ok()),
                cause: cause_of(d, c),
            };
            d.checks[i].regression = Some(regression);
        }
    }
}

/// `allocated-, dynamic-, overall-peak, phase.NAME.allocated-peak`: the
/// figures of a finding, the peaks sharing one `-peak`.
pub fn figure_names(figures: &[CheckId]) -> String {
    let ids: Vec<String> = figures.iter().map(ToString::to_string).collect();
    let mut out: Vec<String> = Vec::new();
    let plain = |id: &String, f: &CheckId| matches!(f, CheckId::Figure(_)) && id.ends_with("-peak");
    for (k, (id, f)) in ids.iter().zip(figures).enumerate() {
        let next_plain = ids
            .get(k + 1)
            .zip(figures.get(k + 1))
            .is_some_and(|(n, nf)| plain(n, nf));
        if plain(id, f) && next_plain {
            out.push(format!("{}-", id.trim_end_matches("-peak")));
        } else {
            out.push(id.clone());
        }
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{PeakAt, Place};

    const MIB: u64 = 1 << 20;

    /// A check that grew by `grew` MiB from 100 MiB, its peak at `entry`.
    fn grew(id: &str, status: Status, grew: u64, entry: Option<u64>) -> Check {
        let mut findings = vec![Finding::Grew {
            baseline: 100 * MIB,
            current: (100 + grew) * MIB,
            grew: grew * MIB,
            percent: None,
            tolerance: 5.0,
        }];
        if let Some(entry) = entry {
            findings.push(Finding::PeakAt {
                peak: PeakAt::AllocatedPeak,
                place: Place {
                    annotation: String::new(),
                    iteration: None,
                    entry,
                    rel_s: None,
                },
                baseline: None,
            });
        }
        Check {
            baseline: Some(100 * MIB),
            tolerance: Some(5.0),
            findings,
            ..Check::new(id.into(), status, Unit::Bytes, (100 + grew) * MIB)
        }
    }

    fn device(checks: Vec<Check>) -> DeviceVerdict {
        DeviceVerdict {
            device: crate::vocab::Device::new(0),
            peak_phase: None,
            oom: Vec::new(),
            trace_complete: true,
            warnings: Vec::new(),
            checks,
            categories: Vec::new(),
            sites: Vec::new(),
            window: None,
            pools: Vec::new(),
        }
    }

    #[test]
    fn only_checks_with_one_status_one_change_and_one_peak_entry_are_one_finding() {
        let mut d = device(vec![
            grew("dynamic-peak", Status::Fail, 12, Some(7)),
            grew("overall-peak", Status::Fail, 12, Some(7)),
            grew("allocated-peak", Status::Fail, 12, Some(9)),
            grew("steady-state-peak", Status::Fail, 12, None),
            grew("reserved-peak", Status::Warn, 12, Some(7)),
            grew("category.activation", Status::Fail, 3, None),
        ]);
        read(&mut d);
        let echo: Vec<Option<&str>> = d.checks.iter().map(|c| c.echo_of.as_deref()).collect();
        assert_eq!(
            echo,
            [
                None,
                Some("dynamic-peak"),
                None,
                Some("dynamic-peak"),
                None,
                None
            ]
        );
        let leads: Vec<usize> = d
            .checks
            .iter()
            .map(|c| c.regression.as_ref().map_or(0, |r| r.figures.len()))
            .collect();
        assert_eq!(leads, [3, 0, 1, 0, 1, 1]);
    }

    #[test]
    fn a_check_over_its_budget_leads_its_finding_and_has_its_headroom() {
        let mut over = grew("allocated-peak", Status::Fail, 12, Some(7));
        over.budget = Some(108 * MIB);
        over.findings.insert(
            0,
            Finding::OverBudget {
                limit: 108 * MIB,
                current: 112 * MIB,
                over: 4 * MIB,
            },
        );
        let mut d = device(vec![grew("dynamic-peak", Status::Fail, 12, Some(7)), over]);
        read(&mut d);
        assert_eq!(d.checks[0].echo_of.as_deref(), Some("allocated-peak"));
        let r = d.checks[1].regression.as_ref().unwrap();
        assert_eq!(figure_names(&r.figures), "allocated-, dynamic-peak");
        assert_eq!(r.change, Some(12 << 20));
        assert_eq!(d.checks[1].headroom.unwrap().left, -(4 << 20));
        assert!(d.checks[0].headroom.is_none(), "no budget, no headroom");
    }

    #[test]
    fn peaks_named_together_share_one_peak_suffix() {
        let ids: Vec<CheckId> = [
            "allocated-peak",
            "dynamic-peak",
            "steady-state-peak",
            "phase.## forward ##.allocated-peak",
        ]
        .into_iter()
        .map(CheckId::from)
        .collect();
        assert_eq!(
            figure_names(&ids),
            "allocated-, dynamic-, steady-state-peak, phase.## forward ##.allocated-peak"
        );
        assert_eq!(figure_names(&ids[..1]), "allocated-peak");
    }
}
