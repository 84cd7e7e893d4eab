//! `memgate inspect`: what is in a file, without analysis.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde_json::json;

use crate::input;
use crate::snapshot::{self, printable, Action, Format, Snapshot};

use super::{write_json, Outcome, OutputFormat};

pub struct InspectOptions {
    pub snapshots: Vec<String>,
    pub format: OutputFormat,
}

/// Per-action counts of one device, known actions in allocator order
/// (a map: a hostile trace can hold a thousand distinct actions).
fn action_counts(snap: &Snapshot, device: u32) -> Vec<(String, u64)> {
    // Known actions in a flat table (one add per entry), the rest in the map.
    let mut known = [0u64; Action::KNOWN.len()];
    let mut counts: BTreeMap<Action, u64> = BTreeMap::new();
    for e in snap.trace(device) {
        match e.action.known_index() {
            Some(i) => known[i] += 1,
            None => *counts.entry(e.action).or_default() += 1,
        }
    }
    for (i, n) in known.into_iter().enumerate() {
        if n > 0 {
            counts.insert(Action::KNOWN[i].0, n);
        }
    }
    counts
        .into_iter()
        .map(|(a, n)| (snap.action_name(a).to_string(), n))
        .collect()
}

/// The SPEC §10 `inspect` object of one snapshot.
pub fn inspect_json(path: &Path, snap: &Snapshot) -> serde_json::Value {
    let (frames, stacks) = snap.unique_frames_and_stacks();
    let protocol = match snap.format {
        Format::Pickle { protocol } => json!(protocol.unwrap_or(0)),
        Format::Json => serde_json::Value::Null,
    };
    // One pass over the segments, not one per device: a hostile file can
    // give every segment its own device ordinal.
    let mut segments_per_device: BTreeMap<u32, usize> = BTreeMap::new();
    for s in &snap.segments {
        *segments_per_device.entry(s.device).or_default() += 1;
    }
    let devices: Vec<_> = snap
        .devices()
        .into_iter()
        .map(|d| {
            let actions: serde_json::Map<String, serde_json::Value> = action_counts(snap, d)
                .into_iter()
                .map(|(a, n)| (a, json!(n)))
                .collect();
            json!({
                "device": d,
                "segments": segments_per_device.get(&d).copied().unwrap_or(0),
                "trace-entries": snap.trace(d).len(),
                "actions": actions,
            })
        })
        .collect();
    json!({
        "path": path.display().to_string(),
        "format": match snap.format { Format::Pickle { .. } => "pickle", Format::Json => "json" },
        "pickle-protocol": protocol,
        "shape": snap.shape.id(),
        "generation": snap.generation,
        "segments": snap.segments.len(),
        "blocks": snap.segments.iter().map(|s| s.blocks.len()).sum::<usize>(),
        "unique-frames": frames,
        "unique-stacks": stacks,
        "trace-lists": snap.trace_lists(),
        "trailing-bytes": snap.trailing_bytes,
        "devices": devices,
        "warnings": snap.warnings,
    })
}

fn inspect_text(out: &mut dyn Write, v: &serde_json::Value) -> std::io::Result<()> {
    writeln!(out, "{}", printable(v["path"].as_str().unwrap_or("")))?;
    let proto = match &v["pickle-protocol"] {
        serde_json::Value::Null => "JSON".to_string(),
        p => format!("pickle protocol {p}"),
    };
    writeln!(
        out,
        "  {proto}, {} shape, {}",
        v["shape"].as_str().unwrap_or(""),
        v["generation"].as_str().unwrap_or("")
    )?;
    writeln!(
        out,
        "  {} segments, {} blocks, {} unique frames, {} unique stacks",
        v["segments"], v["blocks"], v["unique-frames"], v["unique-stacks"]
    )?;
    for d in v["devices"].as_array().into_iter().flatten() {
        let actions: Vec<String> = d["actions"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, n)| format!("{} {n}", printable(k)))
            .collect();
        writeln!(
            out,
            "  dev{}: {} segments, {} trace entries{}{}",
            d["device"],
            d["segments"],
            d["trace-entries"],
            if actions.is_empty() { "" } else { ": " },
            actions.join(", ")
        )?;
    }
    for w in v["warnings"].as_array().into_iter().flatten() {
        writeln!(out, "  warning: {}", w.as_str().unwrap_or(""))?;
    }
    Ok(())
}

pub fn run(opts: &InspectOptions, out: &mut dyn Write) -> Outcome {
    let paths = match input::expand(&opts.snapshots, None) {
        Ok(p) => p,
        Err(errors) => return Outcome::errors(errors),
    };
    let results = input::par_map(&paths, |p| snapshot::load(p).map(|s| inspect_json(p, &s)));
    let mut errors = Vec::new();
    let mut docs = Vec::new();
    for r in results {
        match r {
            Ok(v) => docs.push(v),
            Err(e) => errors.push(e.to_string()),
        }
    }
    let written = match opts.format {
        OutputFormat::Json => write_json(out, &json!({"schema_version": 1, "snapshots": docs})),
        OutputFormat::Text => docs.iter().try_for_each(|d| inspect_text(out, d)),
    };
    if let Err(e) = written {
        errors.extend(super::write_error(&e));
    }
    Outcome::from_errors(errors)
}
