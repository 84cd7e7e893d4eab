//! What `check` reads: each target's snapshots, their names (the `key`
//! capture or the file stem), the matching baseline (or where it was looked
//! for), and the figures of every file (snapshots analysed, summaries read).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::analysis_adapter::RuleSet;
use crate::analysis::{Boundary, Request, Window};
use crate::budget::Target;
use crate::commands::analysed::{analyse_placing, summary_in_window, Figures};
use crate::commands::Decoded;
use crate::compare::Lookup;
use crate::error::Error;
use crate::input::{self, Input};

pub use super::baselines::{key_of, Baselines};

/// How many allocation sites each device keeps for the site diff.
pub(crate) const TOP_SITES: usize = 50;

/// One snapshot to judge, with its unique name within the target: one run,
/// or the repeated runs of one key (docs/gate.md#repeated-runs).
pub(crate) struct Planned {
    /// The `key` capture or file stem: the JUnit class, and the name its
    /// baseline is matched by.
    pub(crate) name: String,
    /// The first run with this name (the one the page charts).
    pub(crate) path: PathBuf,
    /// The other runs with this name, in the order the patterns matched
    /// them: folded with `path` into one value per figure.
    pub(crate) repeats: Vec<PathBuf>,
    pub(crate) baseline: Option<PathBuf>,
    /// Where the baseline was looked for in vain.
    pub(crate) lookup: Option<Lookup>,
}

impl Planned {
    /// Every run of this name: `path`, then the repeats.
    pub(crate) fn runs(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.path.as_path()).chain(self.repeats.iter().map(PathBuf::as_path))
    }
}

/// The snapshot patterns of a target: `cli`'s when given, else its own.
fn patterns<'a>(target: &'a Target, cli: &'a [String]) -> &'a [String] {
    if cli.is_empty() {
        &target.snapshots
    } else {
        cli
    }
}

/// The snapshots of a target (`cli` overrides the target's patterns);
/// snapshots with one key are the repeated runs of one name.
pub(crate) fn plan(
    target: &Target,
    cli: &[String],
    baselines: &Baselines,
) -> Result<Vec<Planned>, Vec<Error>> {
    let patterns = patterns(target, cli);
    let paths = crate::walk::expand(patterns, None)
        .map_err(|e| e.into_iter().map(Error::from).collect::<Vec<_>>())?;
    let mut planned: Vec<Planned> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for path in paths {
        let name = key_of(&path, target.key.as_ref());
        if let Some(&i) = index.get(&name) {
            planned[i].repeats.push(path);
            continue;
        }
        let (baseline, lookup) = match baselines.for_key(&name) {
            Ok(b) => (b.map(Path::to_path_buf), None),
            Err(lookup) => (None, Some(lookup)),
        };
        index.insert(name.clone(), planned.len());
        planned.push(Planned {
            name,
            path,
            repeats: Vec::new(),
            baseline,
            lookup,
        });
    }
    Ok(planned)
}

/// Every file a target names, as far as it can be found, for a target
/// that could not be planned: the snapshots its patterns match (a pattern
/// that cannot be expanded as its literal path) and the baseline file, the
/// files of the baseline directory or those its pattern matches.
pub(crate) fn named_files(target: &Target, cli: &[String], baseline: Option<&str>) -> Vec<PathBuf> {
    let patterns = patterns(target, cli);
    let expanded = |patterns: &[String]| {
        crate::walk::expand(patterns, None)
            .unwrap_or_else(|_| patterns.iter().map(PathBuf::from).collect())
    };
    let mut files = expanded(patterns);
    match baseline {
        Some(spec) if crate::beneath::is_dir(Path::new(spec)) => {
            let entries = crate::beneath::read_dir(Path::new(spec)).unwrap_or_default();
            files.extend(entries.into_iter().map(|(_, path)| path));
        }
        Some(spec) => files.extend(expanded(&[spec.to_string()])),
        None => {}
    }
    files
}

/// Figures of one file (a snapshot `decoded` holds is not read), inside `window` when given, iterations cut at
/// `boundary` (the default boundaries when `None`): a memgate summary is
/// read (it must hold that window's figures), a snapshot analysed; with
/// `points`, a snapshot's device timelines at about that many samples too
/// (for `--html`), from the same replay. A file read only as a baseline
/// gets no snapshot-only hint in its error.
pub(crate) fn figures(
    path: &Path,
    rules: &RuleSet,
    as_snapshot: bool,
    window: Option<&Window>,
    boundary: Option<&Boundary>,
    points: Option<usize>,
    decoded: Option<&Decoded>,
) -> Result<Figures, Error> {
    let read = match decoded.and_then(|d| d.get(path)) {
        Some(snap) => Ok(Input::Snapshot(Box::new(snap))),
        None if as_snapshot => input::read(path),
        None => input::read_baseline(path),
    };
    match read? {
        Input::Summary(s) => Ok((
            summary_in_window(path, s.devices, window)?,
            None,
            Vec::new(),
        )),
        Input::Snapshot(snap) => {
            let req = Request {
                window,
                iteration_boundary: boundary,
                timeline_points: points,
                ..Request::top(TOP_SITES)
            };
            analyse_placing(path, &snap, rules, req)
        }
    }
}
