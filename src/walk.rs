//! Input arguments expanded by memgate itself (quoted globs work the same
//! on every shell and in CI YAML), with glob expansion that cannot drop,
//! loop or repeat: a directory that cannot
//! be listed and a name that is not UTF-8 are errors naming the path (the
//! `glob` crate skips both silently), `**` visits each directory once by
//! file identity (src/platform; a symlink loop ends, with memory bounded by the number
//! of real directories), and a file reached twice is listed once.
//! Matching of one path component is `glob::Pattern`'s, with the shell's
//! rule for hidden names: `*`, `?` and `[…]` never match a leading `.`
//! (only a component written with one, `.*`, does), and `**` does not enter
//! hidden directories, so `golden/*` takes neither `.gitkeep` nor what a
//! killed run left. memgate's own temporary files
//! ([`files::is_temporary`]) are matched by no pattern at all.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use glob::{MatchOptions, Pattern};
use thiserror::Error;

use crate::files;

/// Why a pattern could not be expanded; each names the pattern.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum WalkError {
    #[error("{pattern}: not valid UTF-8")]
    NotUtf8Pattern { pattern: String },
    #[error("{pattern}: not a valid pattern: {message}")]
    BadPattern { pattern: String, message: String },
    #[error("{pattern}: cannot list {dir} while expanding it: {message}")]
    CannotList {
        pattern: String,
        dir: String,
        message: String,
    },
    #[error("{pattern}: {name} is not a UTF-8 name; rename it or name it without a pattern")]
    NotUtf8Name { pattern: String, name: String },
}

/// Why the input arguments could not be expanded into files.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum InputError {
    #[error("{pattern}: the pattern matches no file")]
    NoMatch { pattern: String },
    #[error(transparent)]
    Walk(#[from] WalkError),
}

/// One component of a pattern.
enum Part {
    /// `**`: zero or more directories.
    AnyDirs,
    /// A literal name (no glob syntax): looked up, not listed.
    Name(String),
    Glob(Pattern),
}

fn is_pattern(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

const OPTIONS: MatchOptions = MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: true,
};

/// Split a pattern into the directory it starts from and its parts.
fn parse(pattern: &str) -> Result<(PathBuf, Vec<Part>), WalkError> {
    let mut root = PathBuf::new();
    let mut parts = Vec::new();
    for c in Path::new(pattern).components() {
        match c {
            Component::Normal(os) => {
                let s = os.to_str().ok_or_else(|| WalkError::NotUtf8Pattern {
                    pattern: pattern.into(),
                })?;
                if parts.is_empty() && !is_pattern(s) {
                    root.push(s);
                } else if s == "**" {
                    parts.push(Part::AnyDirs);
                } else if is_pattern(s) {
                    let p = Pattern::new(s).map_err(|e| WalkError::BadPattern {
                        pattern: pattern.into(),
                        message: e.to_string(),
                    })?;
                    parts.push(Part::Glob(p));
                } else {
                    parts.push(Part::Name(s.to_string()));
                }
            }
            other if parts.is_empty() => root.push(other.as_os_str()),
            Component::ParentDir => parts.push(Part::Name("..".into())),
            _ => {}
        }
    }
    Ok((root, parts))
}

struct Walk<'a> {
    pattern: &'a str,
    /// Directories entered below a `**`, by (device, inode).
    seen_dirs: HashSet<crate::platform::FileId>,
    /// Files listed so far, by (device, inode).
    seen_files: HashSet<crate::platform::FileId>,
    found: Vec<PathBuf>,
    errors: Vec<WalkError>,
}

