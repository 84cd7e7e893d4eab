//! Where `check` writes: report paths (checked before any snapshot is
//! read; `-` is stdout) and the GitHub Actions files.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A report destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dest {
    Stdout,
    File(PathBuf),
}

impl Dest {
    pub fn new(path: &Path) -> Dest {
        if path.as_os_str() == "-" {
            Dest::Stdout
        } else {
            Dest::File(path.to_path_buf())
        }
    }

    pub fn file(&self) -> Option<&Path> {
        match self {
            Dest::Stdout => None,
            Dest::File(p) => Some(p),
        }
    }
}

/// Every problem with the destinations: a missing directory, a
/// directory given as a file, stdout asked for twice.
pub fn check(dests: &[(&str, &Dest)]) -> Vec<String> {
    let mut errors = Vec::new();
    if dests.iter().filter(|(_, d)| **d == Dest::Stdout).count() > 1 {
        errors.push("only one report can go to stdout (`-`)".into());
    }
    for (flag, d) in dests {
        let Dest::File(p) = d else { continue };
        let parent = p
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if p.is_dir() {
            errors.push(format!("{flag} {}: is a directory", p.display()));
        } else if !parent.is_dir() {
            errors.push(format!(
                "{flag} {}: the directory {} does not exist",
                p.display(),
                parent.display()
            ));
        } else if p.exists()
            && std::fs::metadata(p)
                .map(|m| m.permissions().readonly())
                .unwrap_or(false)
        {
            errors.push(format!("{flag} {}: is read-only", p.display()));
        }
    }
    errors
}

/// Write a whole report.
pub fn write(dest: &Dest, text: &str, stdout: &mut dyn Write) -> Result<(), String> {
    match dest {
        Dest::Stdout => stdout
            .write_all(text.as_bytes())
            .map_err(|e| format!("cannot write to stdout: {e}")),
        Dest::File(p) => {
            std::fs::write(p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))
        }
    }
}

/// Append to a file GitHub Actions reads (step summary, outputs).
pub fn append(path: &Path, text: &str) -> Result<(), String> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("cannot append to {}: {e}", path.display()))
}
