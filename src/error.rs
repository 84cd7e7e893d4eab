//! Why a command could not judge, one variant per kind, each a typed error
//! of its layer. The kind decides the exit code ([`Error::exit_code`]); the
//! text is what `main` prints after `error: `.

use std::path::PathBuf;

use thiserror::Error;

use crate::analysis::{RulesError, WindowError};
use crate::budget::ConfigError;
use crate::compare::SnapshotError;
use crate::files::FileError;
use crate::snapshot::LoadError;
pub use crate::walk::InputError;

/// docs/figures.md#exit-codes: 1 is the gate failing, which is a verdict, never an error.
const COULD_NOT_JUDGE: u8 = 2;

/// One reason a command could not do its job.
#[derive(Debug, Error)]
pub enum Error {
    /// A command-line value memgate checks itself (clap checks the rest).
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// An input pattern that matches nothing or cannot be expanded.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A snapshot or summary that cannot be read.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A window that cannot be placed on a snapshot, or holds no entry.
    #[error("{}: {error}", path.display())]
    Window { path: PathBuf, error: WindowError },
    /// One problem of the budget file.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An output that cannot be written.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// `check`: a target's baselines that cannot be resolved.
    #[error(transparent)]
    Baseline(#[from] BaselineError),
    /// `check`: a target with no snapshot to judge.
    #[error(
        "no snapshot to judge: `snapshots` lists no pattern; a target that judges nothing \
         cannot pass"
    )]
    NothingToJudge,
    /// `check`: a snapshot the verdict records as not judged, and why.
    #[error("{0}")]
    NotJudged(SnapshotError),
    /// Any of the above, about one target of the budget.
    #[error("target {target}: {error}")]
    Target { target: String, error: Box<Error> },
}

/// A budget-file error with what a terminal snippet needs: where, what,
/// and the file's text.
pub struct BudgetSnippet {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
    pub source: String,
}

impl Error {
    /// The budget-file error's position, message and the file's text (read
    /// again, regular files only, under the size cap), for a snippet on a
    /// terminal; `None` for any other error or a file that cannot be read.
    pub fn budget_snippet(&self) -> Option<BudgetSnippet> {
        let Error::Config(c) = self else { return None };
        if c.loc.line == 0 {
            return None;
        }
        let bytes = crate::files::read_capped(
            std::path::Path::new(&c.loc.file),
            "budget file",
            crate::files::TEXT_CAP,
        )
        .ok()?;
        let message = if c.key.is_empty() {
            c.message.clone()
        } else {
            format!("`{}`: {}", c.key, c.message)
        };
        Some(BudgetSnippet {
            file: c.loc.file.clone(),
            line: c.loc.line,
            col: c.loc.col,
            message,
            source: String::from_utf8_lossy(&bytes).into_owned(),
        })
    }

    /// The process exit code this error calls for.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_)
            | Error::Input(_)
            | Error::Load(_)
            | Error::Window { .. }
            | Error::Config(_)
            | Error::Output(_)
            | Error::Baseline(_)
            | Error::NothingToJudge
            | Error::NotJudged(_) => COULD_NOT_JUDGE,
            Error::Target { error, .. } => error.exit_code(),
        }
    }

    /// This error, about target `name`.
    pub(crate) fn in_target(self, name: &str) -> Error {
        Error::Target {
            target: name.to_string(),
            error: Box::new(self),
        }
    }
}

/// A command-line value that cannot be used.
#[derive(Debug, Error)]
pub enum UsageError {
    #[error("--rules: {0}")]
    Rules(RulesError),
    #[error("--categories: {0}")]
    Categories(RulesError),
    #[error("--project-root/--user-code: {0}")]
    Sites(crate::analysis::SiteRuleError),
    #[error("no snapshot given (memgate profile SNAPSHOT…, or --print-rules)")]
    NoSnapshot,
    #[error(
        "{} and {} would both be written to {stem}.json; summarize them into different \
         directories, or pass --repeats if they are repeated runs of one job",
        first.display(),
        second.display()
    )]
    SameSummary {
        first: PathBuf,
        second: PathBuf,
        stem: String,
    },
    #[error(
        "{} would overwrite the input {}; summarize into another directory",
        target.display(),
        input.display()
    )]
    SummaryOverInput { target: PathBuf, input: PathBuf },
    /// `diff` of two directories or globs: names found on one side only.
    #[error(
        "diff pairs files by name: {}{}",
        if only_base.is_empty() { String::new() } else { format!("only in BASE: {}; ", only_base.join(", ")) },
        if only_new.is_empty() { String::new() } else { format!("only in NEW: {}", only_new.join(", ")) }
    )]
    DiffUnpaired {
        only_base: Vec<String>,
        only_new: Vec<String>,
    },
    /// `diff --html` of more than one pair.
    #[error("--html draws one pair of files; these name {pairs} pairs (diff them one by one)")]
    DiffPairsHtml { pairs: usize },
    /// `init` found a file where it would write its budget file or a golden
    /// summary.
    #[error("{} exists; memgate init does not replace a {what} (--force does)", path.display())]
    InitExists { path: PathBuf, what: &'static str },
    /// `init` would write through a link: out of the directory it was
    /// given, or into a file that lives elsewhere too.
    #[error(
        "{} is {why}; memgate init never writes through a link (not even with --force): \
         write to a plain directory",
        path.display()
    )]
    InitThroughLink { path: PathBuf, why: &'static str },
    /// `init` cannot budget a snapshot: nothing is written for it.
    #[error("{}: not budgeted: {why}", path.display())]
    InitRefused { path: PathBuf, why: &'static str },
    /// `init --margin` that is no percentage to add.
    #[error("--margin {0}: write a percentage of at least 0, e.g. 10%")]
    Margin(f64),
    /// A report destination `check` refuses before reading anything.
    #[error(transparent)]
    Destination(#[from] DestinationError),
    /// `memgate mcp` could not start or its session failed.
    #[error("mcp: {0}")]
    Mcp(String),
    /// `memgate mcp` in a build without the `mcp` feature.
    #[error(
        "mcp: this memgate was built without the MCP server (the `mcp` feature); \
         it is in the memgate-ci wheel and in `cargo install memgate --features mcp`"
    )]
    McpNotBuilt,
}

