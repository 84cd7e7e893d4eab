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

    /// An existing file or directory under a root, canonical.
    pub(crate) fn existing(&self, path: &str) -> Result<PathBuf, String> {
        if path.is_empty() {
            return Err("an empty path".into());
        }
        let c = self
            .joined(path)
            .canonicalize()
            .map_err(|e| format!("{path}: {e}"))?;
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
        let dir = parent
            .canonicalize()
            .map_err(|e| format!("{path}: its directory: {e}"))?;
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
}
