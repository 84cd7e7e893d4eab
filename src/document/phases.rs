//! The document of `memgate phases` (docs/figures.md#time-structure): per snapshot and device,
//! the annotation events with the memory at each, the phase spans, and the
//! iterations with their leak fit.

use std::path::Path;

use serde::Serialize;

use crate::analysis::DevicePhases;

/// One snapshot's time structure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhasedSnapshot {
    pub path: String,
    pub devices: Vec<DevicePhases>,
    /// The loader's warnings: printed in text, not part of the JSON.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

impl PhasedSnapshot {
    pub(crate) fn new(
        path: &Path,
        devices: Vec<DevicePhases>,
        warnings: Vec<String>,
    ) -> PhasedSnapshot {
        PhasedSnapshot {
            path: path.display().to_string(),
            devices,
            warnings,
        }
    }
}

/// `memgate phases`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhasesDocument {
    pub(crate) schema_version: u32,
    pub(crate) snapshots: Vec<PhasedSnapshot>,
}

impl PhasesDocument {
    pub const SCHEMA_VERSION: u32 = 1;

    pub fn new(snapshots: Vec<PhasedSnapshot>) -> PhasesDocument {
        PhasesDocument {
            schema_version: Self::SCHEMA_VERSION,
            snapshots,
        }
    }
}
