//! Snapshot loading: detects the file kind, decodes, and builds the typed
//! model. The only code that knows PyTorch's key names.

mod build;
mod canonical;
mod collect;
mod entry;
mod generation;
mod json;
pub(crate) mod labels;
mod load;
mod model;
mod packed;
mod unique_keys;

pub use labels::StackLabels;
#[cfg(feature = "mcp")]
pub(crate) use load::load_opened;
pub(crate) use load::{digest_of, read_input, read_input_hashed, Content, FileDigest};
pub use load::{load, load_bytes, load_bytes_checked, load_bytes_general, Hint, LoadError};
#[cfg(test)]
pub(crate) use model::NO_POOL;
pub(crate) use model::{
    Action, Annotation, Block, BlockState, Device, Format, FrameId, HostSegment, Segment, StackId,
    Stage, TraceEntry, EMPTY_STACK, NO_META,
};
pub use model::{Snapshot, Tables, Trace};
#[cfg(test)]
pub(crate) use model::{NO_CONTEXT, NO_TIME};
#[cfg(test)]
pub(crate) use packed::Entries;

#[cfg(test)]
mod run_tests;
#[cfg(test)]
mod tests;