impl Walk<'_> {
    fn cannot_list(&self, dir: &Path, e: &std::io::Error) -> WalkError {
        WalkError::CannotList {
            pattern: self.pattern.into(),
            dir: dir.display().to_string(),
            message: e.to_string(),
        }
    }

    /// Names in `dir`, sorted; an unlistable directory or a non-UTF-8 name
    /// is an error.
    fn list(&mut self, dir: &Path) -> Vec<(String, PathBuf)> {
        let shown = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let entries = match crate::beneath::read_dir(shown) {
            Ok(e) => e,
            // A directory that is not there holds no match (like a shell).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(e) => {
                self.errors.push(self.cannot_list(shown, &e));
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for (name, path) in entries {
            match name.into_string() {
                Ok(name) => out.push((name, path)),
                Err(os) => self.errors.push(WalkError::NotUtf8Name {
                    pattern: self.pattern.into(),
                    name: dir.join(os).display().to_string(),
                }),
            }
        }
        out.sort();
        out
    }

    fn file(&mut self, path: PathBuf) {
        if !crate::beneath::exists(&path) || crate::beneath::is_dir(&path) {
            return;
        }
        if crate::platform::file_id(&path).is_none_or(|id| self.seen_files.insert(id)) {
            self.found.push(path);
        }
    }

    fn dir_id(path: &Path) -> Option<crate::platform::FileId> {
        let path = if path.as_os_str().is_empty() {
            Path::new(".")
        } else {
            path
        };
        if crate::beneath::is_dir(path) {
            crate::platform::file_id(path)
        } else {
            None
        }
    }

    fn go(&mut self, dir: &Path, parts: &[Part]) {
        let Some((first, rest)) = parts.split_first() else {
            self.file(dir.to_path_buf());
            return;
        };
        match first {
            Part::Name(n) => {
                let next = dir.join(n);
                if rest.is_empty() {
                    self.file(next);
                } else if crate::beneath::is_dir(&next) {
                    self.go(&next, rest);
                }
            }
            Part::Glob(p) => {
                for (name, path) in self.list(dir) {
                    if !p.matches_with(&name, OPTIONS) || files::is_temporary(&name) {
                        continue;
                    }
                    if rest.is_empty() {
                        self.file(path);
                    } else if crate::beneath::is_dir(&path) {
                        self.go(&path, rest);
                    }
                }
            }
            Part::AnyDirs => {
                // Zero directories, then one more level of `**`, each real
                // directory once whatever links lead to it.
                let Some(id) = Self::dir_id(dir) else { return };
                if !self.seen_dirs.insert(id) {
                    return;
                }
                self.go(dir, rest);
                for (name, path) in self.list(dir) {
                    if !name.starts_with('.') && crate::beneath::is_dir(&path) {
                        self.go(&path, parts);
                    }
                }
            }
        }
    }
}

