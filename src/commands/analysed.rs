//! Shared by the analysis commands: expand the snapshot arguments, load and
//! analyse every file in parallel, and collect per-file errors. A loaded
//! snapshot is dropped as soon as its figures (and timelines) are computed,
//! so memory stays bounded by the files in flight, not by the file count.

use std::path::{Path, PathBuf};

use crate::analysis::{
    analyze_explained, analyze_grouped, DeviceReport, GroupBy, PeakAt, RuleSet, Timeline,
};
use crate::document::AnalysedSnapshot;
use crate::input;
use crate::snapshot;

use crate::error::{Error, UsageError};
use crate::snapshot::LoadError;

use super::Outcome;

/// One analysed snapshot (the snapshot itself already dropped).
pub(crate) struct Analysed {
    pub(crate) path: PathBuf,
    pub(crate) warnings: Vec<String>,
    pub(crate) devices: Vec<DeviceReport>,
    /// One per device, when timelines were asked for.
    pub(crate) timelines: Option<Vec<Timeline>>,
}

/// The files that could be analysed, and one error per file that could not.
pub(crate) struct Batch {
    pub(crate) done: Vec<Analysed>,
    pub(crate) errors: Vec<Error>,
}

impl Batch {
    /// The analysed files as document parts, in input order, and their
    /// timelines (empty where none were asked for).
    pub(crate) fn documents(&mut self) -> (Vec<AnalysedSnapshot>, Vec<Vec<Timeline>>) {
        std::mem::take(&mut self.done)
            .into_iter()
            .map(|a| {
                let t = a.timelines.unwrap_or_default();
                (AnalysedSnapshot::new(&a.path, a.devices, a.warnings), t)
            })
            .unzip()
    }

    /// The batch's errors, then `more`.
    pub(crate) fn outcome(mut self, more: impl IntoIterator<Item = Error>) -> Outcome {
        self.errors.extend(more);
        Outcome::from_errors(self.errors)
    }
}

/// Parse `--rules`, naming the flag on error.
pub(crate) fn rules(spec: &str) -> Result<RuleSet, Outcome> {
    RuleSet::from_spec(spec).map_err(|e| Outcome::error(UsageError::Rules(e)))
}

/// What to compute besides the figures.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Asked {
    /// How `categories` (and the timeline) group allocations.
    pub(crate) group_by: GroupBy,
    /// The timeline of every device at about this many samples.
    pub(crate) timeline_points: Option<usize>,
    /// Where each peak falls and the stacks live at this one (`peak`).
    pub(crate) explain: Option<PeakAt>,
}

/// Load and analyse one file; what is `asked` comes from the same replay
/// pass.
pub(crate) fn analyse_one(
    path: &Path,
    rules: &RuleSet,
    top: usize,
    asked: Asked,
) -> Result<Analysed, LoadError> {
    let snap = snapshot::load(path)?;
    let (devices, timelines) = match asked.explain {
        // `peak` asks for an explanation, by category, with no timeline.
        Some(at) => (analyze_explained(&snap, rules, top, Some(at)), None),
        None => {
            let (d, t): (Vec<DeviceReport>, Vec<Option<Timeline>>) =
                analyze_grouped(&snap, rules, asked.group_by, top, asked.timeline_points)
                    .into_iter()
                    .unzip();
            (d, t.into_iter().collect())
        }
    };
    Ok(Analysed {
        path: path.to_path_buf(),
        warnings: snap.warnings,
        devices,
        timelines,
    })
}

/// Expand patterns and analyse every file on the thread pool, input order kept.
pub(crate) fn analyse_all(patterns: &[String], rules: &RuleSet, top: usize, asked: Asked) -> Batch {
    let paths = match input::expand(patterns, None) {
        Ok(p) => p,
        Err(errors) => {
            return Batch {
                done: Vec::new(),
                errors: errors.into_iter().map(Error::from).collect(),
            }
        }
    };
    let mut batch = Batch {
        done: Vec::new(),
        errors: Vec::new(),
    };
    for r in input::par_map(&paths, |p| analyse_one(p, rules, top, asked)) {
        match r {
            Ok(a) => batch.done.push(a),
            Err(e) => batch.errors.push(e.into()),
        }
    }
    batch
}
