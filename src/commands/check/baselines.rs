//! Where a target's baselines are and which one each snapshot gets: every
//! entry named once (two files with one name are an error, never "the last
//! one sorted wins"), and a snapshot without one told what was looked for.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regex::Regex;

use crate::compare::Lookup;
use crate::error::BaselineError;
use crate::walk;

/// At most this many near names are offered when a baseline is not found.
const CLOSE_NAMES: usize = 3;

/// Where a target's baselines are.
pub enum Baselines {
    None,
    /// One file for every snapshot.
    Single(PathBuf),
    /// Files by snapshot name, from a directory or pattern (`spec`).
    ByKey {
        spec: String,
        entries: BTreeMap<String, PathBuf>,
    },
}

impl Baselines {
    /// Resolve a baseline path: a directory of summaries (or snapshots), a
    /// glob pattern, or one file.
    pub(crate) fn resolve(
        spec: Option<&str>,
        key: Option<&Regex>,
    ) -> Result<Baselines, BaselineError> {
        let Some(spec) = spec else {
            return Ok(Baselines::None);
        };
        let path = Path::new(spec);
        let files: Vec<PathBuf> = if crate::beneath::is_dir(path) {
            list_dir(spec)?
        } else if spec.contains(['*', '?', '[']) {
            walk::expand(&[spec.to_string()], None).map_err(BaselineError::Pattern)?
        } else if path.exists() {
            // Not only regular files: a FIFO or device is refused when read,
            // with an error that says what it is.
            return Ok(Baselines::Single(path.to_path_buf()));
        } else {
            return Err(BaselineError::Missing { spec: spec.into() });
        };
        let mut by_key: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
        for f in files {
            by_key.entry(key_of(&f, key)).or_default().push(f);
        }
        let clashes: Vec<String> = by_key
            .iter()
            .filter(|(_, files)| files.len() > 1)
            .map(|(k, files)| {
                let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
                format!(
                    "baseline {spec}: {} all name the baseline {k:?}{}; keep one or narrow \
                     the pattern",
                    names.join(", "),
                    key.map(|k| format!(" (key = '{}')", k.as_str()))
                        .unwrap_or_default()
                )
            })
            .collect();
        if !clashes.is_empty() {
            return Err(BaselineError::SharedName(clashes));
        }
        let entries = by_key
            .into_iter()
            .filter_map(|(k, mut files)| files.pop().map(|f| (k, f)))
            .collect();
        Ok(Baselines::ByKey {
            spec: spec.to_string(),
            entries,
        })
    }

    /// The baseline of the snapshot named `name`, or where it was looked
    /// for in vain (`None` when no baseline is configured).
    pub(crate) fn for_key(&self, name: &str) -> Result<Option<&Path>, Lookup> {
        match self {
            Baselines::None => Ok(None),
            Baselines::Single(p) => Ok(Some(p)),
            Baselines::ByKey { spec, entries } => match entries.get(name) {
                Some(p) => Ok(Some(p)),
                None => Err(Lookup {
                    looked_for: name.to_string(),
                    in_dir: spec.clone(),
                    close: close_names(name, entries),
                }),
            },
        }
    }

