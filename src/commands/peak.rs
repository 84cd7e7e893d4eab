//! `memgate peak`: Mosaic's three figures, the allocated and reserved peaks,
//! and the allocations live at the dynamic peak grouped by call stack.

use std::io::Write;

use serde_json::json;

use crate::analysis::DeviceReport;
use crate::snapshot::printable;
use crate::units::Bytes;

use super::analysed::{analyse_all, rules, Analysed};
use super::{write_json, Outcome, OutputFormat};

pub struct PeakOptions {
    pub snapshots: Vec<String>,
    pub format: OutputFormat,
    pub top: usize,
    pub rules: String,
}

/// `12.50 MiB (13107200 bytes)`.
pub(crate) fn bytes(n: u64) -> String {
    format!("{} ({n} bytes)", Bytes(n))
}

fn at(entry: Option<u64>, time: Option<u64>) -> String {
    match (entry, time) {
        (Some(i), Some(t)) => format!("  [entry {i}, time_us {t}]"),
        (Some(i), None) => format!("  [entry {i}]"),
        _ => String::new(),
    }
}

fn device_text(out: &mut dyn Write, d: &DeviceReport) -> std::io::Result<()> {
    let f = &d.figures;
    let pe = &d.peak_entry;
    let pt = d.peak_time_us.unwrap_or_default();
    writeln!(out, "  dev{}", d.device)?;
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
        "    trace: {} entries, {} allocs, {} OOMs{}",
        f.trace_entries,
        f.alloc_events,
        f.oom_events,
        if d.trace_complete {
            ""
        } else {
            "; trace incomplete (started mid-run)"
        }
    )?;
    for w in &d.warnings {
        writeln!(out, "    warning: {w}")?;
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
                .try_for_each(|fr| writeln!(out, "        {fr}"))?;
        } else {
            python
                .iter()
                .try_for_each(|fr| writeln!(out, "        {fr}"))?;
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

/// The SPEC §10 `{"path", "devices"}` object of one snapshot.
pub(crate) fn snapshot_json(a: &Analysed) -> serde_json::Value {
    json!({"path": a.path.display().to_string(), "devices": a.devices})
}

pub fn run(opts: &PeakOptions, out: &mut dyn Write) -> Outcome {
    let rules = match rules(&opts.rules) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let batch = analyse_all(&opts.snapshots, &rules, opts.top);
    let written = match opts.format {
        OutputFormat::Json => {
            let docs: Vec<_> = batch.done.iter().map(snapshot_json).collect();
            write_json(out, &json!({"schema_version": 1, "snapshots": docs}))
        }
        OutputFormat::Text => batch.done.iter().try_for_each(|a| {
            writeln!(out, "{}", printable(&a.path.display().to_string()))?;
            for w in &a.snapshot.warnings {
                writeln!(out, "  warning: {w}")?;
            }
            if a.devices.is_empty() {
                writeln!(out, "  no device has a trace or a segment")?;
            }
            a.devices.iter().try_for_each(|d| device_text(out, d))
        }),
    };
    let more = written
        .err()
        .map(|e| super::write_error(&e))
        .unwrap_or_default();
    batch.outcome(more)
}
