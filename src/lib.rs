//! memgate: a CI memory-regression gate for PyTorch allocator snapshots.
//!
//! `pickle` decodes data-only pickles, `snapshot` builds the typed model,
//! `analysis` computes the figures, `budget` / `compare` judge them, and
//! `report` renders the verdict.

pub mod analysis;
pub mod baseline;
pub(crate) mod beneath;
pub(crate) mod budget;
#[cfg(feature = "cli")]
pub mod cli;
pub mod commands;
pub(crate) mod compare;
pub(crate) mod convert;
pub mod document;
pub mod error;
pub(crate) mod files;
pub mod input;
#[cfg(feature = "mcp")]
pub mod mcp;
pub(crate) mod owners;
pub(crate) mod patterns;
pub mod pickle;
pub mod platform;
pub(crate) mod prefault;
pub mod report;
#[cfg(feature = "schema")]
pub mod schema;
pub mod snapshot;
pub(crate) mod toml_error;
pub(crate) mod units;
pub(crate) mod vocab;
pub(crate) mod walk;

/// A budget (or a rules file) given as data, the Python API's way in.
pub use budget::{budget_from_data, figure_ids, parse_size, validate_data, ConfigError};
/// The device ordinal every document and report carries.
pub use vocab::Device;
pub use vocab::NoStory;
