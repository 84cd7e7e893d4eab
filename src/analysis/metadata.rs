//! User metadata (docs/figures.md#user-metadata-groups): each allocation's
//! `user_metadata`, or the first `annotate` note naming it while it is
//! live, and the group `--group-by user-metadata[.KEY]` puts it in.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use crate::snapshot::{Action, Device, Snapshot, Trace, NO_META};

use super::addr::AddrMap;

/// The group of an allocation without user metadata (the name
/// compile-context groups give one without a context).
const NO_METADATA: &str = "N/A";

/// Per trace entry of `device`, the metadata string id of the allocation
/// an `alloc` entry makes ([`NO_META`] for the other entries and for an
/// allocation with none): its own `user_metadata`, else the note of the
/// first `annotate` entry at its address while it is live.
pub(crate) fn of_allocations(trace: Trace<'_>) -> Vec<u32> {
    let mut meta: Vec<u32> = trace
        .iter()
        .map(|e| {
            if e.action() == Action::Alloc {
                e.meta
            } else {
                NO_META
            }
        })
        .collect();
    // Address → the live allocation's entry (keyed per map: `AddrMap`).
    let mut live: AddrMap<usize> = AddrMap::default();
    for (i, e) in trace.iter().enumerate() {
        match e.action() {
            Action::Alloc => {
                live.insert(e.addr, i);
            }
            Action::FreeCompleted => {
                live.remove(&e.addr);
            }
            Action::Annotate if e.meta != NO_META => {
                if let Some(&a) = live.get(&e.addr) {
                    if meta[a] == NO_META {
                        meta[a] = e.meta;
                    }
                }
            }
            _ => {}
        }
    }
    meta
}

/// The longest key `--group-by user-metadata.KEY` takes, in bytes.
pub const MAX_META_KEY: usize = 64;

/// A `user_metadata` JSON key, kept inline so [`GroupBy`] stays `Copy`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct MetaKey {
    bytes: [u8; MAX_META_KEY],
    len: u8,
}

impl MetaKey {
    /// The key, when it is 1 to [`MAX_META_KEY`] bytes long.
    pub fn new(key: &str) -> Option<MetaKey> {
        let len = u8::try_from(key.len()).ok().filter(|&n| n > 0)?;
        if key.len() > MAX_META_KEY {
            return None;
        }
        let mut bytes = [0; MAX_META_KEY];
        bytes[..key.len()].copy_from_slice(key.as_bytes());
        Some(MetaKey { bytes, len })
    }

