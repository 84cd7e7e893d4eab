//! One module per subcommand. Each takes plain options (no clap) and
//! returns an [`Outcome`]; `main` maps it to the exit code. A command only
//! orchestrates: expand the inputs, load, analyse, build its
//! [document](crate::document) and hand it to a [renderer](crate::report).

pub(crate) mod analysed;
pub mod check;
pub mod diff;
pub mod inspect;
pub mod peak;
pub mod profile;
pub mod summarize;

/// How a command ended, mapped to the process exit code in `main`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// 0: done; for `check`, every check passed (warnings allowed).
    Ok,
    /// 1: the gate failed (a budget or baseline regression).
    GateFailed,
    /// 2: could not judge (bad input, bad config, unreadable file).
    CouldNotJudge,
}

impl Status {
    pub fn code(self) -> u8 {
        match self {
            Status::Ok => 0,
            Status::GateFailed => 1,
            Status::CouldNotJudge => 2,
        }
    }

    /// The worse of two statuses (could-not-judge beats failed beats ok).
    pub fn worst(self, other: Status) -> Status {
        if self.code() >= other.code() {
            self
        } else {
            other
        }
    }
}

/// A command's result: its status and the error lines for stderr
/// (each becomes `error: <line>`).
#[derive(Debug)]
pub struct Outcome {
    pub status: Status,
    pub errors: Vec<String>,
}

impl Outcome {
    pub fn ok() -> Outcome {
        Outcome {
            status: Status::Ok,
            errors: Vec::new(),
        }
    }

    pub fn errors(errors: Vec<String>) -> Outcome {
        Outcome {
            status: Status::CouldNotJudge,
            errors,
        }
    }

    /// Ok when nothing went wrong, could-not-judge otherwise.
    pub fn from_errors(errors: Vec<String>) -> Outcome {
        if errors.is_empty() {
            Outcome::ok()
        } else {
            Outcome::errors(errors)
        }
    }
}

/// The error line for a failed write of a command's output. A closed pipe
/// (`memgate peak … | head`) is not an error: the reader has what it wanted.
pub fn write_error(e: &std::io::Error) -> Vec<String> {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Vec::new()
    } else {
        vec![format!("cannot write output: {e}")]
    }
}

/// Output format of the analysis commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
}
