//! The typed documents the analysis commands produce, one per command, each
//! with its own `SCHEMA_VERSION`: what `--format json` writes and what every
//! renderer in [`crate::report`] reads. `memgate summarize` writes
//! [`crate::baseline::Summary`]; `memgate check` the
//! [`crate::compare::Verdict`].
//!
//! Field order is the JSON key order (serde_json keeps insertion order), so
//! `schema_version` comes first where the document has it first.

pub(crate) mod analysed;
pub(crate) mod diff;
pub(crate) mod inspect;
pub(crate) mod phases;

pub use analysed::{AnalysedSnapshot, PeakDocument, ProfileDocument};
pub use diff::{DiffDevice, DiffDocument};
pub use inspect::{DeviceInventory, FileFormat, InspectDocument, SnapshotInventory};
pub use phases::{NameSummary, PhasedSnapshot, PhasesDevice, PhasesDocument, LIST_LIMIT};
