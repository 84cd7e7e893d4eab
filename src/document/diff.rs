//! `memgate diff`'s document: figure, category and site deltas per device
//! between two analyses of the same job.

use serde::{Serialize, Serializer};

use crate::analysis::diff::DeviceDiff;

/// The differences between BASE and NEW.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffDocument {
    pub(crate) schema_version: u32,
    /// The arguments as given.
    pub(crate) base: String,
    pub(crate) new: String,
    /// `FROM..TO` when both sides are the figures of a window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) window: Option<String>,
    pub(crate) devices: Vec<DiffDevice>,
}

impl DiffDocument {
    pub const SCHEMA_VERSION: u32 = 1;

    /// The document listing at most `top` sites per device (largest change
    /// first, as `diffs` has them).
    pub fn new(base: &str, new: &str, diffs: Vec<DeviceDiff>, top: usize) -> DiffDocument {
        let devices = diffs
            .into_iter()
            .map(|mut diff| {
                let more_sites = diff.sites.len().saturating_sub(top);
                diff.sites.truncate(top);
                DiffDevice { diff, more_sites }
            })
            .collect();
        DiffDocument {
            schema_version: Self::SCHEMA_VERSION,
            base: base.to_string(),
            new: new.to_string(),
            window: None,
            devices,
        }
    }

    /// The document of two analyses inside `window` (as written).
    pub fn in_window(mut self, window: Option<String>) -> DiffDocument {
        self.window = window;
        self
    }
}

/// One device's differences, its site list cut at `--top`.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffDevice {
    pub(crate) diff: DeviceDiff,
    /// Changed sites beyond the cut: the text says how many, the JSON
    /// (schema 1) does not.
    pub(crate) more_sites: usize,
}

impl Serialize for DiffDevice {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.diff.serialize(s)
    }
}
