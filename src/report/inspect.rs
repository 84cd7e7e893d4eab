//! `memgate inspect` as text: one block per file, one line per device.

use std::io::{self, Write};

use super::escape::terminal;
use crate::document::{InspectDocument, SnapshotInventory};
use crate::units::counted;

pub fn text(out: &mut dyn Write, doc: &InspectDocument) -> io::Result<()> {
    doc.snapshots.iter().try_for_each(|s| snapshot(out, s))
}

fn snapshot(out: &mut dyn Write, s: &SnapshotInventory) -> io::Result<()> {
    writeln!(out, "{}", terminal(&s.path))?;
    let proto = match s.pickle_protocol {
        None => "JSON".to_string(),
        Some(p) => format!("pickle protocol {p}"),
    };
    writeln!(
        out,
        "  {proto}, {} shape, {}",
        s.shape,
        terminal(&s.generation)
    )?;
    writeln!(
        out,
        "  {}, {}, {}, {}",
        counted(s.segments as u64, "segment", "segments"),
        counted(s.blocks as u64, "block", "blocks"),
        counted(s.unique_frames as u64, "unique frame", "unique frames"),
        counted(s.unique_stacks as u64, "unique stack", "unique stacks")
    )?;
    for d in &s.devices {
        let actions: Vec<String> = d
            .actions
            .iter()
            .map(|(k, n)| format!("{} {n}", terminal(k)))
            .collect();
        writeln!(
            out,
            "  dev{}: {}, {}{}{}",
            d.device,
            counted(d.segments as u64, "segment", "segments"),
            counted(d.trace_entries as u64, "trace entry", "trace entries"),
            if actions.is_empty() { "" } else { ": " },
            actions.join(", ")
        )?;
    }
    for w in &s.warnings {
        writeln!(out, "  warning: {}", terminal(w))?;
    }
    Ok(())
}
