//! `memgate inspect`'s document (docs/figures.md#json-documents): what is in each file, counted
//! without analysis.

use crate::vocab::Device;
use std::collections::BTreeMap;
use std::path::Path;

use serde::{Serialize, Serializer};

use crate::snapshot::{Action, Format, Snapshot};

/// Every inspected file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InspectDocument {
    pub(crate) schema_version: u32,
    pub(crate) snapshots: Vec<SnapshotInventory>,
}

impl InspectDocument {
    pub const SCHEMA_VERSION: u32 = 1;

    pub fn new(snapshots: Vec<SnapshotInventory>) -> InspectDocument {
        InspectDocument {
            schema_version: Self::SCHEMA_VERSION,
            snapshots,
        }
    }
}

/// How a snapshot file is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileFormat {
    Pickle,
    Json,
}

/// One file's counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct SnapshotInventory {
    pub path: String,
    pub format: FileFormat,
    /// The pickle protocol (0 when the stream has no `PROTO`); `None` for JSON.
    pub pickle_protocol: Option<u8>,
    /// `dict` or `list` (docs/figures.md#inputs).
    pub shape: &'static str,
    pub generation: String,
    pub segments: usize,
    pub blocks: usize,
    pub unique_frames: usize,
    pub unique_stacks: usize,
    pub trace_lists: usize,
    pub trailing_bytes: u64,
    pub devices: Vec<DeviceInventory>,
    pub warnings: Vec<String>,
}

/// One device's counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct DeviceInventory {
    pub device: Device,
    pub segments: usize,
    pub trace_entries: usize,
    /// Entries per action name, known actions first in allocator order,
    /// then unknown ones as the snapshot lists them; a JSON object.
    #[serde(serialize_with = "as_map")]
    pub actions: Vec<(String, u64)>,
}

fn as_map<S: Serializer>(pairs: &[(String, u64)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(pairs.iter().map(|(k, v)| (k, v)))
}

impl SnapshotInventory {
    /// The counts of one loaded snapshot.
    pub fn of(path: &Path, snap: &Snapshot) -> SnapshotInventory {
        let (unique_frames, unique_stacks) = snap.unique_frames_and_stacks();
        // One pass over the segments, not one per device: a hostile file can
        // give every segment its own device ordinal.
        let mut segments_per_device: BTreeMap<Device, usize> = BTreeMap::new();
        for s in &snap.segments {
            *segments_per_device.entry(s.device).or_default() += 1;
        }
        let devices = snap
            .devices()
            .into_iter()
            .map(|d| DeviceInventory {
                device: d,
                segments: segments_per_device.get(&d).copied().unwrap_or(0),
                trace_entries: snap.trace(d).len(),
                actions: action_counts(snap, d),
            })
            .collect();
        let (format, pickle_protocol) = match snap.format {
            Format::Pickle { protocol } => (FileFormat::Pickle, Some(protocol.unwrap_or(0))),
            Format::Json => (FileFormat::Json, None),
        };
        SnapshotInventory {
            path: path.display().to_string(),
            format,
            pickle_protocol,
            shape: snap.shape.id(),
            generation: snap.generation.clone(),
            segments: snap.segments.len(),
            blocks: snap.segments.iter().map(|s| s.blocks.len()).sum(),
            unique_frames,
            unique_stacks,
            trace_lists: snap.trace_lists(),
            trailing_bytes: snap.trailing_bytes,
            devices,
            warnings: snap.warnings.clone(),
        }
    }
}

/// Per-action counts of one device, known actions in allocator order
/// (a map: a hostile trace can hold a thousand distinct actions).
fn action_counts(snap: &Snapshot, device: Device) -> Vec<(String, u64)> {
    // Known actions in a flat table (one add per entry), the rest in the map.
    let mut known = [0u64; Action::KNOWN.len()];
    let mut counts: BTreeMap<Action, u64> = BTreeMap::new();
    for e in snap.trace(device) {
        match e.action().known_index() {
            Some(i) => known[i] += 1,
            None => *counts.entry(e.action()).or_default() += 1,
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
