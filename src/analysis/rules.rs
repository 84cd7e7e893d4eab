//! Category rule sets (docs/figures.md#categories): the built-in `default` table, Mosaic's
//! legacy `AllocationType.from_frame_stack`, and custom TOML rules on top;
//! and the phase rules of a rules file's `[phases]` table (docs/figures.md#phases-from-stack-rules).

use std::ops::Range;
use std::path::Path;

use regex::{Regex, RegexBuilder, RegexSet};
use thiserror::Error;

use super::default_rules::{DefaultRow, DEFAULT_CATEGORIES, DEFAULT_ROWS, SKIP};
use super::sites::SiteRule;
use crate::files::{self, LineStarts};
use crate::patterns::{self, PatternBudget, Rule};
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
    /// Custom rules (category index, rule), tried first.
    custom: Vec<(usize, Rule)>,
    /// One matcher over every custom rule, in their order (none without
    /// custom rules): which rules match a string, in one pass over it.
    custom_set: Option<RegexSet>,
    /// The custom rules' category names, in rule order, each once.
    custom_names: Vec<String>,
    base: Base,
    /// `[phases]` rules, file order: see [`RuleSet::phase_of`].
    phases: Vec<Rule>,
    /// One matcher over the phase rules, in their order.
    phase_set: Option<RegexSet>,
    /// `[iterations] boundary`: an iteration starts at the first alloc of
    /// each run of allocs whose stack matches it (traces without
    /// annotations).
    iteration_stack: Option<Rule>,
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
            custom_set: None,
            custom_names: Vec::new(),
            base: Base::Default(rows),
            phases: Vec::new(),
            phase_set: None,
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
            custom_set: None,
            custom_names: Vec::new(),
            base: Base::Mosaic,
            phases: Vec::new(),
            phase_set: None,
            iteration_stack: None,
            sites: SiteRule::default(),
        }
    }

    /// Custom rules tried before `base`, in order; a rule matches when its
    /// regex matches any frame's function name or file name. Refused when
    /// the rules of both, together, pass the limits on rules
    /// (docs/figures.md#limits-on-rules).
    pub fn with_custom(custom: Vec<Rule>, base: RuleSet) -> Result<RuleSet, RulesError> {
        let mut categories: Vec<String> = Vec::new();
        let mut compiled = Vec::new();
        let mut custom_names: Vec<String> = Vec::new();
        for rule in custom {
            let name = rule.name.clone();
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
            compiled.push((idx, rule));
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
        custom_all.extend(base.custom.into_iter().map(|(c, r)| (remap[c], r)));
        for name in base.custom_names {
            if !custom_names.contains(&name) {
                custom_names.push(name);
            }
        }
        let every = (custom_all.iter().map(|(_, r)| r))
            .chain(&base.phases)
            .chain(&base.iteration_stack);
        patterns::check_together(every).map_err(RulesError)?;
        let custom_set = set_of(custom_all.iter().map(|(_, r)| r))?;
        Ok(RuleSet {
            source: base.source,
            categories,
            custom: custom_all,
            custom_set,
            custom_names,
            base: base_rules,
            phases: base.phases,
            phase_set: base.phase_set,
            iteration_stack: base.iteration_stack,
            sites: base.sites,
        })
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
        let file = RulesFile {
            spec: &spec,
            text: &text,
            lines: LineStarts::of(&text),
        };
        let doc = toml_edit::Document::parse(text.as_str()).map_err(|e| {
            let at = file.at(e.span().unwrap_or(0..0));
            let msg = crate::toml_error::message(&e, &text);
            RulesError(format!("{at}: {msg}"))
        })?;
        let root = doc.as_table();
        if !["categories", "phases", "iterations"]
            .iter()
            .any(|k| root.contains_key(k))
        {
            return Err(RulesError(format!(
                "{spec}: no [categories], [phases] or [iterations] table"
            )));
        }
        let mut errors = Vec::new();
        let mut budget = PatternBudget::default();
        let mut table = |key| file.rules(root, key, &mut budget, &mut errors);
        let custom = table("categories");
        let phases = table("phases");
        let mut iteration_stack = None;
        for rule in table("iterations") {
            if rule.name == "boundary" {
                iteration_stack = Some(rule);
            } else {
                errors.push(format!(
                    "{}: iterations.{}: unknown key; expected `boundary`",
                    rule.at, rule.name
                ));
            }
        }
        if !errors.is_empty() {
            return Err(RulesError(errors.join("\n")));
        }
        let mut base = RuleSet::builtin_default();
        base.phase_set = set_of(&phases)?;
        base.phases = phases;
        base.iteration_stack = iteration_stack;
        let mut set = RuleSet::with_custom(custom, base)?;
        set.source = spec;
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
        self.phases.iter().map(|r| r.name.as_str())
    }

    /// The `[iterations] boundary` regex, when the rules give one.
    pub(crate) fn iteration_stack(&self) -> Option<&Regex> {
        self.iteration_stack.as_ref().map(|r| &r.regex)
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
        let set = self.phase_set.as_ref()?;
        let strings = frames.iter().flat_map(|(n, f)| [*n, *f]);
        strings.filter_map(|s| first_match(set, s)).min()
    }

    /// The first custom rule (in rule order) whose regex matches `s`: a
    /// stack's custom rule is the least of its frames' names' and files'
    /// (see [`RuleSet::classify`]). One pass of the set matcher over `s`,
    /// however many rules there are.
    pub(crate) fn first_custom(&self, s: &str) -> Option<usize> {
        first_match(self.custom_set.as_ref()?, s)
    }

    /// Whether there are custom rules to try.
    pub(crate) fn has_custom(&self) -> bool {
        self.custom_set.is_some()
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

    /// Whether a stack's category is that of its innermost frame that a
    /// row matches (the default rules), so each frame can be matched once
    /// for every stack that holds it ([`RuleSet::frame_category`]).
    pub(crate) fn by_frame(&self) -> bool {
        matches!(self.base, Base::Default(_))
    }

    /// The default rules' category of one frame by its function and file
    /// (the first row both match); `None` when none does, and always for
    /// Mosaic's rules, which read a stack whole.
    pub(crate) fn frame_category(&self, name: &str, file: &str) -> Option<usize> {
        match &self.base {
            Base::Default(rows) => default_frame(rows, name, file),
            Base::Mosaic => None,
        }
    }

    /// The category of frames that match nothing (`other` / `UNKNOWN`).
    pub(crate) fn fallback(&self, has_frames: bool) -> usize {
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

    /// Category index of a stack given as (name, filename) pairs,
    /// innermost first: the first custom rule (in rule order) that matches
    /// any frame's name or file, else the base set's rules. The first rule
    /// matching any frame is the least rule matching some frame, so each
    /// name and file is matched once against all rules at once.
    pub(crate) fn classify<'a>(&self, frames: &[(&'a str, &'a str)]) -> usize {
        let strings = frames.iter().flat_map(|(n, f)| [*n, *f]);
        let custom = strings.filter_map(|s| self.first_custom(s)).min();
        self.classify_after(custom, frames)
    }

    /// [`RuleSet::classify`] with the custom rule already found (the least
    /// [`RuleSet::first_custom`] of the stack's names and files).
    pub(crate) fn classify_after<'a>(
        &self,
        custom: Option<usize>,
        frames: &[(&'a str, &'a str)],
    ) -> usize {
        if let Some(rule) = custom {
            return self.custom[rule].0;
        }
        let hit = match &self.base {
            Base::Mosaic => mosaic_category(frames).map(|c| index_of(&self.categories, c)),
            Base::Default(rows) => frames.iter().find_map(|(n, f)| default_frame(rows, n, f)),
        };
        hit.unwrap_or_else(|| self.fallback(!frames.is_empty()))
    }
}

