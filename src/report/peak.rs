//! `memgate peak` as text: Mosaic's three figures in Mosaic's words, the
//! allocated and reserved peaks, each with where it falls (entry, time since
//! the first timed entry, phase, iteration), the OOMs in detail, and the
//! stacks live at the chosen peak, folded for reading ([`super::frames`]).

use std::io::{self, Write};

use super::escape::terminal;
use super::frames;
use crate::analysis::{DeviceReport, DumpState, OomDetail, PeakAt, Place};
use crate::document::PeakDocument;
use crate::units::{counted, Bytes};
use crate::vocab::NoStory;

pub fn text(out: &mut dyn Write, doc: &PeakDocument) -> io::Result<()> {
    let mut explained = Vec::new();
    doc.snapshots.iter().try_for_each(|a| {
        writeln!(out, "{}", terminal(&a.path))?;
        for w in &a.warnings {
            writeln!(out, "  warning: {}", terminal(w))?;
        }
        if a.devices.is_empty() {
            writeln!(out, "  {}", super::NO_DEVICE)?;
        }
        super::window_not_placed(out, &a.window_not_placed)?;
        a.devices.iter().try_for_each(|d| {
            device(out, d)?;
            let new = super::unexplained(shown_names(d), &mut explained);
            super::legend_lines(out, "    ", &new)
        })
    })
}

/// `12.50 MiB (13107200 bytes)`.
fn bytes(n: u64) -> String {
    format!("{} ({n} bytes)", Bytes(n))
}

fn at(entry: Option<u64>, time: Option<u64>) -> String {
    match (entry, time) {
        (Some(i), Some(t)) => format!("  [entry {i}, time_us {t}]"),
        (Some(i), None) => format!("  [entry {i}]"),
        _ => String::new(),
    }
}

/// `entry 2780, +1.234 s, phase: forward, iteration 1` (the time only
/// where the entry has one; the iteration only where there are some),
/// unescaped: the caller escapes for its medium.
pub(crate) fn place(p: &Place) -> String {
    let mut s = format!("entry {}", p.entry);
    if let Some(t) = p.rel_s {
        s.push_str(&format!(", +{t:.3} s"));
    }
    if p.annotation.is_empty() {
        s.push_str(", phase: (none)");
    } else {
        s.push_str(&format!(", phase: {}", p.annotation));
    }
    if let Some(k) = p.iteration {
        s.push_str(&format!(", iteration {k}"));
    }
    s
}

/// Where a peak falls: its place when known, else entry and raw time.
fn where_(d: &DeviceReport, which: PeakAt, entry: Option<u64>, time: Option<u64>) -> String {
    match d.peak_phase.as_ref().and_then(|p| p.of(which)) {
        Some(p) => format!("  [{}]", terminal(&place(p))),
        None => at(entry, time),
    }
}

/// `allocated`, `dynamic` or `reserved`: a peak in running text.
pub(crate) fn peak_name(at: PeakAt) -> &'static str {
    match at {
        PeakAt::AllocatedPeak => "allocated",
        PeakAt::DynamicPeak => "dynamic",
        PeakAt::ReservedPeak => "reserved",
    }
}

