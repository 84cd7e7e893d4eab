//! A guess at which torch (or torch_npu) produced a snapshot, from the keys
//! and actions its layout has. Shown in `inspect` and summary provenance.

use super::model::{Shape, Tables};

/// Layout features seen while building, for the torch generation guess.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Hints {
    /// Trace records with these actions or a `time_us` were collected.
    pub workspace_snapshot: bool,
    pub annotate: bool,
    pub timed: bool,
    pub host: bool,
    pub history: bool,
    pub block_address: bool,
    pub segment_pool_id: bool,
    /// `external_annotations` is a non-empty list.
    pub annotation_list: bool,
}

pub(crate) fn detect(snap: &Tables, hints: Hints) -> String {
    if snap.shape == Shape::List {
        return "torch 1.13 / memory_snapshot() list of segments".into();
    }
    // Noted while the records were collected: no pass over 80 MB of them.
    let (npu, annotate, timed) = (hints.workspace_snapshot, hints.annotate, hints.timed);
    let version = if hints.host || annotate {
        "torch 2.14+"
    } else if !snap.annotations.is_empty() || hints.annotation_list {
        "torch 2.5+"
    } else if snap.allocator_settings.is_some() {
        "torch 2.3+"
    } else if timed {
        "torch 2.2+"
    } else if hints.block_address || hints.segment_pool_id {
        "torch 2.1 style (no time_us)"
    } else if hints.history {
        "torch 2.0 style (block history)"
    } else {
        "torch 2.x dict"
    };
    if npu {
        format!("torch_npu ({version} layout)")
    } else {
        version.into()
    }
}
