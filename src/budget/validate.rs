//! Raw TOML → [`Budget`]: one pass that collects every problem, each with
//! `file:line:col` and the key it is about.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use regex::Regex;
use toml::Value;

use super::keys::{blank_out, unknown_keys, Node};
use super::raw::{Leaf, OpenTable, RawConfig, RawTarget};
use super::{Budget, Level, Limit, Loc, Rules, Target, Tolerance};
use super::{DEFAULT_NOISE_FLOOR, DEFAULT_TOLERANCE};
use crate::analysis::Figure;
use crate::input;
use crate::units::{Bytes, Percent};

/// Category names of the built-in rule sets (SPEC §4).
pub const DEFAULT_CATEGORIES: &[&str] = &[
    "parameter",
    "optimizer-state",
    "gradient",
    "activation",
    "communication",
    "other",
    "unknown",
];
pub const MOSAIC_CATEGORIES: &[&str] = &[
    "FSDP",
    "ACTIVATION",
    "PARAMETER",
    "BACKWARD",
    "OPTIMIZER",
    "NET",
    "NET_SETUP",
    "STATS",
    "UNKNOWN",
];

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
                std::io::ErrorKind::NotFound => "no such budget file (pass --config PATH)".into(),
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
            v.toml_error(&e);
            return Err(v.errors);
        }
    };
    let budget = v.budget(raw, check_globs);
    if v.errors.is_empty() {
        Ok(budget)
    } else {
        Err(v.errors)
    }
}

struct Validator<'a> {
    text: &'a str,
    file: &'a str,
    dir: &'a Path,
    errors: Vec<ConfigError>,
}

