//! Figures across a target's ranks (docs/ranks.md, docs/figures.md#ranks):
//! each snapshot of the target is one rank, named by its key; for each
//! figure, the maximum, minimum, mean, spread and imbalance over all ranks
//! and over each stage, the heaviest rank named; and the checks of
//! `[target.ranks]` on them. Ranks are compared with each other whatever
//! device index each recorded (rank k usually records device k).

use serde::Serialize;

use super::natural::natural;
use super::{Check, CheckId, Finding, Status};
use crate::analysis::DeviceReport;
use crate::budget::{Level, RankBudget, Target, Tolerance};
use crate::vocab::Figure;

/// One rank as `check` read it: its name, and its judged devices' reports
/// (`None`: the snapshot could not be read or holds no judged device).
pub struct RankInput<'a> {
    pub name: String,
    pub devices: Option<&'a [DeviceReport]>,
}

/// The ranks of a target: the table every report shows, and the checks.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct RanksVerdict {
    pub status: Status,
    /// The figures compared, the columns of `ranks[].values`.
    #[serde(serialize_with = "figure_ids")]
    pub figures: Vec<Figure>,
    /// Every rank of the run, in natural name order.
    pub ranks: Vec<RankRow>,
    /// Per figure: all ranks first, then each stage in file order.
    pub groups: Vec<GroupFigures>,
    pub checks: Vec<Check>,
}

/// One rank's values.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct RankRow {
    pub rank: String,
    /// Every stage that claims it (stages may overlap).
    pub stages: Vec<String>,
    /// Per figure of `figures`; `None`: the rank could not be read.
    pub values: Vec<Option<u64>>,
    /// Its trace-based figures are only lower bounds (a trace started
    /// mid-run, or none recorded).
    pub lower_bound: bool,
}

/// A figure over a group of ranks (docs/figures.md#ranks).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct GroupFigures {
    /// `None`: all ranks.
    pub stage: Option<String>,
    #[serde(serialize_with = "figure_id")]
    pub figure: Figure,
    pub ranks: usize,
    pub max: u64,
    pub min: u64,
    pub mean: f64,
    /// `max − min`.
    pub spread: u64,
    /// `(max − mean) / mean`, percent; 0 when the mean is 0.
    pub imbalance: f64,
    pub heaviest: String,
    pub lightest: String,
}

fn figure_id<S: serde::Serializer>(f: &Figure, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(f.id())
}

fn figure_ids<S: serde::Serializer>(f: &[Figure], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(f.iter().map(|f| f.id()))
}

/// The stage a rank belongs to, and its value per figure.
struct Rank<'a> {
    name: &'a str,
    stages: Vec<usize>,
    values: Option<Vec<u64>>,
    lower_bound: bool,
}