    pub fn as_str(&self) -> &str {
        // Copied whole from a `&str` in `new`.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl fmt::Debug for MetaKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// The metadata of each allocation of a trace, by its `alloc` entry's
/// index ([`of_allocations`]); empty, and nothing computed, when no entry
/// has any (every older snapshot), so the live stacks keep their groups.
pub(crate) struct AllocMeta(Vec<u32>);

impl AllocMeta {
    pub(crate) fn new(trace: Trace<'_>) -> AllocMeta {
        if !trace.may_have_meta() || trace.iter().all(|e| e.meta == NO_META) {
            return AllocMeta(Vec::new());
        }
        AllocMeta(of_allocations(trace))
    }

    /// Whether the trace has no metadata at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The metadata string id of the allocation made at entry `index`.
    pub(crate) fn at(&self, index: usize) -> u32 {
        self.0.get(index).copied().unwrap_or(NO_META)
    }
}

/// The most metadata values a stack group lists; the rest are summed
/// under [`MORE_METADATA`].
pub const MAX_METADATA: usize = 8;

/// The key the metadata past [`MAX_METADATA`] is summed under.
pub const MORE_METADATA: &str = "…";

/// A stack group's bytes by metadata string id as it lists them: by name
/// ([`NO_METADATA`] for none), the largest [`MAX_METADATA`], the
/// rest summed under [`MORE_METADATA`]; empty when none has metadata.
pub(crate) fn by_bytes(snap: &Snapshot, bytes: &HashMap<u32, u64>) -> BTreeMap<String, u64> {
    if bytes.keys().all(|&m| m == NO_META) {
        return BTreeMap::new();
    }
    let mut v: Vec<(u32, u64)> = bytes.iter().map(|(&m, &b)| (m, b)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out = BTreeMap::new();
    for (k, (m, b)) in v.into_iter().enumerate() {
        let name = match (k < MAX_METADATA, m) {
            (false, _) => MORE_METADATA.to_string(),
            (true, NO_META) => NO_METADATA.to_string(),
            (true, m) => snap.str(m).to_string(),
        };
        *out.entry(name).or_insert(0) += b;
    }
    out
}

/// The group name of one metadata string: the whole string, or with `key`
/// the key's value in it read as a JSON object (a string as it is, any
/// other value as compact JSON); `None` when it has no such key.
pub(crate) fn value(text: &str, key: Option<MetaKey>) -> Option<String> {
    let Some(key) = key else {
        return Some(text.to_string());
    };
    let parsed: serde_json::Value = serde_json::from_str(text).ok()?;
    match parsed.as_object()?.get(key.as_str())? {
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// The user-metadata group of each entry of `device` (0, named
/// [`NO_METADATA`], for the entries that make no allocation and the
/// allocations without metadata), and the group names.
pub(crate) fn groups(
    snap: &Snapshot,
    device: Device,
    key: Option<MetaKey>,
) -> (Vec<u32>, Vec<String>) {
    let meta = of_allocations(snap.trace(device));
    let mut names = vec![NO_METADATA.to_string()];
    let mut by_name: HashMap<String, u32> = HashMap::from([(NO_METADATA.to_string(), 0)]);
    let mut by_id: HashMap<u32, u32> = HashMap::new();
    let owner = meta
        .into_iter()
        .map(|m| {
            if m == NO_META {
                return 0;
            }
            *by_id.entry(m).or_insert_with(|| {
                let Some(name) = value(snap.str(m), key) else {
                    return 0;
                };
                *by_name.entry(name).or_insert_with_key(|name| {
                    names.push(name.clone());
                    // One name per distinct 32-bit string id at most.
                    u32::try_from(names.len() - 1).unwrap_or(u32::MAX)
                })
            })
        })
        .collect();
    (owner, names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> Option<MetaKey> {
        MetaKey::new(k)
    }

    #[test]
    fn a_key_reads_a_string_as_it_is_and_any_other_value_as_json() {
        let text = r#"{"owner":"vision","step":3,"tags":["a"]}"#;
        assert_eq!(value(text, key("owner")).as_deref(), Some("vision"));
        assert_eq!(value(text, key("step")).as_deref(), Some("3"));
        assert_eq!(value(text, key("tags")).as_deref(), Some(r#"["a"]"#));
        assert_eq!(value(text, key("missing")), None);
        assert_eq!(value("not json", key("owner")), None);
        assert_eq!(value("[1,2]", key("owner")), None);
        assert_eq!(value(text, None).as_deref(), Some(text));
    }

    #[test]
    fn an_annotate_note_names_the_live_allocation_at_its_address_only() {
        use crate::snapshot::StackId;
        let e = |action: Action, addr, meta| crate::snapshot::TraceEntry {
            addr,
            size: 8,
            time_us: crate::snapshot::NO_TIME,
            stack: StackId::default(),
            context: crate::snapshot::NO_CONTEXT,
            pool: crate::snapshot::NO_POOL,
            meta,
            action: action.into(),
        };
        let trace = [
            e(Action::Alloc, 1, NO_META),
            e(Action::Alloc, 2, 7),
            e(Action::Annotate, 1, 5),
            e(Action::Annotate, 1, 6),
            e(Action::Annotate, 2, 5),
            e(Action::FreeCompleted, 1, NO_META),
            e(Action::Alloc, 1, NO_META),
            e(Action::Annotate, 3, 5),
        ];
        // The first note wins; its own metadata beats a note; a note on a
        // freed address or on no allocation names nothing.
        assert_eq!(
            of_allocations(crate::snapshot::Entries::from(&trace[..]).view()),
            vec![5, 7, NO_META, NO_META, NO_META, NO_META, NO_META, NO_META]
        );
    }
}
