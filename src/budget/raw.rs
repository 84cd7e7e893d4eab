//! The budget file as written: one `toml_edit` parse, whose spans place
//! every key and value, read into structs that mirror the TOML. Every leaf
//! is kept as a `toml::Value` with its span, so a wrong type or unit is
//! reported by validation (all problems at once); unknown keys are all
//! reported here, in file order.

use std::collections::BTreeMap;
use std::ops::Range;

use toml_edit::{Document, Item, TableLike, TomlError, Value};

use crate::vocab::Figure;

/// The keys each fixed table accepts, in the order messages list them.
pub(crate) const TOP_KEYS: &[&str] = &[
    "defaults",
    "target",
    "categories",
    "sites",
    "owners",
    "waiver",
];
/// `[sites]` keys: what names an allocation site (docs/figures.md#stacks-and-sites).
pub(crate) const SITES_KEYS: &[&str] = &["project-root", "user-code"];
/// `[owners]` keys: who owns a site's file (docs/figures.md#owners).
pub(crate) const OWNERS_KEYS: &[&str] = &["mention", "codeowners", "paths"];
pub(crate) const DEFAULTS_KEYS: &[&str] = &[
    "tolerance",
    "noise-floor",
    "rules",
    "figures",
    "device-memory",
    "outside-allocator",
];
pub(crate) const TARGET_KEYS: &[&str] = &[
    "name",
    "snapshots",
    "baseline",
    "device",
    "key",
    "require-trace",
    "accept-lower-bounds",
    "window",
    "iteration-boundary",
    "statistic",
    "same-environment",
    "device-memory",
    "outside-allocator",
    "budget",
    "tolerance",
    "ranks",
];
/// `[target.ranks]` keys (docs/ranks.md).
pub(crate) const RANKS_KEYS: &[&str] = &[
    "figures",
    "imbalance",
    "heaviest",
    "stage-imbalance",
    "stages",
];
/// `[target.budget]` holds its category table besides the figure ids.
pub(crate) const CATEGORY: &str = "category";
/// ... and its table of phase tables.
pub(crate) const PHASE: &str = "phase";
/// ... and its table of pool tables (docs/figures.md#pools).
const POOL: &str = "pool";

/// `[target.budget]` keys: the category, phase and pool tables, then every
/// figure id.
pub(crate) fn budget_keys() -> Vec<&'static str> {
    [CATEGORY, PHASE, POOL]
        .into_iter()
        .chain(tolerance_keys())
        .collect()
}

/// `[target.budget.phase."NAME"]` keys: the figures measured per phase.
pub(crate) fn phase_keys() -> Vec<&'static str> {
    Figure::PER_PHASE.iter().map(|f| f.id()).collect()
}

/// `[target.tolerance]` keys: every figure id.
pub(crate) fn tolerance_keys() -> Vec<&'static str> {
    Figure::ALL.iter().map(|f| f.id()).collect()
}

/// `[target.tolerance]` keys with its table of phase tables.
fn tolerance_table_keys() -> Vec<&'static str> {
    std::iter::once(PHASE).chain(tolerance_keys()).collect()
}

/// A value whose type is checked by validation, with its position.
#[derive(Debug)]
pub struct Leaf {
    value: toml::Value,
    span: Range<usize>,
}

impl Leaf {
    pub fn get_ref(&self) -> &toml::Value {
        &self.value
    }

    pub fn span(&self) -> Range<usize> {
        self.span.clone()
    }
}

/// A key of an open table (category names), with its position.
#[derive(Debug)]
pub struct Key {
    pub name: String,
    pub span: Range<usize>,
}

/// An open table whose keys validation checks (category names, rules), in
/// file order: custom rules apply in that order.
pub type OpenTable = Vec<(Key, Leaf)>;
/// A value per figure id (`[target.budget]`, `[target.tolerance]`).
pub type PerFigure = BTreeMap<Figure, Leaf>;