/// Judge the ranks of target `t`. `missing`: the ranks of the baseline no
/// snapshot of the run is named after, with the baseline file;
/// `has_baseline`: whether the target compares with a baseline at all.
pub fn judge_ranks(
    t: &Target,
    rb: &RankBudget,
    inputs: &[RankInput],
    missing: &[(String, String)],
    has_baseline: bool,
) -> RanksVerdict {
    let mut ranks: Vec<Rank> = inputs
        .iter()
        .map(|r| {
            let stages = (0..rb.stages.len())
                .filter(|&s| rb.stages[s].claims(&r.name))
                .collect();
            let values = r.devices.filter(|d| !d.is_empty()).map(|d| {
                let of = |f: Figure| d.iter().filter_map(|x| f.value(x)).max().unwrap_or(0);
                rb.figures.iter().map(|f| of(*f)).collect()
            });
            let lower_bound = r.devices.is_some_and(|d| d.iter().any(|x| inexact(x, t)));
            Rank {
                name: &r.name,
                stages,
                values,
                lower_bound,
            }
        })
        .collect();
    ranks.sort_by(|a, b| natural(a.name, b.name));
    let unreadable: Vec<String> = names(ranks.iter().filter(|r| r.values.is_none()));
    let lower: Vec<String> = names(ranks.iter().filter(|r| r.lower_bound));
    let mut groups = Vec::new();
    let mut checks = Vec::new();
    for (k, &f) in rb.figures.iter().enumerate() {
        let traced = f.is_trace_based() && !lower.is_empty();
        let incomplete = (!unreadable.is_empty() || traced).then(|| Finding::RanksIncomplete {
            unreadable: unreadable.clone(),
            lower_bounds: if traced { lower.clone() } else { Vec::new() },
        });
        let all = figures_of(&ranks, k, f, None, |_| true);
        if let (Some(limit), Some(g)) = (&rb.imbalance, &all) {
            let id = RankCheckId::Imbalance {
                stage: None,
                figure: f,
            };
            checks.push(imbalance_check(id, g, limit, incomplete.clone()));
        }
        if let (Some(limit), Some(g)) = (&rb.heaviest, &all) {
            let over = g.max > limit.value.raw();
            let mut c = check(RankCheckId::Heaviest { figure: f }, f, g.max);
            c.budget = Some(limit.value.raw());
            c.config_line = Some(limit.loc.clone());
            c.findings.push(Finding::HeaviestRank {
                rank: g.heaviest.clone(),
                current: g.max,
                limit: limit.value.raw(),
            });
            // A heavier rank unread or a lower bound only makes it worse:
            // over the limit is sure, within it is not.
            c.status = match (over, &incomplete) {
                (true, _) => level_status(limit.level),
                (false, None) => Status::Pass,
                (false, Some(why)) => {
                    c.findings.insert(0, why.clone());
                    Status::Error
                }
            };
            checks.push(c);
        }
        if (rb.imbalance.is_some() || rb.heaviest.is_some()) && all.is_none() {
            let mut c = check(
                RankCheckId::Imbalance {
                    stage: None,
                    figure: f,
                },
                f,
                0,
            );
            c.status = Status::Error;
            c.findings.push(Finding::RanksIncomplete {
                unreadable: unreadable.clone(),
                lower_bounds: Vec::new(),
            });
            c.config_line = Some(rb.loc.clone());
            checks.push(c);
        }
        groups.extend(all);
        for (s, stage) in rb.stages.iter().enumerate() {
            let g = figures_of(&ranks, k, f, Some(&stage.name), |r| r.stages.contains(&s));
            if let Some(limit) = &rb.stage_imbalance {
                let id = RankCheckId::Imbalance {
                    stage: Some(stage.name.clone()),
                    figure: f,
                };
                match &g {
                    Some(g) => checks.push(imbalance_check(id, g, limit, incomplete.clone())),
                    None => {
                        let mut c = check(id, f, 0);
                        c.status = Status::Error;
                        c.findings.push(Finding::StageEmpty {
                            stage: stage.name.clone(),
                        });
                        c.config_line = Some(stage.loc.clone());
                        checks.push(c);
                    }
                }
            }
            groups.extend(g);
        }
    }
    if has_baseline {
        checks.push(present_check(ranks.len(), missing, rb));
    }
    let rows = ranks
        .iter()
        .map(|r| RankRow {
            rank: r.name.to_string(),
            stages: r
                .stages
                .iter()
                .map(|&s| rb.stages[s].name.clone())
                .collect(),
            values: match &r.values {
                Some(v) => v.iter().map(|x| Some(*x)).collect(),
                None => vec![None; rb.figures.len()],
            },
            lower_bound: r.lower_bound,
        })
        .collect();
    RanksVerdict {
        status: checks
            .iter()
            .map(|c| c.status)
            .max()
            .unwrap_or(Status::Skipped),
        figures: rb.figures.clone(),
        ranks: rows,
        groups,
        checks,
    }
}

/// What a rank check judges; written `ranks.FIGURE.imbalance`,
/// `ranks.stage.NAME.FIGURE.imbalance`, `ranks.FIGURE.heaviest` or
/// `ranks.present`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RankCheckId {
    Imbalance {
        stage: Option<String>,
        figure: Figure,
    },
    Heaviest {
        figure: Figure,
    },
    Present,
}

impl std::fmt::Display for RankCheckId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RankCheckId::Imbalance {
                stage: None,
                figure,
            } => write!(f, "ranks.{figure}.imbalance"),
            RankCheckId::Imbalance {
                stage: Some(s),
                figure,
            } => write!(f, "ranks.stage.{s}.{figure}.imbalance"),
            RankCheckId::Heaviest { figure } => write!(f, "ranks.{figure}.heaviest"),
            RankCheckId::Present => f.write_str("ranks.present"),
        }
    }
}

/// Whether a device's trace-based figures are only lower bounds for this
/// target: its trace started mid-run, or it has none while the target
/// requires one; `accept-lower-bounds = true` takes them as they are.
fn inexact(d: &DeviceReport, t: &Target) -> bool {
    let partial = !d.trace_complete && d.figures.trace_entries > 0;
    let none = d.figures.trace_entries == 0 && t.require_trace;
    (partial && !t.accept_lower_bounds) || none
}

