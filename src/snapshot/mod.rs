//! Snapshot loading: detects the file kind, decodes, and builds the typed
//! model. The only code that knows PyTorch's key names.

mod build;
mod collect;
mod generation;
mod json;
pub(crate) mod labels;
mod load;
mod model;
mod unique_keys;

pub use labels::StackLabels;
#[cfg(feature = "mcp")]
pub(crate) use load::load_opened;
pub use load::{load, load_bytes, Hint, LoadError};
pub(crate) use load::{read_input, read_input_hashed, Content, FileDigest};
pub(crate) use model::{
    Action, Annotation, BlockState, Device, Format, FrameId, Segment, StackId, Stage, TraceEntry,
};
#[cfg(test)]
pub(crate) use model::{Block, NO_CONTEXT, NO_TIME};
pub use model::{Snapshot, Tables};

#[cfg(test)]
mod tests;