/// Expand patterns relative to `base` (the current directory when `None`).
/// A literal path is kept as given (a missing file is reported when it is
/// read); a pattern that matches nothing, a directory it cannot list and a
/// name that is not UTF-8 are errors ([`expand_pattern`]). Each file is listed once.
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
        if !is_pattern(p) && crate::beneath::is_dir(&full) {
            // A directory stands for the files in it (not hidden ones, not
            // below it), as `baseline = "golden/"` does; one with no file
            // stands for itself, which its reader refuses by name.
            let text = full.join("*").to_string_lossy().to_string();
            match expand_pattern(&text) {
                Ok(matched) => {
                    let files: Vec<PathBuf> = matched
                        .into_iter()
                        .filter(|f| crate::beneath::is_file(f))
                        .collect();
                    if files.is_empty() {
                        out.push(full);
                    }
                    out.extend(files);
                }
                Err(e) => errors.extend(e.into_iter().map(InputError::from)),
            }
            continue;
        }
        if !is_pattern(p) {
            out.push(full);
            continue;
        }
        let text = full.to_string_lossy().to_string();
        match expand_pattern(&text) {
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
    let mut seen = HashSet::new();
    out.retain(|p| match crate::platform::file_id(p) {
        Some(id) => seen.insert(id),
        None => true,
    });
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// The files one pattern matches, sorted by path, each file once; the
/// errors name every directory or name that could not be read.
pub fn expand_pattern(pattern: &str) -> Result<Vec<PathBuf>, Vec<WalkError>> {
    let (root, parts) = parse(pattern).map_err(|e| vec![e])?;
    let mut w = Walk {
        pattern,
        seen_dirs: HashSet::new(),
        seen_files: HashSet::new(),
        found: Vec::new(),
        errors: Vec::new(),
    };
    w.go(&root, &parts);
    if !w.errors.is_empty() {
        return Err(w.errors);
    }
    w.found.sort();
    Ok(w.found)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::os::unix::fs::symlink;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"x").unwrap();
    }

    fn names(dir: &Path, found: &[PathBuf]) -> Vec<String> {
        found
            .iter()
            .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn star_and_double_star_match_like_a_shell_glob() {
        let d = tempfile::tempdir().unwrap();
        touch(&d.path().join("rank0.pickle"));
        touch(&d.path().join("rank1.pickle"));
        touch(&d.path().join("notes.txt"));
        touch(&d.path().join("a/b/rank2.pickle"));
        let root = d.path().display();
        let one = expand_pattern(&format!("{root}/*.pickle")).unwrap();
        assert_eq!(names(d.path(), &one), ["rank0.pickle", "rank1.pickle"]);
        let all = expand_pattern(&format!("{root}/**/*.pickle")).unwrap();
        assert_eq!(
            names(d.path(), &all),
            ["a/b/rank2.pickle", "rank0.pickle", "rank1.pickle"]
        );
        let mid = expand_pattern(&format!("{root}/a/*/rank?.pickle")).unwrap();
        assert_eq!(names(d.path(), &mid), ["a/b/rank2.pickle"]);
    }

    #[test]
    fn hidden_names_match_only_a_dot_and_temporaries_match_nothing() {
        let d = tempfile::tempdir().unwrap();
        touch(&d.path().join("rank0.json"));
        touch(&d.path().join(".gitkeep"));
        touch(&d.path().join(".rank0.json.memgate-41-0.tmp"));
        touch(&d.path().join(".cache/rank1.json"));
        touch(&d.path().join("a/.hidden.json"));
        let root = d.path().display();
        let star = expand_pattern(&format!("{root}/*")).unwrap();
        assert_eq!(names(d.path(), &star), ["rank0.json"]);
        let deep = expand_pattern(&format!("{root}/**/*.json")).unwrap();
        assert_eq!(names(d.path(), &deep), ["rank0.json"]);
        let dot = expand_pattern(&format!("{root}/.*")).unwrap();
        assert_eq!(names(d.path(), &dot), [".gitkeep"]);
        let named = expand_pattern(&format!("{root}/.cache/*.json")).unwrap();
        assert_eq!(names(d.path(), &named), [".cache/rank1.json"]);
    }

    // Symlinks and byte file names: Unix only.
    #[cfg(unix)]
    #[test]
    fn a_symlink_loop_under_double_star_ends_and_each_file_is_listed_once() {
        let d = tempfile::tempdir().unwrap();
        touch(&d.path().join("runs/rank0.pickle"));
        symlink(d.path(), d.path().join("runs/loop")).unwrap();
        symlink(d.path().join("runs"), d.path().join("again")).unwrap();
        let found = expand_pattern(&format!("{}/**/*.pickle", d.path().display())).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
    }

    // Symlinks and byte file names: Unix only.
    #[cfg(unix)]
    #[test]
    fn a_name_that_is_not_utf8_is_an_error_naming_the_path() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let d = tempfile::tempdir().unwrap();
        touch(&d.path().join("rank0.pickle"));
        let bad = d.path().join(OsStr::from_bytes(b"rank\xff.pickle"));
        std::fs::write(&bad, b"x").unwrap();
        let errors = expand_pattern(&format!("{}/*.pickle", d.path().display())).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].to_string().contains("rank\u{fffd}.pickle"),
            "{errors:?}"
        );
        assert!(
            errors[0].to_string().contains("not a UTF-8 name"),
            "{errors:?}"
        );
    }

    #[test]
    fn a_directory_that_cannot_be_listed_is_an_error_not_an_empty_match() {
        // Permission bits do not bind root, so list something that is not
        // a directory: the error path is the same.
        let mut w = Walk {
            pattern: "gone/*.pickle",
            seen_dirs: HashSet::new(),
            seen_files: HashSet::new(),
            found: Vec::new(),
            errors: Vec::new(),
        };
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("not-a-dir");
        touch(&file);
        assert!(w.list(&file).is_empty());
        assert_eq!(w.errors.len(), 1);
        assert!(
            w.errors[0].to_string().contains("cannot list"),
            "{:?}",
            w.errors
        );
        assert!(w.list(&d.path().join("gone")).is_empty());
        assert_eq!(
            w.errors.len(),
            1,
            "a missing directory is no match, not an error"
        );
    }
}