/// A report path `check` refuses; `flag` is the option that gave it.
#[derive(Debug, Error)]
pub enum DestinationError {
    #[error("only one report can go to stdout (`-`)")]
    StdoutTwice,
    #[error(
        "a report goes to stdout (`-`), but stdout is closed (or /dev/null): it would be lost"
    )]
    StdoutDiscards,
    #[error("{flag} {} is also the {other} file; give each report its own path", path.display())]
    SameFile {
        flag: String,
        path: PathBuf,
        other: String,
    },
    #[error("{flag} {}: is a directory", path.display())]
    Directory { flag: String, path: PathBuf },
    #[error(
        "{flag} {}: its directory cannot be created: {} is not a directory",
        path.display(),
        parent.display()
    )]
    NoDirectory {
        flag: String,
        path: PathBuf,
        parent: PathBuf,
    },
    #[error("{flag} {}: is read-only", path.display())]
    ReadOnly { flag: String, path: PathBuf },
    #[error(
        "{flag} {} would overwrite the input {}; write reports elsewhere",
        path.display(),
        input.display()
    )]
    OverwritesInput {
        flag: String,
        path: PathBuf,
        input: PathBuf,
    },
}

/// An output that could not be written.
#[derive(Debug, Error)]
pub enum OutputError {
    /// An analysis command's stdout (a closed pipe is not an error).
    #[error("cannot write output: {0}")]
    Stdout(std::io::Error),
    /// A `check` report sent to stdout.
    #[error("cannot write to stdout: {0}")]
    ReportToStdout(std::io::Error),
    #[error("{}: the report {error}", path.display())]
    Report { path: PathBuf, error: FileError },
    #[error("{}: cannot write the HTML page: {error}", path.display())]
    Html { path: PathBuf, error: FileError },
    #[error("{}: the summary {error}", path.display())]
    Summary { path: PathBuf, error: FileError },
    #[error("{}: cannot create the output directory: {error}", path.display())]
    Directory {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A file GitHub Actions reads (step summary, outputs).
    #[error("cannot append to {}: {error}", path.display())]
    Append {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// Why a target's baselines could not be resolved.
#[derive(Debug, Error)]
pub enum BaselineError {
    #[error("baseline {}", join(.0, "; "))]
    Pattern(Vec<InputError>),
    #[error("baseline {spec}: no such file or directory")]
    Missing { spec: String },
    #[error("baseline {spec}: cannot be read: {error}")]
    Unreadable { spec: String, error: std::io::Error },
    /// Files that name one baseline, one line each.
    #[error("{}", .0.join("\n"))]
    SharedName(Vec<String>),
}

/// `a.pickle, b.pickle`.
fn join(errors: &[InputError], sep: &str) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(sep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Loc;

    fn io() -> std::io::Error {
        std::io::Error::other("disk full")
    }

    #[test]
    fn every_kind_of_error_means_could_not_judge() {
        let path = PathBuf::from("r.md");
        let all: Vec<Error> = vec![
            UsageError::NoSnapshot.into(),
            InputError::NoMatch {
                pattern: "*.pickle".into(),
            }
            .into(),
            LoadError::new(&path, "truncated").into(),
            ConfigError {
                loc: Loc {
                    file: "memgate.toml".into(),
                    line: 1,
                    col: 1,
                },
                key: String::new(),
                message: "bad".into(),
            }
            .into(),
            OutputError::Stdout(io()).into(),
            BaselineError::Missing { spec: "g".into() }.into(),
            Error::NothingToJudge,
            Error::NotJudged(SnapshotError::NoDevice),
            Error::NothingToJudge.in_target("train"),
        ];
        for e in &all {
            assert_eq!(e.exit_code(), 2, "{e}");
        }
    }

    #[test]
    fn a_target_error_is_prefixed_with_the_target_and_keeps_the_inner_exit_code() {
        let e = BaselineError::Missing { spec: "g".into() };
        let e = Error::from(e).in_target("train");
        assert_eq!(
            e.to_string(),
            "target train: baseline g: no such file or directory"
        );
        assert_eq!(e.exit_code(), 2);
    }
}
