//! `memgate peak` as text: Mosaic's three figures in Mosaic's words, the
//! allocated and reserved peaks, and the stacks live at the dynamic peak.

use std::io::{self, Write};

use super::escape::terminal;
use crate::analysis::DeviceReport;
use crate::document::PeakDocument;
use crate::units::{counted, Bytes};

pub fn text(out: &mut dyn Write, doc: &PeakDocument) -> io::Result<()> {
    doc.snapshots.iter().try_for_each(|a| {
        writeln!(out, "{}", terminal(&a.path))?;
        for w in &a.warnings {
            writeln!(out, "  warning: {}", terminal(w))?;
        }
        if a.devices.is_empty() {
            writeln!(out, "  no device has a trace or a segment")?;
        }
        a.devices.iter().try_for_each(|d| device(out, d))
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

fn device(out: &mut dyn Write, d: &DeviceReport) -> io::Result<()> {
    let f = &d.figures;
    let pe = &d.peak_entry;
    let pt = d.peak_time_us.unwrap_or_default();
    writeln!(out, "  dev{}{}", d.device, super::window_note(d))?;
    writeln!(
        out,
        "    Total Peak Dynamic Memory Usage (Relative to Start): {}{}",
        bytes(f.dynamic_peak),
        at(pe.dynamic_peak, pt.dynamic_peak)
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
        at(pe.allocated_peak, pt.allocated_peak)
    )?;
    writeln!(
        out,
        "    reserved peak (segments): {}{}",
        bytes(f.reserved_peak),
        at(pe.reserved_peak, pt.reserved_peak)
    )?;
    writeln!(
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
    )?;
    for w in &d.warnings {
        writeln!(out, "    warning: {}", terminal(w))?;
    }
    if !d.stacks_at_peak.is_empty() {
        writeln!(
            out,
            "    live at the dynamic peak, by call stack (largest first):"
        )?;
    }
    for g in &d.stacks_at_peak {
        writeln!(
            out,
            "      Num of Calls: {}, Memory Usage: {}",
            g.count,
            bytes(g.bytes)
        )?;
        // Python frames only: the C++ frames of a real stack run to dozens
        // of lines (JSON keeps them all).
        let python: Vec<&String> = g.frames.iter().filter(|f| f.contains(".py:")).collect();
        if g.frames.is_empty() {
            writeln!(out, "        (no frames recorded)")?;
        } else if python.is_empty() {
            g.frames
                .iter()
                .try_for_each(|fr| writeln!(out, "        {}", terminal(fr)))?;
        } else {
            python
                .iter()
                .try_for_each(|fr| writeln!(out, "        {}", terminal(fr)))?;
            let hidden = g.frames.len() - python.len();
            if hidden > 0 {
                writeln!(
                    out,
                    "        (+{hidden} C++ frames; --format json lists them)"
                )?;
            }
        }
    }
    Ok(())
}
