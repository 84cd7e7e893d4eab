//! The cause of a regression, read from the allocation sites live at the
//! allocated peak: the sites that grew most, the sites that shrank or
//! vanished most, and one "other sites" row holding the rest, so that the
//! rows shown always add up to the figure's change (docs/figures.md#cause).

use serde::Serialize;

use super::SiteRow;

/// How many sites each side of a cause keeps in the verdict; the reports
/// show fewer (the terminal one), their "other sites" row taking the rest.
pub const CAUSE_SITES: usize = 5;

/// One site's change between the baseline's peak and the run's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct CauseRow {
    pub site: String,
    /// Bytes at the baseline's peak; absent: not among its listed sites.
    pub baseline: Option<u64>,
    /// Bytes at the run's peak; absent: not among its listed sites
    /// (vanished, or below the sites a summary keeps).
    pub current: Option<u64>,
    /// `current - baseline`, a missing side counted as zero.
    pub change: i64,
    /// Who owns the site's file, by the budget's `[owners]`
    /// (docs/figures.md#owners): empty when no rule names one; absent
    /// without `[owners]`, or when matching was cut short.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owners: Option<Vec<String>>,
    /// The owner rules were not all tried: the run spent its matching
    /// steps (a CODEOWNERS file of pathological patterns).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub owners_unresolved: bool,
}

/// Why a figure moved by `change` bytes: the rows plus `other` equal it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct Cause {
    /// The figure's change (current minus baseline).
    pub change: i64,
    /// Sites that grew or appeared, largest growth first.
    pub grew: Vec<CauseRow>,
    /// Sites that shrank or vanished, largest fall first.
    pub shrank: Vec<CauseRow>,
    /// The part of `change` no listed row holds: the other sites' changes,
    /// and whatever the figure holds beyond the sites at the allocated peak
    /// (`change` minus the rows).
    pub other: i64,
    /// The budget opts in to `@mentions` of the owners (`[owners]
    /// mention = true`); the JSON has no use for it.
    #[serde(skip)]
    pub mention: bool,
}

impl CauseRow {
    fn of(s: &SiteRow) -> CauseRow {
        CauseRow {
            site: s.site.clone(),
            baseline: s.baseline,
            current: s.current,
            change: clamp(s.growth()),
            owners: None,
            owners_unresolved: false,
        }
    }

    /// `vanished`, `new`, `grew` or `shrank`.
    pub fn kind(&self) -> &'static str {
        match (self.baseline, self.current) {
            (Some(_), None) => "vanished",
            (None, Some(_)) => "new",
            _ if self.change > 0 => "grew",
            _ => "shrank",
        }
    }
}

/// Bytes fit an `i64` (a device holds less than 8 EiB); saturate anyway.
fn clamp(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

impl Cause {
    /// The cause of a figure's `change`, from the device's site rows: the
    /// `n` sites that grew most and the `n` that fell most.
    pub fn of(sites: &[SiteRow], change: i128, n: usize) -> Cause {
        let mut grew: Vec<CauseRow> = sites
            .iter()
            .filter(|s| s.growth() > 0)
            .map(CauseRow::of)
            .collect();
        grew.sort_by(|a, b| b.change.cmp(&a.change).then_with(|| a.site.cmp(&b.site)));
        let mut shrank: Vec<CauseRow> = sites
            .iter()
            .filter(|s| s.growth() < 0)
            .map(CauseRow::of)
            .collect();
        shrank.sort_by(|a, b| a.change.cmp(&b.change).then_with(|| a.site.cmp(&b.site)));
        Cause {
            change: clamp(change),
            grew,
            shrank,
            other: 0,
            mention: false,
        }
        .cut(n)
    }

    /// The same cause with at most `n` rows a side, `other` holding the rest.
    pub fn cut(&self, n: usize) -> Cause {
        let grew: Vec<CauseRow> = self.grew.iter().take(n).cloned().collect();
        let shrank: Vec<CauseRow> = self.shrank.iter().take(n).cloned().collect();
        let shown: i128 = grew
            .iter()
            .chain(&shrank)
            .map(|r| i128::from(r.change))
            .sum();
        Cause {
            change: self.change,
            other: clamp(i128::from(self.change) - shown),
            grew,
            shrank,
            mention: self.mention,
        }
    }

    /// The rows in the order reports list them: growth, then falls.
    pub fn rows(&self) -> impl Iterator<Item = &CauseRow> {
        self.grew.iter().chain(&self.shrank)
    }

    /// The row a one-line report names: the largest move in the figure's
    /// direction (growth for a growing figure), else the largest at all.
    pub fn first(&self) -> Option<&CauseRow> {
        let along = if self.change >= 0 {
            self.grew.first()
        } else {
            self.shrank.first()
        };
        along.or_else(|| self.rows().max_by_key(|r| r.change.unsigned_abs()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn row(site: &str, baseline: Option<u64>, current: Option<u64>) -> SiteRow {
        SiteRow {
            site: site.into(),
            baseline,
            current,
        }
    }

    #[test]
    fn a_vanished_compiled_kernel_is_listed_among_the_falls_and_the_rows_add_up() {
        const GIB: u64 = 1 << 30;
        let sites = [
            row("call (torchinductor)", Some(20 * GIB), None),
            row("forward (model.py:3)", Some(GIB), Some(28 * GIB)),
            row("g", Some(5), Some(5)),
        ];
        let cause = Cause::of(&sites, (7 * GIB).into(), 3);
        assert_eq!(cause.grew.len(), 1);
        assert_eq!(cause.shrank[0].site, "call (torchinductor)");
        assert_eq!(cause.shrank[0].kind(), "vanished");
        assert_eq!(cause.shrank[0].change, -(20i64 << 30));
        assert_eq!(cause.other, 0);
        assert_eq!(cause.first().unwrap().site, "forward (model.py:3)");
    }

    #[test]
    fn a_shorter_cut_moves_the_rows_it_drops_into_other_sites() {
        let sites = [
            row("a", Some(0), Some(30)),
            row("b", Some(0), Some(20)),
            row("c", Some(10), Some(0)),
        ];
        let cause = Cause::of(&sites, 45, 5).cut(1);
        assert_eq!(cause.grew.len(), 1);
        assert_eq!(cause.other, 45 - 30 + 10);
    }

    proptest! {
        #[test]
        fn the_rows_shown_plus_other_sites_add_up_to_the_figures_change(
            sides in proptest::collection::vec(
                (proptest::option::of(0u64..1 << 40), proptest::option::of(0u64..1 << 40)),
                0..30,
            ),
            change in -(1i64 << 42)..(1i64 << 42),
            n in 0usize..8,
        ) {
            let sites: Vec<SiteRow> = sides
                .iter()
                .enumerate()
                .map(|(i, (b, c))| row(&format!("s{i}"), *b, *c))
                .collect();
            let cause = Cause::of(&sites, change.into(), n);
            let sum: i128 = cause.rows().map(|r| i128::from(r.change)).sum::<i128>()
                + i128::from(cause.other);
            prop_assert_eq!(sum, i128::from(change));
            prop_assert!(cause.grew.len() <= n && cause.shrank.len() <= n);
            prop_assert!(cause.grew.iter().all(|r| r.change > 0));
            prop_assert!(cause.shrank.iter().all(|r| r.change < 0));
        }
    }
}
