//! Input files: read in parallel, and each file's kind (snapshot or
//! summary) told from its content in the one reading. The arguments are
//! expanded into files by [`walk::expand`](crate::walk::expand).

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::baseline::Summary;
use crate::snapshot::{self, Content, LoadError, Snapshot};

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

/// Apply `f` to every path on the thread pool, keeping the input order.
pub(crate) fn par_map<T: Send>(paths: &[PathBuf], f: impl Fn(&Path) -> T + Sync) -> Vec<T> {
    paths.par_iter().map(|p| f(p)).collect()
}
