//! The typed snapshot: segments, blocks, per-device trace entries, and
//! interned frames and stacks. What analysis sees; no pickle, no key names.

use std::ops::{Deref, Range};
use std::sync::Arc;

use super::labels::{self, Labels, Listed, StackLabels};
use super::packed::Entries;
pub use super::packed::Trace;

pub(crate) use super::entry::{FrameId, StackId, EMPTY_STACK};
pub(crate) use crate::vocab::Device;

/// One `{filename, line, name}` frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Frame {
    pub(crate) name: u32,
    pub(crate) filename: u32,
    pub(crate) line: i64,
}

/// What kind of file the snapshot came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// A pickle; `None` when the stream has no `PROTO` (protocol 0 or 1).
    Pickle {
        protocol: Option<u8>,
    },
    Json,
}

/// The top-level shape of the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// torch ≥ 2.0: `{segments, device_traces, …}`.
    Dict,
    /// torch 1.13 and `memory_snapshot()` output: a list of segments.
    List,
}

impl Shape {
    pub(crate) fn id(self) -> &'static str {
        match self {
            Shape::Dict => "dict",
            Shape::List => "list",
        }
    }
}

pub use super::entry::{Action, TraceEntry};
pub(crate) use super::entry::{ActionCode, NO_CONTEXT, NO_META, NO_POOL, NO_TIME};

/// The stage of an `external_annotations` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    Start,
    End,
    /// Any other string: kept for its key, ignored for attribution.
    Other,
}

/// One `external_annotations` event (torch ≥ 2.5): a record_function
/// START or END.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Annotation {
    /// String id of `name`.
    pub(crate) name: u32,
    /// String id of `stage`, verbatim (for Mosaic's `NAME_STAGE` keys).
    pub(crate) stage_name: u32,
    pub(crate) stage: Stage,
    /// `device`; `None` when absent (then it applies to every device).
    pub(crate) device: Option<Device>,
    pub(crate) time_us: i64,
}

/// State of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockState {
    ActiveAllocated,
    /// `active_pending_free` (docstrings call it `active_awaiting_free`).
    ActivePendingFree,
    Inactive,
    Other,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Block {
    pub(crate) address: u64,
    pub(crate) size: u64,
    pub(crate) requested_size: u64,
    pub(crate) state: BlockState,
    pub(crate) stack: StackId,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub(crate) device: Device,
    pub(crate) address: u64,
    pub(crate) total_size: u64,
    pub(crate) allocated_size: u64,
    pub(crate) active_size: u64,
    pub(crate) requested_size: Option<u64>,
    pub(crate) stream: i64,
    /// `"large"`, `"small"`, or whatever the file said.
    pub(crate) segment_type: String,
    pub(crate) pool_id: Option<(u64, u64)>,
    pub(crate) is_expandable: bool,
    pub(crate) stack: StackId,
    pub(crate) blocks: Vec<Block>,
}

/// One `host_segments` item (torch ≥ 2.14, `record_pinned_host_memory`):
/// a pinned host block, which the host allocator never splits.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HostSegment {
    pub(crate) address: u64,
    pub(crate) size: u64,
    /// Handed to a caller at dump time (`allocated`).
    pub(crate) allocated: bool,
    pub(crate) stack: StackId,
}

/// A loaded snapshot: the file's decoded [`Tables`], shared by every use
/// of it (the MCP server's cache keeps them between calls), and what this
/// use's reports have listed so far, counted against the report limit
/// ([`labels`](super::labels)). Each use counts for itself: a cached
/// snapshot read by many calls never wears out.
#[derive(Debug)]
pub struct Snapshot {
    tables: Arc<Tables>,
    listed: Listed,
}

impl Deref for Snapshot {
    type Target = Tables;

    fn deref(&self) -> &Tables {
        &self.tables
    }
}