impl Validator<'_> {
    fn loc(&self, span: Range<usize>) -> Loc {
        let before = &self.text[..span.start.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Loc {
            file: self.file.to_string(),
            line,
            col,
        }
    }

    fn err(&mut self, span: Range<usize>, key: &str, message: impl Into<String>) {
        let loc = self.loc(span);
        self.errors.push(ConfigError {
            loc,
            key: key.into(),
            message: message.into(),
        });
    }

    fn toml_error(&mut self, e: &toml::de::Error) {
        let span = e.span().unwrap_or(0..0);
        // toml's message repeats the source line; the first line says it all.
        let msg = e
            .message()
            .lines()
            .next()
            .unwrap_or("invalid TOML")
            .to_string();
        self.err(span, "", msg);
    }

    fn budget(&mut self, raw: RawConfig, check_globs: bool) -> Budget {
        let mut tolerance = Tolerance {
            pct: DEFAULT_TOLERANCE,
            level: Level::Fail,
            loc: None,
        };
        let mut noise_floor = (DEFAULT_NOISE_FLOOR, None);
        let mut rules = Rules::Default;
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
                rules = self.rules(r).unwrap_or(Rules::Default);
            }
        }
        let categories = self.custom_rules(raw.categories.as_ref());
        let mut names: Vec<String> = match &rules {
            Rules::Default => DEFAULT_CATEGORIES.iter().map(|s| s.to_string()).collect(),
            Rules::Mosaic => MOSAIC_CATEGORIES.iter().map(|s| s.to_string()).collect(),
            Rules::File(p) => rule_file_names(p),
        };
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

    fn target(
        &mut self,
        t: &RawTarget,
        span: Range<usize>,
        categories: &[String],
        check_globs: bool,
    ) -> Option<Target> {
        let name = match &t.name {
            Some(n) => self.string(n, "target.name"),
            None => {
                self.err(
                    span.clone(),
                    "target.name",
                    "every [[target]] needs a `name`",
                );
                None
            }
        };
        let snapshots = match &t.snapshots {
            Some(s) => self.patterns(s, check_globs),
            None if check_globs => {
                self.err(
                    span.clone(),
                    "target.snapshots",
                    "no `snapshots` pattern (or pass snapshots on the command line)",
                );
                Vec::new()
            }
            None => Vec::new(),
        };
        let baseline = t.baseline.as_ref().and_then(|b| self.baseline(b));
        let device = t.device.as_ref().and_then(|d| match d.get_ref() {
            Value::Integer(i) if (0..=i64::from(u32::MAX)).contains(i) => Some(*i as u32),
            _ => {
                self.err(
                    d.span(),
                    "target.device",
                    "must be a device index (an integer ≥ 0)",
                );
                None
            }
        });
        let key = t.key.as_ref().and_then(|k| self.key_regex(k));
        let mut budget = BTreeMap::new();
        let mut category_budget = BTreeMap::new();
        let mut tolerance = BTreeMap::new();
        if let Some(b) = &t.budget {
            for f in Figure::ALL {
                let Some(leaf) = b.figure(f) else { continue };
                let key = format!("target.budget.{}", f.id());
                if let Some(l) = self.limit(leaf, &key, f.is_bytes()) {
                    budget.insert(f, l);
                }
            }
            for (k, leaf) in b.category.iter().flatten() {
                let key = format!("target.budget.category.{}", k.get_ref());
                if !categories.contains(k.get_ref()) {
                    let msg = format!(
                        "unknown category `{}`; known: {}",
                        k.get_ref(),
                        categories.join(", ")
                    );
                    self.err(k.span(), &key, msg);
                } else if let Some(l) = self.limit(leaf, &key, true) {
                    category_budget.insert(k.get_ref().clone(), l);
                }
            }
        }
        if let Some(tol) = &t.tolerance {
            for f in Figure::ALL {
                let Some(leaf) = tol.figure(f) else { continue };
                if let Some(x) = self.tolerance(leaf, &format!("target.tolerance.{}", f.id())) {
                    tolerance.insert(f, x);
                }
            }
        }
        Some(Target {
            name: name?,
            loc: self.loc(t.name.as_ref().map_or(span, |n| n.span())),
            snapshots,
            baseline,
            device,
            key,
            budget,
            category_budget,
            tolerance,
        })
    }

    fn string(&mut self, leaf: &Leaf, key: &str) -> Option<String> {
        match leaf.get_ref() {
            Value::String(s) => Some(s.clone()),
            other => {
                self.err(
                    leaf.span(),
                    key,
                    format!("must be a string, not {}", other.type_str()),
                );
                None
            }
        }
    }

    fn relative(&self, p: &str) -> String {
        if Path::new(p).is_absolute() {
            p.to_string()
        } else {
            self.dir.join(p).to_string_lossy().into_owned()
        }
    }

    fn patterns(&mut self, leaf: &Leaf, check_globs: bool) -> Vec<String> {
        let list: Vec<String> = match leaf.get_ref() {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) if a.iter().all(Value::is_str) => a
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect(),
            _ => {
                self.err(
                    leaf.span(),
                    "target.snapshots",
                    "must be a glob pattern string or a list of them",
                );
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for p in list {
            let full = self.relative(&p);
            if check_globs {
                match input::expand(std::slice::from_ref(&full), None) {
                    Ok(paths) if paths.iter().all(|p| p.exists()) => {}
                    Ok(_) => self.err(
                        leaf.span(),
                        "target.snapshots",
                        format!("`{p}` matches no file (relative to {})", self.dir_name()),
                    ),
                    Err(e) => {
                        for e in e {
                            let msg = e.replace(&full, &p);
                            self.err(
                                leaf.span(),
                                "target.snapshots",
                                format!("{msg} (relative to {})", self.dir_name()),
                            );
                        }
                    }
                }
            }
            out.push(full);
        }
        out
    }

    fn dir_name(&self) -> String {
        if self.dir.as_os_str().is_empty() {
            "the budget file's directory".into()
        } else {
            self.dir.display().to_string()
        }
    }

    fn baseline(&mut self, leaf: &Leaf) -> Option<String> {
        let p = self.string(leaf, "target.baseline")?;
        let full = self.relative(&p);
        if input::expand(std::slice::from_ref(&full), None)
            .map_or(true, |v| v.iter().any(|x| !x.exists()))
        {
            self.err(
                leaf.span(),
                "target.baseline",
                format!("`{p}` does not exist (relative to {})", self.dir_name()),
            );
            return None;
        }
        Some(full)
    }

    fn key_regex(&mut self, leaf: &Leaf) -> Option<Regex> {
        let s = self.string(leaf, "target.key")?;
        match Regex::new(&s) {
            Ok(r) if r.captures_len() > 1 => Some(r),
            Ok(_) => {
                self.err(
                    leaf.span(),
                    "target.key",
                    "needs a capture group `( … )` naming the snapshot",
                );
                None
            }
            Err(e) => {
                self.err(
                    leaf.span(),
                    "target.key",
                    format!("not a valid regex: {}", first_line(&e.to_string())),
                );
                None
            }
        }
    }

    fn rules(&mut self, leaf: &Leaf) -> Option<Rules> {
        let s = self.string(leaf, "defaults.rules")?;
        match s.as_str() {
            "default" => Some(Rules::Default),
            "mosaic" => Some(Rules::Mosaic),
            p => {
                let full = PathBuf::from(self.relative(p));
                if full.is_file() {
                    Some(Rules::File(full))
                } else {
                    self.err(
                        leaf.span(),
                        "defaults.rules",
                        format!("`{p}` is neither `default`, `mosaic` nor a rules file"),
                    );
                    None
                }
            }
        }
    }

    fn custom_rules(&mut self, table: Option<&OpenTable>) -> Vec<(String, Regex)> {
        let mut rules = Vec::new();
        // BTreeMap iterates by name; custom rules apply in file order.
        let mut entries: Vec<_> = table.into_iter().flatten().collect();
        entries.sort_by_key(|(k, _)| k.span().start);
        for (k, leaf) in entries {
            let key = format!("categories.{}", k.get_ref());
            let Some(s) = self.string(leaf, &key) else {
                continue;
            };
            match Regex::new(&format!("(?i){s}")) {
                Ok(r) => rules.push((k.get_ref().clone(), r)),
                Err(e) => self.err(
                    leaf.span(),
                    &key,
                    format!("not a valid regex: {}", first_line(&e.to_string())),
                ),
            }
        }
        rules
    }

    /// A size (`"40 GiB"`, bytes) or a count, plain or `{ limit, level }`.
    fn limit(&mut self, leaf: &Leaf, key: &str, bytes: bool) -> Option<Limit> {
        let (value, level) = self.with_level(leaf, key)?;
        let n = if bytes {
            size_value(value)
        } else {
            count_value(value)
        };
        match n {
            Ok(n) => Some(Limit {
                value: n,
                level,
                loc: self.loc(leaf.span()),
            }),
            Err(m) => {
                self.err(leaf.span(), key, m);
                None
            }
        }
    }

    fn size(&mut self, leaf: &Leaf, key: &str) -> Option<u64> {
        size_value(leaf.get_ref())
            .map_err(|m| self.err(leaf.span(), key, m))
            .ok()
    }

    fn tolerance(&mut self, leaf: &Leaf, key: &str) -> Option<Tolerance> {
        let (value, level) = self.with_level(leaf, key)?;
        let pct = match value {
            Value::String(s) => Percent::parse(s),
            other => Err(format!(
                "{other} is not a percentage; write it as a string, e.g. \"5%\""
            )),
        };
        match pct {
            Ok(pct) => Some(Tolerance {
                pct,
                level,
                loc: Some(self.loc(leaf.span())),
            }),
            Err(m) => {
                self.err(leaf.span(), key, m);
                None
            }
        }
    }

    /// Split `{ limit = …, level = "warn" }` from a plain value.
    fn with_level<'v>(&mut self, leaf: &'v Leaf, key: &str) -> Option<(&'v Value, Level)> {
        let Value::Table(t) = leaf.get_ref() else {
            return Some((leaf.get_ref(), Level::Fail));
        };
        let mut ok = true;
        for k in t.keys().filter(|k| *k != "limit" && *k != "level") {
            self.err(
                leaf.span(),
                key,
                format!("unknown key `{k}` in the table; expected limit, level"),
            );
            ok = false;
        }
        let level = match t.get("level").map(|l| l.as_str()) {
            None | Some(Some("fail")) => Level::Fail,
            Some(Some("warn")) => Level::Warn,
            Some(_) => {
                self.err(leaf.span(), key, "`level` must be \"fail\" or \"warn\"");
                ok = false;
                Level::Fail
            }
        };
        let Some(limit) = t.get("limit") else {
            self.err(
                leaf.span(),
                key,
                "the table needs a `limit`, e.g. { limit = \"60 GiB\", level = \"warn\" }",
            );
            return None;
        };
        ok.then_some((limit, level))
    }
}

