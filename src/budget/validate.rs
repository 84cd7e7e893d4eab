//! Raw TOML → [`Budget`]: one pass that collects every problem, each with
//! `file:line:col` and the key it is about.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::path::Path;

use super::raw::{self, RawConfig};
use super::{Budget, CategoryKey, Level, Loc, Rules, Target, Tolerance};
use super::{DEFAULT_NOISE_FLOOR, DEFAULT_TOLERANCE};
use crate::files::{self, FileError, LineStarts};
use crate::patterns::PatternBudget;
use crate::units::Bytes;
use regex::Regex;

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

impl std::error::Error for ConfigError {}

impl ConfigError {
    /// A problem of a file as a whole (missing, unreadable, too large).
    pub(crate) fn of_file(file: &str, message: String) -> ConfigError {
        ConfigError {
            loc: Loc {
                file: file.to_string(),
                line: 0,
                col: 0,
            },
            key: String::new(),
            message,
        }
    }
}

/// A budget file validated as far as it goes: the budget built from what
/// was valid, and every problem (sorted by position once validation ran).
/// No budget when the file could not be read or parsed, or a table has
/// the wrong type.
#[derive(Debug)]
pub struct Validated {
    pub budget: Option<Budget>,
    pub errors: Vec<ConfigError>,
}

impl Validated {
    fn failed(errors: Vec<ConfigError>) -> Validated {
        Validated {
            budget: None,
            errors,
        }
    }
}

/// Validate budget text into a budget or every problem; the unit tests'
/// way in (`dir` is what relative paths are relative to).
#[cfg(test)]
pub(crate) fn parse(
    text: &str,
    file: &str,
    dir: &Path,
    check_globs: bool,
) -> Result<Budget, Vec<ConfigError>> {
    let Validated { budget, errors } = validate(text, file, dir, check_globs);
    match budget {
        Some(b) if errors.is_empty() => Ok(b),
        _ => Err(errors),
    }
}

/// Read and validate a budget file, keeping what was valid beside the
/// errors. `check_globs`: also require every target's snapshot pattern to
/// match a file (off when the command line names the snapshots). The file is read
/// under [`files::TEXT_CAP`], and anything but a regular file (a FIFO,
/// a device) is refused before a byte is read.
pub fn validate_file(path: &Path, check_globs: bool) -> Validated {
    let file = path.display().to_string();
    let whole_file =
        |message: String| Validated::failed(vec![ConfigError::of_file(&file, message)]);
    let bytes = match files::read_capped(path, "budget file", files::TEXT_CAP) {
        Ok(b) => b,
        Err(FileError::NotFound) => {
            return whole_file(
                "no such budget file (pass --config PATH, or run where memgate.toml is)".into(),
            )
        }
        Err(e) => return whole_file(e.to_string()),
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return Validated::failed(vec![not_utf8(&file, e.as_bytes(), e.utf8_error())]),
    };
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    validate(&text, &file, &dir, check_globs)
}

/// The first byte that is not UTF-8, placed by line and column (counted in
/// the valid text before it).
fn not_utf8(file: &str, bytes: &[u8], e: std::str::Utf8Error) -> ConfigError {
    let at = e.valid_up_to();
    // Valid up to `at` by the error's own word.
    let before = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
    let (line, col) = LineStarts::of(before).line_col(before, at);
    ConfigError {
        loc: Loc {
            file: file.to_string(),
            line,
            col,
        },
        key: String::new(),
        message: format!(
            "not UTF-8: byte 0x{:02x} cannot start or continue a character (TOML files are UTF-8)",
            bytes[at]
        ),
    }
}

/// [`parse`], keeping what was valid beside the errors.
pub fn validate(text: &str, file: &str, dir: &Path, check_globs: bool) -> Validated {
    let mut v = Validator::new(text, false, file, dir);
    match raw::read(text) {
        Ok(read) => v.validate_read(read, check_globs),
        Err(e) => {
            v.toml_error(&e);
            Validated::failed(v.errors)
        }
    }
}

/// The raw structs of a budget given as data (no text: every problem is
/// placed by its dotted key only), validated as a file's are.
pub(crate) fn validate_data_read(
    read: raw::Read,
    file: &str,
    dir: &Path,
    check_globs: bool,
) -> Validated {
    Validator::new("", true, file, dir).validate_read(read, check_globs)
}

