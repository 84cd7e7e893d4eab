//! How memgate touches the file system where a user's files are at stake:
//! inputs are opened without blocking and refused unless they are regular
//! files (a FIFO, socket or device would hang or never end), small inputs
//! are read under a size cap, and every file memgate replaces (goldens,
//! reports) is written to a temporary file beside it and renamed over it, so
//! a full disk or a kill mid-write leaves the old file whole. In a process
//! confined to its roots (`memgate mcp`) every open and replacement here
//! is resolved beneath a root's descriptor ([`crate::beneath`]), and a
//! file is read through the one handle that was opened and checked.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;

/// Largest budget, rules or summary file read (they are a few KiB; a
/// summary of 64 devices with 50 sites each is under 1 MiB).
pub const TEXT_CAP: u64 = 16 << 20;

/// Where each line of a text file (a budget, a rules file) starts, so a
/// position is found by binary search: placing every problem of a file
/// stays linear however many there are.
pub(crate) struct LineStarts(Vec<usize>);

impl LineStarts {
    pub(crate) fn of(text: &str) -> LineStarts {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1));
        LineStarts(starts.collect())
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub(crate) fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = offset.min(text.len());
        let line = self.0.partition_point(|&s| s <= offset);
        let start = self.0[line - 1];
        let col = text.get(start..offset).map_or(0, |s| s.chars().count());
        (line, col + 1)
    }
}

/// Why a file could not be opened, read or written.
#[derive(Debug, Error)]
pub enum FileError {
    #[error("no such file")]
    NotFound,
    #[error("is a directory, not a file")]
    Directory,
    #[error("is a {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("is a pipe that gave no bytes (nothing writes it, or wrote nothing)")]
    EmptyPipe,
    #[error("is larger than the {} MiB a {what} may be", cap >> 20)]
    TooLarge { what: &'static str, cap: u64 },
    #[error("cannot be read: {0}")]
    Read(std::io::Error),
    #[error("cannot be written: {0}")]
    Write(std::io::Error),
}

fn open_error(e: std::io::Error) -> FileError {
    match e.kind() {
        std::io::ErrorKind::NotFound => FileError::NotFound,
        _ => FileError::Read(e),
    }
}

/// Open a file for reading, refusing anything but a regular file. The open
/// itself never blocks: `O_NONBLOCK` lets a FIFO with no writer open at
/// once, and the type is then checked on the open handle (no race with a
/// rename between a check and the open).
pub fn open_regular(path: &Path) -> Result<(File, u64), FileError> {
    let file = crate::beneath::open_read(path).map_err(open_error)?;
    regular(file)
}

/// `file` (opened without blocking) with its length, when it is a regular
/// file.
pub(crate) fn regular(file: File) -> Result<(File, u64), FileError> {
    let meta = file.metadata().map_err(FileError::Read)?;
    let t = meta.file_type();
    if t.is_dir() {
        return Err(FileError::Directory);
    }
    if !t.is_file() {
        return Err(FileError::NotRegular(crate::platform::special_kind(t)));
    }
    Ok((file, meta.len()))
}

/// A whole small file (budget, rules, summary), at most `cap` bytes; `what`
/// names the kind of file in the error.
pub fn read_capped(path: &Path, what: &'static str, cap: u64) -> Result<Vec<u8>, FileError> {
    read_regular(open_regular(path)?.0, what, cap)
}

/// [`read_capped`] of a file already open (read through the one handle,
/// never opened again by name).
fn read_regular(file: File, what: &'static str, cap: u64) -> Result<Vec<u8>, FileError> {
    let (file, len) = regular(file)?;
    if len > cap {
        return Err(FileError::TooLarge { what, cap });
    }
    let mut buf = Vec::with_capacity(crate::convert::index(len));
    // The size can change after the stat: read one byte past the cap to see.
    file.take(cap + 1)
        .read_to_end(&mut buf)
        .map_err(FileError::Read)?;
    if buf.len() as u64 > cap {
        return Err(FileError::TooLarge { what, cap });
    }
    Ok(buf)
}

/// How long [`read_capped_or_pipe`] waits for a pipe's writer to finish.
pub const PIPE_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// [`read_capped`], and also a pipe (`--rules <(printf …)`, a named FIFO):
/// read until its writer closes it, at most `cap` bytes and
/// [`PIPE_WAIT`] in all, so a pipe nobody finishes writing is an error,
/// never a hang. A device or socket is refused as by [`open_regular`].
pub fn read_capped_or_pipe(
    path: &Path,
    what: &'static str,
    cap: u64,
) -> Result<Vec<u8>, FileError> {
    let file = crate::beneath::open_read(path).map_err(open_error)?;
    let t = file.metadata().map_err(FileError::Read)?.file_type();
    if !crate::platform::is_fifo(t) {
        return read_regular(file, what, cap);
    }
    read_pipe(file, what, cap, PIPE_WAIT)
}

/// The bytes of a non-blocking pipe until end of file, waiting with
/// `poll` so the deadline holds. A pipe with no writer reads as at its
/// end at once (a FIFO nobody opened for writing never blocks): one that
/// gave no byte at all is an error.
fn read_pipe(
    mut file: File,
    what: &'static str,
    cap: u64,
    wait: std::time::Duration,
) -> Result<Vec<u8>, FileError> {
    let deadline = std::time::Instant::now() + wait;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    loop {
        match file.read(&mut chunk) {
            Ok(0) if buf.is_empty() => return Err(FileError::EmptyPipe),
            Ok(0) => return Ok(buf),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() as u64 > cap {
                    return Err(FileError::TooLarge { what, cap });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                poll_in(&file, deadline, wait)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(FileError::Read(e)),
        }
    }
}

/// Waits until the pipe has bytes or its writer hung up, or fails at the
/// deadline.
fn poll_in(
    file: &File,
    deadline: std::time::Instant,
    wait: std::time::Duration,
) -> Result<(), FileError> {
    let left = deadline.saturating_duration_since(std::time::Instant::now());
    if left.is_zero() {
        return Err(FileError::Read(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "the pipe's writer did not finish within {} s",
                wait.as_secs_f64()
            ),
        )));
    }
    crate::platform::wait_readable(file, left).map_err(FileError::Read)
}