/// What a snapshot file decodes to, read through a [`Snapshot`].
#[derive(Debug)]
pub struct Tables {
    pub(crate) format: Format,
    pub(crate) shape: Shape,
    pub segments: Vec<Segment>,
    /// Per device ordinal (index of `device_traces`), a range into `entries`.
    pub(crate) traces: Vec<Range<usize>>,
    /// Every trace entry, packed ([`super::packed`]).
    pub(crate) entries: Entries,
    pub(crate) strings: Vec<Box<str>>,
    pub(crate) frames: Vec<Frame>,
    /// Stack `i` is `stack_frames[stack_spans[i]]`.
    pub(crate) stack_frames: Vec<FrameId>,
    pub(crate) stack_spans: Vec<Range<u32>>,
    pub(crate) unknown_actions: Vec<String>,
    /// The distinct trace-entry `pool_id`s (what [`TraceEntry::pool`]
    /// indexes).
    pub(crate) pool_ids: Vec<(u64, u64)>,
    /// `allocator_settings` (torch ≥ 2.3) as JSON, bounded in size.
    pub(crate) allocator_settings: Option<serde_json::Value>,
    /// `external_annotations` (torch ≥ 2.5) with a name, a stage and a
    /// `time_us`, in list order.
    pub(crate) annotations: Vec<Annotation>,
    /// `host_traces` (torch ≥ 2.14): a range into `entries`, empty when
    /// the file has none.
    pub(crate) host_trace: Range<usize>,
    /// `host_segments` (torch ≥ 2.14).
    pub(crate) host_segments: Vec<HostSegment>,
    /// Which torch generation the layout looks like, e.g. `"2.3+"`.
    pub(crate) generation: String,
    /// Bytes after the top-level `STOP`.
    pub(crate) trailing_bytes: u64,
    /// Things that look wrong but do not stop analysis.
    pub(crate) warnings: Vec<String>,
    /// Frame and stack labels, made once and shared by every report.
    pub(crate) labels: Labels,
}

impl Snapshot {
    /// The first use of freshly decoded tables.
    pub(crate) fn new(tables: Tables) -> Snapshot {
        Snapshot {
            tables: Arc::new(tables),
            listed: Listed::default(),
        }
    }

    #[cfg(feature = "mcp")]
    /// Another use of the same tables, with a report count of its own
    /// (one MCP call on a cached snapshot).
    pub(crate) fn reuse(&self) -> Snapshot {
        Snapshot {
            tables: Arc::clone(&self.tables),
            listed: Listed::default(),
        }
    }

    /// Whether `other` is a use of the same tables.
    #[cfg(all(test, feature = "mcp"))]
    pub(crate) fn shares_tables(&self, other: &Snapshot) -> bool {
        Arc::ptr_eq(&self.tables, &other.tables)
    }

    /// A stack's frame labels, innermost first, made once and shared by
    /// every report that lists the stack. Making them and each listing
    /// count against this use's report limit ([`labels`](super::labels));
    /// past it the list is one marker line and
    /// [`Snapshot::labels_overflow`] says so.
    pub fn stack_labels(&self, stack: StackId) -> StackLabels {
        self.labels_of(stack, true)
    }

    /// [`Snapshot::stack_labels`] for a renderer that folds the stack to a
    /// few lines (the HTML page): only making the labels counts.
    pub(crate) fn stack_labels_folded(&self, stack: StackId) -> StackLabels {
        self.labels_of(stack, false)
    }

    fn labels_of(&self, stack: StackId, listed: bool) -> StackLabels {
        let frames = self.stack(stack);
        let label = |f: FrameId| self.labels.frame(f.index(), || self.frame_label(f));
        let cost = self.labels.cost(stack.index(), || {
            frames.iter().map(|&f| labels::frame_cost(&label(f))).sum()
        });
        let made = self.labels.made(stack.index());
        let within =
            (made.is_some() || self.listed.count(cost)) && (!listed || self.listed.count(cost));
        if !within {
            return Arc::from([Arc::from(labels::OVER_BUDGET)]);
        }
        made.unwrap_or_else(|| {
            self.labels
                .stack(stack.index(), || frames.iter().map(|&f| label(f)).collect())
        })
    }