fn names<'a>(ranks: impl Iterator<Item = &'a Rank<'a>>) -> Vec<String> {
    ranks.map(|r| r.name.to_string()).collect()
}

/// Figure `f` (column `k`) over the readable ranks `pick` keeps; `None`
/// when it keeps none. Ties go to the first rank in name order.
fn figures_of(
    ranks: &[Rank],
    k: usize,
    f: Figure,
    stage: Option<&String>,
    pick: impl Fn(&Rank) -> bool,
) -> Option<GroupFigures> {
    let kept: Vec<(&str, u64)> = ranks
        .iter()
        .filter(|r| pick(r))
        .filter_map(|r| Some((r.name, *r.values.as_ref()?.get(k)?)))
        .collect();
    let (mut heaviest, mut lightest) = (*kept.first()?, *kept.first()?);
    let mut sum: u128 = 0;
    for &(name, v) in &kept {
        sum += u128::from(v);
        if v > heaviest.1 {
            heaviest = (name, v);
        }
        if v < lightest.1 {
            lightest = (name, v);
        }
    }
    let mean = sum as f64 / kept.len() as f64;
    Some(GroupFigures {
        stage: stage.cloned(),
        figure: f,
        ranks: kept.len(),
        max: heaviest.1,
        min: lightest.1,
        mean,
        spread: heaviest.1 - lightest.1,
        imbalance: imbalance(heaviest.1, mean),
        heaviest: heaviest.0.to_string(),
        lightest: lightest.0.to_string(),
    })
}

/// `(max − mean) / mean` in percent; 0 when the mean is 0 (then every
/// value is 0).
pub fn imbalance(max: u64, mean: f64) -> f64 {
    if mean > 0.0 {
        (max as f64 - mean) * 100.0 / mean
    } else {
        0.0
    }
}

/// A non-negative float as a `u64`: a budget or a mean shown in bytes.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "float-to-integer `as` saturates (NaN gives 0): a mean of u64 values, or a \
              limit above it, past u64::MAX is u64::MAX, which allows everything"
)]
pub fn saturating_u64(x: f64) -> u64 {
    x as u64
}

fn check(id: RankCheckId, f: Figure, current: u64) -> Check {
    Check::new(CheckId::Ranks(id), Status::Pass, f.unit(), current)
}

/// The group's imbalance against its limit: the check's value is the
/// heaviest rank's, its budget the most the limit allows over the mean.
fn imbalance_check(
    id: RankCheckId,
    g: &GroupFigures,
    limit: &Tolerance,
    incomplete: Option<Finding>,
) -> Check {
    let mut c = check(id, g.figure, g.max);
    let allowed = g.mean * (1.0 + limit.pct.0 / 100.0);
    c.budget = Some(saturating_u64(allowed.floor()));
    c.config_line = limit.loc.clone();
    c.findings.push(Finding::RankImbalance {
        heaviest: g.heaviest.clone(),
        max: g.max,
        mean: g.mean,
        imbalance: g.imbalance,
        limit: limit.pct.0,
        ranks: g.ranks,
    });
    c.status = if let Some(why) = incomplete {
        // The mean and the maximum may both move: nothing is sure.
        c.findings.insert(0, why);
        Status::Error
    } else if g.imbalance > limit.pct.0 {
        level_status(limit.level)
    } else {
        Status::Pass
    };
    c
}

/// Every rank of the baseline is in the run; each missing one is named.
fn present_check(run: usize, missing: &[(String, String)], rb: &RankBudget) -> Check {
    let mut c = check(RankCheckId::Present, Figure::AllocatedPeak, run as u64);
    c.unit = crate::vocab::Unit::Count;
    c.config_line = Some(rb.loc.clone());
    let mut missing: Vec<&(String, String)> = missing.iter().collect();
    missing.sort_by(|a, b| natural(&a.0, &b.0));
    if missing.is_empty() {
        c.findings.push(Finding::RanksPresent { ranks: run });
    } else {
        c.status = Status::Fail;
        c.findings
            .extend(missing.iter().map(|(rank, baseline)| Finding::RankMissing {
                rank: rank.clone(),
                baseline: baseline.clone(),
            }));
    }
    c
}

fn level_status(l: Level) -> Status {
    match l {
        Level::Fail => Status::Fail,
        Level::Warn => Status::Warn,
    }
}

#[cfg(test)]
#[path = "ranks_tests.rs"]
mod tests;