#[derive(Debug, Default)]
pub struct RawConfig {
    pub defaults: Option<RawDefaults>,
    pub target: Vec<RawTarget>,
    pub categories: Option<OpenTable>,
    pub sites: Option<RawSites>,
    pub owners: Option<RawOwners>,
    /// `[[waiver]]` tables (docs/gate.md#waivers).
    pub waiver: Vec<RawWaiver>,
}

/// `[owners]` as written; `paths` in file order (the last match counts).
#[derive(Debug, Default)]
pub struct RawOwners {
    pub mention: Option<Leaf>,
    pub codeowners: Option<Leaf>,
    pub paths: Option<OpenTable>,
}

/// `[sites]` as written.
#[derive(Debug, Default)]
pub struct RawSites {
    pub project_root: Option<Leaf>,
    pub user_code: Option<List>,
}

#[derive(Debug, Default)]
pub struct RawDefaults {
    pub tolerance: Option<Leaf>,
    pub noise_floor: Option<Leaf>,
    pub rules: Option<Leaf>,
    pub figures: Option<List>,
    pub device_memory: Option<Leaf>,
    pub outside_allocator: Option<Leaf>,
}

/// A value that should be an array, with each element placed on its own
/// (`items` is `None` when the value is not an array).
#[derive(Debug)]
pub struct List {
    pub whole: Leaf,
    pub items: Option<Vec<Leaf>>,
}

#[derive(Debug, Default)]
pub struct RawTarget {
    /// The whole `[[target]]` table, header first.
    pub span: Range<usize>,
    pub name: Option<Leaf>,
    pub snapshots: Option<Leaf>,
    pub baseline: Option<Leaf>,
    pub device: Option<Leaf>,
    pub key: Option<Leaf>,
    pub require_trace: Option<Leaf>,
    pub accept_lower_bounds: Option<Leaf>,
    pub window: Option<Leaf>,
    pub iteration_boundary: Option<Leaf>,
    /// Which value of repeated runs is judged (docs/gate.md#repeated-runs).
    pub statistic: Option<Leaf>,
    pub same_environment: Option<Leaf>,
    pub device_memory: Option<Leaf>,
    pub outside_allocator: Option<Leaf>,
    pub budget: Option<RawBudget>,
    /// `[target.tolerance]`: per figure id, and per phase in its `phase`.
    pub tolerance: Option<RawBudget>,
    /// `[target.ranks]`: figures across the target's ranks.
    pub ranks: Option<RawRanks>,
}

/// A `[[waiver]]` as written (read by `waiver.rs`).
#[derive(Debug, Default)]
pub struct RawWaiver {
    /// The whole table, header first.
    pub span: Range<usize>,
    pub target: Option<Leaf>,
    pub figure: Option<Leaf>,
    pub snapshot: Option<Leaf>,
    pub device: Option<Leaf>,
    pub until: Option<Leaf>,
    pub reason: Option<Leaf>,
    pub maximum: Option<Leaf>,
}

/// `[target.ranks]` as written (docs/ranks.md).
#[derive(Debug, Default)]
pub struct RawRanks {
    /// The table's header (or key), for problems about the whole table.
    pub span: Range<usize>,
    pub figures: Option<List>,
    pub imbalance: Option<Leaf>,
    pub heaviest: Option<Leaf>,
    pub stage_imbalance: Option<Leaf>,
    /// Stage name → a regex string or a list of rank names, in file order.
    pub stages: Option<OpenTable>,
}

/// `[target.budget]`: a ceiling per figure id, plus `[target.budget.category]`
/// (and `[target.tolerance]`, which has no category table).
/// Each value is a size / count, or `{ limit = …, level = "warn" }`.
#[derive(Debug, Default)]
pub struct RawBudget {
    pub category: Option<OpenTable>,
    /// `[target.budget.phase."NAME"]` tables, in file order.
    pub phase: Vec<(Key, PerFigure)>,
    /// `[target.budget.pool."NAME"]` tables, in file order.
    pub pool: Vec<(Key, PerFigure)>,
    pub figures: PerFigure,
}

