//! Raw TOML → [`Budget`]: one pass that collects every problem, each with
//! `file:line:col` and the key it is about.

use std::fmt;
use std::ops::Range;
use std::path::Path;

use super::keys::{blank_out, unknown_keys, Node};
use super::raw::RawConfig;
use super::{Budget, Level, Loc, Rules, Target, Tolerance};
use super::{DEFAULT_NOISE_FLOOR, DEFAULT_TOLERANCE};
use crate::analysis::RuleSet;
use crate::units::Bytes;

/// One problem of the budget file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub loc: Loc,
    /// The dotted key the problem is about (`target.budget.overall-peak`).
    pub key: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.loc, self.message)
        } else {
            write!(f, "{}: `{}`: {}", self.loc, self.key, self.message)
        }
    }
}

/// Read and validate a budget file. `check_globs`: also require every
/// target's snapshot pattern to match a file (off when the command line
/// names the snapshots).
pub fn load(path: &Path, check_globs: bool) -> Result<Budget, Vec<ConfigError>> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        vec![ConfigError {
            loc: Loc {
                file: file.clone(),
                line: 0,
                col: 0,
            },
            key: String::new(),
            message: match e.kind() {
                std::io::ErrorKind::NotFound => {
                    "no such budget file (pass --config PATH, or run where memgate.toml is)".into()
                }
                _ => format!("cannot be read: {e}"),
            },
        }]
    })?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    parse(&text, &file, &dir, check_globs)
}

/// Validate budget text; `dir` is what relative paths are relative to.
pub fn parse(
    text: &str,
    file: &str,
    dir: &Path,
    check_globs: bool,
) -> Result<Budget, Vec<ConfigError>> {
    let mut v = Validator {
        text,
        file,
        dir,
        errors: Vec::new(),
    };
    let tree: Node = match toml::from_str(text) {
        Ok(t) => t,
        Err(e) => {
            v.toml_error(&e);
            return Err(v.errors);
        }
    };
    let unknown = unknown_keys(&tree);
    for u in &unknown {
        v.err(u.key.clone(), "", u.message.clone());
    }
    let cleaned;
    let text_ok = if unknown.is_empty() {
        text
    } else {
        cleaned = blank_out(text, &unknown);
        &cleaned
    };
    let raw: RawConfig = match toml::from_str(text_ok) {
        Ok(r) => r,
        Err(e) => {
            // With unknown keys blanked out, a later error is most likely
            // their echo; they are the problems to fix first.
            if unknown.is_empty() {
                v.toml_error(&e);
            }
            return Err(v.errors);
        }
    };
    let budget = v.budget(raw, check_globs);
    if v.errors.is_empty() {
        Ok(budget)
    } else {
        v.errors.sort_by_key(|e| (e.loc.line, e.loc.col));
        Err(v.errors)
    }
}

pub(super) struct Validator<'a> {
    pub(super) text: &'a str,
    pub(super) file: &'a str,
    pub(super) dir: &'a Path,
    pub(super) errors: Vec<ConfigError>,
}

impl Validator<'_> {
    pub(super) fn loc(&self, span: Range<usize>) -> Loc {
        let before = &self.text[..span.start.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Loc {
            file: self.file.to_string(),
            line,
            col,
        }
    }

    pub(super) fn err(&mut self, span: Range<usize>, key: &str, message: impl Into<String>) {
        let loc = self.loc(span);
        self.errors.push(ConfigError {
            loc,
            key: key.into(),
            message: message.into(),
        });
    }

    pub(super) fn toml_error(&mut self, e: &toml::de::Error) {
        let span = e.span().unwrap_or(0..0);
        // toml's message repeats the source line; the first line says it all.
        let msg = e.message().lines().next().unwrap_or("invalid TOML");
        // serde names the raw structs; say what the file should hold.
        let msg = regex::Regex::new(r"struct Raw\w+")
            .map(|r| r.replace_all(msg, "a table").into_owned())
            .unwrap_or_else(|_| msg.to_string())
            .replace(
                "expected a sequence",
                "expected an array of tables ([[target]])",
            );
        self.err(span, "", msg);
    }

    pub(super) fn budget(&mut self, raw: RawConfig, check_globs: bool) -> Budget {
        let mut tolerance = Tolerance {
            pct: DEFAULT_TOLERANCE,
            level: Level::Fail,
            loc: None,
        };
        let mut noise_floor = (DEFAULT_NOISE_FLOOR, None);
        let mut rules = Rules::Default;
        let mut names: Vec<String> = RuleSet::builtin_default().categories().to_vec();
        if let Some(d) = &raw.defaults {
            if let Some(t) = &d.tolerance {
                if let Some(t) = self.tolerance(t, "defaults.tolerance") {
                    tolerance = t;
                }
            }
            if let Some(n) = &d.noise_floor {
                if let Some(b) = self.size(n, "defaults.noise-floor") {
                    noise_floor = (Bytes(b), Some(self.loc(n.span())));
                }
            }
            if let Some(r) = &d.rules {
                if let Some((r, n)) = self.rules(r) {
                    (rules, names) = (r, n);
                }
            }
        }
        let categories = self.custom_rules(raw.categories.as_ref());
        names.extend(categories.iter().map(|(n, _)| n.clone()));
        let mut targets: Vec<Target> = Vec::new();
        for t in &raw.target {
            if let Some(t) = self.target(t.get_ref(), t.span(), &names, check_globs) {
                if let Some(prev) = targets.iter().find(|p| p.name == t.name) {
                    let msg = format!("target name `{}` is already used at {}", t.name, prev.loc);
                    self.errors.push(ConfigError {
                        loc: t.loc.clone(),
                        key: "target.name".into(),
                        message: msg,
                    });
                }
                targets.push(t);
            }
        }
        if raw.target.is_empty() {
            self.err(0..0, "target", "no [[target]] table: nothing to check");
        }
        Budget {
            file: self.file.to_string(),
            tolerance,
            noise_floor: noise_floor.0,
            noise_floor_loc: noise_floor.1,
            rules,
            categories,
            targets,
        }
    }
}
