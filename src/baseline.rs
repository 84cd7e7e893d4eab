//! The summary JSON (`memgate summarize`): the golden file a repo commits
//! and the baseline `check` compares against.

use serde::{Deserialize, Serialize};

use crate::analysis::DeviceReport;

/// Bumped only on an incompatible change of the summary layout.
pub const SCHEMA_VERSION: u32 = 1;
/// The `kind` every summary carries, so it is told from a snapshot JSON.
pub const SUMMARY_KIND: &str = "memgate-summary";

/// One snapshot's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Summary {
    pub schema_version: u32,
    pub kind: String,
    pub provenance: Provenance,
    pub devices: Vec<DeviceReport>,
}

/// Where the figures came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Provenance {
    /// File name as given (the stem names the summary and matches baselines).
    pub file: String,
    pub size: u64,
    pub sha256: String,
    /// `pickle` or `json`.
    pub format: String,
    #[serde(default)]
    pub pickle_protocol: Option<u8>,
    /// `dict` or `list`.
    pub shape: String,
    /// The torch generation the layout looks like.
    pub generation: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocator_settings: Option<serde_json::Value>,
    pub memgate_version: String,
}
