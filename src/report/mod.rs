//! Renderers of the [`Verdict`](crate::compare::Verdict) and of the analysis
//! [documents](crate::document): pure functions, one file per format or per
//! document; [`escape`] says how a name is written to each kind of sink.

pub(crate) mod amount;
pub(crate) mod bencher;
pub(crate) mod benchmark_json;
pub(crate) mod codequality;
pub mod diff;
pub mod document_json;
pub mod escape;
pub(crate) mod exporter;
pub(crate) mod finding;
pub(crate) mod frames;
pub(crate) mod github;
pub(crate) mod host;
pub mod html;
pub mod inspect;
pub(crate) mod json;
pub(crate) mod junit;
pub(crate) mod markdown;
pub(crate) mod metrics;
mod noise;
pub mod peak;
pub mod phases;
pub mod profile;
pub(crate) mod ranks;
pub(crate) mod regression;
pub(crate) mod rules;
pub(crate) mod series;
pub mod snippet;
pub(crate) mod terminal;
pub mod x_axis;

use crate::analysis::DeviceReport;
use crate::compare::{DeviceVerdict, SiteRow, SnapshotVerdict};
use crate::units::{ByteDelta, Bytes};
use crate::vocab::NoStory;
use escape::terminal;

/// `rank0 dev0`: how a (snapshot, device) pair is named in every report.
pub(crate) fn case_label(s: &SnapshotVerdict, d: &DeviceVerdict) -> String {
    format!("{} dev{}", s.name, d.device)
}

/// How a target's checks across ranks are named in every report.
pub(crate) const RANKS_LABEL: &str = "ranks";

/// What a snapshot with no device shows instead of figures: nothing was
/// recorded, so there is nothing to chart or judge.
pub(crate) const NO_DEVICE: &str =
    "no device has a trace or a segment: the snapshot records no memory, so there is nothing to chart or judge";

/// What every report says of a device whose trace started mid-run.
pub(crate) const LOWER_BOUNDS: &str =
    "the trace started mid-run (ring buffer wrapped), so its figures are lower bounds";

/// The notes of a diff's device, one per side whose trace started mid-run
/// (`base: ` or `new: ` before [`LOWER_BOUNDS`]): the text and the page
/// say the same.
pub(crate) fn diff_lower_bounds(complete: crate::analysis::diff::Sides) -> Vec<String> {
    [("base", complete.base), ("new", complete.new)]
        .into_iter()
        .filter(|(_, whole)| !whole)
        .map(|(side, _)| format!("{side}: {LOWER_BOUNDS}"))
        .collect()
}

/// How many checks had each outcome, as the terminal and the Markdown
/// verdict lines say it; `skipped` only when a device was not judged.
pub(crate) fn counts_phrase(c: &crate::compare::Counts) -> String {
    let waived = if c.waived > 0 {
        format!(", {} waived", c.waived)
    } else {
        String::new()
    };
    let skipped = if c.skipped > 0 {
        format!(", {} skipped", c.skipped)
    } else {
        String::new()
    };
    // Checks that moved together are one regression.
    let regressions = if c.regressions == c.fail {
        String::new()
    } else {
        format!(
            " ({})",
            crate::units::counted(c.regressions as u64, "regression", "regressions")
        )
    };
    format!(
        "{} failed{regressions}{waived}, {} warned, {} passed, {} reported{skipped}, {} could not be judged",
        c.fail, c.warn, c.pass, c.reported, c.error
    )
}

/// The sites that grew most, one line each, for failure bodies; a site name
/// is escaped as on a terminal, so it stays on its line.
pub(crate) fn top_growth(d: &DeviceVerdict, n: usize) -> Vec<String> {
    d.sites
        .iter()
        .filter(|s| s.growth() > 0)
        .take(n)
        .map(|s| format!("{} {}", ByteDelta(s.growth()), terminal(&s.site)))
        .collect()
}

/// ` in window FROM..TO (entries A..B, dynamic usage carried in: N)`,
/// appended to a device line when the figures are a window's; empty
/// otherwise.
pub(crate) fn window_note(d: &DeviceReport) -> String {
    d.window.as_ref().map_or_else(String::new, |w| {
        format!(
            " in window {}..{} (entries {}..{}, dynamic usage carried in: {})",
            terminal(&w.from),
            terminal(&w.to),
            w.from_entry,
            w.to_entry,
            Bytes(w.dynamic_usage_at_from)
        )
    })
}