/// A problem found while reading: where, and what.
#[derive(Clone)]
pub struct Misfit {
    pub span: Range<usize>,
    pub message: String,
}

/// The file read into its raw structs. A table of the wrong type
/// (`[target]` instead of `[[target]]`) leaves the structs incomplete, so
/// validation should not start.
pub struct Read {
    pub config: RawConfig,
    pub unknown_keys: Vec<Misfit>,
    pub wrong_types: Vec<Misfit>,
}

/// Parse the text once and read it into the raw structs.
pub fn read(text: &str) -> Result<Read, TomlError> {
    let doc = Document::parse(text.to_owned())?;
    let read = read_table(doc.as_table());
    // Freeing a large document's millions of small nodes takes as long as
    // parsing it (glibc consolidating chunks): it runs on another core.
    std::thread::spawn(move || drop(doc));
    Ok(read)
}

/// Read a document's root table into the raw structs: a parsed file's, or
/// one built in memory from data ([`super::data`]), so both are read by
/// this one reader and its key tables.
pub fn read_table(root: &dyn TableLike) -> Read {
    let mut r = Reader::default();
    let config = r.config(root);
    r.unknown_keys.sort_by_key(|m| m.span.start);
    r.wrong_types.sort_by_key(|m| m.span.start);
    Read {
        config,
        unknown_keys: r.unknown_keys,
        wrong_types: r.wrong_types,
    }
}

#[derive(Default)]
pub(super) struct Reader {
    unknown_keys: Vec<Misfit>,
    wrong_types: Vec<Misfit>,
}

/// One entry of a table: its key, the key's position, its item.
pub(super) type Entry<'a> = (&'a str, Range<usize>, &'a Item);

impl Reader {
    fn config(&mut self, root: &dyn TableLike) -> RawConfig {
        let mut c = RawConfig::default();
        for (name, at, item) in self.entries(root, TOP_KEYS, "the top level") {
            match name {
                "defaults" => c.defaults = self.table(item, &at).map(|t| self.defaults(t)),
                "target" => c.target = self.targets(item, &at),
                "categories" => c.categories = self.open_table(item, &at),
                "sites" => c.sites = self.table(item, &at).map(|t| self.sites(t)),
                "owners" => c.owners = self.table(item, &at).map(|t| self.owners(t)),
                "waiver" => c.waiver = self.waivers(item, &at),
                _ => {}
            }
        }
        c
    }

    fn sites(&mut self, table: &dyn TableLike) -> RawSites {
        let mut s = RawSites::default();
        for (name, at, item) in self.entries(table, SITES_KEYS, "[sites]") {
            match name {
                "project-root" => s.project_root = Some(self.leaf(item, &at)),
                "user-code" => s.user_code = Some(self.list(item, &at)),
                _ => {}
            }
        }
        s
    }

    fn owners(&mut self, table: &dyn TableLike) -> RawOwners {
        let mut o = RawOwners::default();
        for (name, at, item) in self.entries(table, OWNERS_KEYS, "[owners]") {
            match name {
                "mention" => o.mention = Some(self.leaf(item, &at)),
                "codeowners" => o.codeowners = Some(self.leaf(item, &at)),
                "paths" => o.paths = self.open_table(item, &at),
                _ => {}
            }
        }
        o
    }

    fn defaults(&mut self, table: &dyn TableLike) -> RawDefaults {
        let mut d = RawDefaults::default();
        for (name, at, item) in self.entries(table, DEFAULTS_KEYS, "[defaults]") {
            let leaf = Some(self.leaf(item, &at));
            match name {
                "tolerance" => d.tolerance = leaf,
                "noise-floor" => d.noise_floor = leaf,
                "rules" => d.rules = leaf,
                "figures" => d.figures = Some(self.list(item, &at)),
                "device-memory" => d.device_memory = leaf,
                "outside-allocator" => d.outside_allocator = leaf,
                _ => {}
            }
        }
        d
    }

