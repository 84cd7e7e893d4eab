//! `memgate phases` as text: per device a summary per name, then the
//! annotation events with the memory at each, the phase spans, the
//! iterations and the leak fit, each list as cut (with the count of the
//! rest).

use std::io::{self, Write};

use super::escape::terminal;
use crate::document::{PhasesDevice, PhasesDocument};
use crate::units::{counted, Bytes};

pub fn text(out: &mut dyn Write, doc: &PhasesDocument) -> io::Result<()> {
    doc.snapshots.iter().try_for_each(|s| {
        writeln!(out, "{}", terminal(&s.path))?;
        for w in &s.warnings {
            writeln!(out, "  warning: {}", terminal(w))?;
        }
        if s.devices.is_empty() {
            writeln!(out, "  {}", super::NO_DEVICE)?;
        }
        s.devices.iter().try_for_each(|d| device(out, d))
    })
}

/// `+1.234 s` where the trace has times, else nothing.
fn when(rel_s: Option<f64>) -> String {
    rel_s.map_or(String::new(), |r| format!("{r:+.3} s  "))
}

/// `entries 10..20`, or `no entries (at 10)`.
fn entries(from: u64, to: Option<u64>) -> String {
    match to {
        Some(t) => format!("entries {from}..{t}"),
        None => format!("no entries (at {from})"),
    }
}

/// `… and N more (--all lists every one)` after a cut list.
fn left_out(out: &mut dyn Write, n: u64, what: &str) -> io::Result<()> {
    if n > 0 {
        writeln!(out, "      … and {n} more {what} (--all lists every one)")?;
    }
    Ok(())
}

fn summary(out: &mut dyn Write, d: &PhasesDevice) -> io::Result<()> {
    if d.summary.is_empty() {
        return Ok(());
    }
    let names = d.summary.len() as u64 + d.summary_left_out;
    writeln!(
        out,
        "    {} (spans, trace entries inside them, largest allocated peak):",
        counted(names, "name", "names")
    )?;
    for n in &d.summary {
        writeln!(
            out,
            "      {:>7} {:>10} {:>12}  {}",
            n.spans,
            n.entries,
            Bytes(n.largest_allocated_peak).to_string(),
            terminal(&n.name)
        )?;
    }
    left_out(out, d.summary_left_out, "names")
}

fn device(out: &mut dyn Write, d: &PhasesDevice) -> io::Result<()> {
    writeln!(out, "  dev{}", d.device)?;
    if !d.trace_complete {
        writeln!(out, "    note: {}", super::LOWER_BOUNDS)?;
    }
    for w in &d.warnings {
        writeln!(out, "    warning: {}", terminal(w))?;
    }
    summary(out, d)?;
    if d.annotations.is_empty() && d.phases.is_empty() {
        writeln!(
            out,
            "    no annotations (record_function events need torch >= 2.5 and history on)"
        )?;
    } else if d.annotations.is_empty() {
        // Phases without annotations come from the [phases] stack rules.
        writeln!(out, "    no annotations; phases from the [phases] rules")?;
    } else {
        writeln!(
            out,
            "    {}:",
            counted(
                d.annotations.len() as u64 + d.annotations_left_out,
                "annotation event",
                "annotation events"
            )
        )?;
    }
    for a in &d.annotations {
        writeln!(
            out,
            "      {}entry {}  {}  dynamic {}  allocated {}",
            when(a.rel_s),
            a.entry,
            terminal(&a.key),
            Bytes(a.dynamic_usage),
            Bytes(a.allocated)
        )?;
    }
    left_out(out, d.annotations_left_out, "annotation events")?;
    if !d.phases.is_empty() {
        writeln!(
            out,
            "    {}:",
            counted(d.phases.len() as u64 + d.phases_left_out, "phase", "phases")
        )?;
    }
    for p in &d.phases {
        writeln!(
            out,
            "      {} #{}  {}{}  peak {}  live {} -> {}  allocated during {}",
            terminal(&p.name),
            p.occurrence,
            entries(p.from_entry, p.to_entry),
            if p.closed { "" } else { " (never ended)" },
            Bytes(p.allocated_peak),
            Bytes(p.live_at_start),
            Bytes(p.live_at_end),
            Bytes(p.allocated_during)
        )?;
    }
    left_out(out, d.phases_left_out, "phases")?;
    let Some(it) = &d.iterations else {
        return Ok(());
    };
    writeln!(
        out,
        "    {} (each starts at {}):",
        counted(
            it.items.len() as u64 + d.iterations_left_out,
            "iteration",
            "iterations"
        ),
        terminal(&it.boundary)
    )?;
    for i in &it.items {
        writeln!(
            out,
            "      #{}  {}  peak {}  live at start {}",
            i.index,
            entries(i.from_entry, i.to_entry),
            Bytes(i.allocated_peak),
            Bytes(i.live_at_start)
        )?;
    }
    left_out(out, d.iterations_left_out, "iterations")?;
    if let Some(p) = it.steady_state_peak {
        writeln!(out, "    steady-state peak (after the first): {}", Bytes(p))?;
    }
    match &it.leak {
        Some(l) => {
            let sign = if l.bytes_per_iteration < 0 { "-" } else { "+" };
            writeln!(
                out,
                "    leak: {sign}{} per iteration over {} (fit residual {})",
                Bytes(l.bytes_per_iteration.unsigned_abs()),
                counted(l.iterations, "iteration", "iterations"),
                Bytes(l.residual)
            )?;
        }
        None => writeln!(
            out,
            "    leak: not fitted (needs {} iterations after the first)",
            crate::analysis::phases::MIN_LEAK_POINTS
        )?,
    }
    Ok(())
}
