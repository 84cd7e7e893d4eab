//! Category rule sets (docs/figures.md#categories): the built-in `default` table, Mosaic's
//! legacy `AllocationType.from_frame_stack`, and custom TOML rules on top;
//! and the phase rules of a rules file's `[phases]` table (docs/figures.md#phases-from-stack-rules).

use std::path::Path;

use regex::{Regex, RegexBuilder};
use thiserror::Error;

use super::default_rules::{DefaultRow, DEFAULT_CATEGORIES, DEFAULT_ROWS, SKIP};
use super::sites::SiteRule;
use crate::files;
use crate::vocab::{NoStory, Rules};

/// 1-based line and column (in characters) just past `valid`, UTF-8 text.
fn position(valid: &[u8]) -> (usize, usize) {
    let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = valid[..line_start].iter().filter(|&&b| b == b'\n').count() + 1;
    let col = String::from_utf8_lossy(&valid[line_start..])
        .chars()
        .count()
        + 1;
    (line, col)
}

/// Which built-in classification a rule set falls back to.
#[derive(Debug, Clone)]
enum Base {
    Default(Vec<CompiledRow>),
    Mosaic,
}

/// One default-table row with its patterns compiled (case-insensitive).
#[derive(Debug, Clone)]
struct CompiledRow {
    /// Index into `RuleSet::categories`, or `None` for "skip this frame".
    category: Option<usize>,
    name: Option<Regex>,
    file: Option<Regex>,
}

/// Why a rules file could not be read or compiled: every problem, one a
/// line, each naming the file (and where it can, the line and column).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{0}")]
pub struct RulesError(String);

impl RulesError {
    pub(crate) fn new(message: String) -> RulesError {
        RulesError(message)
    }
}

/// A set of category rules; classify a call stack with [`RuleSet::classify`].
#[derive(Debug, Clone)]
pub struct RuleSet {
    /// `default`, `mosaic`, or the custom rules' file.
    source: String,
    /// Category names; custom ones first (file order), then the base's.
    categories: Vec<String>,
    /// Custom rules (category index, regex), tried first.
    custom: Vec<(usize, Regex)>,
    /// The custom rules' category names, in rule order, each once.
    custom_names: Vec<String>,
    base: Base,
    /// `[phases]` rules (name, regex), file order: see
    /// [`RuleSet::phase_of`].
    phases: Vec<(String, Regex)>,
    /// `[iterations] boundary`: an iteration starts at the first alloc of
    /// each run of allocs whose stack matches it (traces without
    /// annotations).
    iteration_stack: Option<Regex>,
    /// What counts as the user's code and where the project's root is,
    /// for the allocation sites (docs/figures.md#stacks-and-sites).
    sites: SiteRule,
}

