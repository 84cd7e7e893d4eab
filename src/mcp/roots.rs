//! Path confinement: every path a tool is given must lie under one of the
//! roots the server was started with (`--root DIR`, the current directory
//! by default). Paths are canonicalised first, so `..` and symbolic links
//! (the link's target counts, not its name) cannot lead outside.

use std::path::{Component, Path, PathBuf};

/// The canonical roots.
#[derive(Debug, Clone)]
pub(crate) struct Roots {
    dirs: Vec<PathBuf>,
}

impl Roots {
    /// Canonicalise each root; an error names the one that is not a directory.
    pub(crate) fn new(dirs: &[PathBuf]) -> Result<Roots, String> {
        let given: Vec<PathBuf> = if dirs.is_empty() {
            vec![PathBuf::from(".")]
        } else {
            dirs.to_vec()
        };
        let mut out = Vec::new();
        for d in given {
            let c = d
                .canonicalize()
                .map_err(|e| format!("--root {}: {e}", d.display()))?;
            if !c.is_dir() {
                return Err(format!("--root {}: not a directory", d.display()));
            }
            out.push(c);
        }
        Ok(Roots { dirs: out })
    }

    /// Every root, canonical.
    pub(crate) fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The first root: relative paths are taken from it.
    pub(crate) fn first(&self) -> &Path {
        &self.dirs[0]
    }

    fn joined(&self, path: &str) -> PathBuf {
        let p = Path::new(path);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.first().join(p)
        }
    }

    pub(super) fn inside(&self, canonical: &Path) -> bool {
        self.dirs.iter().any(|r| canonical.starts_with(r))
    }

    pub(super) fn outside(&self, path: &str) -> String {
        format!(
            "{path}: outside the roots this server may read ({}); start `memgate mcp` with \
             --root DIR to allow another directory",
            self.dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    /// Why `joined` (given as `path`) could not be resolved: when even its
    /// spelling leads out of the roots, the same words as for an outside
    /// file that exists, so that errors never tell whether a file outside
    /// exists.
    fn unresolved(&self, path: &str, joined: &Path, e: &std::io::Error) -> String {
        if self.inside(&lexical(joined)) {
            format!("{path}: {e}")
        } else {
            self.outside(path)
        }
    }

    /// An existing file or directory under a root, canonical.
    pub(crate) fn existing(&self, path: &str) -> Result<PathBuf, String> {
        if path.is_empty() {
            return Err("an empty path".into());
        }
        let joined = self.joined(path);
        let c = joined
            .canonicalize()
            .map_err(|e| self.unresolved(path, &joined, &e))?;
        if self.inside(&c) {
            Ok(c)
        } else {
            Err(self.outside(path))
        }
    }

    /// A path to write under a root: its directory must exist inside a
    /// root, and the name must not be an existing link (which could point
    /// anywhere) nor `..`.
    pub(crate) fn writable(&self, path: &str) -> Result<PathBuf, String> {
        let full = self.joined(path);
        let name = match full.components().next_back() {
            Some(Component::Normal(n)) => n.to_owned(),
            _ => return Err(format!("{path}: not a file name")),
        };
        let parent = full.parent().unwrap_or(Path::new("/"));
        let dir = parent.canonicalize().map_err(|e| {
            let why = self.unresolved(path, parent, &e);
            if why.contains("outside the roots") {
                why
            } else {
                format!("{path}: its directory: {e}")
            }
        })?;
        if !self.inside(&dir) {
            return Err(self.outside(path));
        }
        let target = dir.join(name);
        if target
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(format!("{path}: is a symbolic link; name a plain file"));
        }
        Ok(target)
    }

    /// A relative pattern or path named inside a budget file: refused when
    /// absolute or when it climbs with `..` (it could leave the roots).
    pub(crate) fn relative_inside(what: &str, value: &str) -> Result<(), String> {
        let p = Path::new(value);
        if p.is_absolute() || p.components().any(|c| c == Component::ParentDir) {
            return Err(format!(
                "{what} `{value}`: a budget given to the MCP server may name only relative \
                 paths without `..` (they must stay under the roots)"
            ));
        }
        Ok(())
    }
}

