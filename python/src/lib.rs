//! `memgate._native`: the memgate command line, callable from Python.
//!
//! The Python package (`python/memgate/`) builds its API on [`run`], which
//! captures a command's output, and its `memgate` console script on
//! [`main`], which behaves like the binary. Both are the library's own
//! entry points (`memgate::cli`), so the arguments, documents and exit
//! codes are the binary's. [`budget`] and [`toml`] take the API's and the
//! pytest marker's mappings (as JSON) to the budget file's validation.

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
/// annotations only when `github` is true.
#[pyfunction]
#[pyo3(signature = (argv, github = false))]
fn run(py: Python<'_>, argv: Vec<String>, github: bool) -> (u8, Py<PyBytes>, Vec<String>) {
    let c = py.detach(|| memgate::cli::run_captured(argv, github));
    (c.exit_code, PyBytes::new(py, &c.stdout).unbind(), c.errors)
}

fn json(document: &str) -> PyResult<serde_json::Value> {
    serde_json::from_str(document).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A budget's TOML text when valid, else every (dotted key, message).
type Checked = (Option<String>, Vec<(String, String)>);

/// Validates a budget document given as JSON (the structure of
/// `memgate.toml`), relative paths relative to `dir`, `file` naming it in
/// messages. Returns `(toml_text, [])` when valid, else `(None,
/// [(dotted key, message), …])`: every problem, the key it is about
/// (`target.budget.allocated-peak`; empty when about no one key).
#[pyfunction]
fn budget(py: Python<'_>, document: &str, file: &str, dir: &str) -> PyResult<Checked> {
    let value = json(document)?;
    Ok(py.detach(
        || match memgate::validate_data(&value, file, std::path::Path::new(dir)) {
            Ok(text) => (Some(text), Vec::new()),
            Err(errors) => (
                None,
                errors.into_iter().map(|e| (e.key, e.message)).collect(),
            ),
        },
    ))
}

/// A JSON document (a mapping) as TOML text, every key quoted as needed
/// (a rules file's `[categories]`, in the mapping's order).
#[pyfunction]
fn toml(document: &str) -> PyResult<String> {
    memgate::toml_text(&json(document)?).map_err(PyValueError::new_err)
}

/// The ids of every figure, and of those a phase budget takes.
#[pyfunction]
fn figure_ids() -> (Vec<&'static str>, Vec<&'static str>) {
    memgate::figure_ids()
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
    m.add_function(wrap_pyfunction!(toml, m)?)?;
    m.add_function(wrap_pyfunction!(figure_ids, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
