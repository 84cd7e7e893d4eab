//! Files opened beneath directory descriptors. A process may be confined
//! to a few directories ([`confine`]: `memgate mcp` and its `--root`s):
//! from then on every file memgate opens, lists, creates or renames in
//! this process is resolved beneath the descriptor of the root that holds
//! it, by `cap-std` (`openat2` with `RESOLVE_BENEATH` where the kernel has
//! it, a component-by-component walk that refuses links out elsewhere).
//! A path checked by name and then swapped for a link (a rename race)
//! can then lead nowhere outside: the open itself refuses it. Without
//! confinement (the command line) the same functions use the plain file
//! system, as before.
//!
//! [`open_beside`] is confined in both cases: the file beside a snapshot
//! (its `.NAME.env.json`) is opened beneath the snapshot's directory, so a
//! link from it to elsewhere is refused.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

/// A directory the process may use, by its canonical path and descriptor.
struct Root {
    path: PathBuf,
    dir: Dir,
}

/// The roots of a confined process (none set: not confined).
static ROOTS: OnceLock<RwLock<Vec<Arc<Root>>>> = OnceLock::new();

#[cfg(feature = "mcp")]
/// Confine every later file access of this process to `dirs` (canonical
/// directories) and to what [`admit`] adds. Set once; a second call is an
/// error.
pub(crate) fn confine(dirs: &[PathBuf]) -> io::Result<()> {
    let roots = dirs
        .iter()
        .map(|d| open_root(d))
        .collect::<io::Result<Vec<_>>>()?;
    ROOTS
        .set(RwLock::new(roots))
        .map_err(|_| io::Error::other("the process is confined already"))
}

#[cfg(feature = "mcp")]
fn open_root(path: &Path) -> io::Result<Arc<Root>> {
    Ok(Arc::new(Root {
        path: path.to_path_buf(),
        dir: Dir::open_ambient_dir(path, ambient_authority())?,
    }))
}

#[cfg(feature = "mcp")]
/// A directory admitted to a confined process while this lives (a call's
/// private temporary directory).
pub(crate) struct Admitted(Option<Arc<Root>>);

#[cfg(feature = "mcp")]
impl Drop for Admitted {
    fn drop(&mut self) {
        if let (Some(root), Some(roots)) = (self.0.take(), ROOTS.get()) {
            let mut w = roots.write().unwrap_or_else(|p| p.into_inner());
            w.retain(|r| !Arc::ptr_eq(r, &root));
        }
    }
}

#[cfg(feature = "mcp")]
/// Let a confined process use the directory `path` (canonical) until the
/// guard is dropped. Nothing to do when the process is not confined.
pub(crate) fn admit(path: &Path) -> io::Result<Admitted> {
    let Some(roots) = ROOTS.get() else {
        return Ok(Admitted(None));
    };
    let root = open_root(path)?;
    let mut w = roots.write().unwrap_or_else(|p| p.into_inner());
    w.push(Arc::clone(&root));
    Ok(Admitted(Some(root)))
}

thread_local! {
    /// Set while [`by_name`] runs on this thread.
    static BY_NAME: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(feature = "mcp")]
/// Run `f` with this thread's lookups unconfined: for the check that names
/// the link through which a path would leave the roots
/// (`mcp::confine`), which lists directories and resolves names but opens
/// no file. What the command then reads is confined all the same.
pub(crate) fn by_name<T>(f: impl FnOnce() -> T) -> T {
    /// Puts the flag back however `f` ends, a panic included (the thread
    /// goes on serving other calls).
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            BY_NAME.with(|b| b.set(self.0));
        }
    }
    let _restore = Restore(BY_NAME.with(|b| b.replace(true)));
    f()
}

/// Where `path` lies in a confined process: the root that holds it and the
/// path below it (`.` for the root itself). `None` when not confined; an
/// error when no root holds it.
fn locate(path: &Path) -> Option<io::Result<(Arc<Root>, PathBuf)>> {
    let roots = ROOTS
        .get()
        .filter(|_| !BY_NAME.with(std::cell::Cell::get))?;
    let full = if path.is_absolute() {
        path.to_path_buf()
    } else {
        match std::env::current_dir() {
            Ok(d) => d.join(path),
            Err(e) => return Some(Err(e)),
        }
    };
    let r = roots.read().unwrap_or_else(|p| p.into_inner());
    let found = r.iter().find_map(|root| {
        let below = full.strip_prefix(&root.path).ok()?;
        // `a/./b` and a trailing `/` are the same path; `..` stays for
        // cap-std to refuse when it climbs out.
        let rel: PathBuf = below
            .components()
            .filter(|c| *c != Component::CurDir)
            .collect();
        let rel = if rel.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            rel
        };
        Some((Arc::clone(root), rel))
    });
    Some(found.ok_or_else(|| outside(path)))
}

fn outside(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "{}: outside the directories this process may use",
            path.display()
        ),
    )
}

/// Open `path` for reading without blocking (a FIFO with no writer opens
/// at once; the caller checks the type on the handle).
pub(crate) fn open_read(path: &Path) -> io::Result<File> {
    match locate(path) {
        None => crate::platform::nonblocking(std::fs::OpenOptions::new().read(true)).open(path),
        Some(at) => {
            let (root, rel) = at?;
            open_in(&root.dir, &rel)
        }
    }
}

