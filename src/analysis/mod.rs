//! Figures from a snapshot: peaks (replay), categories, sites.

mod types;

pub use types::{Categories, DeviceReport, Figure, Figures, PeakEntry, SiteBytes, StackGroup};
