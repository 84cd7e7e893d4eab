//! The rank section of `check --html`, one per target with `[target.ranks]`
//! (docs/ranks.md): the figures of each group (all ranks, each stage), the
//! rank checks with their badges, and one bar per rank. A bar is the rank's
//! value of the first figure against the heaviest (or against the
//! imbalance limit when that is higher, so its marker stays on the scale);
//! the limits are drawn as markers, and the heaviest rank and every rank
//! over a limit are marked in words as well as in colour. The bars are SVG
//! shapes whose sizes are attributes, so the page's policy (no inline style,
//! no script but its own) holds; names are escaped where they are written.

use std::fmt::Write as _;

use super::badge::badge;
use crate::compare::{
    CheckId, GroupFigures, RankCheckId, RankRow, RanksVerdict, Status, TargetVerdict, Verdict,
};
use crate::report::escape::html as escape;
use crate::report::finding::{self, value};
use crate::report::ranks::{mean_of, TABLE_ROWS};
use crate::vocab::Figure;

/// The width of a bar's scale, in SVG user units (the drawing stretches it
/// to the cell).
const SCALE: u64 = 1000;

/// The targets with ranks, worst first (the verdict's order otherwise), with
/// their index in the verdict: the order of their sections and summary rows.
pub(super) fn targets(v: &Verdict) -> Vec<(usize, &TargetVerdict, &RanksVerdict)> {
    let mut out: Vec<_> = v
        .targets
        .iter()
        .enumerate()
        .filter_map(|(t, target)| Some((t, target, target.ranks.as_ref()?)))
        .collect();
    out.sort_by_key(|(_, _, r)| std::cmp::Reverse(r.status));
    out
}

/// The summary table's row of target `t`'s ranks, linking to its section.
pub(super) fn summary_row(out: &mut String, t: usize, target: &TargetVerdict, r: &RanksVerdict) {
    let failed = r.checks.iter().filter(|c| c.status == Status::Fail).count();
    let _ = writeln!(
        out,
        "<tr class=\"ranks\"><td>{}</td><td><a href=\"#ranks-{t}\">{}</a></td><td><a \
         href=\"#ranks-{t}\">ranks</a></td><td><a href=\"#ranks-{t}\">all {} ranks</a></td>\
         <td>{failed}</td></tr>",
        badge(r.status),
        escape(&target.name),
        r.ranks.len()
    );
}

/// The section of target `t`'s ranks.
pub(super) fn section(out: &mut String, t: usize, target: &TargetVerdict, r: &RanksVerdict) {
    let _ = writeln!(
        out,
        "<section class=\"ranks {}\" id=\"ranks-{t}\">\n<h2>{} · {} · ranks — across {} \
         ranks</h2>",
        r.status.id(),
        badge(r.status),
        escape(&target.name),
        r.ranks.len()
    );
    groups_table(out, r);
    checks_table(out, r);
    bars_table(out, r);
    out.push_str("</section>\n");
}

fn group_name(g: &GroupFigures) -> String {
    g.stage
        .as_deref()
        .map_or_else(|| "all".to_string(), |s| format!("stage {}", escape(s)))
}

fn groups_table(out: &mut String, r: &RanksVerdict) {
    out.push_str(
        "<table class=\"rankgroups\"><caption>Figures across the ranks</caption><tr>\
         <th>ranks</th><th>figure</th><th>n</th><th>max</th><th>heaviest</th><th>min</th>\
         <th>lightest</th><th>mean</th><th>spread</th><th>imbalance</th></tr>\n",
    );
    for g in &r.groups {
        let unit = g.figure.unit();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"heaviest\">{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td></tr>",
            group_name(g),
            g.figure,
            g.ranks,
            value(unit, g.max),
            escape(&g.heaviest),
            value(unit, g.min),
            escape(&g.lightest),
            mean_of(unit, g.mean),
            value(unit, g.spread),
            g.imbalance
        );
    }
    out.push_str("</table>\n");
}

fn checks_table(out: &mut String, r: &RanksVerdict) {
    if r.checks.is_empty() {
        out.push_str(
            "<p class=\"note\">No rank check: the target sets no limit and has no \
             baseline.</p>\n",
        );
        return;
    }
    out.push_str(
        "<table class=\"checks\"><caption>Rank checks</caption><tr><th>check</th>\
         <th>verdict</th><th>current</th><th>budget</th><th>why</th></tr>\n",
    );
    let mut checks: Vec<_> = r.checks.iter().collect();
    checks.sort_by_key(|c| std::cmp::Reverse(c.status));
    for c in checks {
        let _ = writeln!(
            out,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"stack\">{}</td></tr>",
            c.status.id(),
            escape(&c.id.to_string()),
            badge(c.status),
            finding::current(c),
            c.budget.map_or_else(|| "–".into(), |b| value(c.unit, b)),
            escape(&finding::sentence(c))
        );
    }
    out.push_str("</table>\n");
}

