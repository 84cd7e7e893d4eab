//! Snapshot loading: detects the file kind, decodes, and builds the typed
//! model. The only code that knows PyTorch's key names.

mod build;
mod collect;
mod generation;
mod json;
mod load;
mod model;

pub use load::{
    detect_bytes, load, load_bytes, read_input, read_input_hashed, Content, FileDigest, FileKind,
    LoadError, DOCUMENT_KEYS,
};
pub use model::{
    Action, Block, BlockState, Device, Format, Frame, FrameId, Segment, Shape, Snapshot, StackId,
    TraceEntry, EMPTY_STACK, NO_TIME,
};

#[cfg(test)]
mod tests;
