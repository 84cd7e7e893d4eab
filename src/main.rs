//! memgate's entry point: parse the command line, run the command, map the
//! outcome to the exit code. No other code exits the process.

mod cli;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::Parser;

use cli::Cli;

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
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let stdout = std::io::stdout();
    let terminal = stdout.is_terminal();
    let mut out = stdout.lock();
    let outcome = cli.run(&mut out, terminal);
    let _ = out.flush();
    let stderr = std::io::stderr();
    let mut err = stderr.lock();
    for e in &outcome.errors {
        // One line each, whatever a file name or message holds.
        let _ = writeln!(
            err,
            "error: {}",
            memgate::report::escape::terminal(&e.to_string())
        );
    }
    ExitCode::from(outcome.exit_code())
}