fn first_line(s: &str) -> String {
    s.lines().last().unwrap_or(s).trim().to_string()
}

/// A size: a string with a unit, or an integer byte count.
fn size_value(v: &Value) -> Result<u64, String> {
    match v {
        Value::Integer(i) if *i < 0 => Err(format!("{i} is negative; sizes are at least 0")),
        Value::Integer(i) => Ok(*i as u64),
        Value::String(s) => Bytes::parse(s)
            .map(|(b, _)| b.0)
            .map_err(|m| unit_hint(s, m)),
        other => Err(format!(
            "must be a size such as \"40 GiB\" or a byte count, not {}",
            other.type_str()
        )),
    }
}

/// Say which unit was probably meant for `"40 G"`, `"512m"`, `"5%"`.
fn unit_hint(text: &str, message: String) -> String {
    let t = text.trim();
    let unit = t
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '_')
        .trim();
    let number = &t[..t.len() - unit.len()].trim();
    match unit.to_ascii_lowercase().as_str() {
        u @ ("k" | "m" | "g" | "t") => {
            let u = u.to_ascii_uppercase();
            let si = if u == "K" {
                "kB".to_string()
            } else {
                format!("{u}B")
            };
            format!("{text:?} is ambiguous: write \"{number} {u}iB\" (binary, 1024-based) or \"{number} {si}\" (SI, 1000-based)")
        }
        "%" => format!("{text:?} is a percentage; a budget is a size such as \"40 GiB\""),
        _ => message,
    }
}

fn count_value(v: &Value) -> Result<u64, String> {
    match v {
        Value::Integer(i) if *i < 0 => Err(format!("{i} is negative; counts are at least 0")),
        Value::Integer(i) => Ok(*i as u64),
        other => Err(format!(
            "must be a count (an integer), not {}",
            other.type_str()
        )),
    }
}

/// The category names a rules file defines (its `[categories]` keys) plus
/// `other` and `unknown`, which every rule set produces.
fn rule_file_names(path: &Path) -> Vec<String> {
    let table: toml::Table = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_default();
    let mut names: Vec<String> = match table.get("categories") {
        Some(Value::Table(t)) => t.keys().cloned().collect(),
        _ => Vec::new(),
    };
    names.extend(DEFAULT_CATEGORIES.iter().map(|s| s.to_string()));
    names
}
