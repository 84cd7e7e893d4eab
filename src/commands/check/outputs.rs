//! Where `check` writes: report paths (checked before any snapshot is
//! read; `-` is stdout) and the GitHub Actions files. A report replaces its
//! file atomically; no report may be another report or an input.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::error::{DestinationError, OutputError};
use crate::files::{self, same_file};

/// A report destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dest {
    Stdout,
    File(PathBuf),
}

impl Dest {
    pub(crate) fn new(path: &Path) -> Dest {
        if path.as_os_str() == "-" {
            Dest::Stdout
        } else {
            Dest::File(path.to_path_buf())
        }
    }

    pub(crate) fn file(&self) -> Option<&Path> {
        match self {
            Dest::Stdout => None,
            Dest::File(p) => Some(p),
        }
    }
}

/// Every problem with the destinations: a missing directory, a
/// directory given as a file, stdout asked for twice.
pub(crate) fn check(dests: &[(&str, &Dest)]) -> Vec<DestinationError> {
    let mut errors = Vec::new();
    let to_stdout = dests.iter().filter(|(_, d)| **d == Dest::Stdout).count();
    if to_stdout > 1 {
        errors.push(DestinationError::StdoutTwice);
    }
    if to_stdout > 0 && stdout_discards() {
        errors.push(DestinationError::StdoutDiscards);
    }
    let files: Vec<(&str, &Path)> = dests
        .iter()
        .filter_map(|(f, d)| d.file().map(|p| (*f, p)))
        .collect();
    for (i, (flag, p)) in files.iter().enumerate() {
        if let Some((other, _)) = files[..i].iter().find(|(_, q)| same_file(p, q)) {
            errors.push(DestinationError::SameFile {
                flag: flag.to_string(),
                path: p.to_path_buf(),
                other: other.to_string(),
            });
        }
    }
    for (flag, d) in dests {
        let Dest::File(p) = d else { continue };
        let parent = p
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let (flag, path) = (flag.to_string(), p.to_path_buf());
        if p.is_dir() {
            errors.push(DestinationError::Directory { flag, path });
        } else if !parent.is_dir() {
            let parent = parent.to_path_buf();
            errors.push(DestinationError::NoDirectory { flag, path, parent });
        } else if p.exists()
            && std::fs::metadata(p)
                .map(|m| m.permissions().readonly())
                .unwrap_or(false)
        {
            errors.push(DestinationError::ReadOnly { flag, path });
        }
    }
    errors
}

/// Whether what is written to stdout goes nowhere. Rust's runtime reopens
/// a closed descriptor 1 on /dev/null (and its stdout swallows EBADF), so a
/// closed stdout shows as the null device.
fn stdout_discards() -> bool {
    let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return true;
    };
    let null = std::fs::metadata("/dev/null").map(|m| m.rdev());
    match (std::fs::File::from(fd).metadata(), null) {
        (Ok(m), Ok(null)) => m.file_type().is_char_device() && m.rdev() == null,
        _ => false,
    }
}

/// Reports that would overwrite an input (budget file, snapshot, baseline):
/// refused before anything is written.
pub(crate) fn clash_with_inputs(
    dests: &[(&str, &Dest)],
    inputs: &[&Path],
) -> Vec<DestinationError> {
    let mut errors = Vec::new();
    for (flag, d) in dests {
        let Some(p) = d.file() else { continue };
        if let Some(input) = inputs.iter().find(|i| same_file(p, i)) {
            errors.push(DestinationError::OverwritesInput {
                flag: flag.to_string(),
                path: p.to_path_buf(),
                input: input.to_path_buf(),
            });
        }
    }
    errors
}

/// The destinations a report can still go to when the gate could not judge:
/// each one that passes [`check`] alone, is no other report's file and would
/// overwrite none of `inputs`. A bad path never stops the good ones.
pub(crate) fn usable<'a>(
    dests: &[(&'a str, &'a Dest)],
    inputs: &[&Path],
) -> Vec<(&'a str, &'a Dest)> {
    let shared = |i: usize, d: &Dest| {
        dests.iter().enumerate().any(|(j, (_, other))| {
            j != i
                && match (d, other) {
                    (Dest::Stdout, Dest::Stdout) => true,
                    (Dest::File(a), Dest::File(b)) => same_file(a, b),
                    _ => false,
                }
        })
    };
    dests
        .iter()
        .enumerate()
        .filter(|&(i, &(flag, d))| {
            check(&[(flag, d)]).is_empty()
                && clash_with_inputs(&[(flag, d)], inputs).is_empty()
                && !shared(i, d)
        })
        .map(|(_, &pair)| pair)
        .collect()
}

/// Write a whole report.
pub fn write(dest: &Dest, text: &str, stdout: &mut dyn Write) -> Result<(), OutputError> {
    match dest {
        Dest::Stdout => stdout
            .write_all(text.as_bytes())
            .map_err(OutputError::ReportToStdout),
        Dest::File(p) => {
            files::write_atomic(p, text.as_bytes()).map_err(|error| OutputError::Report {
                path: p.clone(),
                error,
            })
        }
    }
}

/// Append to a file GitHub Actions reads (step summary, outputs).
pub(crate) fn append(path: &Path, text: &str) -> Result<(), OutputError> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|error| OutputError::Append {
            path: path.to_path_buf(),
            error,
        })
}
