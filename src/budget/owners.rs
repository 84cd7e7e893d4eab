//! `[owners]`: who owns the user's code (docs/figures.md#owners), each
//! value checked at its own position. Patterns are compiled here, so a bad
//! one is named at its line; the CODEOWNERS file it points to is read by
//! `check` (`owners::Owners::load`).

use std::path::PathBuf;

use toml::Value;

use super::raw::{Leaf, RawOwners};
use super::validate::Validator;
use super::Loc;
use crate::owners::Pattern;

/// The longest owner name taken (a team handle is far shorter).
const OWNER_CHARS: usize = 200;
/// The most owners one pattern may name.
const OWNERS_PER_PATTERN: usize = 32;

/// Where the CODEOWNERS file is.
#[derive(Debug, Clone)]
pub enum CodeownersAt {
    /// `codeowners = true`: GitHub's and GitLab's places in the repository
    /// this folder (the budget file's) is in.
    Search(PathBuf),
    /// `codeowners = "PATH"`, joined to the budget file's folder.
    File(PathBuf),
}

/// One `[owners.paths]` entry.
#[derive(Debug, Clone)]
pub struct PathOwners {
    pub pattern: Pattern,
    pub owners: Vec<String>,
}

/// `[owners]` as checked.
#[derive(Debug, Clone, Default)]
pub struct OwnersTable {
    /// `mention = true`: Markdown writes a handle as an `@mention`.
    pub mention: bool,
    /// The CODEOWNERS file to read, and where `codeowners` is written.
    pub codeowners: Option<(CodeownersAt, Loc)>,
    /// In file order: the last match counts.
    pub paths: Vec<PathOwners>,
}

impl Validator<'_> {
    /// The `[owners]` values; a wrong one is reported and left out.
    pub(super) fn owners(&mut self, raw: &RawOwners) -> OwnersTable {
        let mut table = OwnersTable::default();
        if let Some(leaf) = &raw.mention {
            match leaf.get_ref() {
                Value::Boolean(b) => table.mention = *b,
                other => self.err(
                    leaf.span(),
                    "owners.mention",
                    format!("must be true or false, not {}", other.type_str()),
                ),
            }
        }
        if let Some(leaf) = &raw.codeowners {
            table.codeowners = self.codeowners(leaf);
        }
        for (key, leaf) in raw.paths.iter().flatten() {
            let pattern = Pattern::parse(&key.name);
            let owners = self.owner_list(leaf);
            match (pattern, owners) {
                (Ok(pattern), Some(owners)) => table.paths.push(PathOwners { pattern, owners }),
                (Err(m), _) => self.err(key.span.clone(), "owners.paths", m),
                (Ok(_), None) => {}
            }
        }
        table
    }

    fn codeowners(&mut self, leaf: &Leaf) -> Option<(CodeownersAt, Loc)> {
        let loc = self.loc(leaf.span());
        match leaf.get_ref() {
            Value::Boolean(true) => Some((CodeownersAt::Search(self.dir.to_path_buf()), loc)),
            Value::Boolean(false) => None,
            Value::String(s) if !s.is_empty() => Some((CodeownersAt::File(self.dir.join(s)), loc)),
            other => {
                let msg = format!(
                    "must be true (find the repository's CODEOWNERS) or a file's path, not {}",
                    other.type_str()
                );
                self.err(leaf.span(), "owners.codeowners", msg);
                None
            }
        }
    }

    /// An owner or a list of them, each a non-empty name.
    fn owner_list(&mut self, leaf: &Leaf) -> Option<Vec<String>> {
        let names: Vec<&Value> = match leaf.get_ref() {
            Value::Array(a) => a.iter().collect(),
            v => vec![v],
        };
        let mut out = Vec::new();
        for v in names {
            let problem = match v {
                Value::String(s) if s.trim().is_empty() => "an owner's name is empty".to_string(),
                Value::String(s) if s.chars().count() > OWNER_CHARS => {
                    format!("an owner's name is longer than {OWNER_CHARS} characters")
                }
                Value::String(s) => {
                    out.push(s.clone());
                    continue;
                }
                other => format!(
                    "must be an owner or a list of owners (strings), not {}",
                    other.type_str()
                ),
            };
            self.err(leaf.span(), "owners.paths", problem);
            return None;
        }
        if out.is_empty() || out.len() > OWNERS_PER_PATTERN {
            let msg = format!("must name 1 to {OWNERS_PER_PATTERN} owners");
            self.err(leaf.span(), "owners.paths", msg);
            return None;
        }
        Some(out)
    }
}
