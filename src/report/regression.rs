//! The English of a finding: the figures that moved together, the budget
//! as the user wrote it with its headroom, and the cause rows. Every
//! renderer that names a finding takes its words from here.

use super::amount::value;
use super::escape::terminal;
use crate::compare::{figure_names, Cause, CauseRow, Check, DeviceVerdict, Status};
use crate::units::ByteDelta;
use crate::vocab::Unit;

/// How many cause rows a side JUnit and the Markdown show.
pub const CAUSE_ROWS: usize = 3;

/// The budget as the file writes it, and in binary units when that reads
/// otherwise: `208 MiB`, `"0.2 GB" = 190.73 MiB`.
pub fn budget(c: &Check) -> Option<String> {
    let shown = value(c.unit, c.budget?);
    match c.budget_written.as_deref() {
        Some(w) if w != shown && w.parse::<u64>().is_ok() => Some(format!("{w} = {shown}")),
        Some(w) if w != shown => Some(format!("\"{w}\" = {shown}")),
        _ => Some(shown),
    }
}

/// `102%`; one decimal where rounding would read as exactly the budget.
fn percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    if p.round() == 100.0 && p < 100.0 {
        format!("{:.1}%", (p * 10.0).floor() / 10.0)
    } else if p.round() == 100.0 && p > 100.0 {
        format!("{:.1}%", (p * 10.0).ceil() / 10.0)
    } else {
        format!("{p:.0}%")
    }
}

/// `212.10 MiB of 208 MiB (102%, over by 4.10 MiB)`, `50 MiB of
/// "0.2 GB" = 190.73 MiB (26%, 140.73 MiB left)`; none without a budget.
pub fn headroom(c: &Check) -> Option<String> {
    let b = budget(c)?;
    let h = c.headroom?;
    let left = if h.left < 0 {
        format!("over by {}", value(c.unit, h.left.unsigned_abs()))
    } else {
        format!("{} left", value(c.unit, h.left.unsigned_abs()))
    };
    let used = h
        .fraction_used
        .map_or(String::new(), |f| format!("{}, ", percent(f)));
    Some(format!(
        "{} of {b} ({used}{left})",
        value(c.unit, c.current)
    ))
}

/// The figures of the finding `c` leads (`allocated-, dynamic-peak`),
/// or its own id.
pub fn names(c: &Check) -> String {
    c.regression
        .as_ref()
        .map_or_else(|| c.id.to_string(), |r| figure_names(&r.figures))
}

/// The finding's change after its names (` +12 MiB`), when it has one
/// and more than one figure moved by it.
pub fn change(c: &Check) -> String {
    match &c.regression {
        Some(r) if r.figures.len() > 1 => r
            .change
            .map_or(String::new(), |d| format!(" {}", ByteDelta(d.into()))),
        _ => String::new(),
    }
}

/// `+12 MiB forward (model.py:39)`, `-20.69 GiB vanished call (…)`: one
/// cause row, its site escaped by `esc`, then its owners when the budget
/// has `[owners]` (`mention`: a handle may stay an `@mention`).
pub fn row(r: &CauseRow, mention: bool, esc: impl Fn(&str) -> String) -> String {
    let kind = match r.kind() {
        "grew" | "shrank" => String::new(),
        k => format!("{k} "),
    };
    format!(
        "{} {kind}{}{}",
        ByteDelta(r.change.into()),
        esc(&r.site),
        owners(r, mention, esc)
    )
}

/// `, owner: @ml-team`, `, owners: a, b`, `, no owner` after a cause
/// row's site (docs/figures.md#owners); nothing without `[owners]`. Each
/// name is escaped by `esc` (in Markdown a code span, so no `@mention`
/// notifies anyone), but for a well-formed handle where `mention` is on.
fn owners(r: &CauseRow, mention: bool, esc: impl Fn(&str) -> String) -> String {
    if r.owners_unresolved {
        return ", owner not looked up (the matching limit was spent)".into();
    }
    let Some(owners) = &r.owners else {
        return String::new();
    };
    let names: Vec<String> = owners
        .iter()
        .map(|o| {
            if mention && is_handle(o) {
                o.clone()
            } else {
                esc(o)
            }
        })
        .collect();
    match names.len() {
        0 => ", no owner".into(),
        1 => format!(", owner: {}", names[0]),
        _ => format!(", owners: {}", names.join(", ")),
    }
}

/// A GitHub or GitLab handle (`@user`, `@org/team`): what may be written
/// as an `@mention` when the budget opts in; anything else never is.
fn is_handle(owner: &str) -> bool {
    let Some(name) = owner.strip_prefix('@') else {
        return false;
    };
    let mut parts = name.splitn(2, '/');
    let user = parts.next().unwrap_or("");
    let ok = |s: &str, extra: &[char]| {
        !s.is_empty()
            && s.len() <= 100
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || extra.contains(&c))
    };
    ok(user, &[]) && parts.next().is_none_or(|team| ok(team, &['_', '.']))
}

/// `; top site: +12 MiB forward (model.py:39)`, for one-line reports.
pub fn top_site(c: &Check) -> String {
    let first = c
        .regression
        .as_ref()
        .and_then(|r| r.cause.as_ref())
        .and_then(Cause::first);
    let mention = c
        .regression
        .as_ref()
        .and_then(|r| r.cause.as_ref())
        .is_some_and(|c| c.mention);
    first.map_or(String::new(), |r| {
        format!(
            "; top site: {}",
            row(r, mention, |s| terminal(s).into_owned())
        )
    })
}

/// The site of the row [`top_site`] names, as it is.
pub fn top_site_name(c: &Check) -> Option<&str> {
    let cause = c.regression.as_ref()?.cause.as_ref()?;
    cause.first().map(|r| r.site.as_str())
}

