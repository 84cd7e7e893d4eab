//! A plan per target: the snapshots it judges, each with its baseline, the
//! baseline entries no snapshot is named after, and the lens (window and
//! iteration boundary) it analyses its files through.

use std::path::{Path, PathBuf};

use super::analysis_adapter::Windows;
use super::inputs::{self, Baselines, Planned};
use super::CheckOptions;
use crate::analysis::{Boundary, Window};
use crate::budget::{Budget, Target};
use crate::error::Error;

/// What one target reads and how it looks at it.
pub(crate) struct TargetPlan {
    pub(crate) snapshots: Vec<Planned>,
    /// The baseline entries no snapshot is named after (their name, file):
    /// what they hold is reported too.
    pub(crate) unclaimed: Vec<Entry>,
    /// `--window`, else the target's own `window`.
    pub(crate) window: Option<Window>,
    pub(crate) boundary: Option<Boundary>,
}

/// A baseline entry: its name and file.
pub(crate) type Entry = (String, PathBuf);

/// How a target looks at its files: inside its window, with its
/// iteration boundary.
#[derive(Clone, Copy)]
pub(crate) struct Lens<'a> {
    pub(crate) window: Option<&'a Window>,
    pub(crate) boundary: Option<&'a Boundary>,
}

impl TargetPlan {
    pub(crate) fn lens(&self) -> Lens<'_> {
        Lens {
            window: self.window.as_ref(),
            boundary: self.boundary.as_ref(),
        }
    }

    /// The snapshots and their baselines.
    fn planned_files(&self) -> impl Iterator<Item = &Path> {
        self.snapshots
            .iter()
            .flat_map(|p| p.runs().chain(p.baseline.as_deref()))
    }

    /// Every file the target reads: snapshots, baselines, unclaimed entries.
    pub(crate) fn files(&self) -> impl Iterator<Item = &Path> {
        let unclaimed = self.unclaimed.iter().map(|(_, f)| f.as_path());
        self.planned_files().chain(unclaimed)
    }
}

/// Every target's plan, as far as it could be planned.
pub(crate) struct Plans {
    pub(crate) targets: Vec<TargetPlan>,
    /// The files of targets that could not be planned: not read, but no
    /// report written to say why may replace one.
    pub(crate) unplanned: Vec<PathBuf>,
}

impl Plans {
    /// Every file the run reads, that no report may replace: the budget
    /// and rules files, each snapshot and every baseline entry.
    pub(crate) fn inputs<'a>(&'a self, read: &[&'a Path]) -> Vec<&'a Path> {
        let t = &self.targets;
        read.iter()
            .copied()
            .chain(t.iter().flat_map(TargetPlan::planned_files))
            .chain(
                t.iter()
                    .flat_map(|t| t.unclaimed.iter().map(|(_, f)| f.as_path())),
            )
            .chain(self.unplanned.iter().map(PathBuf::as_path))
            .collect()
    }
}

/// Plan every target of `budget` (`windows` are its targets' windows),
/// with why a target could not be planned.
pub(crate) fn plan(budget: &Budget, windows: &Windows, opts: &CheckOptions) -> (Plans, Vec<Error>) {
    let mut plans = Plans {
        targets: Vec::new(),
        unplanned: Vec::new(),
    };
    let mut errors = Vec::new();
    for (t, window) in budget.targets.iter().zip(windows) {
        let spec = opts.baseline.as_deref().or(t.baseline.as_deref());
        match plan_target(t, spec, &opts.snapshots) {
            Ok((p, _)) if p.is_empty() => errors.push(Error::NothingToJudge.in_target(&t.name)),
            Ok((snapshots, unclaimed)) => plans.targets.push(TargetPlan {
                snapshots,
                unclaimed,
                window: opts.window.clone().or_else(|| window.clone()),
                boundary: t.iteration_boundary.clone().map(Boundary::Prefix),
            }),
            Err(e) => {
                errors.extend(e.into_iter().map(|e| e.in_target(&t.name)));
                let named = inputs::named_files(t, &opts.snapshots, spec);
                plans.unplanned.extend(named);
            }
        }
    }
    (plans, errors)
}

/// A target's snapshots with their baselines (`spec` says where those
/// are), and the baseline entries none of them claims.
fn plan_target(
    t: &Target,
    spec: Option<&str>,
    cli: &[String],
) -> Result<(Vec<Planned>, Vec<Entry>), Vec<Error>> {
    let baselines = Baselines::resolve(spec, t.key.as_ref()).map_err(|e| vec![e.into()])?;
    let planned = inputs::plan(t, cli, &baselines)?;
    let claimed: Vec<&str> = planned.iter().map(|p| p.name.as_str()).collect();
    let unclaimed = baselines
        .unclaimed(&claimed)
        .into_iter()
        .map(|(k, f)| (k.to_string(), f.to_path_buf()))
        .collect();
    Ok((planned, unclaimed))
}
