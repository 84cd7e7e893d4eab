//! Snapshot loading: detects the file kind, decodes, and builds the typed
//! model. The only code that knows PyTorch's key names.

mod build;
mod collect;
mod generation;
mod json;
mod load;
mod model;

pub use load::{detect, load, load_bytes, FileKind, LoadError};
pub use model::{
    Action, Block, BlockState, Device, Format, Frame, FrameId, Segment, Shape, Snapshot, StackId,
    TraceEntry, EMPTY_STACK, NO_TIME,
};

#[cfg(test)]
mod tests;
