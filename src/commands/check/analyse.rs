//! Every file of the run analysed once per lens, all in parallel: the
//! current snapshots and the baselines (those no snapshot claims too).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::analysis_adapter::RuleSet;
use super::inputs;
use super::plan::{Lens, TargetPlan};
use super::CheckOptions;
use crate::analysis::{Boundary, DeviceReport, Timeline, WindowError};
use crate::error::Error;
use crate::report::html;

/// A file as analysed for a target: its path, the window's spec and the
/// iteration boundary's prefix.
type FileKey = (PathBuf, Option<String>, Option<String>);

/// What one file gave through one lens.
pub(crate) struct Analysed {
    /// Its figures, or why there are none.
    pub(crate) figures: Result<Vec<DeviceReport>, Error>,
    /// With `--html`, a snapshot's timelines, from the same replay.
    timelines: Option<Vec<Timeline>>,
    /// The devices its window places nothing on.
    pub(crate) unplaced: Vec<WindowError>,
}

/// Every file of the run, as each target's lens sees it.
pub(crate) struct Files(HashMap<FileKey, Analysed>);

impl Files {
    /// Analyse each file of `plans` once per lens; with `--html`, the
    /// snapshots' timelines too; a snapshot `opts.decoded` holds is not
    /// read.
    pub(crate) fn analyse(plans: &[TargetPlan], rules: &RuleSet, opts: &CheckOptions) -> Files {
        let (charts, decoded) = (opts.html.is_some(), opts.decoded.as_ref());
        let mut files: Vec<(&Path, Lens<'_>)> = plans
            .iter()
            .flat_map(|t| t.files().map(move |f| (f, t.lens())))
            .collect();
        files.sort_by_key(|(p, l)| file_key(p, *l));
        files.dedup_by_key(|(p, l)| file_key(p, *l));
        let snapshots: HashSet<&Path> = plans
            .iter()
            .flat_map(|t| t.snapshots.iter().flat_map(|p| p.runs()))
            .collect();
        let points = charts.then(|| html::points_for(files.len()));
        let analysed = files.par_iter().map(|&(p, l)| {
            let current = snapshots.contains(p);
            let read = inputs::figures(p, rules, current, l.window, l.boundary, points, decoded);
            let a = match read {
                Ok((f, timelines, unplaced)) => Analysed {
                    figures: Ok(f),
                    timelines,
                    unplaced,
                },
                Err(e) => Analysed {
                    figures: Err(e),
                    timelines: None,
                    unplaced: Vec::new(),
                },
            };
            (file_key(p, l), a)
        });
        Files(analysed.collect())
    }

    /// The file `path` as `lens` saw it; every file of the plans is there.
    pub(crate) fn get(&self, path: &Path, lens: Lens<'_>) -> &Analysed {
        &self.0[&file_key(path, lens)]
    }

    /// A snapshot's figures and timelines for the page's charts.
    pub(crate) fn charted(&self, path: &Path, lens: Lens<'_>) -> Option<html::Charted<'_>> {
        let a = self.0.get(&file_key(path, lens))?;
        Some(html::Charted {
            devices: a.figures.as_deref().ok()?,
            timelines: a.timelines.as_deref()?,
        })
    }
}

fn file_key(path: &Path, lens: Lens<'_>) -> FileKey {
    let boundary = lens.boundary.map(|b| match b {
        Boundary::Default => String::new(),
        Boundary::Prefix(p) => p.clone(),
    });
    (
        path.to_path_buf(),
        lens.window.map(ToString::to_string),
        boundary,
    )
}
