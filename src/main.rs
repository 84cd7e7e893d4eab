//! memgate's entry point: parse the command line, run the command, map the
//! outcome to the exit code. No other code exits the process.

mod cli;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::Parser;

use cli::Cli;

fn main() -> ExitCode {
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
