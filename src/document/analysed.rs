//! The documents of `memgate peak` and `memgate profile` (docs/figures.md#json-documents): each
//! snapshot's path and the analysis of every device. The two commands
//! share the shape but not the version: either may grow alone.

use std::path::Path;

use serde::ser::{Error as _, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::analysis::{DeviceReport, WindowError};

/// One analysed snapshot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnalysedSnapshot {
    pub path: String,
    #[serde(serialize_with = "with_shares")]
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

/// Each device's report with `shares` right after its `figures`: the
/// figures that are also read (and budgeted) as a share of another, as a
/// fraction of it. Today one, `cached-free-at-reserved-peak` over
/// `reserved-peak` (docs/figures.md#cached-free-at-reserved-peak), left
/// out with nothing reserved. Summaries keep the bytes only: the share is
/// derived from them.
fn with_shares<S: Serializer>(devices: &[DeviceReport], s: S) -> Result<S::Ok, S::Error> {
    let mut seq = s.serialize_seq(Some(devices.len()))?;
    for d in devices {
        let Value::Object(report) = serde_json::to_value(d).map_err(S::Error::custom)? else {
            return Err(S::Error::custom("a device report is an object"));
        };
        let mut out = serde_json::Map::new();
        for (k, v) in report {
            let after_figures = k == "figures";
            out.insert(k, v);
            if let Some(share) = d.figures.cached_free_ratio().filter(|_| after_figures) {
                let id = crate::vocab::Figure::CachedFreeAtReservedPeak.id();
                let shares = serde_json::Map::from_iter([(id.to_string(), Value::from(share))]);
                out.insert("shares".into(), Value::Object(shares));
            }
        }
        seq.serialize_element(&out)?;
    }
    seq.end()
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