/// Mosaic's categories, in its enum order.
const MOSAIC_CATEGORIES: [&str; 9] = [
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

fn ci(pattern: &str) -> Regex {
    RegexBuilder::new(pattern)
        .case_insensitive(true)
        .build()
        .unwrap_or_else(|e| panic!("built-in rule {pattern:?} is not a regex: {e}"))
}

fn index_of(categories: &[String], name: &str) -> usize {
    index_of_opt(categories, name).expect("built-in category listed")
}

fn index_of_opt(categories: &[String], name: &str) -> Option<usize> {
    categories.iter().position(|c| c == name)
}

impl RuleSet {
    /// The built-in `default` rules (docs/figures.md#the-default-rules).
    pub fn builtin_default() -> RuleSet {
        let categories: Vec<String> = DEFAULT_CATEGORIES.iter().map(|c| c.to_string()).collect();
        let rows = DEFAULT_ROWS
            .iter()
            .map(|r: &DefaultRow| CompiledRow {
                category: (r.category != SKIP).then(|| index_of(&categories, r.category)),
                name: r.name.map(ci),
                file: r.file.map(ci),
            })
            .collect();
        RuleSet {
            source: "default".into(),
            categories,
            custom: Vec::new(),
            custom_names: Vec::new(),
            base: Base::Default(rows),
            phases: Vec::new(),
            iteration_stack: None,
            sites: SiteRule::default(),
        }
    }

    /// Mosaic's legacy `AllocationType.from_frame_stack`, case-sensitive.
    pub fn mosaic() -> RuleSet {
        RuleSet {
            source: "mosaic".into(),
            categories: MOSAIC_CATEGORIES.iter().map(|c| c.to_string()).collect(),
            custom: Vec::new(),
            custom_names: Vec::new(),
            base: Base::Mosaic,
            phases: Vec::new(),
            iteration_stack: None,
            sites: SiteRule::default(),
        }
    }

    /// Custom rules tried before `base`, in order; a rule matches when its
    /// regex matches any frame's function name or file name.
    pub fn with_custom(custom: Vec<(String, Regex)>, base: RuleSet) -> RuleSet {
        let mut categories: Vec<String> = Vec::new();
        let mut compiled = Vec::new();
        let mut custom_names: Vec<String> = Vec::new();
        for (name, rx) in custom {
            if !custom_names.contains(&name) {
                custom_names.push(name.clone());
            }
            let idx = match categories.iter().position(|c| *c == name) {
                Some(i) => i,
                None => {
                    categories.push(name);
                    categories.len() - 1
                }
            };
            compiled.push((idx, rx));
        }
        // Base categories keep their names; a custom rule may reuse one.
        let mut remap = Vec::with_capacity(base.categories.len());
        for c in &base.categories {
            match categories.iter().position(|x| x == c) {
                Some(i) => remap.push(i),
                None => {
                    categories.push(c.clone());
                    remap.push(categories.len() - 1);
                }
            }
        }
        let base_rules = match base.base {
            Base::Mosaic => Base::Mosaic,
            Base::Default(rows) => Base::Default(
                rows.into_iter()
                    .map(|r| CompiledRow {
                        category: r.category.map(|c| remap[c]),
                        ..r
                    })
                    .collect(),
            ),
        };
        let mut custom_all = compiled;
        custom_all.extend(base.custom.into_iter().map(|(c, rx)| (remap[c], rx)));
        for name in base.custom_names {
            if !custom_names.contains(&name) {
                custom_names.push(name);
            }
        }
        RuleSet {
            source: base.source,
            categories,
            custom: custom_all,
            custom_names,
            base: base_rules,
            phases: base.phases,
            iteration_stack: base.iteration_stack,
            sites: base.sites,
        }
    }

    /// `"default"`, `"mosaic"`, or a TOML file whose `[categories]` table
    /// (`name = "regex"`, file order) adds custom rules over the default set
    /// and whose `[phases]` table (the same form) names phases by stack;
    /// the file needs at least one of the two.
    pub fn from_spec(spec: &str) -> Result<RuleSet, RulesError> {
        let Ok(rules) = spec.parse::<Rules>();
        RuleSet::load(&rules)
    }

    /// The rule set `rules` names; a file is read and compiled.
    pub fn load(rules: &Rules) -> Result<RuleSet, RulesError> {
        match rules {
            Rules::Default => Ok(RuleSet::builtin_default()),
            Rules::Mosaic => Ok(RuleSet::mosaic()),
            Rules::File(path) => RuleSet::from_file(path),
        }
    }

    fn from_file(path: &Path) -> Result<RuleSet, RulesError> {
        let spec = path.display().to_string();
        // Capped; a pipe (`--rules <(printf …)`) is read until its writer
        // closes, under the same cap and a time limit; a device is refused.
        let bytes = files::read_capped_or_pipe(path, "rules file", files::TEXT_CAP).map_err(|e| {
            RulesError(format!(
                "{spec}: cannot read the rules file: {e}; --rules takes default, mosaic or a TOML file"
            ))
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let (line, col) = position(&e.as_bytes()[..e.utf8_error().valid_up_to()]);
            RulesError(format!(
                "{spec}:{line}:{col}: not UTF-8 (TOML files are UTF-8)"
            ))
        })?;
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            RulesError(format!("{spec}: {}", e.to_string().trim_end()))
        })?;
        if !["categories", "phases", "iterations"]
            .iter()
            .any(|k| table.contains_key(*k))
        {
            return Err(RulesError(format!(
                "{spec}: no [categories], [phases] or [iterations] table"
            )));
        }
        let mut errors = Vec::new();
        let custom = regex_table(&spec, &table, "categories", &mut errors);
        let phases = regex_table(&spec, &table, "phases", &mut errors);
        let mut iteration_stack = None;
        for (key, rx) in regex_table(&spec, &table, "iterations", &mut errors) {
            if key == "boundary" {
                iteration_stack = Some(rx);
            } else {
                errors.push(format!(
                    "{spec}: iterations.{key}: unknown key; expected `boundary`"
                ));
            }
        }
        if !errors.is_empty() {
            return Err(RulesError(errors.join("\n")));
        }
        let mut set = RuleSet::with_custom(custom, RuleSet::builtin_default());
        set.source = spec;
        set.phases = phases;
        set.iteration_stack = iteration_stack;
        Ok(set)
    }

    /// `default`, `mosaic`, or the rules file.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Category names, in report order.
    pub fn categories(&self) -> &[String] {
        &self.categories
    }

    /// The custom rules' category names, in rule order (those tried first
    /// before those of a set they were put on), each once.
    pub fn custom_names(&self) -> &[String] {
        &self.custom_names
    }

    /// The set with `sites` deciding the allocation sites.
    pub fn with_sites(mut self, sites: SiteRule) -> RuleSet {
        self.sites = sites;
        self
    }

    /// What counts as the user's code and where the project's root is.
    pub(crate) fn sites(&self) -> &SiteRule {
        &self.sites
    }

    /// Renames the set (the source reports show).
    pub(crate) fn set_source(&mut self, source: String) {
        self.source = source;
    }

    /// Phase names of the `[phases]` rules, in file order.
    pub(crate) fn phase_names(&self) -> impl Iterator<Item = &str> {
        self.phases.iter().map(|(n, _)| n.as_str())
    }

    /// The `[iterations] boundary` regex, when the rules give one.
    pub(crate) fn iteration_stack(&self) -> Option<&Regex> {
        self.iteration_stack.as_ref()
    }

    /// Whether the rules say anything about time structure (`[phases]`,
    /// `[iterations]`).
    pub(crate) fn has_time_rules(&self) -> bool {
        self.has_phases() || self.iteration_stack.is_some()
    }

    /// Whether the rules name any phase.
    pub(crate) fn has_phases(&self) -> bool {
        !self.phases.is_empty()
    }

    /// The phase (index into [`RuleSet::phase_names`]) of a stack given as
    /// (name, filename) pairs: the first `[phases]` rule, in file order,
    /// whose regex matches any frame's function or file name (as custom
    /// categories match).
    pub(crate) fn phase_of<'a>(&self, frames: &[(&'a str, &'a str)]) -> Option<usize> {
        self.phases
            .iter()
            .position(|(_, rx)| frames.iter().any(|(n, f)| rx.is_match(n) || rx.is_match(f)))
    }

    /// The category of memory live since before recording began: the
    /// default rules' `pre-trace`; none for Mosaic's, which never counts
    /// that memory in its categories (it is classified by its stack there).
    pub(crate) fn pre_trace(&self) -> Option<usize> {
        match &self.base {
            Base::Default(_) => index_of_opt(&self.categories, NoStory::PreTrace.id()),
            Base::Mosaic => None,
        }
    }

    /// The category of frames that match nothing (`other` / `UNKNOWN`).
    fn fallback(&self, has_frames: bool) -> usize {
        match (&self.base, has_frames) {
            (Base::Mosaic, _) => index_of(&self.categories, "UNKNOWN"),
            (Base::Default(_), true) => index_of(&self.categories, "other"),
            (Base::Default(_), false) => index_of(&self.categories, NoStory::Frameless.id()),
        }
    }

    /// The index of category `name` of the default rules (none under
    /// Mosaic's, which keep frameless memory in their own `UNKNOWN`): where
    /// [phase and lifetime](super::frameless) may place a frameless
    /// allocation.
    pub(crate) fn default_category(&self, name: &str) -> Option<usize> {
        match &self.base {
            Base::Default(_) => index_of_opt(&self.categories, name),
            Base::Mosaic => None,
        }
    }

    /// Category name of a stack given as (name, filename) pairs, innermost first.
    pub fn category_of<'a>(&self, frames: &[(&'a str, &'a str)]) -> &str {
        &self.categories[self.classify(frames)]
    }

    /// Category index of a stack given as (name, filename) pairs, innermost first.
    pub(crate) fn classify<'a>(&self, frames: &[(&'a str, &'a str)]) -> usize {
        for (cat, rx) in &self.custom {
            if frames.iter().any(|(n, f)| rx.is_match(n) || rx.is_match(f)) {
                return *cat;
            }
        }
        let hit = match &self.base {
            Base::Mosaic => mosaic_category(frames).map(|c| index_of(&self.categories, c)),
            Base::Default(rows) => frames.iter().find_map(|(n, f)| default_frame(rows, n, f)),
        };
        hit.unwrap_or_else(|| self.fallback(!frames.is_empty()))
    }
}