    /// `[[target]]`, or the same written as an inline array of tables.
    fn targets(&mut self, item: &Item, at: &Range<usize>) -> Vec<RawTarget> {
        self.array_of_tables(item, at, "an array of tables ([[target]])")
            .into_iter()
            .map(|(t, span)| self.target(t, span))
            .collect()
    }

    /// `[[NAME]]`, or the same written as an inline array of tables: each
    /// table with its span (`expected` says what the item should be).
    pub(super) fn array_of_tables<'a>(
        &mut self,
        item: &'a Item,
        at: &Range<usize>,
        expected: &str,
    ) -> Vec<(&'a dyn TableLike, Range<usize>)> {
        match item {
            Item::ArrayOfTables(a) => a
                .iter()
                .map(|t| (t as &dyn TableLike, t.span().unwrap_or(at.clone())))
                .collect(),
            Item::Value(Value::Array(a)) => a
                .iter()
                .filter_map(|v| {
                    let span = v.span().unwrap_or(at.clone());
                    match v.as_inline_table() {
                        Some(t) => Some((t as &dyn TableLike, span)),
                        None => {
                            self.wrong_type(span, &to_toml(&Item::Value(v.clone())), "a table");
                            None
                        }
                    }
                })
                .collect(),
            other => {
                let span = other.span().unwrap_or(at.clone());
                self.wrong_type(span, &to_toml(other), expected);
                Vec::new()
            }
        }
    }

    fn target(&mut self, table: &dyn TableLike, span: Range<usize>) -> RawTarget {
        let mut t = RawTarget {
            span,
            ..RawTarget::default()
        };
        for (name, at, item) in self.entries(table, TARGET_KEYS, "[[target]]") {
            let mut leaf = || Some(self.leaf(item, &at));
            match name {
                "name" => t.name = leaf(),
                "snapshots" => t.snapshots = leaf(),
                "baseline" => t.baseline = leaf(),
                "device" => t.device = leaf(),
                "key" => t.key = leaf(),
                "require-trace" => t.require_trace = leaf(),
                "accept-lower-bounds" => t.accept_lower_bounds = leaf(),
                "window" => t.window = leaf(),
                "iteration-boundary" => t.iteration_boundary = leaf(),
                "statistic" => t.statistic = leaf(),
                "same-environment" => t.same_environment = leaf(),
                "device-memory" => t.device_memory = leaf(),
                "outside-allocator" => t.outside_allocator = leaf(),
                "budget" => t.budget = self.table(item, &at).map(|b| self.budget(b)),
                "ranks" => t.ranks = self.table(item, &at).map(|r| self.ranks(r, at.clone())),
                "tolerance" => {
                    let keys = tolerance_table_keys();
                    t.tolerance = self
                        .table(item, &at)
                        .map(|tol| self.per_figure(tol, &keys, "[target.tolerance]"));
                }
                _ => {}
            }
        }
        t
    }

    fn ranks(&mut self, table: &dyn TableLike, span: Range<usize>) -> RawRanks {
        let mut r = RawRanks {
            span,
            ..RawRanks::default()
        };
        for (name, at, item) in self.entries(table, RANKS_KEYS, "[target.ranks]") {
            match name {
                "figures" => r.figures = Some(self.list(item, &at)),
                "imbalance" => r.imbalance = Some(self.leaf(item, &at)),
                "heaviest" => r.heaviest = Some(self.leaf(item, &at)),
                "stage-imbalance" => r.stage_imbalance = Some(self.leaf(item, &at)),
                "stages" => r.stages = self.open_table(item, &at),
                _ => {}
            }
        }
        r
    }

    fn budget(&mut self, table: &dyn TableLike) -> RawBudget {
        self.per_figure(table, &budget_keys(), "[target.budget]")
    }

    /// A table of figure ids (and, in `[target.budget]`, the category table).
    fn per_figure(&mut self, table: &dyn TableLike, known: &[&str], name: &str) -> RawBudget {
        let mut b = RawBudget::default();
        for (key, at, item) in self.entries(table, known, name) {
            if key == CATEGORY {
                b.category = self.open_table(item, &at);
            } else if key == PHASE {
                b.phase = self.named_tables(item, &at, name, PHASE);
            } else if key == POOL {
                b.pool = self.named_tables(item, &at, name, POOL);
            } else if let Some(f) = Figure::from_id(key) {
                b.figures.insert(f, self.leaf(item, &at));
            }
        }
        b
    }

    /// `[target.budget.phase]` (or `[target.tolerance.phase]`, as `within`
    /// names it): a table of figure ids per annotation name; likewise
    /// `[target.budget.pool]`, per pool name (`kind` says which).
    fn named_tables(
        &mut self,
        item: &Item,
        at: &Range<usize>,
        within: &str,
        kind: &str,
    ) -> Vec<(Key, PerFigure)> {
        let Some(table) = self.table_of(item, at, &format!("a table of {kind} names")) else {
            return Vec::new();
        };
        let keys: Vec<&str> = if kind == POOL {
            Figure::PER_POOL.iter().map(|f| f.id()).collect()
        } else {
            phase_keys()
        };
        let mut out: Vec<(Key, PerFigure)> = Vec::new();
        for (name, item) in table.iter() {
            let span = key_span(table, name).unwrap_or(at.clone());
            let Some(sub) = self.table(item, &span) else {
                continue;
            };
            let section = within.trim_start_matches('[').trim_end_matches(']');
            let where_ = format!("[{section}.{kind}.{name:?}]");
            let figures = self.per_figure(sub, &keys, &where_).figures;
            let name = name.to_string();
            out.push((Key { name, span }, figures));
        }
        out.sort_by_key(|(k, _)| k.span.start);
        out
    }

    fn open_table(&mut self, item: &Item, at: &Range<usize>) -> Option<OpenTable> {
        let table = self.table_of(item, at, "a map")?;
        let mut out: OpenTable = table
            .iter()
            .map(|(name, item)| {
                let span = key_span(table, name).unwrap_or(at.clone());
                let leaf = self.leaf(item, &span);
                let name = name.to_string();
                (Key { name, span }, leaf)
            })
            .collect();
        out.sort_by_key(|(k, _)| k.span.start);
        Some(out)
    }

    fn table<'a>(&mut self, item: &'a Item, at: &Range<usize>) -> Option<&'a dyn TableLike> {
        self.table_of(item, at, "a table")
    }

    fn table_of<'a>(
        &mut self,
        item: &'a Item,
        at: &Range<usize>,
        expected: &str,
    ) -> Option<&'a dyn TableLike> {
        let table = item.as_table_like();
        if table.is_none() {
            let span = item.span().unwrap_or(at.clone());
            self.wrong_type(span, &to_toml(item), expected);
        }
        table
    }

    /// The known entries of a table; every other key is reported.
    pub(super) fn entries<'a>(
        &mut self,
        table: &'a dyn TableLike,
        known: &[&str],
        name: &str,
    ) -> Vec<Entry<'a>> {
        let mut kept = Vec::new();
        for (key, item) in table.iter() {
            let at = key_span(table, key).or_else(|| item.span()).unwrap_or(0..0);
            if known.contains(&key) {
                kept.push((key, at, item));
            } else {
                let hint = super::suggest::hint(key, known);
                let message = format!("unknown key `{key}` in {name}; {hint}");
                self.unknown_keys.push(Misfit { span: at, message });
            }
        }
        kept
    }

    /// A value that should be an array, each element at its own span.
    fn list(&mut self, item: &Item, key: &Range<usize>) -> List {
        let whole = self.leaf(item, key);
        let items = item.as_array().map(|a| {
            a.iter()
                .map(|v| Leaf {
                    value: value_to_toml(v),
                    span: v.span().unwrap_or(whole.span()),
                })
                .collect()
        });
        List { whole, items }
    }

    /// A value of any type, placed at its own span (a table: its header).
    pub(super) fn leaf(&mut self, item: &Item, key: &Range<usize>) -> Leaf {
        Leaf {
            value: to_toml(item),
            span: item.span().unwrap_or(key.clone()),
        }
    }

    fn wrong_type(&mut self, span: Range<usize>, found: &toml::Value, expected: &str) {
        let message = format!("invalid type: {}, expected {expected}", unexpected(found));
        self.wrong_types.push(Misfit { span, message });
    }
}

