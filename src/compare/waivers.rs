//! Waivers applied to the verdict (docs/gate.md#waivers): a failing check a
//! `[[waiver]]` matches reads `waived` until the waiver's last day, unless
//! its value is past the waiver's maximum; after that day, or past the
//! maximum, it fails and says so. Every waiver is accounted for, the ones
//! that match nothing too.

use std::collections::HashMap;

use serde::Serialize;

use super::{Check, Finding, Status, TargetVerdict};
use crate::budget::Waiver;
use crate::vocab::Device;

/// What became of one waiver in this run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum WaiverState {
    /// It let failing checks through.
    Used,
    /// Its last day is past: what it matched fails.
    Expired,
    /// What it matched is past its maximum: that fails.
    Exceeded,
    /// No failing check matched it: it can go.
    Unused,
}

/// One waiver of the budget file and what became of it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WaiverUse {
    pub target: String,
    /// The check id it names.
    pub check: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<Device>,
    pub until: String,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum: Option<u64>,
    /// Where it is written (`file:line:col`).
    pub at: String,
    pub state: WaiverState,
    /// Whether its last day is past (an unused one says so too).
    pub expired: bool,
    /// The failing checks it matched.
    pub matched: usize,
}

/// Apply `waivers` to the failing checks of `targets` on day `today`
/// (days since 1970-01-01, UTC), and say what became of each.
pub fn apply(targets: &mut [TargetVerdict], waivers: &[Waiver], today: i64) -> Vec<WaiverUse> {
    let mut uses: Vec<WaiverUse> = waivers.iter().map(|w| unused(w, today)).collect();
    // Waivers by (target, check id): a hostile file's many waivers cost a
    // lookup per failing check, not a scan.
    let mut by_check: HashMap<(&str, String), Vec<usize>> = HashMap::new();
    for (i, w) in waivers.iter().enumerate() {
        by_check
            .entry((w.target.as_str(), w.check.clone()))
            .or_default()
            .push(i);
    }
    for t in targets.iter_mut() {
        for s in &mut t.snapshots {
            let mut matched_any = false;
            for d in &mut s.devices {
                for c in d.checks.iter_mut().filter(|c| c.status == Status::Fail) {
                    let key = (t.name.as_str(), c.id.to_string());
                    let found = by_check.get(&key).into_iter().flatten().find(|&&i| {
                        let w = &waivers[i];
                        w.snapshot.as_ref().is_none_or(|n| *n == s.name)
                            && w.device.is_none_or(|x| x == d.device)
                    });
                    if let Some(&i) = found {
                        judge(c, &waivers[i], &mut uses[i], today);
                        matched_any = true;
                    }
                }
            }
            // One in error stays so.
            if s.status != Status::Error && matched_any {
                s.status = s.worst_check();
            }
        }
        t.status = t
            .snapshots
            .iter()
            .map(|s| s.status)
            .chain(t.ranks.iter().map(|r| r.status))
            .max()
            .unwrap_or(Status::Pass);
    }
    uses
}

fn judge(c: &mut Check, w: &Waiver, u: &mut WaiverUse, today: i64) {
    u.matched += 1;
    let reason = w.reason.clone();
    let until = w.until.clone();
    let at = w.loc.to_string();
    if today > w.until_day {
        u.state = WaiverState::Expired;
        c.findings
            .push(Finding::WaiverExpired { reason, until, at });
    } else if let Some(maximum) = w.maximum.filter(|m| c.current > *m) {
        if u.state != WaiverState::Expired {
            u.state = WaiverState::Exceeded;
        }
        c.findings.push(Finding::WaiverExceeded {
            reason,
            until,
            maximum,
            at,
        });
    } else {
        if u.state == WaiverState::Unused {
            u.state = WaiverState::Used;
        }
        c.status = Status::Waived;
        c.findings.insert(
            0,
            Finding::Waived {
                reason,
                until,
                maximum: w.maximum,
                at,
            },
        );
    }
}

fn unused(w: &Waiver, today: i64) -> WaiverUse {
    WaiverUse {
        target: w.target.clone(),
        check: w.check.clone(),
        snapshot: w.snapshot.clone(),
        device: w.device,
        until: w.until.clone(),
        reason: w.reason.clone(),
        maximum: w.maximum,
        at: w.loc.to_string(),
        state: WaiverState::Unused,
        expired: today > w.until_day,
        matched: 0,
    }
}