/// A path's identity: device and inode when it exists (whatever symlinks
/// or hard links lead to it), else its parent's canonical path and its
/// name (a report not yet written).
fn identity(p: &Path) -> Option<Result<crate::platform::FileId, PathBuf>> {
    if let Some(id) = crate::platform::file_id(p) {
        return Some(Ok(id));
    }
    let parent = p
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Some(Err(parent.canonicalize().ok()?.join(p.file_name()?)))
}

/// Whether writing `a` would replace the file `b` (or the other way
/// round): one file by [`identity`], so `./x`, a symlink to `x` and a hard
/// link of `x` are all `x`.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (identity(a), identity(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// What memgate's temporary files are called: `.NAME.memgate-PID-N.tmp`.
const TEMP_TAG: &str = ".memgate-";

/// A temporary name in `path`'s directory (same file system, so the rename
/// is atomic), unique to this process and call. Hidden, and never matched
/// by a pattern ([`is_temporary`]), so one left by a killed run is no
/// snapshot or baseline.
fn temp_beside(path: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}{TEMP_TAG}{}-{n}.tmp", std::process::id()))
}

/// Whether a file name is one of memgate's temporary files (what a run
/// killed mid-write leaves beside its target).
pub fn is_temporary(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else {
        return false;
    };
    let Some((_, ids)) = rest.rsplit_once(TEMP_TAG) else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    ids.split_once('-')
        .is_some_and(|(pid, n)| digits(pid) && digits(n))
}

/// Replace `path` with `bytes` atomically: written to a temporary file in
/// the same directory, flushed to disk, renamed over `path`, and the
/// directory flushed so the rename survives a crash. On any error before
/// the rename (a full disk, a file-size limit: `main` ignores SIGXFSZ, so
/// the write fails with EFBIG instead of killing the process) the
/// temporary file is removed and `path` is left as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    let tmp = temp_beside(path);
    if let Some(done) = crate::beneath::write_atomic(path, &tmp, bytes) {
        return done.map_err(FileError::Write);
    }
    let written = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        // Keep the mode of the file being replaced (a golden may be 0644
        // in a checkout with a umask of 0077).
        if let Ok(meta) = std::fs::metadata(path) {
            f.set_permissions(meta.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        FileError::Write(e)
    })?;
    sync_dir(path).map_err(FileError::Write)
}

