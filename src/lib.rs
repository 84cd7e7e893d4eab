//! memgate: a CI memory-regression gate for PyTorch allocator snapshots.
//!
//! `pickle` decodes data-only pickles, `snapshot` builds the typed model,
//! `analysis` computes the figures, `budget` / `compare` judge them, and
//! `report` renders the verdict.

pub mod analysis;
pub mod baseline;
pub mod budget;
pub mod commands;
pub mod compare;
pub mod document;
pub mod error;
pub mod files;
pub mod input;
pub mod pickle;
pub mod prefault;
pub mod report;
pub mod snapshot;
pub mod units;
pub mod vocab;
pub mod walk;