/// The `name = "regex"` rules of table `key` of a rules file, file order
/// (none when the table is absent); problems go to `errors`.
fn regex_table(
    spec: &str,
    table: &toml::Table,
    key: &str,
    errors: &mut Vec<String>,
) -> Vec<(String, Regex)> {
    let Some(t) = table.get(key) else {
        return Vec::new();
    };
    let Some(t) = t.as_table() else {
        errors.push(format!(
            "{spec}: `{key}` must be a table of name = \"regex\""
        ));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, v) in t {
        match v.as_str() {
            Some(p) => match Regex::new(p) {
                Ok(rx) => out.push((name.clone(), rx)),
                Err(e) => errors.push(format!("{spec}: {key}.{name}: not a regex: {e}")),
            },
            None => errors.push(format!("{spec}: {key}.{name}: must be a string (a regex)")),
        }
    }
    out
}

/// The first default row matching one frame: `Some(Some(c))` decides,
/// `Some(None)` (a skip row) and `None` let the next frame decide.
fn default_frame(rows: &[CompiledRow], name: &str, file: &str) -> Option<usize> {
    for r in rows {
        let name_ok = r.name.as_ref().is_none_or(|rx| rx.is_match(name));
        let file_ok = r.file.as_ref().is_none_or(|rx| rx.is_match(file));
        if name_ok && file_ok {
            return r.category;
        }
    }
    None
}

