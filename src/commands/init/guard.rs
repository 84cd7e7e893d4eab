//! What `init` may write: never over an existing file without `--force`,
//! and never through a link (a symlinked directory on the way, a symlink
//! or a file with other hard links), which would put the file outside the
//! directory it was asked for or change a file that lives elsewhere.

use std::path::{Path, PathBuf};

use crate::error::UsageError;

/// The directories on the way to `path` that a link could divert: every
/// ancestor named in a relative path, the parent alone in an absolute one
/// (its own ancestors are the machine's, such as a `/tmp` that is a link).
fn ways(path: &Path) -> Vec<&Path> {
    let named = path
        .ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty());
    if path.is_absolute() {
        named.take(1).collect()
    } else {
        named.collect()
    }
}

/// Why a link at `p` would divert a write, if one does.
fn linked(p: &Path) -> Option<&'static str> {
    let meta = std::fs::symlink_metadata(p).ok()?;
    if meta.file_type().is_symlink() {
        return Some("a symbolic link");
    }
    if meta.is_file() && crate::platform::hard_links(&meta) > 1 {
        return Some("a file with other hard links");
    }
    None
}

/// Why the directory `dir` (to be created where missing) cannot receive
/// `init`'s files: it, or a directory on the way to it, is a link.
pub(super) fn directory(dir: &Path) -> Result<(), UsageError> {
    let on_the_way = std::iter::once(dir).chain(ways(dir));
    for p in on_the_way {
        if let Some(why) = linked(p) {
            return Err(UsageError::InitThroughLink {
                path: p.to_path_buf(),
                why,
            });
        }
    }
    Ok(())
}

/// Why `init` cannot write the file `path` (a `what`: budget file, golden
/// summary): a link, on the way or at it, or a file already there without
/// `force`.
pub(super) fn file(path: &Path, what: &'static str, force: bool) -> Result<(), UsageError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        directory(parent)?;
    }
    if let Some(why) = linked(path) {
        return Err(UsageError::InitThroughLink {
            path: path.to_path_buf(),
            why,
        });
    }
    if !force && std::fs::symlink_metadata(path).is_ok() {
        return Err(UsageError::InitExists {
            path: path.to_path_buf(),
            what,
        });
    }
    Ok(())
}

/// Every problem of writing the budget file and the golden summaries.
pub(super) fn outputs(config: &Path, goldens: &[PathBuf], force: bool) -> Vec<UsageError> {
    let mut errors: Vec<UsageError> = Vec::new();
    let mut seen_dirs: Vec<&Path> = Vec::new();
    for g in goldens {
        if let Some(dir) = g.parent().filter(|d| !seen_dirs.contains(d)) {
            seen_dirs.push(dir);
            errors.extend(directory(dir).err());
        }
    }
    errors.extend(file(config, "budget file", force).err());
    for g in goldens {
        errors.extend(file(g, "golden summary", force).err());
    }
    // A link on the way is reported once, not once per file behind it.
    let mut shown: Vec<String> = Vec::new();
    errors.retain(|e| {
        let text = e.to_string();
        let new = !shown.contains(&text);
        shown.push(text);
        new
    });
    errors
}
