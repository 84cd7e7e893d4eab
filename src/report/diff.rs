//! `memgate diff` as text: per device the peaks that moved to another
//! phase or iteration, a figure table, the categories that changed, and
//! the sites that changed most. A change shows a percentage only where the
//! analysis gave one (a base large enough); else `new` (from 0), `gone`
//! (to 0) or nothing beside the absolute change.

use std::io::{self, Write};

use super::escape::terminal;
use super::peak::peak_name;
use crate::analysis::diff::{Delta, PeakMove};
use crate::analysis::{Figure, Place};
use crate::document::{DiffDevice, DiffDocument};
use crate::units::{ByteDelta, Bytes};

pub fn text(out: &mut dyn Write, doc: &DiffDocument) -> io::Result<()> {
    writeln!(
        out,
        "base: {}\nnew:  {}",
        terminal(&doc.base),
        terminal(&doc.new)
    )?;
    if let Some(w) = &doc.window {
        writeln!(out, "window: {}", terminal(w))?;
    }
    doc.devices.iter().try_for_each(|d| device(out, d))
}

pub(crate) fn percent(d: &Delta) -> String {
    match d.percent {
        _ if d.new == 0 && d.base > 0 => "gone".into(),
        Some(p) => format!("{p:+.1}%"),
        None if d.base == 0 => "new".into(),
        None => String::new(),
    }
}

/// `forward (iteration 1, entry 2780)`; `(no phase)` outside every
/// annotation.
pub(crate) fn spot(p: &Place) -> String {
    let name = if p.annotation.is_empty() {
        "(no phase)"
    } else {
        p.annotation.as_str()
    };
    match p.iteration {
        Some(k) => format!("{name} (iteration {k}, entry {})", p.entry),
        None => format!("{name} (entry {})", p.entry),
    }
}

fn moved(out: &mut dyn Write, m: &PeakMove) -> io::Result<()> {
    writeln!(
        out,
        "  {} peak moved: {} -> {}",
        peak_name(m.peak),
        terminal(&spot(&m.base)),
        terminal(&spot(&m.new))
    )
}

/// A delta's base, new, change and percentage as text (sizes in binary
/// units when `bytes`; no percentage when nothing changed).
pub(crate) fn delta_texts(d: &Delta, bytes: bool) -> [String; 4] {
    let (b, n, c) = if bytes {
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
        percent(d)
    };
    [b, n, c, pct]
}

fn delta_row(out: &mut dyn Write, d: &Delta, bytes: bool) -> io::Result<()> {
    let [b, n, dd, pct] = delta_texts(d, bytes);
    writeln!(
        out,
        "    {:<30} {:>14} {:>14} {:>14} {:>8}",
        terminal(&d.id),
        b,
        n,
        dd,
        pct
    )
}

fn device(out: &mut dyn Write, dd: &DiffDevice) -> io::Result<()> {
    let d = &dd.diff;
    let presence = match (d.in_base, d.in_new) {
        (true, false) => " (only in BASE)",
        (false, true) => " (only in NEW)",
        _ => "",
    };
    writeln!(out, "dev{}{presence}", d.device)?;
    for note in super::diff_lower_bounds(d.complete) {
        writeln!(out, "    note: {note}")?;
    }
    d.peak_moved.iter().try_for_each(|m| moved(out, m))?;
    writeln!(
        out,
        "    {:<30} {:>14} {:>14} {:>14} {:>8}",
        "figure", "base", "new", "change", "%"
    )?;
    for f in &d.figures {
        let bytes = Figure::from_id(&f.id).is_some_and(|f| f.is_bytes());
        delta_row(out, f, bytes)?;
    }
    if d.figures
        .iter()
        .any(|f| f.delta == 0 || percent(f).is_empty())
    {
        writeln!(
            out,
            "    (% blank: no change, or a base too small for a meaningful percentage: \
             under 1 MiB, under 1% of the allocated peak, or 0)"
        )?;
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
    if d.sites.is_empty() && dd.more_sites == 0 {
        writeln!(out, "    no change")?;
    }
    for s in &d.sites {
        writeln!(
            out,
            "    {:>14} {:<8} {}  ({} -> {})",
            ByteDelta(s.delta).to_string(),
            s.change.id(),
            terminal(&s.site),
            Bytes(s.base),
            Bytes(s.new)
        )?;
    }
    if dd.more_sites > 0 {
        writeln!(out, "    … {} more (--top)", dd.more_sites)?;
    }
    let categories = d
        .categories
        .iter()
        .filter(|c| c.delta != 0)
        .map(|c| c.id.as_str());
    let shown = categories.chain(d.sites.iter().map(|s| s.site.as_str()));
    for note in super::notes(shown) {
        writeln!(out, "  {note}")?;
    }
    Ok(())
}
