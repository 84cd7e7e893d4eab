//! `memgate diff BASE NEW`: figure, category and site deltas between two
//! snapshots or summaries.

use std::io::Write;
use std::path::Path;

use serde_json::json;

use crate::analysis::diff::{diff_reports, Delta, DeviceDiff};
use crate::analysis::{analyze, DeviceReport, RuleSet};
use crate::baseline;
use crate::input::{self, Input};
use crate::units::{ByteDelta, Bytes};

use super::analysed::rules;
use super::{write_json, Outcome, OutputFormat};

pub struct DiffOptions {
    pub base: String,
    pub new: String,
    pub format: OutputFormat,
    pub rules: String,
    pub top: usize,
}

/// Device reports of a summary JSON or a snapshot (all sites kept), the
/// file read once.
fn reports(path: &Path, rules: &RuleSet) -> Result<Vec<DeviceReport>, String> {
    match input::read(path)? {
        Input::Summary(s) => Ok(s.devices),
        Input::Snapshot(snap) => Ok(analyze(&snap, rules, usize::MAX)),
    }
}

fn percent(p: Option<f64>) -> String {
    match p {
        Some(p) => format!("{p:+.1}%"),
        None => "new".into(),
    }
}

fn delta_row(out: &mut dyn Write, d: &Delta, bytes: bool) -> std::io::Result<()> {
    let (b, n, dd) = if bytes {
        (
            Bytes(d.base).to_string(),
            Bytes(d.new).to_string(),
            ByteDelta(d.delta).to_string(),
        )
    } else {
        (
            d.base.to_string(),
            d.new.to_string(),
            format!("{:+}", d.delta),
        )
    };
    let pct = if d.delta == 0 {
        String::new()
    } else {
        percent(d.percent)
    };
    writeln!(
        out,
        "    {:<20} {:>14} {:>14} {:>14} {:>8}",
        d.id, b, n, dd, pct
    )
}

fn device_text(out: &mut dyn Write, d: &DeviceDiff, top: usize) -> std::io::Result<()> {
    let presence = match (d.in_base, d.in_new) {
        (true, false) => " (only in BASE)",
        (false, true) => " (only in NEW)",
        _ => "",
    };
    writeln!(out, "dev{}{presence}", d.device)?;
    writeln!(
        out,
        "    {:<20} {:>14} {:>14} {:>14} {:>8}",
        "figure", "base", "new", "change", "%"
    )?;
    for f in &d.figures {
        let bytes = crate::analysis::Figure::from_id(&f.id).is_some_and(|f| f.is_bytes());
        delta_row(out, f, bytes)?;
    }
    let changed: Vec<&Delta> = d.categories.iter().filter(|c| c.delta != 0).collect();
    writeln!(
        out,
        "  categories at the allocated peak (largest change first):"
    )?;
    if changed.is_empty() {
        writeln!(out, "    no change")?;
    }
    for c in changed {
        delta_row(out, c, true)?;
    }
    writeln!(
        out,
        "  allocation sites at the allocated peak (largest change first):"
    )?;
    if d.sites.is_empty() {
        writeln!(out, "    no change")?;
    }
    for s in d.sites.iter().take(top) {
        writeln!(
            out,
            "    {:>14} {:<8} {}  ({} -> {})",
            ByteDelta(s.delta).to_string(),
            s.change.id(),
            s.site,
            Bytes(s.base),
            Bytes(s.new)
        )?;
    }
    if d.sites.len() > top {
        writeln!(out, "    … {} more (--top)", d.sites.len() - top)?;
    }
    Ok(())
}

pub fn run(opts: &DiffOptions, out: &mut dyn Write) -> Outcome {
    let rules = match rules(&opts.rules) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let (base, new) = rayon::join(
        || reports(Path::new(&opts.base), &rules),
        || reports(Path::new(&opts.new), &rules),
    );
    let (mut base, mut new) = match (base, new) {
        (Ok(b), Ok(n)) => (b, n),
        (b, n) => {
            return Outcome::errors(b.err().into_iter().chain(n.err()).collect());
        }
    };
    // A summary keeps only its top sites; cut a snapshot's list to the same
    // length so a site below the cut does not look appeared or vanished.
    let kept = |r: &[DeviceReport]| r.iter().map(|d| d.sites_at_peak.len()).max();
    let summary_sites = [(&opts.base, kept(&base)), (&opts.new, kept(&new))]
        .iter()
        .filter(|(p, _)| baseline::is_summary(Path::new(p)))
        .filter_map(|(_, k)| *k)
        .min();
    if let Some(k) = summary_sites {
        for d in base.iter_mut().chain(new.iter_mut()) {
            d.sites_at_peak.truncate(k);
        }
    }
    let mut diffs = diff_reports(&base, &new);
    let written = match opts.format {
        OutputFormat::Json => {
            for d in &mut diffs {
                d.sites.truncate(opts.top);
            }
            write_json(
                out,
                &json!({"schema_version": 1, "base": opts.base, "new": opts.new, "devices": diffs}),
            )
        }
        OutputFormat::Text => (|| {
            writeln!(out, "base: {}\nnew:  {}", opts.base, opts.new)?;
            diffs.iter().try_for_each(|d| device_text(out, d, opts.top))
        })(),
    };
    match written {
        Ok(()) => Outcome::ok(),
        Err(e) => Outcome::from_errors(super::write_error(&e)),
    }
}
