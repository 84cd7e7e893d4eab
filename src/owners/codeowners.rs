//! A repository's CODEOWNERS file read into rules: where it is (GitHub's
//! and GitLab's three places), and its lines (docs/figures.md#owners).
//!
//! A line is a pattern and its owners; `#` starts a comment (a whole line,
//! or the rest of one after the owners begin). GitLab's section headers
//! (`[Section]`, `^[Optional][2] @default-owner`) start a section, whose
//! default owners go to its lines that name none; the last match of each
//! section counts, and a file's owners are those of every section, in
//! file order. A file with no section header is one section, as on GitHub.

use std::path::{Path, PathBuf};

use super::pattern::Pattern;
use super::Rule;
use crate::files::{self, FileError};

/// A problem of a CODEOWNERS file: its line and column (1-based; line 0:
/// the file as a whole), and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineError {
    pub(crate) line: usize,
    pub(crate) col: usize,
    pub(crate) message: String,
}

impl LineError {
    fn whole(message: String) -> Vec<LineError> {
        vec![LineError {
            line: 0,
            col: 0,
            message,
        }]
    }
}

/// The largest CODEOWNERS file read: GitHub ignores one over 3 MB.
pub(crate) const CAP: u64 = 3 << 20;

/// Where GitHub and GitLab look, in their order: the first found counts.
const PLACES: [&str; 3] = [".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];

/// The repository `from` is in: the nearest folder at or above it that
/// holds `.git`, else `from` itself.
pub(crate) fn repository_root(from: &Path) -> PathBuf {
    let start = std::path::absolute(from).unwrap_or_else(|_| from.to_path_buf());
    start
        .ancestors()
        .find(|d| d.join(".git").exists())
        .map_or(start.clone(), Path::to_path_buf)
}

/// The CODEOWNERS file of the repository `from` is in, or why none was
/// found (the folders looked in).
pub(crate) fn find(from: &Path) -> Result<PathBuf, String> {
    let root = repository_root(from);
    PLACES
        .iter()
        .map(|p| root.join(p))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "no CODEOWNERS file in .github/, the root or docs/ of {}",
                root.display()
            )
        })
}

/// Read and parse a CODEOWNERS file; every bad line is reported.
pub(crate) fn read(path: &Path) -> Result<Vec<Rule>, Vec<LineError>> {
    let bytes = match files::read_capped(path, "CODEOWNERS file", CAP) {
        Ok(b) => b,
        Err(FileError::NotFound) => return Err(LineError::whole("no such CODEOWNERS file".into())),
        Err(e) => return Err(LineError::whole(e.to_string())),
    };
    let text = String::from_utf8(bytes).map_err(|_| LineError::whole("is not UTF-8".into()))?;
    parse(&text)
}

/// The rules of a CODEOWNERS text, in file order.
pub(crate) fn parse(text: &str) -> Result<Vec<Rule>, Vec<LineError>> {
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    let mut section = 0;
    let mut defaults: Vec<String> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (line_no, col) = (i + 1, raw.len() - raw.trim_start().len() + 1);
        if let Some(header) = section_header(line) {
            section += 1;
            defaults = owners(header);
            continue;
        }
        let (pattern, rest) = split_pattern(line);
        match Pattern::parse(pattern) {
            Ok(p) => {
                let named = owners(rest);
                rules.push(Rule {
                    pattern: p,
                    owners: if named.is_empty() {
                        defaults.clone()
                    } else {
                        named
                    },
                    section,
                });
            }
            Err(message) => errors.push(LineError {
                line: line_no,
                col,
                message,
            }),
        }
    }
    if errors.is_empty() {
        Ok(rules)
    } else {
        Err(errors)
    }
}

/// What follows a GitLab section header's name (and approval count): the
/// section's default owners. `None` when the line is no header.
fn section_header(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('^').unwrap_or(line).strip_prefix('[')?;
    let rest = &rest[rest.find(']')? + 1..];
    // `[x].py` is a pattern (which GitHub refuses), not a section.
    if !(rest.is_empty() || rest.starts_with(|c: char| c.is_whitespace() || c == '[')) {
        return None;
    }
    // `[2]`: the approvals the section needs.
    let rest = match rest.strip_prefix('[') {
        Some(r)
            if r.find(']')
                .is_some_and(|e| r[..e].bytes().all(|b| b.is_ascii_digit())) =>
        {
            &r[r.find(']').unwrap_or(0) + 1..]
        }
        _ => rest,
    };
    Some(rest)
}

/// The pattern (up to the first whitespace that no `\` escapes) and the rest.
fn split_pattern(line: &str) -> (&str, &str) {
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            c if c.is_whitespace() => return (&line[..i], &line[i..]),
            _ => {}
        }
    }
    (line, "")
}

/// The owners of a line: whitespace-separated, up to a `#` comment.
fn owners(rest: &str) -> Vec<String> {
    rest.split_whitespace()
        .take_while(|w| !w.starts_with('#'))
        .map(str::to_string)
        .collect()
}
