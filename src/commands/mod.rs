//! One module per subcommand. Each takes plain options (no clap) and
//! returns an [`Outcome`]; `main` maps it to the exit code. A command only
//! orchestrates: expand the inputs, load, analyse, build its
//! [document](crate::document) and hand it to a [renderer](crate::report).

pub(crate) mod analysed;
pub mod check;
pub mod diff;
pub mod init;
pub mod inspect;
pub mod peak;
pub mod phases;
pub mod profile;
pub mod summarize;

use crate::error::{Error, OutputError};
use crate::snapshot::Snapshot;

/// What `check`'s gate decided; the other commands pass when they finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// 0: every check passed (warnings allowed).
    Passed,
    /// 1: a budget or baseline regression.
    Failed,
    /// 2: a check could not be judged (the verdict says why).
    NotJudged,
}

impl Gate {
    fn exit_code(self) -> u8 {
        match self {
            Gate::Passed => 0,
            Gate::Failed => 1,
            Gate::NotJudged => 2,
        }
    }
}

/// A command's result: what its gate decided and every error (each
/// printed as `error: <error>`).
#[derive(Debug)]
pub struct Outcome {
    pub(crate) gate: Gate,
    pub errors: Vec<Error>,
}

impl Outcome {
    pub(crate) fn ok() -> Outcome {
        Outcome::from_errors(Vec::new())
    }

    /// The command did its job unless something went wrong.
    pub(crate) fn from_errors(errors: Vec<Error>) -> Outcome {
        Outcome {
            gate: Gate::Passed,
            errors,
        }
    }

    pub(crate) fn error(error: impl Into<Error>) -> Outcome {
        Outcome::from_errors(vec![error.into()])
    }

    /// The process exit code: the gate's, or the errors' when worse.
    pub fn exit_code(&self) -> u8 {
        self.errors
            .iter()
            .map(Error::exit_code)
            .fold(self.gate.exit_code(), u8::max)
    }
}

/// The error for a failed write of a command's output. A closed pipe
/// (`memgate peak … | head`) is not an error: the reader has what it wanted.
pub(crate) fn write_error(e: std::io::Error) -> Option<Error> {
    (e.kind() != std::io::ErrorKind::BrokenPipe).then(|| OutputError::Stdout(e).into())
}

/// Write a report file of an analysis command (`--html`, `--output`): its
/// directory created when missing, the file replaced whole, and its path
/// named on stderr so a CI log says where it went.
pub(crate) fn write_report(
    path: &std::path::Path,
    bytes: &[u8],
) -> Result<(), crate::files::FileError> {
    write_report_quietly(path, bytes)?;
    let shown = crate::report::escape::terminal(&path.display().to_string()).into_owned();
    eprintln!("wrote {shown}");
    Ok(())
}

/// Snapshots a caller already holds decoded, by path (`memgate mcp`'s
/// session cache): `diff`, `check` and `summarize` analyse what it gives
/// instead of decoding the file again. `None` from it, or no source, reads
/// the file as usual (it may be a summary, or unreadable: the file's own
/// error is then the one reported).
#[derive(Clone)]
pub struct Decoded(pub std::sync::Arc<DecodedFn>);

/// What a [`Decoded`] source calls: the snapshot at a path, if it has one.
pub type DecodedFn = dyn Fn(&std::path::Path) -> Option<Snapshot> + Send + Sync;

impl Decoded {
    /// The snapshot at `path`, when the source holds (or can decode) one.
    pub(crate) fn get(&self, path: &std::path::Path) -> Option<Snapshot> {
        (self.0)(path)
    }
}

impl std::fmt::Debug for Decoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Decoded(..)")
    }
}

/// [`write_report`] without the `wrote` line, for a caller that names
/// the file itself (`memgate mcp`'s answer, whose stderr carries errors only).
pub(crate) fn write_report_quietly(
    path: &std::path::Path,
    bytes: &[u8],
) -> Result<(), crate::files::FileError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::beneath::create_dir_all(dir).map_err(crate::files::FileError::Write)?;
    }
    crate::files::write_atomic(path, bytes)
}

/// Output format of the analysis commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::UsageError;

    #[test]
    fn the_exit_code_is_the_gates_unless_an_error_calls_for_a_worse_one() {
        let code = |gate, errors| Outcome { gate, errors }.exit_code();
        assert_eq!(code(Gate::Passed, vec![]), 0);
        assert_eq!(code(Gate::Failed, vec![]), 1);
        assert_eq!(code(Gate::NotJudged, vec![]), 2);
        assert_eq!(code(Gate::Failed, vec![UsageError::NoSnapshot.into()]), 2);
        assert_eq!(code(Gate::Passed, vec![UsageError::NoSnapshot.into()]), 2);
    }

    #[test]
    fn a_closed_pipe_is_not_a_write_error() {
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(write_error(pipe).is_none());
        let full = std::io::Error::other("disk full");
        assert_eq!(
            write_error(full).map(|e| e.to_string()).as_deref(),
            Some("cannot write output: disk full")
        );
    }
}