impl<'a> Validator<'a> {
    fn new(text: &'a str, data: bool, file: &'a str, dir: &'a Path) -> Validator<'a> {
        Validator {
            text,
            data,
            lines: LineStarts::of(text),
            regexes: HashMap::new(),
            patterns: PatternBudget::default(),
            category_keys: Vec::new(),
            file,
            dir,
            errors: Vec::new(),
        }
    }

    fn validate_read(mut self, read: raw::Read, check_globs: bool) -> Validated {
        let v = &mut self;
        for m in read
            .unknown_keys
            .into_iter()
            .chain(read.wrong_types.iter().cloned())
        {
            v.err(m.span, "", m.message);
        }
        if !read.wrong_types.is_empty() {
            // The raw structs miss what was of the wrong type: validating
            // them would report that as missing too.
            return Validated::failed(std::mem::take(&mut v.errors));
        }
        let budget = v.budget(read.config, check_globs);
        v.errors.sort_by_key(|e| (e.loc.line, e.loc.col));
        Validated {
            budget: Some(budget),
            errors: std::mem::take(&mut v.errors),
        }
    }
}

pub(super) struct Validator<'a> {
    pub(super) text: &'a str,
    /// A budget given as data: no text, so no line and column.
    data: bool,
    lines: LineStarts,
    /// `target.key` and stage regexes by pattern.
    pub(super) regexes: HashMap<String, Regex>,
    /// What the file's regexes have spent of the limits on them.
    pub(super) patterns: PatternBudget,
    pub(super) category_keys: Vec<CategoryKey>,
    pub(super) file: &'a str,
    pub(super) dir: &'a Path,
    pub(super) errors: Vec<ConfigError>,
}

impl Validator<'_> {
    pub(super) fn loc(&self, span: Range<usize>) -> Loc {
        let (line, col) = if self.data {
            (0, 0)
        } else {
            self.lines.line_col(self.text, span.start)
        };
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

    pub(super) fn toml_error(&mut self, e: &toml_edit::TomlError) {
        let span = e.span().unwrap_or(0..0);
        // The parser's message may go on over several lines; the first says it all.
        let msg = crate::toml_error::message(e, self.text);
        self.err(span, "", msg);
    }

    pub(super) fn budget(&mut self, raw: RawConfig, check_globs: bool) -> Budget {
        let mut tolerance = Tolerance {
            pct: DEFAULT_TOLERANCE,
            level: Level::Fail,
            loc: None,
        };
        let mut noise_floor = DEFAULT_NOISE_FLOOR;
        let mut device_memory = None;
        let mut outside_allocator = None;
        let mut rules = (Rules::Default, None);
        let mut figures = Budget::default_figures();
        if let Some(d) = &raw.defaults {
            if let Some(list) = &d.figures {
                if let Some(f) = self.figure_list(list, "defaults.figures") {
                    figures = f;
                }
            }
            if let Some(t) = &d.tolerance {
                if let Some(t) = self.tolerance(t, "defaults.tolerance") {
                    tolerance = t;
                }
            }
            if let Some(n) = &d.noise_floor {
                if let Some(b) = self.size(n, "defaults.noise-floor") {
                    noise_floor = Bytes(b);
                }
            }
            if let Some(n) = &d.device_memory {
                device_memory = self.size(n, "defaults.device-memory");
            }
            if let Some(n) = &d.outside_allocator {
                outside_allocator = self.size(n, "defaults.outside-allocator");
            }
            if let Some(r) = &d.rules {
                if let Some(r) = self.rules(r) {
                    rules = (
                        r,
                        Some(self.loc(d.rules.as_ref().map_or(0..0, |l| l.span()))),
                    );
                }
            }
        }
        let categories = self.custom_rules(raw.categories.as_ref());
        let sites = self.sites(raw.sites.as_ref());
        let owners = raw.owners.as_ref().map(|o| self.owners(o));
        let mut targets: Vec<Target> = Vec::new();
        let mut seen: HashMap<String, Loc> = HashMap::new();
        for t in &raw.target {
            if let Some(t) = self.target(t, check_globs) {
                if let Some(prev) = seen.get(&t.name) {
                    let msg = format!("target name `{}` is already used at {}", t.name, prev);
                    self.errors.push(ConfigError {
                        loc: t.loc.clone(),
                        key: "target.name".into(),
                        message: msg,
                    });
                }
                seen.entry(t.name.clone()).or_insert_with(|| t.loc.clone());
                targets.push(t);
            }
        }
        if raw.target.is_empty() {
            self.err(0..0, "target", "no [[target]] table: nothing to check");
        }
        let waivers = self.waivers(&raw.waiver, &targets);
        Budget {
            file: self.file.to_string(),
            tolerance,
            noise_floor,
            device_memory,
            outside_allocator,
            rules: rules.0,
            rules_loc: rules.1,
            figures,
            categories,
            sites,
            owners,
            targets,
            waivers,
            category_keys: std::mem::take(&mut self.category_keys),
        }
    }
}