fn key_span(table: &dyn TableLike, key: &str) -> Option<Range<usize>> {
    table.get_key_value(key).and_then(|(k, _)| k.span())
}

/// The item as a plain TOML value, without its formatting.
fn to_toml(item: &Item) -> toml::Value {
    match item {
        Item::Value(v) => value_to_toml(v),
        Item::Table(t) => table_to_toml(t),
        Item::ArrayOfTables(a) => toml::Value::Array(a.iter().map(|t| table_to_toml(t)).collect()),
        // A parsed document holds no empty items.
        Item::None => toml::Value::Table(toml::Table::new()),
    }
}

fn table_to_toml(t: &dyn TableLike) -> toml::Value {
    toml::Value::Table(t.iter().map(|(k, v)| (k.to_string(), to_toml(v))).collect())
}

fn value_to_toml(v: &Value) -> toml::Value {
    match v {
        Value::String(s) => toml::Value::String(s.value().clone()),
        Value::Integer(i) => toml::Value::Integer(*i.value()),
        Value::Float(x) => toml::Value::Float(*x.value()),
        Value::Boolean(b) => toml::Value::Boolean(*b.value()),
        Value::Datetime(d) => toml::Value::Datetime(*d.value()),
        Value::Array(a) => toml::Value::Array(a.iter().map(value_to_toml).collect()),
        Value::InlineTable(t) => table_to_toml(t),
    }
}