/// `p` with `.` and `..` resolved by spelling alone (no link is followed).
fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, tempfile::TempDir) {
        let root = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("a.pickle"), b"x").unwrap();
        std::fs::write(other.path().join("secret.pickle"), b"x").unwrap();
        (root, other)
    }

    #[test]
    fn a_file_under_the_root_is_accepted_relative_or_absolute() {
        let (root, _other) = tree();
        let r = Roots::new(&[root.path().to_path_buf()]).unwrap();
        let want = root.path().canonicalize().unwrap().join("a.pickle");
        assert_eq!(r.existing("a.pickle").unwrap(), want);
        assert_eq!(r.existing(want.to_str().unwrap()).unwrap(), want);
    }

    #[test]
    #[cfg(unix)] // symlinks
    fn dotdot_absolute_and_symlinks_out_of_the_root_are_refused() {
        let (root, other) = tree();
        let r = Roots::new(&[root.path().to_path_buf()]).unwrap();
        let secret = other.path().join("secret.pickle");
        let err = r.existing(secret.to_str().unwrap()).unwrap_err();
        assert!(err.contains("outside the roots"), "{err}");
        let climb = format!(
            "../{}/secret.pickle",
            other.path().file_name().unwrap().to_str().unwrap()
        );
        assert!(r
            .existing(&climb)
            .unwrap_err()
            .contains("outside the roots"));
        std::os::unix::fs::symlink(&secret, root.path().join("link.pickle")).unwrap();
        assert!(r
            .existing("link.pickle")
            .unwrap_err()
            .contains("outside the roots"));
        std::os::unix::fs::symlink(other.path(), root.path().join("dir")).unwrap();
        assert!(r
            .existing("dir/secret.pickle")
            .unwrap_err()
            .contains("outside the roots"));
        // Writing through a linked directory or onto a link is refused too.
        assert!(r.writable("dir/out.html").is_err());
        assert!(r.writable("link.pickle").is_err());
        assert!(r.writable("out.html").is_ok());
    }

    #[test]
    fn a_second_root_is_honoured_and_a_missing_root_is_an_error() {
        let (root, other) = tree();
        let r = Roots::new(&[root.path().to_path_buf(), other.path().to_path_buf()]).unwrap();
        let secret = other.path().join("secret.pickle");
        assert!(r.existing(secret.to_str().unwrap()).is_ok());
        assert!(Roots::new(&[root.path().join("nope")]).is_err());
    }

    #[test]
    fn budget_paths_must_stay_relative() {
        assert!(Roots::relative_inside("snapshots", "runs/*.pickle").is_ok());
        assert!(Roots::relative_inside("snapshots", "/etc/*.pickle").is_err());
        assert!(Roots::relative_inside("baseline", "../golden").is_err());
    }

    #[test]
    fn an_outside_file_that_exists_and_one_that_does_not_get_the_same_error() {
        let (root, other) = tree();
        let r = Roots::new(&[root.path().to_path_buf()]).unwrap();
        let name = other.path().file_name().unwrap().to_str().unwrap();
        for (there, missing) in [
            (
                other.path().join("secret.pickle").display().to_string(),
                other.path().join("nope.pickle").display().to_string(),
            ),
            (
                format!("../{name}/secret.pickle"),
                format!("../{name}/nope.pickle"),
            ),
        ] {
            let a = r.existing(&there).unwrap_err().replace(&there, "P");
            let b = r.existing(&missing).unwrap_err().replace(&missing, "P");
            assert_eq!(a, b);
            assert!(a.contains("outside the roots"), "{a}");
            let w = r.writable(&format!("{missing}/x")).unwrap_err();
            assert!(w.contains("outside the roots"), "{w}");
        }
        // Inside a root, a missing file is said to be missing.
        assert!(r
            .existing("nope.pickle")
            .unwrap_err()
            .contains("No such file"));
    }
}