/// Flush the directory holding `path` (its entries: the rename).
fn sync_dir(path: &Path) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    crate::platform::sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn mkfifo(path: &Path) {
        let made = std::process::Command::new("mkfifo").arg(path).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo failed");
    }

    /// A write end of the FIFO (opened read-write, so the open never
    /// blocks) holding `bytes`.
    #[cfg(unix)]
    fn writer(fifo: &Path, bytes: &[u8]) -> File {
        let mut w = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(fifo)
            .unwrap();
        w.write_all(bytes).unwrap();
        w
    }

    #[cfg(unix)] // FIFOs
    #[test]
    fn a_pipe_is_read_to_its_end_under_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("rules");
        mkfifo(&fifo);
        let text = b"[categories]\nhccl = \"hccl\"\n";
        let w = writer(&fifo, text);
        // The writer finishes after the reader has waited for it.
        let closer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            drop(w);
        });
        let got = read_capped_or_pipe(&fifo, "rules file", TEXT_CAP).unwrap();
        closer.join().unwrap();
        assert_eq!(got, text);

        let _w = writer(&fifo, &[b'x'; 100]);
        let err = read_capped_or_pipe(&fifo, "rules file", 10);
        assert!(
            matches!(err, Err(FileError::TooLarge { cap: 10, .. })),
            "{err:?}"
        );
    }

    #[cfg(unix)] // FIFOs
    #[test]
    fn a_fifo_nobody_writes_is_an_error_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("nobody");
        mkfifo(&fifo);
        let started = std::time::Instant::now();
        let err = read_capped_or_pipe(&fifo, "rules file", TEXT_CAP);
        assert!(matches!(err, Err(FileError::EmptyPipe)), "{err:?}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[cfg(unix)] // FIFOs
    #[test]
    fn a_pipe_whose_writer_never_finishes_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("stuck");
        mkfifo(&fifo);
        // Held open for writing, never written: the reader must give up.
        let holder = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&fifo)
            .unwrap();
        let f = crate::platform::nonblocking(OpenOptions::new().read(true))
            .open(&fifo)
            .unwrap();
        let err = read_pipe(
            f,
            "rules file",
            TEXT_CAP,
            std::time::Duration::from_millis(50),
        );
        drop(holder);
        assert!(
            matches!(err, Err(FileError::Read(ref e)) if e.kind() == std::io::ErrorKind::TimedOut)
        );
    }

    #[cfg(unix)] // FIFOs
    #[test]
    fn a_fifo_is_refused_at_once_instead_of_blocking_the_open() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let err = open_regular(&fifo).unwrap_err();
        assert!(
            matches!(err, FileError::NotRegular(k) if k.contains("FIFO")),
            "{err}"
        );
    }

    #[test]
    fn a_device_is_refused_and_a_directory_is_named_as_one() {
        let err = open_regular(Path::new("/dev/zero")).unwrap_err();
        assert!(matches!(err, FileError::NotRegular("character device")));
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            open_regular(dir.path()).unwrap_err(),
            FileError::Directory
        ));
    }

    #[test]
    fn a_file_over_the_cap_is_refused_without_reading_it_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.toml");
        let f = File::create(&p).unwrap();
        // Sparse: 2 GiB of size, no blocks.
        f.set_len(2 << 30).unwrap();
        let err = read_capped(&p, "budget file", TEXT_CAP).unwrap_err();
        assert_eq!(
            err.to_string(),
            "is larger than the 16 MiB a budget file may be"
        );
        std::fs::write(&p, b"ok").unwrap();
        assert_eq!(read_capped(&p, "budget file", TEXT_CAP).unwrap(), b"ok");
    }

    #[test]
    fn the_temporary_name_is_recognised_and_nothing_else_is() {
        let tmp = temp_beside(Path::new("golden/rank0.json"));
        let name = tmp.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with(".rank0.json.memgate-"), "{name}");
        assert!(is_temporary(name));
        assert!(is_temporary(".a.memgate-1-0.memgate-12-3.tmp"));
        for other in [
            "rank0.json",
            ".gitkeep",
            "x.memgate-1-2.tmp",
            ".x.memgate-1-2.tmp.bak",
            ".x.memgate-1.tmp",
            ".x.memgate-a-2.tmp",
            ".x.memgate--2.tmp",
        ] {
            assert!(!is_temporary(other), "{other}");
        }
    }

    #[test]
    fn an_atomic_write_replaces_the_file_and_leaves_no_temporary_behind() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rank0.json");
        std::fs::write(&p, b"old").unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn a_failed_atomic_write_leaves_the_old_file_intact_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        // The directory does not exist: the temporary cannot be created.
        let p = dir.path().join("gone").join("rank0.json");
        assert!(matches!(write_atomic(&p, b"new"), Err(FileError::Write(_))));
        // The rename fails after the bytes were written and flushed (a
        // non-empty directory cannot be replaced by a file): what was there
        // stays, and the temporary is removed.
        let q = dir.path().join("rank0.json");
        std::fs::create_dir(&q).unwrap();
        std::fs::write(q.join("keep"), b"old").unwrap();
        assert!(matches!(write_atomic(&q, b"new"), Err(FileError::Write(_))));
        assert_eq!(std::fs::read(q.join("keep")).unwrap(), b"old");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "a temporary file was left behind");
    }
}
