//! One target judged: each planned snapshot against the budget and its
//! baseline, then the baseline entries no snapshot is named after.

use std::borrow::Cow;
use std::path::Path;

use super::analyse::Files;
use super::inputs::Planned;
use super::plan::TargetPlan;
use crate::analysis::{DeviceReport, WindowError};
use crate::budget::{Budget, Target};
use crate::compare::repeats;
use crate::compare::{self, Against, SnapshotError, SnapshotVerdict, TargetVerdict};
use crate::error::Error;

/// The verdict of target `t`, planned as `plan`, from the analysed `files`.
pub(crate) fn judge_target(
    budget: &Budget,
    t: &Target,
    plan: &TargetPlan,
    files: &Files,
    require_baseline: bool,
) -> TargetVerdict {
    let judge = Judge {
        budget,
        t,
        plan,
        files,
        require_baseline,
    };
    let mut snapshots: Vec<SnapshotVerdict> =
        plan.snapshots.iter().map(|p| judge.snapshot(p)).collect();
    snapshots.extend(plan.unclaimed.iter().map(|(name, file)| {
        let shown = file.display().to_string();
        match judge.figures(file) {
            Ok(devices) => compare::no_snapshot(name.clone(), shown, devices, require_baseline),
            Err(e) => compare::unreadable(
                name.clone(),
                shown.clone(),
                Some(shown),
                SnapshotError::Baseline(e.to_string()),
            ),
        }
    }));
    let ranks = t.ranks.as_ref().map(|rb| judge.ranks(rb));
    TargetVerdict::new(t.name.clone(), snapshots).with_ranks(ranks)
}

struct Judge<'a> {
    budget: &'a Budget,
    t: &'a Target,
    plan: &'a TargetPlan,
    files: &'a Files,
    require_baseline: bool,
}

impl Judge<'_> {
    fn figures(&self, path: &Path) -> &Result<Vec<DeviceReport>, Error> {
        &self.files.get(path, self.plan.lens()).figures
    }

    /// The devices of a planned name: its one run's, or its repeated runs
    /// folded at the target's statistic, each device with its figures'
    /// spreads (docs/gate.md#repeated-runs).
    fn current(&self, p: &Planned) -> Result<Cow<'_, [DeviceReport]>, SnapshotError> {
        let unreadable = |e: &Error| SnapshotError::Unreadable(e.to_string());
        if p.repeats.is_empty() {
            let d = self.figures(&p.path).as_ref().map_err(unreadable)?;
            return Ok(Cow::Borrowed(d.as_slice()));
        }
        let mut runs: Vec<&[DeviceReport]> = Vec::new();
        let mut files: Vec<String> = Vec::new();
        for path in p.runs() {
            runs.push(self.figures(path).as_ref().map_err(unreadable)?);
            files.push(path.display().to_string());
        }
        Ok(Cow::Owned(repeats::fold(&runs, &files, self.t.statistic)?))
    }

    /// The judged devices (the target's `device`, else all) the window
    /// places nothing on.
    fn missed(&self, path: &Path) -> Vec<WindowError> {
        let unplaced = &self.files.get(path, self.plan.lens()).unplaced;
        let judged = |e: &&WindowError| self.t.device.is_none_or(|want| want == e.device);
        unplaced.iter().filter(judged).cloned().collect()
    }

    /// The figures across the target's ranks: one rank per planned
    /// snapshot, its judged devices (the target's `device`, else all).
    fn ranks(&self, rb: &crate::budget::RankBudget) -> compare::RanksVerdict {
        let judged: Vec<(String, Option<Vec<DeviceReport>>)> = self
            .plan
            .snapshots
            .iter()
            .map(|p| {
                let devices = self.current(p).ok().map(|d| {
                    d.iter()
                        .filter(|x| self.t.device.is_none_or(|want| want == x.device))
                        .cloned()
                        .collect()
                });
                (p.name.clone(), devices)
            })
            .collect();
        let inputs: Vec<compare::RankInput> = judged
            .iter()
            .map(|(name, d)| compare::RankInput {
                name: name.clone(),
                devices: d.as_deref(),
            })
            .collect();
        let missing: Vec<(String, String)> = self
            .plan
            .unclaimed
            .iter()
            .map(|(name, file)| (name.clone(), file.display().to_string()))
            .collect();
        let has_baseline = !missing.is_empty()
            || self
                .plan
                .snapshots
                .iter()
                .any(|p| p.baseline.is_some() || p.lookup.is_some());
        compare::judge_ranks(self.t, rb, &inputs, &missing, has_baseline)
    }

    fn snapshot(&self, p: &Planned) -> SnapshotVerdict {
        let path = p.path.display().to_string();
        let base_name = p.baseline.as_ref().map(|b| b.display().to_string());
        let unreadable = |why: SnapshotError| {
            compare::unreadable(p.name.clone(), path.clone(), base_name.clone(), why)
        };
        let base = p.baseline.as_deref().map(|b| self.figures(b));
        let cur = match (self.current(p), base) {
            (Err(e), _) => return unreadable(e),
            (_, Some(Err(e))) => return unreadable(SnapshotError::Baseline(e.to_string())),
            (Ok(cur), _) => cur,
        };
        let cur: &[DeviceReport] = &cur;
        let missed = self.missed(&p.path);
        if let Some(error) = places_none(self.t, cur, &missed) {
            let path = p.path.clone();
            let why = Error::Window { path, error }.to_string();
            return unreadable(SnapshotError::Unreadable(why));
        }
        if let Some(why) = nothing_to_judge(self.t, cur) {
            return unreadable(why);
        }
        let against = Against {
            budget: self.budget,
            target: self.t,
            baseline: base_name
                .as_deref()
                .zip(base.and_then(|b| b.as_deref().ok())),
            lookup: p.lookup.as_ref(),
            require_baseline: self.require_baseline,
        };
        let mut v = compare::judge(p.name.clone(), path.clone(), cur, &against);
        compare::repeats::annotate(&mut v, cur);
        compare::window_not_placed(&mut v, missed);
        if v.devices.iter().all(|d| d.checks.is_empty()) {
            return unreadable(SnapshotError::NoCheck);
        }
        v
    }
}

/// The window's error on a judged device, when it places nothing on any
/// device the target judges (`missed` are those it places nothing on):
/// judging the others would be a pass on nothing.
fn places_none(
    t: &Target,
    devices: &[DeviceReport],
    missed: &[WindowError],
) -> Option<WindowError> {
    let judged = devices
        .iter()
        .any(|d| t.device.is_none_or(|want| want == d.device));
    (!judged).then(|| missed.first().cloned()).flatten()
}

/// Why a readable snapshot gives the target nothing to judge: it holds no
/// device at all, or not the one the target asks for.
fn nothing_to_judge(t: &Target, devices: &[DeviceReport]) -> Option<SnapshotError> {
    match t.device {
        _ if devices.is_empty() => Some(SnapshotError::NoDevice),
        Some(want) if !devices.iter().any(|d| d.device == want) => {
            let holds = devices.iter().map(|d| d.device).collect();
            Some(SnapshotError::NoSuchDevice { want, holds })
        }
        _ => None,
    }
}
