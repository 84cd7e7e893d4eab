//! Validation of one `[[target]]`: name, snapshot patterns (relative to
//! the budget file), baseline, key regex, budgets and tolerances.

use crate::vocab::Device;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regex::Regex;
use toml::Value;

use super::raw::{Key, Leaf, OpenTable, PerFigure, RawBudget, RawTarget};
use super::validate::Validator;
use super::{CategoryKey, Limit, PhaseLimit, PhaseTolerance, PoolLimit, Rules, Target, Tolerance};
use crate::patterns::Rule;
use crate::vocab::Unit;
use crate::vocab::{Figure, Statistic};
use crate::walk;
use strum::VariantArray;

/// A target's `[target.budget]`, validated.
#[derive(Default)]
struct Limits {
    figures: BTreeMap<Figure, Limit>,
    categories: BTreeMap<String, Limit>,
    phases: Vec<PhaseLimit>,
    pools: Vec<PoolLimit>,
}

impl Validator<'_> {
    pub(super) fn target(&mut self, t: &RawTarget, check_globs: bool) -> Option<Target> {
        let span = t.span.clone();
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
        let snapshots = self.snapshots(t, check_globs);
        let baseline = t.baseline.as_ref().and_then(|b| self.baseline(b));
        let device = t
            .device
            .as_ref()
            .and_then(|d| self.device(d, "target.device"));
        let key = t.key.as_ref().and_then(|k| self.key_regex(k));
        let require_trace = t
            .require_trace
            .as_ref()
            .and_then(|r| Some((self.flag(r, "target.require-trace")?, self.loc(r.span()))));
        let same_environment = t
            .same_environment
            .as_ref()
            .and_then(|r| self.flag(r, "target.same-environment"));
        let device_memory = t
            .device_memory
            .as_ref()
            .and_then(|l| self.size(l, "target.device-memory"));
        let outside_allocator = t
            .outside_allocator
            .as_ref()
            .and_then(|l| self.size(l, "target.outside-allocator"));
        let accept_lower_bounds = t
            .accept_lower_bounds
            .as_ref()
            .and_then(|r| self.flag(r, "target.accept-lower-bounds"));
        let window = t.window.as_ref().and_then(|w| {
            let s = self.string(w, "target.window")?;
            Some((s, self.loc(w.span())))
        });
        let statistic = t.statistic.as_ref().and_then(|s| self.statistic(s));
        let limits = t
            .budget
            .as_ref()
            .map(|b| self.limits(b))
            .unwrap_or_default();
        let (tolerance, phase_tolerance) = t
            .tolerance
            .as_ref()
            .map(|tol| self.tolerances(tol))
            .unwrap_or_default();
        let iteration_boundary = t
            .iteration_boundary
            .as_ref()
            .and_then(|b| self.string(b, "target.iteration-boundary"));
        let ranks = t.ranks.as_ref().and_then(|r| self.ranks(r));
        Some(Target {
            name: name?,
            loc: self.loc(t.name.as_ref().map_or(span, |n| n.span())),
            snapshots,
            baseline,
            device,
            key,
            require_trace: require_trace.as_ref().is_none_or(|(b, _)| *b),
            require_trace_loc: require_trace.map(|(_, loc)| loc),
            accept_lower_bounds: accept_lower_bounds.unwrap_or(false),
            same_environment: same_environment.unwrap_or(false),
            device_memory,
            outside_allocator,
            window,
            statistic: statistic.unwrap_or_default(),
            budget: limits.figures,
            category_budget: limits.categories,
            phase_budget: limits.phases,
            pool_budget: limits.pools,
            tolerance,
            phase_tolerance,
            iteration_boundary,
            ranks,
        })
    }

    /// `target.snapshots`: required when globs are checked (no snapshots
    /// on the command line).
    fn snapshots(&mut self, t: &RawTarget, check_globs: bool) -> Vec<String> {
        match &t.snapshots {
            Some(s) => self.patterns(s, check_globs),
            None if check_globs => {
                self.err(
                    t.span.clone(),
                    "target.snapshots",
                    "no `snapshots` pattern (or pass snapshots on the command line)",
                );
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    /// A device index (`target.device`, a waiver's `device`).
    pub(super) fn device(&mut self, d: &Leaf, key: &str) -> Option<Device> {
        match d.get_ref() {
            Value::Integer(i) if u32::try_from(*i).is_ok() => {
                u32::try_from(*i).ok().map(Device::new)
            }
            _ => {
                self.err(
                    d.span(),
                    key,
                    format!("must be a device index, an integer from 0 to {}", u32::MAX),
                );
                None
            }
        }
    }

    /// A `true`/`false` leaf, or a problem at `key`.
    fn flag(&mut self, leaf: &Leaf, key: &str) -> Option<bool> {
        match leaf.get_ref() {
            Value::Boolean(b) => Some(*b),
            other => {
                let msg = format!("must be true or false, not {}", other.type_str());
                self.err(leaf.span(), key, msg);
                None
            }
        }
    }

    /// `statistic`: which value of repeated runs is judged.
    fn statistic(&mut self, leaf: &Leaf) -> Option<Statistic> {
        let s = self.string(leaf, "target.statistic")?;
        let parsed = s.parse::<Statistic>().ok();
        if parsed.is_none() {
            let names: Vec<&str> = Statistic::VARIANTS.iter().map(|x| x.id()).collect();
            let msg = format!("must be one of {}, not {s:?}", names.join(", "));
            self.err(leaf.span(), "target.statistic", msg);
        }
        parsed
    }

    /// `[target.budget]`: the figures', categories', phases' and pools'
    /// limits.
    fn limits(&mut self, b: &RawBudget) -> Limits {
        let mut out = Limits::default();
        for f in Figure::ALL {
            let Some(leaf) = b.figures.get(&f) else {
                continue;
            };
            let key = format!("target.budget.{}", f.id());
            if let Some(l) = self.figure_limit(leaf, &key, f) {
                out.figures.insert(f, l);
            }
        }
        for (k, leaf) in b.category.iter().flatten() {
            let key = format!("target.budget.category.{}", k.name);
            self.category_keys.push(CategoryKey {
                name: k.name.clone(),
                loc: self.loc(k.span.clone()),
            });
            if let Some(l) = self.limit(leaf, &key, Unit::Bytes) {
                out.categories.insert(k.name.clone(), l);
            }
        }
        out.phases = (self.named_limits(&b.phase, "phase").into_iter())
            .map(|(phase, figure, limit)| PhaseLimit {
                phase,
                figure,
                limit,
            })
            .collect();
        out.pools = (self.named_limits(&b.pool, "pool").into_iter())
            .map(|(pool, figure, limit)| PoolLimit {
                pool,
                figure,
                limit,
            })
            .collect();
        out
    }

    /// `[target.budget.KIND."NAME"]` tables (a phase's or a pool's): each
    /// name's figures' limits, in file order.
    fn named_limits(
        &mut self,
        tables: &[(Key, PerFigure)],
        kind: &str,
    ) -> Vec<(String, Figure, Limit)> {
        let mut out = Vec::new();
        for (k, figures) in tables {
            for (f, leaf) in figures {
                let key = format!("target.budget.{kind}.{:?}.{}", k.name, f.id());
                if let Some(limit) = self.limit(leaf, &key, f.unit()) {
                    out.push((k.name.clone(), *f, limit));
                }
            }
        }
        out
    }

    /// `[target.tolerance]`: per figure, and per phase.
    fn tolerances(
        &mut self,
        tol: &RawBudget,
    ) -> (BTreeMap<Figure, Tolerance>, Vec<PhaseTolerance>) {
        let mut tolerance = BTreeMap::new();
        let mut phase_tolerance = Vec::new();
        for f in Figure::ALL {
            let Some(leaf) = tol.figures.get(&f) else {
                continue;
            };
            if let Some(x) = self.tolerance(leaf, &format!("target.tolerance.{}", f.id())) {
                tolerance.insert(f, x);
            }
        }
        for (k, figures) in &tol.phase {
            for (f, leaf) in figures {
                let key = format!("target.tolerance.phase.{:?}.{}", k.name, f.id());
                if let Some(x) = self.tolerance(leaf, &key) {
                    phase_tolerance.push(PhaseTolerance {
                        phase: k.name.clone(),
                        figure: *f,
                        tolerance: x,
                    });
                }
            }
        }
        (tolerance, phase_tolerance)
    }

    pub(super) fn string(&mut self, leaf: &Leaf, key: &str) -> Option<String> {
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

    pub(super) fn relative(&self, p: &str) -> String {
        if Path::new(p).is_absolute() {
            p.to_string()
        } else {
            self.dir.join(p).to_string_lossy().into_owned()
        }
    }

    pub(super) fn patterns(&mut self, leaf: &Leaf, check_globs: bool) -> Vec<String> {
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
                match walk::expand(std::slice::from_ref(&full), None) {
                    Ok(paths) if paths.iter().all(|p| p.exists()) => {}
                    Ok(_) => self.err(
                        leaf.span(),
                        "target.snapshots",
                        format!("`{p}` matches no file (relative to {})", self.dir_name()),
                    ),
                    Err(e) => {
                        for e in e {
                            let msg = e.to_string().replace(&full, &p);
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

    pub(super) fn dir_name(&self) -> String {
        if self.dir.as_os_str().is_empty() {
            "the budget file's directory".into()
        } else {
            self.dir.display().to_string()
        }
    }

    pub(super) fn baseline(&mut self, leaf: &Leaf) -> Option<String> {
        let p = self.string(leaf, "target.baseline")?;
        let full = self.relative(&p);
        if walk::expand(std::slice::from_ref(&full), None)
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

    pub(super) fn key_regex(&mut self, leaf: &Leaf) -> Option<Regex> {
        let s = self.string(leaf, "target.key")?;
        match self.regex(&s) {
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
                self.err(leaf.span(), "target.key", e);
                None
            }
        }
    }

    /// A compiled regex, shared by every target that writes the same
    /// pattern: compiling is what a file of many targets would spend its
    /// time on. Compiled under the file's limits on regexes
    /// (docs/figures.md#limits-on-rules); the error is one line.
    pub(super) fn regex(&mut self, pattern: &str) -> Result<Regex, String> {
        if let Some(r) = self.regexes.get(pattern) {
            return Ok(r.clone());
        }
        let (r, _) = self.patterns.compile(pattern)?;
        self.regexes.insert(pattern.to_string(), r.clone());
        Ok(r)
    }

    /// The rule set `defaults.rules` names, a file's path resolved.
    pub(super) fn rules(&mut self, leaf: &Leaf) -> Option<Rules> {
        let s = self.string(leaf, "defaults.rules")?;
        let Ok(rules) = s.parse::<Rules>();
        match rules {
            Rules::File(p) => {
                let full = PathBuf::from(self.relative(&p.to_string_lossy()));
                if !full.is_file() {
                    let msg = format!("`{s}` is neither `default`, `mosaic` nor a rules file");
                    self.err(leaf.span(), "defaults.rules", msg);
                    return None;
                }
                Some(Rules::File(full))
            }
            built_in => Some(built_in),
        }
    }

    /// The `[categories]` rules in file order, each compiled under the
    /// file's limits on regexes; compiling stops at the first rule past
    /// the count or the total.
    pub(super) fn custom_rules(&mut self, table: Option<&OpenTable>) -> Vec<Rule> {
        let mut rules = Vec::new();
        for (k, leaf) in table.into_iter().flatten() {
            let key = format!("categories.{}", k.name);
            let Some(s) = self.string(leaf, &key) else {
                continue;
            };
            let at = self.loc(k.span.clone()).to_string();
            match self.patterns.rule(&k.name, &s, &at) {
                Ok(r) => rules.push(r),
                Err(e) => self.err(leaf.span(), &key, e),
            }
            if self.patterns.exhausted() {
                break;
            }
        }
        rules
    }
}
