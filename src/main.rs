//! memgate's entry point: parse the command line, run the command, map the
//! outcome to the exit code. No other code exits the process.

use std::process::ExitCode;

fn main() -> ExitCode {
    // A file-size limit (`ulimit -f`) is a write error, not a silent death
    // (src/platform); CPython does the same, so the wheel needs nothing.
    memgate::platform::ignore_file_size_signal();
    ExitCode::from(memgate::cli::main(std::env::args_os()))
}