/// One line per device the window places nothing on: it has no figures,
/// and says so rather than drop out.
pub(crate) fn window_not_placed(
    out: &mut dyn std::io::Write,
    missed: &[crate::analysis::WindowError],
) -> std::io::Result<()> {
    for e in missed {
        writeln!(
            out,
            "  {}",
            not_placed_line(e, |s| terminal(s).into_owned())
        )?;
    }
    Ok(())
}

/// `dev1: not judged: the window W places nothing on it (why)`, each name
/// escaped by `esc` for its sink.
pub(crate) fn not_placed_line(
    e: &crate::analysis::WindowError,
    esc: impl Fn(&str) -> String,
) -> String {
    format!(
        "dev{}: not judged: the window {} places nothing on it ({})",
        e.device,
        esc(&e.window),
        esc(&e.problem)
    )
}

/// The top-sites listing one side of the site diff is made of, one site a
/// line whatever its name holds.
pub(crate) fn site_listing(sites: &[SiteRow], side: impl Fn(&SiteRow) -> Option<u64>) -> String {
    let mut rows: Vec<(&str, u64)> = sites
        .iter()
        .filter_map(|s| side(s).map(|b| (s.site.as_str(), b)))
        .collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    rows.iter()
        .map(|(site, b)| format!("{:>12}  {}\n", Bytes(*b).to_string(), terminal(site)))
        .collect()
}

/// The names of memory with no story among `shown` that this output has
/// not explained yet, now marked explained: each output explains a name
/// once, where it first shows it (docs/figures.md#memory-with-no-story).
pub(crate) fn unexplained<'a>(
    shown: impl IntoIterator<Item = &'a str>,
    explained: &mut Vec<NoStory>,
) -> Vec<NoStory> {
    let new: Vec<NoStory> = NoStory::among(shown)
        .into_iter()
        .filter(|n| !explained.contains(n))
        .collect();
    explained.extend(&new);
    new
}

/// The names `profile` shows of a device: its categories with bytes and
/// its sites.
pub(crate) fn category_and_site_names(d: &DeviceReport) -> impl Iterator<Item = &str> {
    fn nonzero(m: &std::collections::BTreeMap<String, u64>) -> impl Iterator<Item = &str> {
        m.iter().filter(|(_, &b)| b > 0).map(|(k, _)| k.as_str())
    }
    let c = &d.categories;
    nonzero(&c.peaks)
        .chain(nonzero(&c.at_allocated_peak))
        .chain(d.sites_at_peak.iter().map(|s| s.site.as_str()))
}

/// `note: pre-trace: memory live since …` for each name of memory with no
/// story among `shown`.
pub(crate) fn notes<'a>(shown: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    NoStory::among(shown)
        .iter()
        .map(|n| format!("note: {}", n.legend()))
        .collect()
}

/// `    note: pre-trace: memory live since …`, one line per name of `names`.
pub(crate) fn legend_lines(
    out: &mut dyn std::io::Write,
    indent: &str,
    names: &[NoStory],
) -> std::io::Result<()> {
    for n in names {
        writeln!(out, "{indent}note: {}", n.legend())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(name: &str, current: u64) -> SiteRow {
        SiteRow {
            site: name.into(),
            baseline: Some(1),
            current: Some(current),
        }
    }

    #[test]
    fn a_site_name_with_a_newline_stays_on_its_line_in_listings() {
        let sites = [site("f\n::error::forged\u{1b}[31m", 5), site("g", 3)];
        let listing = site_listing(&sites, |s| s.current);
        assert_eq!(listing.lines().count(), 2, "{listing}");
        assert!(
            listing.contains("f\\n::error::forged\\u{1b}[31m"),
            "{listing}"
        );
        let d = DeviceVerdict {
            peak_phase: None,
            oom: Vec::new(),
            device: crate::vocab::Device::new(0),
            trace_complete: true,
            warnings: Vec::new(),
            checks: Vec::new(),
            categories: Vec::new(),
            sites: sites.to_vec(),
            window: None,
            pools: Vec::new(),
        };
        let top = top_growth(&d, 5);
        assert_eq!(top.len(), 2);
        assert!(top
            .iter()
            .all(|l| !l.contains('\n') && !l.contains('\u{1b}')));
    }
}
