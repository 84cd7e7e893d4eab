//! Input arguments: shell-style patterns expanded by memgate itself
//! (quoted globs work the same on every shell and in CI YAML), files read in
//! parallel, and each file's kind (snapshot or summary) told from its
//! content in the one reading.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use thiserror::Error;

use crate::baseline::Summary;
use crate::snapshot::{self, Content, LoadError, Snapshot};
use crate::walk::{self, WalkError};

/// Why the input arguments could not be expanded into files.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum InputError {
    #[error("{pattern}: the pattern matches no file")]
    NoMatch { pattern: String },
    #[error(transparent)]
    Walk(#[from] WalkError),
}

/// What an input file holds.
#[derive(Debug)]
pub enum Input {
    /// A pickle or JSON allocator snapshot, to analyse.
    Snapshot(Box<Snapshot>),
    /// A memgate summary, whose figures are read as they are.
    Summary(Box<Summary>),
}

/// Read a snapshot or a summary, opening the file once; which it is comes
/// from the content (a JSON summary is known by its keys, in any order).
/// Errors name the file, and say what may make a snapshot unreadable.
pub fn read(path: &Path) -> Result<Input, LoadError> {
    read_as(path, LoadError::of_snapshot)
}

/// [`read`] of a file used only as a baseline: its errors get no hint that
/// fits snapshots alone.
pub(crate) fn read_baseline(path: &Path) -> Result<Input, LoadError> {
    read_as(path, |e| e)
}

fn read_as(path: &Path, role: impl Fn(LoadError) -> LoadError) -> Result<Input, LoadError> {
    match snapshot::read_input(path).map_err(role)? {
        Content::Snapshot(s) => Ok(Input::Snapshot(s)),
        Content::Document(v) => {
            Summary::from_document(path, v).map(|s| Input::Summary(Box::new(s)))
        }
    }
}

/// Whether a pattern uses glob syntax.
fn is_pattern(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Expand patterns relative to `base` (the current directory when `None`).
/// A literal path is kept as given (a missing file is reported when it is
/// read); a pattern that matches nothing, a directory it cannot list and a
/// name that is not UTF-8 are errors ([`walk`]). Each file is listed once.
pub(crate) fn expand(
    patterns: &[String],
    base: Option<&Path>,
) -> Result<Vec<PathBuf>, Vec<InputError>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for p in patterns {
        let full = match base {
            Some(b) if !Path::new(p).is_absolute() => b.join(p),
            _ => PathBuf::from(p),
        };
        if !is_pattern(p) {
            out.push(full);
            continue;
        }
        let text = full.to_string_lossy().to_string();
        match walk::expand_pattern(&text) {
            Ok(matched) => {
                if matched.is_empty() {
                    errors.push(InputError::NoMatch { pattern: p.clone() });
                }
                out.extend(matched);
            }
            Err(e) => errors.extend(e.into_iter().map(InputError::from)),
        }
    }
    // The same file reached by two patterns (or a pattern and a literal
    // path, or through a link) is judged once.
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| match std::fs::metadata(p) {
        Ok(m) => seen.insert((m.dev(), m.ino())),
        Err(_) => true,
    });
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Apply `f` to every path on the thread pool, keeping the input order.
pub(crate) fn par_map<T: Send>(paths: &[PathBuf], f: impl Fn(&Path) -> T + Sync) -> Vec<T> {
    paths.par_iter().map(|p| f(p)).collect()
}
