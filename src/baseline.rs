//! The summary JSON (`memgate summarize`): the golden file a repo commits
//! and the baseline `check` compares against.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::analysis::sites::portable_names;
use crate::analysis::{DeviceReport, SiteBytes};
use crate::snapshot::{self, Content, FileDigest, Format, Hint, LoadError, Snapshot};

/// Bumped only on an incompatible change of the summary layout.
pub const SCHEMA_VERSION: u32 = 1;
/// The `kind` every summary carries, so it is told from a snapshot JSON.
pub const SUMMARY_KIND: &str = "memgate-summary";

/// What a summary's `site-names` says when its site names are portable
/// (docs/figures.md#stacks-and-sites).
pub const PORTABLE_SITE_NAMES: &str = "portable";

/// One snapshot's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct Summary {
    /// `schema_version` (spelled as docs/figures.md#json-documents says, like every JSON output), first.
    #[serde(rename = "schema_version")]
    pub schema_version: u32,
    pub kind: String,
    pub provenance: Provenance,
    /// [`PORTABLE_SITE_NAMES`]; absent in a summary of an older memgate,
    /// whose site names hold the paths as recorded: they are made portable
    /// when it is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site_names: Option<String>,
    pub devices: Vec<DeviceReport>,
}

/// Where the figures came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

/// The summary of an already analysed snapshot whose file has `digest`
/// (`memgate summarize` reads and analyses it).
pub(crate) fn summarize(
    path: &Path,
    snap: &Snapshot,
    digest: FileDigest,
    mut devices: Vec<DeviceReport>,
) -> Summary {
    // The stacks at a chosen moment are for reading a run, not for
    // comparing runs: a summary stays small. The peaks' places and the
    // first OOMs (docs/figures.md#oom) stay, so a diff against a summary can say a
    // peak moved.
    for d in &mut devices {
        d.stacks_at_moment = None;
        // Where the files were on this machine: not the golden's business.
        for s in &mut d.sites_at_peak {
            s.recorded = None;
        }
    }
    let (format, pickle_protocol) = match snap.format {
        Format::Pickle { protocol } => ("pickle", protocol),
        Format::Json => ("json", None),
    };
    Summary {
        schema_version: SCHEMA_VERSION,
        kind: SUMMARY_KIND.to_string(),
        provenance: Provenance {
            file: path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_else(|| path.display().to_string()),
            size: digest.size,
            sha256: digest.sha256,
            format: format.to_string(),
            pickle_protocol,
            shape: snap.shape.id().to_string(),
            generation: snap.generation.clone(),
            allocator_settings: snap.allocator_settings.clone(),
            memgate_version: env!("CARGO_PKG_VERSION").to_string(),
        },
        site_names: Some(PORTABLE_SITE_NAMES.to_string()),
        devices,
    }
}

/// Read a summary JSON written by `summarize`; a snapshot, another kind of
/// JSON or another schema version is refused with a message naming the file.
pub fn read_summary(path: &Path) -> Result<Summary, LoadError> {
    match snapshot::read_input(path)? {
        Content::Document(value) => Summary::from_document(path, value),
        Content::Snapshot(_) => Err(not_a_summary(path)),
    }
}

fn not_a_summary(path: &Path) -> LoadError {
    let message = format!("not a memgate summary (no \"kind\": {SUMMARY_KIND:?})");
    LoadError::new(path, message).with_hint(Hint::WriteSummary)
}

impl Summary {
    /// The summary in a memgate document read from `path`; another kind of
    /// document or another schema version is refused, naming the file.
    pub(crate) fn from_document(
        path: &Path,
        value: serde_json::Value,
    ) -> Result<Summary, LoadError> {
        let refuse = |message: String| Err(LoadError::new(path, message));
        match value.get("kind").and_then(|k| k.as_str()) {
            Some(SUMMARY_KIND) => {}
            Some(other) => {
                return refuse(format!(
                    "a {other:?} JSON, not a memgate summary (kind {SUMMARY_KIND:?})"
                ))
            }
            None => return Err(not_a_summary(path)),
        }
        match value.get("schema_version").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(SCHEMA_VERSION) => {}
            Some(v) => {
                let message =
                    format!("summary schema_version {v}, this memgate reads {SCHEMA_VERSION}");
                return Err(LoadError::new(path, message).with_hint(Hint::RegenerateSummary));
            }
            None => return refuse("summary without a schema_version".into()),
        }
        let mut summary: Summary =
            serde_json::from_value(value).or_else(|e| refuse(format!("malformed summary: {e}")))?;
        if summary.site_names.is_none() {
            portable_sites(&mut summary.devices);
        }
        Ok(summary)
    }
}

/// The sites of a summary written before site names were portable, renamed
/// as docs/figures.md#sites says (the root found from all its devices'
/// sites); sites that become one are added together and the list sorted
/// again. A device whose names do not change is left as it is.
fn portable_sites(devices: &mut [DeviceReport]) {
    let names: Vec<&str> = devices
        .iter()
        .flat_map(|d| &d.sites_at_peak)
        .map(|s| s.site.as_str())
        .collect();
    let mut renamed = portable_names(&names).into_iter();
    for d in devices {
        let new: Vec<String> = renamed.by_ref().take(d.sites_at_peak.len()).collect();
        if new.iter().zip(&d.sites_at_peak).all(|(n, s)| *n == s.site) {
            continue;
        }
        let mut merged: BTreeMap<String, SiteBytes> = BTreeMap::new();
        for (site, s) in new.into_iter().zip(&d.sites_at_peak) {
            let m = merged.entry(site.clone()).or_insert(SiteBytes {
                site,
                bytes: 0,
                count: 0,
                recorded: None,
            });
            m.bytes = m.bytes.saturating_add(s.bytes);
            m.count = m.count.saturating_add(s.count);
        }
        let mut sites: Vec<SiteBytes> = merged.into_values().collect();
        sites.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.site.cmp(&b.site)));
        d.sites_at_peak = sites;
    }
}
