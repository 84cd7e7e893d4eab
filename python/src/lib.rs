//! `memgate._native`: the memgate command line, callable from Python.
//!
//! The Python package (`python/memgate/`) builds its API on [`run`], which
//! captures a command's output, and its `memgate` console script on
//! [`main`], which behaves like the binary. Both parse with the binary's
//! own `src/cli.rs`, so the arguments, documents and exit codes are the
//! binary's.

#[path = "../../src/cli.rs"]
mod cli;

use std::io::{IsTerminal, Write};

use clap::Parser;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use cli::{Cli, Command};
use memgate::commands::check::{CheckOptions, GithubEnv};

/// A command's error lines, as the binary prints them after `error: `.
fn error_lines(outcome: &memgate::commands::Outcome) -> Vec<String> {
    outcome
        .errors
        .iter()
        .map(|e| memgate::report::escape::terminal(&e.to_string()).into_owned())
        .collect()
}

/// Runs `memgate ARGV[1:]` like the binary: output on the process's
/// stdout, `error: …` lines on its stderr. Returns the exit code.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| {
        let cli = match Cli::try_parse_from(&argv) {
            Ok(cli) => cli,
            Err(e) => {
                let _ = e.print();
                return if e.use_stderr() { 2 } else { 0 };
            }
        };
        let stdout = std::io::stdout();
        let terminal = stdout.is_terminal();
        let mut out = stdout.lock();
        let outcome = cli.run(&mut out, terminal);
        let _ = out.flush();
        let mut err = std::io::stderr().lock();
        for line in error_lines(&outcome) {
            let _ = writeln!(err, "error: {line}");
        }
        outcome.exit_code()
    })
}

/// Runs `memgate ARGV[1:]` with its output captured: returns the exit
/// code, the bytes it wrote to stdout, and its error messages (a command
/// line error is one message, clap's text). `check` appends to
/// `GITHUB_STEP_SUMMARY` / `GITHUB_OUTPUT` and prints `::error`
/// annotations only when `github` is true: a library call does not write
/// the runner's files because the environment names them.
#[pyfunction]
#[pyo3(signature = (argv, github = false))]
fn run(py: Python<'_>, argv: Vec<String>, github: bool) -> (u8, Py<PyBytes>, Vec<String>) {
    let (code, out, errors) = py.detach(|| match Cli::try_parse_from(&argv) {
        Ok(cli) => {
            let mut out = Vec::new();
            let outcome = match &cli.command {
                Command::Check(args) if !github => {
                    let opts = CheckOptions {
                        github: GithubEnv::default(),
                        ..args.options(false)
                    };
                    memgate::commands::check::run(&opts, &mut out)
                }
                _ => cli.run(&mut out, false),
            };
            (outcome.exit_code(), out, error_lines(&outcome))
        }
        Err(e) if e.use_stderr() => (2, Vec::new(), vec![e.render().to_string()]),
        Err(e) => (0, e.render().to_string().into_bytes(), Vec::new()),
    });
    (code, PyBytes::new(py, &out).unbind(), errors)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