/// Mosaic's per-frame rules (legacy generation), case-sensitive.
fn mosaic_frame(name: &str, file: &str) -> Option<&'static str> {
    if name.contains("forward") {
        Some("ACTIVATION")
    } else if name.contains("param")
        || file.contains("flatten_params_wrapper")
        || name.contains("build_norm_fn")
        || (name.contains("__init__") && file.contains("parallel/layers.py"))
    {
        Some("PARAMETER")
    } else if name.contains("backward") || name == "clip_grad_norm_" || name == "calc_grad_norm" {
        Some("BACKWARD")
    } else if name == "custom_adamw" || name == "_init_group" {
        Some("OPTIMIZER")
    } else if matches!(name, "dist_max" | "dist_mean" | "dist_sum" | "_aggregate") {
        Some("NET")
    } else if name.contains("validate_process_group") {
        Some("NET_SETUP")
    } else if name == "compute_grad_stats" {
        Some("STATS")
    } else {
        None
    }
}

fn mosaic_category(frames: &[(&str, &str)]) -> Option<&'static str> {
    if frames
        .iter()
        .any(|(_, f)| f.contains("fully_sharded_data_parallel.py"))
    {
        return Some("FSDP");
    }
    frames.iter().find_map(|(n, f)| mosaic_frame(n, f))
}

/// The rows of the built-in default table, in the order they are tried:
/// each row's category (`None`: a skip row, allocator internals that never
/// decide) and its name and file patterns.
pub(crate) fn default_rows() -> impl Iterator<
    Item = (
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
    ),
> {
    DEFAULT_ROWS
        .iter()
        .map(|r| ((r.category != SKIP).then_some(r.category), r.name, r.file))
}
