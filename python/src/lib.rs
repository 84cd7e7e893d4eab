//! `memgate._native`: the memgate command line, callable from Python.
//!
//! The Python package (`python/memgate/`) builds its API on [`run`], which
//! captures a command's output, and its `memgate` console script on
//! [`main`], which behaves like the binary. Both are the library's own
//! entry points (`memgate::cli`), so the arguments, documents and exit
//! codes are the binary's. [`budget`] takes the API's and the pytest
//! marker's mappings (as JSON) to the budget file's own reader and
//! validation; `check --budget-json` judges with them.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// Runs `memgate ARGV[1:]` like the binary: output on the process's
/// stdout, `error: …` lines on its stderr. Returns the exit code.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| memgate::cli::main(argv))
}

/// Runs `memgate ARGV[1:]` with its output captured: returns the exit
/// code, the bytes it wrote to stdout, and its error messages (a command
/// line error is one message, clap's text). `check` appends to
/// `GITHUB_STEP_SUMMARY` / `GITHUB_OUTPUT` and prints `::error`
/// annotations only when `github` is true. The report files in `private`
/// are the caller's own (a scratch verdict it reads and removes): written,
/// but not named by a `wrote PATH` line on stderr.
#[pyfunction]
#[pyo3(signature = (argv, github = false, private = Vec::new()))]
fn run(
    py: Python<'_>,
    argv: Vec<String>,
    github: bool,
    private: Vec<std::path::PathBuf>,
) -> (u8, Py<PyBytes>, Vec<String>) {
    let c = py.detach(|| memgate::cli::run_captured(argv, github, &private));
    (c.exit_code, PyBytes::new(py, &c.stdout).unbind(), c.errors)
}

fn json(document: &str) -> PyResult<serde_json::Value> {
    serde_json::from_str(document).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Every problem of a budget: (dotted key, message); empty when valid.
type Problems = Vec<(String, String)>;

/// Validates a budget document given as JSON (the structure of
/// `memgate.toml`) with the budget file's own reader and validation,
/// relative paths relative to `dir`, `file` naming it in messages. Returns
/// every problem, each with the dotted key it is about
/// (`target.budget.allocated-peak`; empty when about no one key): none
/// when valid. `check --budget-json DOCUMENT` then judges with it.
#[pyfunction]
fn budget(py: Python<'_>, document: &str, file: &str, dir: &str) -> PyResult<Problems> {
    let value = json(document)?;
    Ok(py.detach(
        || match memgate::validate_data(&value, file, std::path::Path::new(dir)) {
            Ok(()) => Vec::new(),
            Err(errors) => errors.into_iter().map(|e| (e.key, e.message)).collect(),
        },
    ))
}

/// The ids of every figure, and of those a phase budget takes.
#[pyfunction]
fn figure_ids() -> (Vec<&'static str>, Vec<&'static str>) {
    memgate::figure_ids()
}

/// The names of memory with no story, each with what it means
/// (docs/figures.md#memory-with-no-story): the plugin explains a name it
/// prints in the words every other output uses.
#[pyfunction]
fn no_story() -> Vec<(&'static str, &'static str)> {
    memgate::NoStory::all()
        .iter()
        .map(|n| (n.id(), n.meaning()))
        .collect()
}

/// A size as a budget writes it (`"8 GiB"`), in bytes; `ValueError` when
/// it is not one.
#[pyfunction]
fn parse_size(text: &str) -> PyResult<u64> {
    memgate::parse_size(text).map_err(PyValueError::new_err)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(budget, m)?)?;
    m.add_function(wrap_pyfunction!(figure_ids, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(no_story, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
