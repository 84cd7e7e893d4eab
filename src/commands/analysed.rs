//! Shared by the analysis commands: expand the snapshot arguments, load and
//! analyse every file in parallel, and collect per-file errors.

use std::path::{Path, PathBuf};

use crate::analysis::{analyze, DeviceReport, RuleSet};
use crate::document::AnalysedSnapshot;
use crate::input;
use crate::snapshot::{self, Snapshot};

use super::{Outcome, Status};

/// One analysed snapshot.
pub struct Analysed {
    pub path: PathBuf,
    pub snapshot: Snapshot,
    pub devices: Vec<DeviceReport>,
}

/// The files that could be analysed, and one error line per file that could not.
pub struct Batch {
    pub done: Vec<Analysed>,
    pub errors: Vec<String>,
}

impl Batch {
    /// The analysed files as document parts, in input order; the loaded
    /// snapshots are dropped.
    pub fn documents(&mut self) -> Vec<AnalysedSnapshot> {
        std::mem::take(&mut self.done)
            .into_iter()
            .map(|a| AnalysedSnapshot::new(&a.path, a.devices, a.snapshot.warnings))
            .collect()
    }

    /// Ok when every file was read, could-not-judge otherwise.
    pub fn outcome(mut self, mut more: Vec<String>) -> Outcome {
        self.errors.append(&mut more);
        Outcome {
            status: if self.errors.is_empty() {
                Status::Ok
            } else {
                Status::CouldNotJudge
            },
            errors: self.errors,
        }
    }
}

/// Parse `--rules`, naming the flag on error.
pub fn rules(spec: &str) -> Result<RuleSet, Outcome> {
    RuleSet::from_spec(spec).map_err(|e| Outcome::errors(vec![format!("--rules: {e}")]))
}

/// Load and analyse one file.
pub fn analyse_one(path: &Path, rules: &RuleSet, top: usize) -> Result<Analysed, String> {
    let snap = snapshot::load(path).map_err(|e| e.to_string())?;
    let devices = analyze(&snap, rules, top);
    Ok(Analysed {
        path: path.to_path_buf(),
        snapshot: snap,
        devices,
    })
}

/// Expand patterns and analyse every file on the thread pool, input order kept.
pub fn analyse_all(patterns: &[String], rules: &RuleSet, top: usize) -> Batch {
    let paths = match input::expand(patterns, None) {
        Ok(p) => p,
        Err(errors) => {
            return Batch {
                done: Vec::new(),
                errors,
            }
        }
    };
    let mut batch = Batch {
        done: Vec::new(),
        errors: Vec::new(),
    };
    for r in input::par_map(&paths, |p| analyse_one(p, rules, top)) {
        match r {
            Ok(a) => batch.done.push(a),
            Err(e) => batch.errors.push(e),
        }
    }
    batch
}
