//! The ids of the interned tables and the trace entry: what a decode
//! writes per trace record, and the packed trace ([`super::packed`])
//! stores.

/// A 32-bit index into one of the snapshot's interned tables: its own type
/// per table, so a frame id can never be passed where a stack id is meant.
macro_rules! interned_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(u32);

        impl $name {
            /// The id from its raw value (the pickle arena folds ids as `u32`).
            pub(crate) const fn from_raw(raw: u32) -> $name {
                $name(raw)
            }

            /// The raw 32-bit value, for the arena's folded values.
            pub(crate) const fn raw(self) -> u32 {
                self.0
            }

            /// The position in the table it indexes (`u32` fits `usize` on
            /// every target memgate builds for).
            pub(crate) fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl TryFrom<usize> for $name {
            type Error = std::num::TryFromIntError;

            /// The id of the next table slot; fails past `u32::MAX` (a
            /// hostile file's table is refused, never wrapped).
            fn try_from(position: usize) -> Result<$name, Self::Error> {
                u32::try_from(position).map($name)
            }
        }
    };
}

interned_id!(
    /// Index of an interned frame.
    FrameId
);
interned_id!(
    /// Index of an interned stack (a frame sequence, innermost first).
    StackId
);
/// The stack id of the empty stack (always interned first).
pub(crate) const EMPTY_STACK: StackId = StackId::from_raw(0);

/// A trace action. Unknown actions are kept by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Snapshot,
    Oom,
    Annotate,
    WorkspaceSnapshot,
    /// Index into [`Snapshot::unknown_actions`].
    Other(u16),
}

impl Action {
    pub(crate) const KNOWN: [(Action, &'static str); 11] = [
        (Action::Alloc, "alloc"),
        (Action::FreeRequested, "free_requested"),
        (Action::FreeCompleted, "free_completed"),
        (Action::SegmentAlloc, "segment_alloc"),
        (Action::SegmentFree, "segment_free"),
        (Action::SegmentMap, "segment_map"),
        (Action::SegmentUnmap, "segment_unmap"),
        (Action::Snapshot, "snapshot"),
        (Action::Oom, "oom"),
        (Action::Annotate, "annotate"),
        (Action::WorkspaceSnapshot, "workspace_snapshot"),
    ];

    pub(crate) fn from_known(name: &str) -> Option<Action> {
        Self::KNOWN
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(a, _)| *a)
    }

    /// Index in [`Action::KNOWN`], `None` for an unknown action.
    pub(crate) fn known_index(self) -> Option<usize> {
        Some(match self {
            Action::Alloc => 0,
            Action::FreeRequested => 1,
            Action::FreeCompleted => 2,
            Action::SegmentAlloc => 3,
            Action::SegmentFree => 4,
            Action::SegmentMap => 5,
            Action::SegmentUnmap => 6,
            Action::Snapshot => 7,
            Action::Oom => 8,
            Action::Annotate => 9,
            Action::WorkspaceSnapshot => 10,
            Action::Other(_) => return None,
        })
    }
}

/// Sentinel for "no `time_us`" (NPU, torch ≤ 2.1).
pub(crate) const NO_TIME: i64 = i64::MIN;

/// One trace entry, as analysis reads it; stored packed in 22 bytes
/// ([`super::packed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceEntry {
    /// `addr`; for `oom` entries the `device_free` value.
    pub addr: u64,
    pub size: u64,
    /// µs since the epoch, or [`NO_TIME`].
    pub time_us: i64,
    pub stack: StackId,
    /// `compile_context` (torch ≥ 2.8) as a string id, or [`NO_CONTEXT`].
    /// (`stream` is checked while loading but not kept: no figure reads
    /// it, and its 8 bytes are what this field fits in.)
    pub(crate) context: u32,
    /// `user_metadata` (torch ≥ 2.10) as a string id, or [`NO_META`] when
    /// missing or empty; for an `annotate` entry, its note.
    pub(crate) meta: u32,
    /// `pool_id` as an index into [`Tables::pool_ids`], or [`NO_POOL`]
    /// (docs/figures.md#pools): at most `MAX_POOLS` (4096) pools, so 16
    /// bits, which with the 16-bit action keeps the entry at 40 bytes.
    pub(crate) pool: u16,
    /// The action, read through [`TraceEntry::action`].
    pub(crate) action: ActionCode,
}

// Issue 33: entries are handed around by value (a packed trace gives no
// references into itself); keep one at five words.
const _: () = assert!(std::mem::size_of::<TraceEntry>() == 40);

/// An [`Action`] in 16 bits: the position in [`Action::KNOWN`], or past
/// it the index of an unknown action (at most `MAX_UNKNOWN_ACTIONS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ActionCode(u16);

/// How many codes the known actions take.
const KNOWN_CODES: u16 = 11;
const _: () = assert!(Action::KNOWN.len() == KNOWN_CODES as usize);

impl ActionCode {
    /// The code of `a`; `None` for an unknown action whose index does not
    /// fit beside the known ones (the collector stops far below).
    pub(crate) fn new(a: Action) -> Option<ActionCode> {
        match a {
            Action::Other(i) => i.checked_add(KNOWN_CODES).map(ActionCode),
            // Below KNOWN_CODES, so it fits.
            known => known
                .known_index()
                .and_then(|k| u16::try_from(k).ok())
                .map(ActionCode),
        }
    }

    /// The code as stored ([`super::packed`]).
    pub(crate) fn raw(self) -> u16 {
        self.0
    }

    /// A code read back from [`ActionCode::raw`].
    pub(crate) fn from_raw(raw: u16) -> ActionCode {
        ActionCode(raw)
    }

    fn action(self) -> Action {
        match Action::KNOWN.get(usize::from(self.0)) {
            Some((a, _)) => *a,
            None => Action::Other(self.0 - KNOWN_CODES),
        }
    }
}

#[cfg(test)]
impl From<Action> for ActionCode {
    /// For tests that build entries by hand (their actions always fit).
    fn from(a: Action) -> ActionCode {
        ActionCode::new(a).expect("a test's action fits 16 bits")
    }
}

/// Sentinel for "no `compile_context` key".
pub(crate) const NO_CONTEXT: u32 = u32::MAX;

/// Sentinel for "no `pool_id` key".
pub(crate) const NO_POOL: u16 = u16::MAX;
/// Sentinel for "no `user_metadata`, or an empty one".
pub(crate) const NO_META: u32 = u32::MAX;

impl TraceEntry {
    /// What the entry records (`alloc`, `free_completed`, …).
    #[inline]
    pub fn action(&self) -> Action {
        self.action.action()
    }

    pub(crate) fn time(&self) -> Option<i64> {
        (self.time_us != NO_TIME).then_some(self.time_us)
    }
}
