//! The documents of `memgate peak` and `memgate profile` (docs/figures.md#json-documents): each
//! snapshot's path and the analysis of every device. The two commands
//! share the shape but not the version: either may grow alone.

use std::path::Path;

use serde::Serialize;

use crate::analysis::{DeviceReport, WindowError};

/// One analysed snapshot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnalysedSnapshot {
    pub path: String,
    pub devices: Vec<DeviceReport>,
    /// The devices the `--window` places nothing on, each with why: they
    /// have no figures (`window-not-placed` in the JSON, a line in text).
    #[serde(rename = "window-not-placed", skip_serializing_if = "Vec::is_empty")]
    pub window_not_placed: Vec<WindowError>,
    /// The loader's warnings: printed in text, not part of the JSON
    /// (docs/figures.md#json-documents fixes its keys; `inspect` lists them).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

impl AnalysedSnapshot {
    pub(crate) fn new(
        path: &Path,
        devices: Vec<DeviceReport>,
        window_not_placed: Vec<WindowError>,
        warnings: Vec<String>,
    ) -> AnalysedSnapshot {
        AnalysedSnapshot {
            path: path.display().to_string(),
            devices,
            window_not_placed,
            warnings,
        }
    }
}

/// `memgate peak`: Mosaic's figures and the stacks live at the peak.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeakDocument {
    pub(crate) schema_version: u32,
    pub(crate) snapshots: Vec<AnalysedSnapshot>,
}

impl PeakDocument {
    pub const SCHEMA_VERSION: u32 = 1;

    pub fn new(snapshots: Vec<AnalysedSnapshot>) -> PeakDocument {
        PeakDocument {
            schema_version: Self::SCHEMA_VERSION,
            snapshots,
        }
    }
}

/// `memgate profile`: bytes per category and allocation site.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileDocument {
    pub(crate) schema_version: u32,
    pub(crate) snapshots: Vec<AnalysedSnapshot>,
}

impl ProfileDocument {
    pub const SCHEMA_VERSION: u32 = 1;

    pub fn new(snapshots: Vec<AnalysedSnapshot>) -> ProfileDocument {
        ProfileDocument {
            schema_version: Self::SCHEMA_VERSION,
            snapshots,
        }
    }
}
