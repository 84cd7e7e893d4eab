//! `memgate profile` as text: per device, bytes per category at the two
//! peaks and each category's own peak, then the allocation sites.

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::escape::terminal;
use crate::analysis::DeviceReport;
use crate::document::ProfileDocument;
use crate::units::Bytes;

pub fn text(out: &mut dyn Write, doc: &ProfileDocument) -> io::Result<()> {
    doc.snapshots.iter().try_for_each(|a| {
        writeln!(out, "{}", terminal(&a.path))?;
        a.devices.iter().try_for_each(|d| device(out, d))
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
    writeln!(
        out,
        "    {:<20} {:>18} {:>18} {:>18}",
        "category", "at allocated peak", "at dynamic peak", "own peak"
    )?;
    let mut names: Vec<&String> = c.at_allocated_peak.keys().collect();
    // Largest at the allocated peak first; empty categories last.
    names.sort_by(|a, b| {
        c.at_allocated_peak[*b]
            .cmp(&c.at_allocated_peak[*a])
            .then(a.cmp(b))
    });
    for name in names {
        let get = |m: &BTreeMap<String, u64>| m.get(name).copied().unwrap_or(0);
        if get(&c.peaks) == 0 && get(&c.at_allocated_peak) == 0 && get(&c.at_dynamic_peak) == 0 {
            continue;
        }
        writeln!(
            out,
            "    {:<20} {:>18} {:>18} {:>18}",
            terminal(name),
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
