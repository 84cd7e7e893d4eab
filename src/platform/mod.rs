//! What memgate does differently on each operating system, behind one small
//! interface: a file's identity (to see one file under two names), the
//! non-blocking open of an input, the name of a file that is not a regular
//! one, whether stdout is the null device, flushing a directory, and the
//! file-size signal. Unix (Linux, macOS) in [`unix`], Windows in
//! [`windows`]; nothing else in the crate names an OS.
//!
//! * `FileId`: a hashable identity, the same for every path (symlink, hard
//!   link, `./x`) that leads to one file.
//! * `file_id(path)`: that identity, following symlinks; `None` when the
//!   path does not exist or cannot be opened.
//! * `nonblocking(options)`: make an open of an input return at once even
//!   for a FIFO with no writer (Windows has no FIFOs on file paths).
//! * `nonblocking_beneath(options)`: the same for an open beneath a
//!   directory descriptor (`cap-std`, [`crate::beneath`]).
//! * `special_kind(type)`: what a non-regular, non-directory file is.
//! * `stdout_is_null()`: whether what goes to stdout is discarded.
//! * `is_fifo(type)`, `wait_readable(file, left)`: a pipe given as an input
//!   (`--rules <(…)`) and the bounded wait for its bytes.
//! * `sync_dir(dir)`, `sync_dir_beneath(dir)`: flush a directory's entries
//!   (a rename) to disk, by path or through a directory descriptor.
//! * `ignore_file_size_signal()`: make a file-size limit a write error.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as os;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as os;

pub use os::ignore_file_size_signal;
pub(crate) use os::{
    file_id, hard_links, is_fifo, nonblocking, nonblocking_beneath, special_kind, stdout_is_null,
    sync_dir, sync_dir_beneath, wait_readable, FileId,
};
