//! Linux and macOS: identities are (device, inode), inputs open with
//! `O_NONBLOCK`, stdout is the null device when it has /dev/null's device
//! number, a directory is flushed through an open handle, and SIGXFSZ is
//! ignored so a file-size limit fails the write with EFBIG.

use std::fs::{FileType, OpenOptions};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Device and inode.
pub(crate) type FileId = (u64, u64);

pub(crate) fn file_id(path: &Path) -> Option<FileId> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino()))
}

pub(crate) fn nonblocking(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(libc::O_NONBLOCK)
}

/// [`nonblocking`] for an open beneath a directory descriptor.
pub(crate) fn nonblocking_beneath(
    options: &mut cap_std::fs::OpenOptions,
) -> &mut cap_std::fs::OpenOptions {
    use cap_std::fs::OpenOptionsExt;
    options.custom_flags(libc::O_NONBLOCK)
}

pub(crate) fn special_kind(t: FileType) -> &'static str {
    if t.is_fifo() {
        "FIFO (named pipe)"
    } else if t.is_socket() {
        "socket"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_symlink() {
        "symbolic link"
    } else {
        "special file"
    }
}

/// Rust's runtime reopens a closed descriptor 1 on /dev/null (and its
/// stdout swallows EBADF), so a closed stdout shows as the null device.
pub(crate) fn stdout_is_null() -> bool {
    let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return true;
    };
    let null = std::fs::metadata("/dev/null").map(|m| m.rdev());
    match (std::fs::File::from(fd).metadata(), null) {
        (Ok(m), Ok(null)) => m.file_type().is_char_device() && m.rdev() == null,
        _ => false,
    }
}

/// A file system that cannot sync a directory says so with EINVAL; that is
/// no error of the write.
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    sync_dir_handle(std::fs::File::open(dir)?)
}

/// [`sync_dir`] of a directory open as a descriptor (which may be a
/// path-only one: the flush goes through a handle opened for reading).
pub(crate) fn sync_dir_beneath(dir: &cap_std::fs::Dir) -> std::io::Result<()> {
    sync_dir_handle(dir.open(".")?.into_std())
}

fn sync_dir_handle(dir: std::fs::File) -> std::io::Result<()> {
    match dir.sync_all() {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
        other => other,
    }
}

/// By default SIGXFSZ kills the process (exit 153, no message, no report);
/// ignored, the write fails with EFBIG and the error names the file.
#[allow(unsafe_code)]
pub fn ignore_file_size_signal() {
    // SAFETY: called first thing in `main`, before any thread exists;
    // SIG_IGN installs no handler, so no code of ours runs in signal
    // context; the return value (the old disposition) is not needed.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Whether a file is a FIFO (a named pipe or `<(…)`).
pub(crate) fn is_fifo(t: FileType) -> bool {
    t.is_fifo()
}

/// Waits at most `left` until a non-blocking pipe has bytes or its writer
/// hung up (`poll`); an interrupted wait returns early, as a spurious
/// wake-up, and the caller reads again.
#[allow(unsafe_code)]
pub(crate) fn wait_readable(
    file: &std::fs::File,
    left: std::time::Duration,
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut fd = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd, alive for the duration of the call.
    let r = unsafe { libc::poll(&raw mut fd, 1, ms.max(1)) };
    if r < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// How many names the file of `meta` has (its hard links).
pub(crate) fn hard_links(meta: &std::fs::Metadata) -> u64 {
    meta.nlink()
}
