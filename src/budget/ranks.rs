//! `[target.ranks]` validated: which figures are compared across the
//! target's ranks, the limits on their imbalance and on the heaviest
//! rank, and the stages ranks are grouped into (docs/ranks.md). Every
//! problem is collected with its place, as for the rest of the file.

use regex::Regex;
use toml::Value;

use super::raw::RawRanks;
use super::validate::Validator;
use super::{Limit, Loc, Tolerance};
use crate::vocab::{Figure, Unit};

/// The figures compared across ranks when `figures` is not written.
pub const DEFAULT_RANK_FIGURES: [Figure; 2] = [Figure::AllocatedPeak, Figure::ReservedPeak];

/// The longest list of rank names one stage may hold, and the most
/// stages: a budget file is hostile input.
const MAX_STAGE_NAMES: usize = 100_000;
const MAX_STAGES: usize = 10_000;

/// `[target.ranks]`: figures across the target's snapshots, one snapshot
/// per rank, named by the target's `key` (or the file stem).
#[derive(Debug, Clone)]
pub struct RankBudget {
    /// The figures compared, in report order.
    pub figures: Vec<Figure>,
    /// Limit on `(max − mean) / mean` over all ranks, percent.
    pub imbalance: Option<Tolerance>,
    /// Limit on the heaviest rank of a size figure.
    pub heaviest: Option<Limit>,
    /// Limit on the imbalance inside each stage, percent.
    pub stage_imbalance: Option<Tolerance>,
    /// Stages in file order; a rank belongs to every stage that claims it.
    pub stages: Vec<Stage>,
    /// Where `[target.ranks]` is written.
    pub loc: Loc,
}

/// A group of ranks judged together (a pipeline stage).
#[derive(Debug, Clone)]
pub struct Stage {
    pub name: String,
    pub members: Members,
    pub loc: Loc,
}

/// How a stage names its ranks.
#[derive(Debug, Clone)]
pub enum Members {
    /// Every rank whose name the regex matches (anywhere in the name).
    Pattern(Regex),
    /// Exactly these rank names.
    Names(Vec<String>),
}

impl Stage {
    pub fn claims(&self, rank: &str) -> bool {
        match &self.members {
            Members::Pattern(r) => r.is_match(rank),
            Members::Names(n) => n.iter().any(|x| x == rank),
        }
    }
}

impl Validator<'_> {
    pub(super) fn ranks(&mut self, r: &RawRanks) -> Option<RankBudget> {
        let before = self.errors.len();
        let figures = match &r.figures {
            Some(list) => self
                .figure_list(list, "target.ranks.figures")
                .unwrap_or_default(),
            None => DEFAULT_RANK_FIGURES.to_vec(),
        };
        if let Some(list) = &r.figures {
            if figures.is_empty() && self.errors.len() == before {
                self.err(
                    list.whole.span(),
                    "target.ranks.figures",
                    "lists no figure: nothing would be compared across ranks",
                );
            }
            for f in figures.iter().filter(|f| f.needs_iterations()) {
                let msg = format!(
                    "`{f}` is not measured on every snapshot (it needs iterations); \
                     compare figures every snapshot has"
                );
                self.err(list.whole.span(), "target.ranks.figures", msg);
            }
        }
        let imbalance = r
            .imbalance
            .as_ref()
            .and_then(|l| self.tolerance(l, "target.ranks.imbalance"));
        let stage_imbalance = r
            .stage_imbalance
            .as_ref()
            .and_then(|l| self.tolerance(l, "target.ranks.stage-imbalance"));
        let heaviest = r
            .heaviest
            .as_ref()
            .and_then(|l| self.limit(l, "target.ranks.heaviest", Unit::Bytes));
        if let (Some(leaf), Some(_)) = (&r.heaviest, &heaviest) {
            for f in figures.iter().filter(|f| !f.is_bytes()) {
                let msg = format!(
                    "is a size, but `{f}` in `figures` is a count: list only size figures with `heaviest`"
                );
                self.err(leaf.span(), "target.ranks.heaviest", msg);
            }
        }
        let stages = self.stages(r);
        if stage_imbalance.is_some() && stages.is_empty() && self.errors.len() == before {
            self.err(
                r.span.clone(),
                "target.ranks.stage-imbalance",
                "has no stage to judge: add `stages`",
            );
        }
        (self.errors.len() == before).then(|| RankBudget {
            figures,
            imbalance,
            heaviest,
            stage_imbalance,
            stages,
            loc: self.loc(r.span.clone()),
        })
    }

    fn stages(&mut self, r: &RawRanks) -> Vec<Stage> {
        let Some(table) = &r.stages else {
            return Vec::new();
        };
        if table.len() > MAX_STAGES {
            let msg = format!("has {} stages; at most {MAX_STAGES}", table.len());
            self.err(r.span.clone(), "target.ranks.stages", msg);
            return Vec::new();
        }
        let mut out = Vec::new();
        for (key, leaf) in table {
            let at = format!("target.ranks.stages.{:?}", key.name);
            let members = match leaf.get_ref() {
                Value::String(p) => match self.regex(p) {
                    Ok(re) => Some(Members::Pattern(re)),
                    Err(e) => {
                        self.err(leaf.span(), &at, e);
                        None
                    }
                },
                Value::Array(a) if a.len() > MAX_STAGE_NAMES => {
                    let msg = format!("lists {} ranks; at most {MAX_STAGE_NAMES}", a.len());
                    self.err(leaf.span(), &at, msg);
                    None
                }
                Value::Array(a) if !a.is_empty() && a.iter().all(Value::is_str) => {
                    let names = a.iter().filter_map(|v| v.as_str().map(String::from));
                    Some(Members::Names(names.collect()))
                }
                other => {
                    let msg = format!(
                        "must be a regex string or a non-empty list of rank names, not {}",
                        describe(other)
                    );
                    self.err(leaf.span(), &at, msg);
                    None
                }
            };
            if let Some(members) = members {
                out.push(Stage {
                    name: key.name.clone(),
                    members,
                    loc: self.loc(key.span.clone()),
                });
            }
        }
        out
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Array(a) if a.is_empty() => "an empty list".into(),
        Value::Array(_) => "a list holding something other than strings".into(),
        other => other.type_str().into(),
    }
}

#[cfg(test)]
#[path = "ranks_tests.rs"]
mod tests;
