//! The summary JSON (`memgate summarize`): the golden file a repo commits
//! and the baseline `check` compares against.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::analysis::{analyze, DeviceReport, RuleSet};
use crate::snapshot::{self, Format, LoadError, Snapshot};

/// Bumped only on an incompatible change of the summary layout.
pub const SCHEMA_VERSION: u32 = 1;
/// The `kind` every summary carries, so it is told from a snapshot JSON.
pub const SUMMARY_KIND: &str = "memgate-summary";

/// One snapshot's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Summary {
    /// `schema_version` (SPEC §10 spelling, like every JSON output), first.
    #[serde(rename = "schema_version")]
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

/// Analyse a snapshot file into its summary (what `memgate summarize`
/// writes and `check` compares against): figures, categories and the top
/// `top` sites per device; no stack groups.
pub fn summarize_file(path: &Path, rules: &RuleSet, top: usize) -> Result<Summary, LoadError> {
    let snap = snapshot::load(path)?;
    let mut devices = analyze(&snap, rules, top);
    // SPEC §2: a *small* file (figures, categories, top sites, provenance);
    // full stacks with C++ frames would make it hundreds of KiB.
    for d in &mut devices {
        d.stacks_at_peak.clear();
    }
    summarize(path, &snap, devices)
}

/// The summary of an already analysed snapshot (hashes the file again,
/// streaming).
pub fn summarize(
    path: &Path,
    snap: &Snapshot,
    devices: Vec<DeviceReport>,
) -> Result<Summary, LoadError> {
    let (size, sha256) = sha256_file(path).map_err(|e| LoadError::new(path, e))?;
    let (format, pickle_protocol) = match snap.format {
        Format::Pickle { protocol } => ("pickle", protocol),
        Format::Json => ("json", None),
    };
    Ok(Summary {
        schema_version: SCHEMA_VERSION,
        kind: SUMMARY_KIND.to_string(),
        provenance: Provenance {
            file: path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_else(|| path.display().to_string()),
            size,
            sha256,
            format: format.to_string(),
            pickle_protocol,
            shape: snap.shape.id().to_string(),
            generation: snap.generation.clone(),
            allocator_settings: snap.allocator_settings.clone(),
            memgate_version: env!("CARGO_PKG_VERSION").to_string(),
        },
        devices,
    })
}

/// Size and hex SHA-256 of a file, read in chunks.
fn sha256_file(path: &Path) -> Result<(u64, String), String> {
    let mut file = File::open(path).map_err(|e| format!("cannot be read: {e}"))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| format!("cannot be read: {e}"))?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buf[..n]);
    }
    let digest = hasher.finalize();
    Ok((size, digest.iter().map(|b| format!("{b:02x}")).collect()))
}

/// Whether a file is a memgate summary (a JSON object whose first keys are
/// `schema_version` and `kind`), judged from its first bytes.
pub fn is_summary(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    let mut head = Vec::with_capacity(512);
    if file.take(512).read_to_end(&mut head).is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&head);
    text.trim_start().starts_with('{') && text.contains(SUMMARY_KIND)
}

/// Read a summary JSON written by `summarize`; a snapshot, another kind of
/// JSON or another schema version is refused with a message naming the file.
pub fn read_summary(path: &Path) -> Result<Summary, String> {
    let name = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: cannot be read: {e}"))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{name}: invalid JSON: {e}"))?;
    match value.get("kind").and_then(|k| k.as_str()) {
        Some(SUMMARY_KIND) => {}
        Some(other) => {
            return Err(format!(
                "{name}: a {other:?} JSON, not a memgate summary (kind {SUMMARY_KIND:?})"
            ))
        }
        None => {
            return Err(format!(
                "{name}: not a memgate summary (no \"kind\": {SUMMARY_KIND:?}); write one with \
                 `memgate summarize`"
            ))
        }
    }
    match value.get("schema_version").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(SCHEMA_VERSION) => {}
        Some(v) => {
            return Err(format!(
                "{name}: summary schema_version {v}, this memgate reads {SCHEMA_VERSION}; \
                 regenerate it with `memgate summarize`"
            ))
        }
        None => return Err(format!("{name}: summary without a schema_version")),
    }
    serde_json::from_value(value).map_err(|e| format!("{name}: malformed summary: {e}"))
}
