//! Windows: identities are (volume serial number, file index) from the
//! `file-id` crate (std's are unstable there); a file path cannot be a FIFO,
//! so an open needs no flag; whether stdout is NUL is not asked (a report
//! sent there is lost, as with any redirect); NTFS makes a rename durable
//! without flushing the directory (a directory cannot be opened as a file);
//! there is no file-size signal.

use std::fs::{FileType, OpenOptions};
use std::path::Path;

pub(crate) type FileId = file_id::FileId;

pub(crate) fn file_id(path: &Path) -> Option<FileId> {
    file_id::get_file_id(path).ok()
}

pub(crate) fn nonblocking(options: &mut OpenOptions) -> &mut OpenOptions {
    options
}

pub(crate) fn nonblocking_beneath(
    options: &mut cap_std::fs::OpenOptions,
) -> &mut cap_std::fs::OpenOptions {
    options
}

pub(crate) fn special_kind(t: FileType) -> &'static str {
    if t.is_symlink() {
        "symbolic link"
    } else {
        "special file"
    }
}

pub(crate) fn stdout_is_null() -> bool {
    false
}

pub(crate) fn sync_dir(_dir: &Path) -> std::io::Result<()> {
    Ok(())
}

pub(crate) fn sync_dir_beneath(_dir: &cap_std::fs::Dir) -> std::io::Result<()> {
    Ok(())
}

pub fn ignore_file_size_signal() {}

/// A file path on Windows is never a FIFO.
pub(crate) fn is_fifo(_t: FileType) -> bool {
    false
}

/// Never called: no input on Windows is a pipe ([`is_fifo`]).
pub(crate) fn wait_readable(
    _file: &std::fs::File,
    _left: std::time::Duration,
) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "pipes are not read on Windows",
    ))
}

/// How many names a file has is not asked on Windows (std's count is
/// unstable there): a hard link there is taken for a file of its own.
pub(crate) fn hard_links(_meta: &std::fs::Metadata) -> u64 {
    1
}
