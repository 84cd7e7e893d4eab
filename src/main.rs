//! memgate's entry point: parse the command line, run the command, map the
//! outcome to the exit code. No other code exits the process.

mod cli;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};
use memgate::commands::{self, Outcome};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let outcome: Outcome = match &cli.command {
        Command::Inspect(a) => commands::inspect::run(&a.options(), &mut out),
        Command::Peak(a) => commands::peak::run(&a.options(), &mut out),
        Command::Phases(a) => commands::phases::run(&a.options(), &mut out),
        Command::Profile(a) => commands::profile::run(&a.options(), &mut out),
        Command::Diff(a) => commands::diff::run(&a.options(), &mut out),
        Command::Summarize(a) => commands::summarize::run(&a.options(), &mut out),
        Command::Check(a) => commands::check::run(&a.options(), &mut out),
    };
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
