//! What `check` reads: each target's snapshots, their names (the `key`
//! capture or the file stem), the matching baseline, and the figures of
//! every file (snapshots analysed, summaries read).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use regex::Regex;

use super::analysis_adapter::{analyze, RuleSet};
use crate::analysis::DeviceReport;
use crate::budget::Target;
use crate::input::{self, Input};

/// How many allocation sites each device keeps for the site diff.
pub const TOP_SITES: usize = 50;

/// A snapshot's name: the `key` regex's first capture on the file name,
/// else the file stem.
pub fn key_of(path: &Path, key: Option<&Regex>) -> String {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(c) = key.and_then(|k| k.captures(&file)) {
        if let Some(m) = c.get(1) {
            return m.as_str().to_string();
        }
    }
    path.file_stem()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or(file)
}

/// Where a target's baselines are.
pub enum Baselines {
    None,
    /// One file for every snapshot.
    Single(PathBuf),
    /// Files by snapshot name.
    ByKey(BTreeMap<String, PathBuf>),
}

impl Baselines {
    /// Resolve a baseline path: a directory of summaries (or snapshots), a
    /// glob pattern, or one file.
    pub fn resolve(spec: Option<&str>, key: Option<&Regex>) -> Result<Baselines, String> {
        let Some(spec) = spec else {
            return Ok(Baselines::None);
        };
        let path = Path::new(spec);
        let files: Vec<PathBuf> = if path.is_dir() {
            let entries = std::fs::read_dir(path)
                .map_err(|e| format!("baseline {spec}: cannot be read: {e}"))?;
            let mut files: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect();
            files.sort();
            files
        } else if spec.contains(['*', '?', '[']) {
            input::expand(&[spec.to_string()], None)
                .map_err(|e| format!("baseline {}", e.join("; ")))?
        } else if path.is_file() {
            return Ok(Baselines::Single(path.to_path_buf()));
        } else {
            return Err(format!("baseline {spec}: no such file or directory"));
        };
        Ok(Baselines::ByKey(
            files.into_iter().map(|p| (key_of(&p, key), p)).collect(),
        ))
    }

    pub fn for_key(&self, name: &str) -> Option<&Path> {
        match self {
            Baselines::None => None,
            Baselines::Single(p) => Some(p),
            Baselines::ByKey(m) => m.get(name).map(PathBuf::as_path),
        }
    }
}

/// One snapshot to judge, with its unique name within the target.
pub struct Planned {
    pub name: String,
    pub path: PathBuf,
    pub baseline: Option<PathBuf>,
}

/// The snapshots of a target (`cli` overrides the target's patterns).
pub fn plan(
    target: &Target,
    cli: &[String],
    baselines: &Baselines,
) -> Result<Vec<Planned>, Vec<String>> {
    let paths = if cli.is_empty() {
        input::expand(&target.snapshots, None)?
    } else {
        input::expand(cli, None)?
    };
    let mut seen: HashMap<String, usize> = HashMap::new();
    Ok(paths
        .into_iter()
        .map(|path| {
            let key = key_of(&path, target.key.as_ref());
            let n = seen.entry(key.clone()).or_default();
            *n += 1;
            // Two files with one name would make two JUnit cases with one name.
            let name = if *n == 1 {
                key.clone()
            } else {
                format!("{key}#{n}")
            };
            let baseline = baselines.for_key(&key).map(Path::to_path_buf);
            Planned {
                name,
                path,
                baseline,
            }
        })
        .collect())
}

/// Figures of one file: a memgate summary is read, a snapshot analysed.
pub fn figures(path: &Path, rules: &RuleSet) -> Result<Vec<DeviceReport>, String> {
    match input::read(path)? {
        Input::Summary(s) => Ok(s.devices),
        Input::Snapshot(snap) => {
            analyze(&snap, rules, TOP_SITES).map_err(|e| format!("{}: {e}", path.display()))
        }
    }
}
