//! `memgate profile` as text: per device, bytes per category (or per
//! annotation, or per compile context) at the two peaks and each one's own
//! peak, then the allocation sites.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use super::escape::terminal;
use crate::analysis::{DeviceReport, GroupBy};
use crate::document::ProfileDocument;
use crate::units::Bytes;

pub fn text(out: &mut dyn Write, doc: &ProfileDocument) -> io::Result<()> {
    let mut explained = Vec::new();
    doc.snapshots.iter().try_for_each(|a| {
        writeln!(out, "{}", terminal(&a.path))?;
        if a.devices.is_empty() {
            writeln!(out, "  {}", super::NO_DEVICE)?;
        }
        super::window_not_placed(out, &a.window_not_placed)?;
        a.devices.iter().try_for_each(|d| {
            device(out, d)?;
            let new = super::unexplained(super::category_and_site_names(d), &mut explained);
            super::legend_lines(out, "    ", &new)
        })
    })
}

fn device(out: &mut dyn Write, d: &DeviceReport) -> io::Result<()> {
    let c = &d.categories;
    writeln!(
        out,
        "  dev{} (rules: {}){}",
        d.device,
        terminal(&c.rules),
        super::window_note(d)
    )?;
    if !d.trace_complete {
        writeln!(out, "    note: {}", super::LOWER_BOUNDS)?;
    }
    // Grouped by annotation or compile context, `rules` names the grouping.
    let column = if c.rules == GroupBy::Annotation.id() {
        "annotation"
    } else if c.rules == GroupBy::CompileContext.id() {
        "compile context"
    } else if c.rules.starts_with(GroupBy::UserMetadata(None).id()) {
        "user metadata"
    } else {
        "category"
    };
    writeln!(
        out,
        "    {:<20} {:>18} {:>18} {:>18}",
        column, "at allocated peak", "at dynamic peak", "own peak"
    )?;
    // A group may be listed at one peak and not yet at the other.
    let mut names: Vec<&String> = (c.at_allocated_peak.keys())
        .chain(c.at_dynamic_peak.keys())
        .chain(c.peaks.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let at_allocated = |n: &String| c.at_allocated_peak.get(n).copied().unwrap_or(0);
    // The custom categories first, in rule order, listed at 0 B too (a rule
    // that matched nothing says so); then the others, largest at the
    // allocated peak first, empty ones left out.
    let custom = |n: &String| c.custom.iter().position(|x| x == n);
    names.sort_by(|a, b| match (custom(a), custom(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => at_allocated(b).cmp(&at_allocated(a)).then(a.cmp(b)),
    });
    for name in names {
        let get = |m: &BTreeMap<String, u64>| m.get(name).copied().unwrap_or(0);
        let empty =
            get(&c.peaks) == 0 && get(&c.at_allocated_peak) == 0 && get(&c.at_dynamic_peak) == 0;
        if empty && custom(name).is_none() {
            continue;
        }
        // The group outside every annotation is named "": show the quotes.
        let shown = if name.is_empty() {
            "\"\"".to_string()
        } else {
            terminal(name).to_string()
        };
        writeln!(
            out,
            "    {:<20} {:>18} {:>18} {:>18}",
            shown,
            Bytes(get(&c.at_allocated_peak)).to_string(),
            Bytes(get(&c.at_dynamic_peak)).to_string(),
            Bytes(get(&c.peaks)).to_string()
        )?;
    }
    writeln!(
        out,
        "    {:<20} {:>18} {:>18}",
        "total",
        Bytes(d.figures.allocated_peak).to_string(),
        Bytes(d.figures.dynamic_peak).to_string()
    )?;
    if !d.sites_at_peak.is_empty() {
        writeln!(
            out,
            "    allocation sites at the allocated peak (largest first):"
        )?;
    }
    for s in &d.sites_at_peak {
        writeln!(
            out,
            "    {:>12} {:>6}x  {}",
            Bytes(s.bytes).to_string(),
            s.count,
            terminal(&s.site)
        )?;
    }
    Ok(())
}
