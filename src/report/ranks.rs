//! The figures across a target's ranks in words: the sentences of the rank
//! findings, and the Markdown rank table (a bar per rank). Names are
//! written raw here and escaped by the sink that prints them, except in
//! the table, which escapes its own cells.

use super::escape::markdown as md;
use crate::compare::{saturating_u64, Finding, RanksVerdict, TargetVerdict};
use crate::units::Bytes;
use crate::vocab::Unit;

/// How many rank names a sentence lists before `and N more`.
const NAMED: usize = 8;
/// How many ranks the Markdown table lists (the JSON report has all).
pub(crate) const TABLE_ROWS: usize = 256;
/// The width of a rank's bar, in block characters, for the heaviest.
const BAR: usize = 20;

/// A value in its unit, as `finding::value` writes it (which imports this
/// file for the sentences below, so it cannot be imported back).
fn value(unit: Unit, v: u64) -> String {
    match unit {
        Unit::Bytes => Bytes(v).to_string(),
        Unit::Count => v.to_string(),
    }
}

/// The sentence of a rank finding; `None` for any other finding.
pub(crate) fn clause(unit: Unit, f: &Finding) -> Option<String> {
    let show = |v: u64| value(unit, v);
    Some(match f {
        Finding::RankImbalance {
            heaviest,
            max,
            mean,
            imbalance,
            limit,
            ranks,
        } => {
            let over = if imbalance > limit { "over" } else { "within" };
            format!(
                "heaviest rank {heaviest} at {} is {imbalance:.1}% above the mean of {ranks} ranks \
                 ({}), {over} the {limit}% imbalance limit",
                show(*max),
                mean_of(unit, *mean)
            )
        }
        Finding::HeaviestRank {
            rank,
            current,
            limit,
        } if current > limit => format!(
            "heaviest rank {rank} at {} is over the {} limit by {}",
            show(*current),
            show(*limit),
            show(current - limit)
        ),
        Finding::HeaviestRank {
            rank,
            current,
            limit,
        } => format!(
            "heaviest rank {rank} at {} is within the {} limit",
            show(*current),
            show(*limit)
        ),
        Finding::RankMissing { rank, baseline } => {
            format!("rank {rank} is in the baseline ({baseline}) but missing from the run")
        }
        Finding::RanksPresent { ranks } => {
            format!("every rank of the baseline is in the run ({ranks} ranks)")
        }
        Finding::RanksIncomplete {
            unreadable,
            lower_bounds,
        } => {
            let mut why = Vec::new();
            if !unreadable.is_empty() {
                why.push(format!("{} gave no figures", listed(unreadable)));
            }
            if !lower_bounds.is_empty() {
                why.push(format!(
                    "{} only lower bounds (trace started mid-run or not recorded)",
                    listed(lower_bounds)
                ));
            }
            format!("not judged across ranks: {}", why.join(", "))
        }
        Finding::StageEmpty { stage } => {
            format!("stage {stage} claims no rank of the run: nothing to judge")
        }
        _ => return None,
    })
}

/// `rank 3`, `ranks rank1, rank2 and 5 more`.
fn listed(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(NAMED).map(String::as_str).collect();
    let more = names.len().saturating_sub(NAMED);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    let word = if names.len() == 1 { "rank" } else { "ranks" };
    format!("{word} {}{tail}", shown.join(", "))
}

/// A mean in the figure's unit: bytes rounded to the byte, counts to a
/// tenth.
pub(crate) fn mean_of(unit: Unit, mean: f64) -> String {
    match unit {
        Unit::Bytes => Bytes(saturating_u64(mean.round())).to_string(),
        Unit::Count => format!("{mean:.1}"),
    }
}

/// The rank tables of a target, when it has `[target.ranks]`: the figures
/// per group (all ranks, each stage), then one row per rank with a bar
/// against the heaviest of the first figure.
pub(crate) fn markdown(t: &TargetVerdict) -> String {
    let Some(r) = &t.ranks else {
        return String::new();
    };
    let mut out = format!(
        "<details open><summary>Across {} ranks: {}</summary>\n\n",
        r.ranks.len(),
        md(&t.name)
    );
    out.push_str(
        "| ranks | figure | n | max | heaviest | min | lightest | mean | spread | imbalance |\n",
    );
    out.push_str("|---|---|---:|---:|---|---:|---|---:|---:|---:|\n");
    for g in &r.groups {
        let unit = g.figure.unit();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1}% |\n",
            g.stage
                .as_deref()
                .map_or("all".into(), |s| format!("stage {}", md(s))),
            g.figure,
            g.ranks,
            value(unit, g.max),
            md(&g.heaviest),
            value(unit, g.min),
            md(&g.lightest),
            mean_of(unit, g.mean),
            value(unit, g.spread),
            g.imbalance
        ));
    }
    out.push('\n');
    out.push_str(&rank_rows(r));
    out.push_str("\n</details>\n\n");
    out
}

/// `—`, or the stages claiming a rank, comma-separated.
fn stages_cell(stages: &[String]) -> String {
    if stages.is_empty() {
        return "—".into();
    }
    let names: Vec<String> = stages.iter().map(|s| md(s).into_owned()).collect();
    names.join(", ")
}

fn rank_rows(r: &RanksVerdict) -> String {
    let head: Vec<String> = r.figures.iter().map(|f| f.to_string()).collect();
    let mut out = format!("| rank | stage | {} | vs mean |\n", head.join(" | "));
    out.push_str(&format!(
        "|---|---|{}---|\n",
        "---:|".repeat(r.figures.len())
    ));
    let first = r.figures.first().and_then(|f| {
        r.groups
            .iter()
            .find(|g| g.stage.is_none() && g.figure == *f)
    });
    for row in r.ranks.iter().take(TABLE_ROWS) {
        let cells: Vec<String> = r
            .figures
            .iter()
            .zip(&row.values)
            .map(|(f, v)| {
                let shown = v.map_or("—".into(), |v| value(f.unit(), v));
                if row.lower_bound && f.is_trace_based() {
                    format!("≥ {shown}")
                } else {
                    shown
                }
            })
            .collect();
        let bar = match (first, row.values.first().copied().flatten()) {
            (Some(g), Some(v)) if g.max > 0 => {
                // v ≤ max, so n ≤ BAR.
                let n =
                    (u128::from(v) * BAR as u128 * 2 + u128::from(g.max)) / (2 * u128::from(g.max));
                let n = usize::try_from(n).unwrap_or(BAR);
                let vs = if g.mean > 0.0 {
                    format!("{:+.1}%", (v as f64 - g.mean) * 100.0 / g.mean)
                } else {
                    "—".into()
                };
                format!("{vs} {}", "█".repeat(n.min(BAR)))
            }
            _ => "—".into(),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {bar} |\n",
            md(&row.rank),
            stages_cell(&row.stages),
            cells.join(" | ")
        ));
    }
    let more = r.ranks.len().saturating_sub(TABLE_ROWS);
    if more > 0 {
        out.push_str(&format!(
            "\n_{more} more ranks not listed; the JSON report has all._\n"
        ));
    }
    out
}