fn device(out: &mut dyn Write, d: &DeviceReport) -> io::Result<()> {
    if let Some(h) = d.host.filter(|h| h.only) {
        writeln!(out, "  {}", super::host::HOST_ONLY)?;
        return super::host::lines(out, "    ", &h);
    }
    let f = &d.figures;
    let pe = &d.peak_entry;
    let pt = d.peak_time_us.unwrap_or_default();
    writeln!(out, "  dev{}{}", d.device, super::window_note(d))?;
    writeln!(
        out,
        "    Total Peak Dynamic Memory Usage (Relative to Start): {}{}",
        bytes(f.dynamic_peak),
        where_(d, PeakAt::DynamicPeak, pe.dynamic_peak, pt.dynamic_peak)
    )?;
    writeln!(
        out,
        "    Total Static Memory Usage (estimated by PyTorch visualizer): {}",
        bytes(f.static_memory)
    )?;
    writeln!(
        out,
        "    Total Overall Peak Memory Usage (Dynamic + Static): {}",
        bytes(f.overall_peak)
    )?;
    writeln!(
        out,
        "    allocated peak (MemoryViz active memory): {}{}",
        bytes(f.allocated_peak),
        where_(
            d,
            PeakAt::AllocatedPeak,
            pe.allocated_peak,
            pt.allocated_peak
        )
    )?;
    writeln!(
        out,
        "    reserved peak (segments): {}{}",
        bytes(f.reserved_peak),
        where_(d, PeakAt::ReservedPeak, pe.reserved_peak, pt.reserved_peak)
    )?;
    writeln!(
        out,
        "    cached free at the reserved peak: {}{}; segments: {} ({} while the free cache covered the request), {}",
        bytes(f.cached_free_at_reserved_peak),
        f.cached_free_ratio()
            .map_or_else(String::new, |r| format!(", {:.0}% of reserved", r * 100.0)),
        counted(f.segment_allocs, "allocated", "allocated"),
        f.segment_allocs_with_free_cache,
        counted(f.segment_frees, "freed", "freed"),
    )?;
    if let Some(device) = d.environment.as_ref().and_then(|e| e.device_memory) {
        let share = |v: u64| format!("{:.0}%", v as f64 * 100.0 / device.max(1) as f64);
        writeln!(
            out,
            "    device memory (recorded): {}; allocated peak {}, reserved peak {} of it",
            bytes(device),
            share(f.allocated_peak),
            share(f.reserved_peak)
        )?;
    }
    if let Some(h) = &d.host {
        super::host::lines(out, "    ", h)?;
    }
    match &d.dump {
        Some(dump) => dump_lines(out, dump)?,
        None => writeln!(
            out,
            "    trace: {}, {}, {}{}",
            counted(f.trace_entries, "entry", "entries"),
            counted(f.alloc_events, "alloc", "allocs"),
            counted(f.oom_events, "OOM", "OOMs"),
            if d.trace_complete {
                ""
            } else {
                "; trace incomplete (started mid-run)"
            }
        )?,
    }
    for w in &d.warnings {
        writeln!(out, "    warning: {}", terminal(w))?;
    }
    pool_lines(out, d)?;
    ooms(out, d)?;
    stack_lines(out, d)
}

/// One line per memory pool (docs/figures.md#pools), for a device with more
/// than the default pool.
fn pool_lines(out: &mut dyn Write, d: &DeviceReport) -> io::Result<()> {
    if d.pools.is_empty() {
        return Ok(());
    }
    writeln!(out, "    memory pools:")?;
    for p in &d.pools {
        writeln!(
            out,
            "      {} ({}): allocated peak {}, reserved peak {}; {} at the device's allocated peak, \
             {} cached free at its reserved peak",
            p.name,
            p.kind.id(),
            Bytes(p.allocated_peak),
            Bytes(p.reserved_peak),
            Bytes(p.at_allocated_peak),
            Bytes(p.cached_free_at_reserved_peak),
        )?;
    }
    Ok(())
}

/// The stacks [`stack_lines`] lists: those at the peak `--at` names, else
/// at the dynamic peak.
fn listed_stacks(d: &DeviceReport) -> (PeakAt, &[crate::analysis::StackGroup]) {
    match &d.stacks_at_moment {
        Some(m) => (m.at, &m.stacks),
        None => (PeakAt::DynamicPeak, &d.stacks_at_peak),
    }
}

/// The names of memory with no story this device's text shows: its stack
/// groups and the dump's blocks without frames.
fn shown_names(d: &DeviceReport) -> impl Iterator<Item = &str> {
    let blocks = d.dump.iter().flat_map(|x| &x.largest_live);
    listed_stacks(d)
        .1
        .iter()
        .filter_map(|g| g.no_frames.map(NoStory::id))
        .chain(blocks.filter_map(|b| b.no_frames.map(NoStory::id)))
}