/// A rules file's text, to place what it says by line and column.
struct RulesFile<'a> {
    spec: &'a str,
    text: &'a str,
    lines: LineStarts,
}

impl RulesFile<'_> {
    /// `file:line:col` of a byte span.
    fn at(&self, span: Range<usize>) -> String {
        let (line, col) = self.lines.line_col(self.text, span.start);
        format!("{}:{line}:{col}", self.spec)
    }

    /// The `name = "regex"` rules of table `key`, file order (none when
    /// the table is absent), each compiled under `budget`; problems go to
    /// `errors`, each at its key.
    fn rules(
        &self,
        root: &toml_edit::Table,
        key: &str,
        budget: &mut PatternBudget,
        errors: &mut Vec<String>,
    ) -> Vec<Rule> {
        let Some(item) = root.get(key) else {
            return Vec::new();
        };
        let Some(t) = item.as_table_like() else {
            let at = self.at(root.key(key).and_then(|k| k.span()).unwrap_or(0..0));
            errors.push(format!("{at}: `{key}` must be a table of name = \"regex\""));
            return Vec::new();
        };
        let mut out = Vec::new();
        for (name, v) in t.iter() {
            let span = t.key(name).and_then(|k| k.span()).or_else(|| v.span());
            let at = self.at(span.unwrap_or(0..0));
            match v.as_str() {
                Some(p) => match budget.rule(name, p, &at) {
                    Ok(rule) => out.push(rule),
                    Err(e) => errors.push(format!("{at}: {key}.{name}: {e}")),
                },
                None => errors.push(format!("{at}: {key}.{name}: must be a string (a regex)")),
            }
            if budget.exhausted() {
                break;
            }
        }
        out
    }
}

/// One set matcher over `rules`, in their order; none for no rules.
fn set_of<'a>(rules: impl IntoIterator<Item = &'a Rule>) -> Result<Option<RegexSet>, RulesError> {
    let rules: Vec<&Rule> = rules.into_iter().collect();
    if rules.is_empty() {
        return Ok(None);
    }
    patterns::set_of(rules.iter().map(|r| r.regex.as_str()))
        .map(Some)
        .map_err(|e| RulesError(format!("the rules together: {e}")))
}

/// The least index of the set's patterns that match `s`.
fn first_match(set: &RegexSet, s: &str) -> Option<usize> {
    set.matches(s).iter().next()
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