fn open_in(dir: &Dir, rel: &Path) -> io::Result<File> {
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true);
    crate::platform::nonblocking_beneath(&mut options);
    Ok(dir.open_with(rel, &options)?.into_std())
}

/// `path`'s directory and name.
fn split(path: &Path) -> io::Result<(&Path, OsString)> {
    let Some(Component::Normal(name)) = path.components().next_back() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a file name", path.display()),
        ));
    };
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Ok((parent, name.to_os_string()))
}

/// The directory `path`, opened beneath its root when confined.
fn open_dir(path: &Path) -> io::Result<Dir> {
    match locate(path) {
        Some(at) => at.and_then(|(root, rel)| root.dir.open_dir(rel)),
        None => Dir::open_ambient_dir(path, ambient_authority()),
    }
}

/// Open the file `name` in the directory of `beside` for reading, never
/// through a link that leaves that directory (and, when confined, never
/// outside the roots). `Ok(None)` when there is no such file.
pub(crate) fn open_beside(beside: &Path, name: &str) -> io::Result<Option<File>> {
    let dir = open_dir(split(beside)?.0)?;
    match open_in(&dir, Path::new(name)) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The names in the directory `path` and their paths.
pub(crate) fn read_dir(path: &Path) -> io::Result<Vec<(OsString, PathBuf)>> {
    let Some(at) = locate(path) else {
        return std::fs::read_dir(path)?
            .map(|e| e.map(|e| (e.file_name(), e.path())))
            .collect();
    };
    let (root, rel) = at?;
    root.dir
        .read_dir(rel)?
        .map(|e| e.map(|e| (e.file_name(), path.join(e.file_name()))))
        .collect()
}

/// Whether `path` is a directory and whether a regular file, following
/// links; `None` when it is not there (when confined, a link out of the
/// roots is not there).
fn kind(path: &Path) -> Option<(bool, bool)> {
    match locate(path) {
        None => std::fs::metadata(path)
            .ok()
            .map(|m| (m.is_dir(), m.is_file())),
        Some(at) => at
            .and_then(|(root, rel)| root.dir.metadata(rel))
            .ok()
            .map(|m| (m.is_dir(), m.is_file())),
    }
}

/// [`Path::exists`], beneath the roots when confined.
pub(crate) fn exists(path: &Path) -> bool {
    kind(path).is_some()
}

/// [`Path::is_dir`], beneath the roots when confined.
pub(crate) fn is_dir(path: &Path) -> bool {
    kind(path).is_some_and(|(dir, _)| dir)
}

/// [`Path::is_file`], beneath the roots when confined.
pub(crate) fn is_file(path: &Path) -> bool {
    kind(path).is_some_and(|(_, file)| file)
}

/// `create_dir_all`, beneath the roots when confined.
pub(crate) fn create_dir_all(path: &Path) -> io::Result<()> {
    match locate(path) {
        None => std::fs::create_dir_all(path),
        Some(at) => {
            let (root, rel) = at?;
            root.dir.create_dir_all(rel)
        }
    }
}

/// In a confined process, replace `path` with `bytes` as
/// [`crate::files::write_atomic`] does, inside the descriptor of its
/// directory: the temporary file `tmp` (a name) is created there and
/// renamed there. `None` when the process is not confined.
pub(crate) fn write_atomic(path: &Path, tmp: &Path, bytes: &[u8]) -> Option<io::Result<()>> {
    ROOTS.get()?;
    Some(split(path).and_then(|(parent, name)| {
        let dir = open_dir(parent)?;
        let tmp = tmp.file_name().map(Path::new).unwrap_or(tmp);
        replace_in(&dir, tmp, &name, bytes)?;
        crate::platform::sync_dir_beneath(&dir)
    }))
}

fn replace_in(dir: &Dir, tmp: &Path, name: &OsString, bytes: &[u8]) -> io::Result<()> {
    let written = (|| {
        let mut options = cap_std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        let mut f = dir.open_with(tmp, &options)?.into_std();
        f.write_all(bytes)?;
        f.sync_all()?;
        // Keep the mode of the file being replaced, as the plain write does.
        if let Ok(meta) = dir.metadata(name) {
            f.set_permissions(meta.permissions().into_std(&f)?)?;
        }
        dir.rename(tmp, dir, name)
    })();
    if written.is_err() {
        let _ = dir.remove_file(tmp);
    }
    written
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_link_beside_a_snapshot_that_leaves_its_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let snap = dir.path().join("run.pickle");
        std::fs::write(other.path().join("secret.json"), b"{}").unwrap();
        std::os::unix::fs::symlink(
            other.path().join("secret.json"),
            dir.path().join(".run.env.json"),
        )
        .unwrap();
        let err = open_beside(&snap, ".run.env.json").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
        // A link to a file in the same directory is followed; none is none.
        std::fs::write(dir.path().join("env.json"), b"{}").unwrap();
        std::fs::remove_file(dir.path().join(".run.env.json")).unwrap();
        std::os::unix::fs::symlink("env.json", dir.path().join(".run.env.json")).unwrap();
        assert!(open_beside(&snap, ".run.env.json").unwrap().is_some());
        assert!(open_beside(&snap, ".none.env.json").unwrap().is_none());
    }
}