/// A limit a rank's value is held to: the most the check allows.
struct Limit<'a> {
    check: String,
    /// `None`: every rank; else the stage whose ranks it holds.
    stage: Option<&'a str>,
    figure: Figure,
    bytes: u64,
    /// An imbalance limit (drawn as a marker) rather than the heaviest's.
    imbalance: bool,
}

fn limits(r: &RanksVerdict) -> Vec<Limit<'_>> {
    r.checks
        .iter()
        .filter_map(|c| {
            let CheckId::Ranks(id) = &c.id else {
                return None;
            };
            let (stage, figure, imbalance) = match id {
                RankCheckId::Imbalance { stage, figure } => (stage.as_deref(), *figure, true),
                RankCheckId::Heaviest { figure } => (None, *figure, false),
                RankCheckId::Present => return None,
            };
            Some(Limit {
                check: c.id.to_string(),
                stage,
                figure,
                bytes: c.budget?,
                imbalance,
            })
        })
        .collect()
}

/// The limits rank `row` is over, as check ids.
fn over<'l>(r: &RanksVerdict, row: &RankRow, limits: &'l [Limit<'_>]) -> Vec<&'l str> {
    limits
        .iter()
        .filter(|l| l.stage.is_none_or(|s| row.stages.iter().any(|x| x == s)))
        .filter(|l| {
            let k = r.figures.iter().position(|f| *f == l.figure);
            k.and_then(|k| row.values.get(k).copied().flatten())
                .is_some_and(|v| v > l.bytes)
        })
        .map(|l| l.check.as_str())
        .collect()
}

/// The ranks the table lists: all of them up to [`TABLE_ROWS`]; beyond,
/// the heaviest of each figure and every rank over a limit first, then the
/// others in name order; listed in name order.
fn listed(r: &RanksVerdict, flagged: &[bool]) -> Vec<usize> {
    if r.ranks.len() <= TABLE_ROWS {
        return (0..r.ranks.len()).collect();
    }
    let mut keep: Vec<usize> = (0..r.ranks.len()).filter(|&k| flagged[k]).collect();
    keep.truncate(TABLE_ROWS);
    let room = TABLE_ROWS - keep.len();
    keep.extend((0..r.ranks.len()).filter(|&k| !flagged[k]).take(room));
    keep.sort_unstable();
    keep
}

/// `x` of `v` on a scale of `SCALE` units for `top`; `v ≤ top`.
fn at(v: u64, top: u64) -> u64 {
    if top == 0 {
        return 0;
    }
    let x =
        (u128::from(v.min(top)) * u128::from(SCALE) * 2 + u128::from(top)) / (2 * u128::from(top));
    u64::try_from(x).unwrap_or(SCALE)
}

fn bars_table(out: &mut String, r: &RanksVerdict) {
    let Some(&first) = r.figures.first() else {
        return;
    };
    let Some(all) = r
        .groups
        .iter()
        .find(|g| g.stage.is_none() && g.figure == first)
    else {
        out.push_str("<p class=\"note\">No rank could be read: no bars to draw.</p>\n");
        return;
    };
    let limits = limits(r);
    let marked: Vec<&Limit> = limits.iter().filter(|l| l.figure == first).collect();
    // The scale: the heaviest, or the all-ranks imbalance limit when it is
    // higher (so its marker is on the bars).
    let top = marked
        .iter()
        .filter(|l| l.stage.is_none() && l.imbalance)
        .map(|l| l.bytes)
        .fold(all.max, u64::max);
    // The heaviest of each figure over all ranks (the bars draw the first).
    let heaviest: Vec<(Figure, &str)> = r
        .groups
        .iter()
        .filter(|g| g.stage.is_none())
        .map(|g| (g.figure, g.heaviest.as_str()))
        .collect();
    let heaviest_in = |rank: &str| -> Vec<Figure> {
        heaviest
            .iter()
            .filter(|(_, h)| *h == rank)
            .map(|(f, _)| *f)
            .collect()
    };
    let overs: Vec<Vec<&str>> = r.ranks.iter().map(|row| over(r, row, &limits)).collect();
    let flagged: Vec<bool> = r
        .ranks
        .iter()
        .zip(&overs)
        .map(|(row, o)| !o.is_empty() || !heaviest_in(&row.rank).is_empty())
        .collect();
    let unit = first.unit();
    let marker_words: Vec<String> = marked
        .iter()
        .map(|l| {
            let what = match l.stage {
                _ if !l.imbalance => "the heaviest rank's limit".to_string(),
                None => "the imbalance limit".to_string(),
                Some(s) => format!("stage {}'s imbalance limit", escape(s)),
            };
            let off = if l.bytes > top {
                " (off the scale)"
            } else {
                ""
            };
            format!("{what} at {}{off}", value(unit, l.bytes))
        })
        .collect();
    let _ = writeln!(
        out,
        "<table class=\"rankbars\"><caption>Each rank's {first} against the heaviest ({}, \
         {}){}</caption>",
        escape(&all.heaviest),
        value(unit, all.max),
        if marker_words.is_empty() {
            String::new()
        } else {
            format!("; the marks are {}", marker_words.join(", "))
        }
    );
    let head: Vec<String> = r.figures.iter().map(|f| format!("<th>{f}</th>")).collect();
    let _ = writeln!(
        out,
        "<tr><th>rank</th><th>stage</th>{}<th>vs mean</th><th class=\"bar\">{first}</th>\
         <th>mark</th></tr>",
        head.concat()
    );
    let shown = listed(r, &flagged);
    for &k in &shown {
        let row = &r.ranks[k];
        let heaviest_of = heaviest_in(&row.rank);
        let is_heaviest = heaviest_of.contains(&first);
        let mut class = Vec::new();
        if is_heaviest {
            class.push("heaviest");
        }
        if !overs[k].is_empty() {
            class.push("over");
        }
        let cells: Vec<String> = r
            .figures
            .iter()
            .zip(&row.values)
            .map(|(f, v)| {
                let shown = v.map_or_else(|| "—".to_string(), |v| value(f.unit(), v));
                let lb = if row.lower_bound && f.is_trace_based() {
                    "≥ "
                } else {
                    ""
                };
                format!("<td>{lb}{shown}</td>")
            })
            .collect();
        let v = row.values.first().copied().flatten();
        let vs = match v {
            Some(v) if all.mean > 0.0 => {
                format!("{:+.1}%", (v as f64 - all.mean) * 100.0 / all.mean)
            }
            _ => "—".to_string(),
        };
        let stages: Vec<String> = row.stages.iter().map(|s| escape(s).into_owned()).collect();
        let mut mark = Vec::new();
        // `heaviest` in every figure; else the figures it is heaviest in.
        if heaviest_of.len() == heaviest.len() {
            mark.push("heaviest".to_string());
        } else if !heaviest_of.is_empty() {
            let of: Vec<String> = heaviest_of.iter().map(|f| f.to_string()).collect();
            mark.push(format!("heaviest in {}", of.join(", ")));
        }
        if !overs[k].is_empty() {
            let ids: Vec<String> = overs[k].iter().map(|c| escape(c).into_owned()).collect();
            mark.push(format!("over {}", ids.join(", ")));
        }
        let _ = writeln!(
            out,
            "<tr class=\"{}\" data-rank=\"{}\"><td>{}</td><td>{}</td>{}<td>{vs}</td>\
             <td class=\"bar\">{}</td><td>{}</td></tr>",
            class.join(" "),
            escape(&row.rank),
            escape(&row.rank),
            if stages.is_empty() {
                "—".to_string()
            } else {
                stages.join(", ")
            },
            cells.concat(),
            bar(row, v, top, &class, &marked, unit),
            mark.join("; ")
        );
    }
    out.push_str("</table>\n");
    let more = r.ranks.len() - shown.len();
    if more > 0 {
        let _ = writeln!(
            out,
            "<p class=\"note\">{more} more ranks not listed (the heaviest and every rank over \
             a limit are); the JSON report has all.</p>"
        );
    }
}

/// One rank's bar: its value against `top`, with a marker for each limit
/// on the scale that holds it (all ranks', its stages', the heaviest's).
fn bar(
    row: &RankRow,
    v: Option<u64>,
    top: u64,
    class: &[&str],
    marked: &[&Limit],
    unit: crate::vocab::Unit,
) -> String {
    let Some(v) = v else {
        return "—".to_string();
    };
    let w = at(v, top);
    let mut svg = format!(
        "<svg class=\"rankbar\" viewBox=\"0 0 {SCALE} 10\" preserveAspectRatio=\"none\" \
         role=\"img\" aria-label=\"{}: {}\"><rect class=\"{}\" width=\"{w}\" height=\"10\" \
         data-value=\"{v}\"/>",
        escape(&row.rank),
        value(unit, v),
        if class.is_empty() {
            "value".to_string()
        } else {
            format!("value {}", class.join(" "))
        }
    );
    for l in marked {
        if l.stage.is_some_and(|s| !row.stages.iter().any(|x| x == s)) || l.bytes > top {
            continue;
        }
        let x = at(l.bytes, top);
        let _ = write!(
            svg,
            "<line class=\"{}\" x1=\"{x}\" x2=\"{x}\" y1=\"0\" y2=\"10\" data-limit=\"{}\"/>",
            match (l.imbalance, l.stage) {
                (false, _) => "limit heaviest",
                (true, Some(_)) => "limit stage",
                (true, None) => "limit",
            },
            l.bytes
        );
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
#[path = "ranks_tests.rs"]
mod tests;