/// The sites of the rows [`cause_lines`] lists, as they are.
pub fn cause_sites(c: &Check, n: usize) -> Vec<String> {
    let Some(cause) = c.regression.as_ref().and_then(|r| r.cause.as_ref()) else {
        return Vec::new();
    };
    cause.cut(n).rows().map(|r| r.site.clone()).collect()
}

/// The cause as lines (at most `n` rows a side, then `other sites`), each
/// site escaped by `esc`; empty when the finding has none.
pub fn cause_lines(c: &Check, n: usize, esc: impl Fn(&str) -> String) -> Vec<String> {
    let Some(cause) = c.regression.as_ref().and_then(|r| r.cause.as_ref()) else {
        return Vec::new();
    };
    let cause = cause.cut(n);
    let mut lines: Vec<String> = cause.rows().map(|r| row(r, cause.mention, &esc)).collect();
    lines.push(format!("{} other sites", ByteDelta(cause.other.into())));
    lines
}

/// The heading of a cause listing: what the rows add up to.
pub fn cause_heading(c: &Check) -> Option<String> {
    let cause = c.regression.as_ref()?.cause.as_ref()?;
    Some(format!(
        "Allocation sites at the allocated peak, baseline → current (the rows add up to {}):",
        ByteDelta(cause.change.into())
    ))
}

/// How much of its budgets a device that passed uses, for its one line:
/// `4 checks pass; allocated-peak 200.10 MiB of 208 MiB (96%, 7.90 MiB left), +0 B; …`.
/// None when something did not pass.
pub fn pass_summary(d: &DeviceVerdict) -> Option<String> {
    if d.checks.iter().any(|c| c.status != Status::Pass) || d.checks.is_empty() {
        return None;
    }
    let mut budgeted: Vec<&Check> = d.checks.iter().filter(|c| c.headroom.is_some()).collect();
    budgeted.sort_by(|a, b| {
        let used = |c: &Check| c.headroom.and_then(|h| h.fraction_used).unwrap_or(0.0);
        used(b).total_cmp(&used(a))
    });
    let mut parts = vec![crate::units::counted(
        d.checks.len() as u64,
        "check passes",
        "checks pass",
    )];
    const SHOWN: usize = 3;
    for c in budgeted.iter().take(SHOWN) {
        let mut p = format!("{} {}", c.id, headroom(c).unwrap_or_default());
        if let Some(delta) = c.delta().filter(|_| c.unit == Unit::Bytes) {
            p.push_str(&format!(", {} vs the baseline", ByteDelta(delta)));
        }
        parts.push(p);
    }
    if budgeted.len() > SHOWN {
        parts.push(format!("{} more within budget", budgeted.len() - SHOWN));
    }
    parts.extend(super::noise::widest_spread(d));
    Some(parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{Finding, Headroom};

    const MIB: u64 = 1 << 20;

    fn check(current: u64, budget: u64, written: &str) -> Check {
        Check {
            budget: Some(budget),
            findings: vec![Finding::NothingToCompare { current }],
            budget_written: Some(written.into()),
            headroom: Some(Headroom::of(current, budget)),
            ..Check::new("allocated-peak".into(), Status::Pass, Unit::Bytes, current)
        }
    }

    #[test]
    fn a_hostile_site_name_stays_on_its_line_in_the_top_site_and_the_cause_rows() {
        let sites = [crate::compare::SiteRow {
            site: "f\n::error::forged\u{1b}[31m (x.py)".into(),
            baseline: Some(MIB),
            current: None,
        }];
        let mut c = check(0, MIB, "1 MiB");
        c.regression = Some(crate::compare::Regression {
            figures: vec!["allocated-peak".into()],
            change: Some(-(1i64 << 20)),
            cause: Some(Cause::of(&sites, -i128::from(MIB), 3)),
        });
        let top = top_site(&c);
        assert_eq!(
            top,
            "; top site: -1 MiB vanished f\\n::error::forged\\u{1b}[31m (x.py)"
        );
        let rows = cause_lines(&c, 3, |s| terminal(s).into_owned());
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert!(
            rows.iter().all(|r| !r.contains(['\n', '\u{1b}'])),
            "{rows:?}"
        );
        assert_eq!(rows[1], "+0 B other sites");
    }

    #[test]
    fn a_budget_written_in_decimal_units_is_shown_as_written_and_in_binary_units() {
        let c = check(50 * MIB, 200_000_000, "0.2 GB");
        assert_eq!(
            headroom(&c).unwrap(),
            "50 MiB of \"0.2 GB\" = 190.73 MiB (26%, 140.73 MiB left)"
        );
    }

    #[test]
    fn a_budget_over_by_a_little_says_how_much_and_what_share() {
        let c = check(212 * MIB + 104_858, 208 * MIB, "208 MiB");
        assert_eq!(
            headroom(&c).unwrap(),
            "212.10 MiB of 208 MiB (102%, over by 4.10 MiB)"
        );
        let near = check(2079 * MIB / 10, 208 * MIB, "208 MiB");
        assert!(headroom(&near).unwrap().contains("(99.9%, "), "{near:?}");
    }

    #[test]
    fn only_a_well_formed_handle_can_be_a_mention() {
        for ok in ["@alice", "@org/ml-team", "@org/team.name_2"] {
            assert!(is_handle(ok), "{ok}");
        }
        for bad in [
            "alice",
            "alice@example.com",
            "@",
            "@a/b/c",
            "@x\n::error::y",
            "@a b",
            "@org/",
            "@ünï",
        ] {
            assert!(!is_handle(bad), "{bad:?}");
        }
    }
}