/// The found value, as serde words it in its own type errors.
fn unexpected(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => format!("string {s:?}"),
        toml::Value::Integer(i) => format!("integer `{i}`"),
        toml::Value::Float(x) => format!("floating point `{x}`"),
        toml::Value::Boolean(b) => format!("boolean `{b}`"),
        toml::Value::Datetime(d) => format!("datetime `{d}`"),
        toml::Value::Array(_) => "sequence".into(),
        toml::Value::Table(_) => "map".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_figure_tables_have_exactly_the_figure_ids_as_keys() {
        let ids: Vec<&str> = Figure::ALL.iter().map(|f| f.id()).collect();
        assert_eq!(tolerance_keys(), ids);
        assert_eq!(&budget_keys()[..3], &[CATEGORY, PHASE, POOL]);
        assert_eq!(&budget_keys()[3..], ids.as_slice());
    }

    #[test]
    fn every_figure_id_of_a_budget_table_is_read() {
        let text: String = std::iter::once("[[target]]\n[target.budget]\n".to_string())
            .chain(Figure::ALL.iter().map(|f| format!("{f} = 1\n")))
            .collect();
        let read = read(&text).unwrap();
        assert!(read.unknown_keys.is_empty() && read.wrong_types.is_empty());
        let budget = read.config.target[0].budget.as_ref().unwrap();
        assert_eq!(budget.figures.len(), Figure::ALL.len());
    }

    #[test]
    fn dotted_and_inline_tables_read_like_headers() {
        let text = "target = [{ name = \"t\", budget.oom-events = 0 }]\n";
        let read = read(text).unwrap();
        let t = &read.config.target[0];
        assert!(t.name.is_some());
        assert!(t.budget.as_ref().unwrap().figures[&Figure::OomEvents].span() == (44..45));
    }
}