    /// The frame bytes this use's reports listed, when past the report limit.
    pub(crate) fn labels_overflow(&self) -> Option<u64> {
        self.listed.overflow()
    }
}

impl Tables {
    /// Devices with a non-empty trace or any segment, ascending.
    pub fn devices(&self) -> Vec<Device> {
        let mut out: Vec<Device> = self
            .traces
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.is_empty())
            // At most MAX_DEVICES trace lists (build refuses more): it fits.
            .filter_map(|(d, _)| Device::try_from(d).ok())
            .chain(self.segments.iter().map(|s| s.device))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The trace of a device, oldest first (empty if it has none).
    pub fn trace(&self, device: Device) -> Trace<'_> {
        match self.traces.get(device.index()) {
            Some(r) => self.entries.range(r.clone()),
            None => self.entries.range(0..0),
        }
    }

    /// The `host_traces` entries (pinned host memory), oldest first.
    pub(crate) fn host_trace(&self) -> Trace<'_> {
        self.entries.range(self.host_trace.clone())
    }

    /// Whether the file records pinned host memory (a host trace entry or
    /// a host segment): docs/figures.md#pinned-host-memory.
    pub(crate) fn has_host(&self) -> bool {
        !self.host_trace.is_empty() || !self.host_segments.is_empty()
    }

    /// Number of `device_traces` lists in the file.
    pub(crate) fn trace_lists(&self) -> usize {
        self.traces.len()
    }

    /// The annotation events of `device` (and those naming no device), in
    /// list order.
    pub(crate) fn annotations_of(&self, device: Device) -> impl Iterator<Item = &Annotation> {
        self.annotations
            .iter()
            .filter(move |a| a.device.is_none_or(|d| d == device))
    }

    /// An entry's `pool_id`, if it has the key.
    pub(crate) fn entry_pool(&self, e: &TraceEntry) -> Option<(u64, u64)> {
        self.pool_ids.get(usize::from(e.pool)).copied()
    }

    /// An entry's `compile_context`, if it has the key.
    pub(crate) fn context(&self, e: &TraceEntry) -> Option<&str> {
        (e.context != NO_CONTEXT).then(|| self.str(e.context))
    }

    pub(crate) fn segments_of(&self, device: Device) -> impl Iterator<Item = &Segment> {
        self.segments.iter().filter(move |s| s.device == device)
    }

    pub fn stack(&self, id: StackId) -> &[FrameId] {
        let r = &self.stack_spans[id.index()];
        &self.stack_frames[r.start as usize..r.end as usize]
    }

    pub(crate) fn stack_count(&self) -> usize {
        self.stack_spans.len()
    }

    pub(crate) fn frame(&self, id: FrameId) -> &Frame {
        &self.frames[id.index()]
    }

    pub(crate) fn str(&self, id: u32) -> &str {
        &self.strings[id as usize]
    }

    pub(crate) fn frame_name(&self, id: FrameId) -> &str {
        self.str(self.frame(id).name)
    }

    pub(crate) fn frame_file(&self, id: FrameId) -> &str {
        self.str(self.frame(id).filename)
    }

    /// `name (file:line)`, the way stacks are printed; unescaped (the
    /// renderers escape for their sink: `report::escape`).
    pub fn frame_label(&self, id: FrameId) -> String {
        let f = self.frame(id);
        format!("{} ({}:{})", self.str(f.name), self.str(f.filename), f.line)
    }

    #[cfg(feature = "mcp")]
    /// The heap these tables hold, and at most will hold once every label
    /// is made (what the MCP cache counts): each table's slots, each
    /// string with the allocator's per-allocation cost, and the labels'
    /// largest size (`Labels::most_bytes`) before any is made.
    pub(crate) fn heap_bytes(&self) -> u64 {
        // What a vector's buffer holds, spare capacity included.
        fn slots<T>(v: &Vec<T>) -> u64 {
            let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
            (bytes as u64).saturating_add(labels::ALLOCATION)
        }
        fn text(s: &str) -> u64 {
            s.len() as u64 + labels::ALLOCATION
        }
        let strings: u64 = self.strings.iter().map(|t| text(t)).sum();
        let blocks: u64 = self.segments.iter().map(|g| slots(&g.blocks)).sum();
        let segment_types: u64 = self.segments.iter().map(|g| text(&g.segment_type)).sum();
        let words: u64 = (self.unknown_actions.iter().chain(&self.warnings))
            .map(|t| text(t))
            .sum();
        // `name (file:line)`: the two strings, up to 20 digits and 4 marks,
        // in a shared (`Arc`) allocation.
        let frame_labels: u64 = (self.frames.iter())
            .map(|f| text(self.str(f.name)) + text(self.str(f.filename)) + 24 + 16)
            .sum();
        [
            slots(&self.segments),
            blocks,
            segment_types,
            slots(&self.traces),
            self.entries.heap_bytes(),
            slots(&self.strings),
            strings,
            slots(&self.frames),
            slots(&self.stack_frames),
            slots(&self.stack_spans),
            words,
            slots(&self.annotations),
            slots(&self.pool_ids),
            slots(&self.host_segments),
            self.allocator_settings.as_ref().map_or(0, json_heap),
            text(&self.generation),
            (self.labels).most_bytes(frame_labels, self.stack_frames.len() as u64),
        ]
        .into_iter()
        .fold(0, u64::saturating_add)
    }

    pub fn action_name(&self, a: Action) -> &str {
        match a {
            Action::Other(i) => &self.unknown_actions[i as usize],
            known => Action::KNOWN
                .iter()
                .find(|(k, _)| *k == known)
                .map(|(_, n)| *n)
                .unwrap_or("?"),
        }
    }

    /// Whether any entry of any device carries `time_us`.
    pub(crate) fn has_time(&self) -> bool {
        self.entries.iter().any(|e| e.time_us != NO_TIME)
    }

    /// Distinct frames and stacks used by segments, blocks and device traces
    /// (`unique-frames`, `unique-stacks`; the empty stack counts when used).
    pub fn unique_frames_and_stacks(&self) -> (usize, usize) {
        let mut used_stack = vec![false; self.stack_spans.len()];
        for s in &self.segments {
            used_stack[s.stack.index()] = true;
            for b in &s.blocks {
                used_stack[b.stack.index()] = true;
            }
        }
        for r in &self.traces {
            for e in self.entries.range(r.clone()) {
                used_stack[e.stack.index()] = true;
            }
        }
        let mut used_frame = vec![false; self.frames.len()];
        let mut stacks = 0;
        // Stack ids are the positions of `stack_spans`, all 32-bit ids.
        for (id, used) in (0..=u32::MAX).map(StackId::from_raw).zip(&used_stack) {
            if *used {
                stacks += 1;
                for &f in self.stack(id) {
                    used_frame[f.index()] = true;
                }
            }
        }
        (used_frame.iter().filter(|u| **u).count(), stacks)
    }
}

#[cfg(feature = "mcp")]
/// About the heap a JSON value holds: a node each, and its text.
fn json_heap(v: &serde_json::Value) -> u64 {
    const NODE: u64 = 64;
    match v {
        serde_json::Value::String(s) => NODE + s.len() as u64,
        serde_json::Value::Array(a) => a.iter().map(json_heap).fold(NODE, u64::saturating_add),
        serde_json::Value::Object(m) => m
            .iter()
            .map(|(k, v)| NODE + k.len() as u64 + json_heap(v))
            .fold(NODE, u64::saturating_add),
        _ => NODE,
    }
}