/// The stacks live at the chosen peak, each group's frames folded; a
/// group without frames by its name (docs/figures.md#memory-with-no-story).
fn stack_lines(out: &mut dyn Write, d: &DeviceReport) -> io::Result<()> {
    let (which, stacks) = listed_stacks(d);
    if !stacks.is_empty() {
        writeln!(
            out,
            "    live at the {} peak, by call stack (largest first; --format json lists every frame):",
            peak_name(which)
        )?;
    }
    for g in stacks {
        writeln!(
            out,
            "      Num of Calls: {}, Memory Usage: {}",
            g.count,
            bytes(g.bytes)
        )?;
        if !g.user_metadata.is_empty() {
            let mut by: Vec<(&String, &u64)> = g.user_metadata.iter().collect();
            by.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let list: Vec<String> = by
                .iter()
                .map(|(m, b)| format!("{} ({})", terminal(m), Bytes(**b)))
                .collect();
            writeln!(out, "        user metadata: {}", list.join(", "))?;
        }
        if g.frames.is_empty() {
            let name = g.no_frames.unwrap_or(NoStory::Frameless);
            writeln!(out, "        {name} (no frames)")?;
        }
        for l in frames::folded(&g.frames) {
            writeln!(out, "        {l}")?;
        }
    }
    Ok(())
}

/// A device without allocation history: that it has none, so nothing is
/// known of its peaks over time or its OOMs, and what the dump shows.
fn dump_lines(out: &mut dyn Write, dump: &DumpState) -> io::Result<()> {
    writeln!(
        out,
        "    trace: none: the snapshot holds no allocation history (recorded with \
         history off), so the peaks over time and any out-of-memory event are unknown"
    )?;
    writeln!(
        out,
        "    the dump shows: live {} in {}, reserved {}, cached free {}, largest free block {}",
        bytes(dump.live),
        counted(dump.live_blocks, "block", "blocks"),
        bytes(dump.reserved),
        bytes(dump.cached_free),
        bytes(dump.largest_free_block)
    )?;
    if !dump.largest_live.is_empty() {
        writeln!(out, "    largest live blocks of the dump:")?;
    }
    for b in &dump.largest_live {
        writeln!(out, "      {} at {:#x}", bytes(b.bytes), b.address)?;
        if let Some(name) = b.no_frames {
            writeln!(out, "        {name} (no frames)")?;
        }
        for l in frames::folded(&b.frames) {
            writeln!(out, "        {l}")?;
        }
    }
    Ok(())
}

/// `; cause: fragmentation (4 GiB cached free, largest free block 1 GiB)`
/// (docs/figures.md#oom-cause), or nothing for a summary written before
/// causes were kept.
pub(crate) fn oom_cause(o: &OomDetail) -> String {
    o.cause.map_or_else(String::new, |c| {
        format!(
            "; cause: {} ({} cached free, largest free block {})",
            c.id(),
            Bytes(o.cached_free),
            Bytes(o.largest_free_block)
        )
    })
}

/// Each detailed OOM: what it asked for, what was free, the memory then,
/// where it falls and its stack; then how many more there were.
fn ooms(out: &mut dyn Write, d: &DeviceReport) -> io::Result<()> {
    let total = d.figures.oom_events;
    for (k, o) in d.oom.iter().enumerate() {
        let p = Place {
            annotation: o.phase.clone(),
            iteration: o.iteration,
            entry: o.entry,
            rel_s: o.rel_s,
        };
        writeln!(
            out,
            "    OOM {} of {total}: requested {}, device free {}; allocated {}, reserved {}  [{}]",
            k + 1,
            bytes(o.requested),
            bytes(o.device_free),
            bytes(o.allocated),
            bytes(o.reserved),
            terminal(&place(&p))
        )?;
        let cause = oom_cause(o);
        if !cause.is_empty() {
            writeln!(out, "      {}", cause.trim_start_matches("; "))?;
        }
        for l in frames::folded(&o.frames) {
            writeln!(out, "        {l}")?;
        }
    }
    let more = total.saturating_sub(d.oom.len() as u64);
    if !d.oom.is_empty() && more > 0 {
        writeln!(
            out,
            "    … {more} more OOMs (only the first {} are detailed)",
            d.oom.len()
        )?;
    }
    Ok(())
}
