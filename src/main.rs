//! memgate's entry point: parse the command line, run the command, map the
//! outcome to the exit code. No other code exits the process.

use std::process::ExitCode;

/// A file-size limit (`ulimit -f`) is a write error, not a silent death:
/// by default SIGXFSZ kills the process (exit 153, no message, no report).
/// Ignored, the write fails with EFBIG, the temporary file is removed and
/// the error names the file (exit 2). CPython ignores it the same way, so
/// the Python wheel needs nothing.
#[allow(unsafe_code)]
fn ignore_file_size_signal() {
    // SAFETY: called first thing in `main`, before any thread exists;
    // SIG_IGN installs no handler, so no code of ours runs in signal
    // context; the return value (the old disposition) is not needed.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

fn main() -> ExitCode {
    ignore_file_size_signal();
    ExitCode::from(memgate::cli::main(std::env::args_os()))
}