    /// The entries (name, file) no snapshot in `names` claimed.
    pub(crate) fn unclaimed<'a>(&'a self, names: &[&str]) -> Vec<(&'a str, &'a Path)> {
        match self {
            Baselines::ByKey { entries, .. } => entries
                .iter()
                .filter(|(k, _)| !names.contains(&k.as_str()))
                .map(|(k, p)| (k.as_str(), p.as_path()))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// The files of a baseline directory, sorted; hidden files (`.gitkeep`)
/// are not baselines. An entry that cannot be listed is an error.
fn list_dir(spec: &str) -> Result<Vec<PathBuf>, BaselineError> {
    let cannot = |error| BaselineError::Unreadable {
        spec: spec.into(),
        error,
    };
    let mut files = Vec::new();
    for (name, path) in crate::beneath::read_dir(Path::new(spec)).map_err(cannot)? {
        let hidden = name.to_string_lossy().starts_with('.');
        // Subdirectories are not baselines; anything else is, so a FIFO
        // or a device there is refused when read instead of ignored.
        if !crate::beneath::is_dir(&path) && !hidden {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The file names of the entries nearest to `name` by edit distance, at
/// most [`CLOSE_NAMES`], none further away than `name` is long.
///
/// Bounded work, whatever the names: each is compared on its first
/// [`COMPARED_CHARS`] characters, every entry gets a cheap lower bound
/// ([`distance_floor`]), and the exact distance is computed for at most
/// [`CANDIDATES`] entries, nearest floor first, stopping as soon as no
/// other can come closer. A thousand unmatched snapshots against a
/// thousand long baseline names then take milliseconds, not minutes.
fn close_names(name: &str, entries: &BTreeMap<String, PathBuf>) -> Vec<String> {
    let name: Vec<char> = name.chars().take(COMPARED_CHARS).collect();
    let limit = name.len().max(1);
    let mut floors: Vec<(usize, &String, &PathBuf)> = entries
        .iter()
        .map(|(k, p)| {
            let key: Vec<char> = k.chars().take(COMPARED_CHARS).collect();
            (distance_floor(&name, &key), k, p)
        })
        .filter(|(floor, _, _)| *floor <= limit)
        .collect();
    floors.sort_by_key(|(floor, _, _)| *floor);
    let mut near: Vec<(usize, String)> = Vec::new();
    for (floor, k, p) in floors.into_iter().take(CANDIDATES) {
        if near.len() >= CLOSE_NAMES && floor > near[CLOSE_NAMES - 1].0 {
            break;
        }
        let key: Vec<char> = k.chars().take(COMPARED_CHARS).collect();
        let d = edit_distance(&name, &key);
        if d > limit {
            continue;
        }
        let file = p.file_name().map_or_else(
            || p.display().to_string(),
            |f| f.to_string_lossy().into_owned(),
        );
        near.push((d, file));
        near.sort();
    }
    near.into_iter().take(CLOSE_NAMES).map(|(_, f)| f).collect()
}

/// Characters of each name that the near-name search compares.
const COMPARED_CHARS: usize = 64;
/// Entries whose exact edit distance the near-name search computes.
const CANDIDATES: usize = 16;

/// A lower bound of the edit distance of `a` and `b`, in time linear in
/// their lengths: the length difference, and half the characters one has
/// and the other lacks (each counted in one of 64 buckets; an edit changes
/// at most two bucket counts by one).
fn distance_floor(a: &[char], b: &[char]) -> usize {
    let mut count = [0i32; 64];
    for c in a {
        count[*c as usize % 64] += 1;
    }
    for c in b {
        count[*c as usize % 64] -= 1;
    }
    let unmatched: usize = count.iter().map(|n| n.unsigned_abs() as usize).sum();
    unmatched.div_ceil(2).max(a.len().abs_diff(b.len()))
}

/// Levenshtein distance over characters.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diag + usize::from(ca != cb));
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// The distance of two strings, checked against its floor.
    fn edit_distance(a: &str, b: &str) -> usize {
        let chars = |s: &str| s.chars().collect::<Vec<char>>();
        let d = super::edit_distance(&chars(a), &chars(b));
        assert!(distance_floor(&chars(a), &chars(b)) <= d, "{a} {b}");
        d
    }

    #[test]
    fn edit_distance_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edit_distance("rank3", "rank3"), 0);
        assert_eq!(edit_distance("rank3", "rank30"), 1);
        assert_eq!(edit_distance("rank3", "rnk3"), 1);
        assert_eq!(edit_distance("rank3", "rank4"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn the_nearest_three_names_are_offered_and_unrelated_ones_are_not() {
        let entries: BTreeMap<String, PathBuf> =
            ["rank0", "rank1", "rank2", "rank12", "optimizer-state-dump"]
                .into_iter()
                .map(|k| (k.to_string(), PathBuf::from(format!("golden/{k}.json"))))
                .collect();
        assert_eq!(
            close_names("rank3", &entries),
            ["rank0.json", "rank1.json", "rank2.json"]
        );
        assert_eq!(close_names("rank122", &entries)[0], "rank12.json");
        assert!(close_names("zz", &entries).is_empty());
    }

    #[test]
    fn two_baseline_files_with_one_key_are_an_error_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["rank0.json", "rank0.json.bak", "rank1.json"] {
            std::fs::write(dir.path().join(f), "{}").unwrap();
        }
        let key = Regex::new(r"(rank\d+)").unwrap();
        let spec = dir.path().display().to_string();
        let Err(e) = Baselines::resolve(Some(&spec), Some(&key)) else {
            panic!("a key shared by two files was accepted");
        };
        let e = e.to_string();
        assert!(
            e.contains("rank0.json,") && e.contains("rank0.json.bak"),
            "{e}"
        );
        assert!(!e.contains("rank1.json"), "{e}");
    }

    #[test]
    fn hidden_files_in_a_baseline_directory_are_not_entries() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".gitkeep"), "").unwrap();
        std::fs::write(dir.path().join("rank0.json"), "{}").unwrap();
        let spec = dir.path().display().to_string();
        let b = Baselines::resolve(Some(&spec), None).unwrap();
        let unclaimed: Vec<&str> = b.unclaimed(&[]).into_iter().map(|(k, _)| k).collect();
        assert_eq!(unclaimed, ["rank0"]);
    }
}
