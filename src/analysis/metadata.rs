//! User metadata (docs/figures.md#user-metadata-groups): each allocation's
//! `user_metadata`, or the first `annotate` note naming it while it is
//! live, and the group `--group-by user-metadata[.KEY]` puts it in.

use std::collections::HashMap;

use crate::snapshot::{Action, Device, Snapshot, TraceEntry, NO_META};

use super::groups::{MetaKey, NO_COMPILE_CONTEXT};

/// Per trace entry of `device`, the metadata string id of the allocation
/// an `alloc` entry makes ([`NO_META`] for the other entries and for an
/// allocation with none): its own `user_metadata`, else the note of the
/// first `annotate` entry at its address while it is live.
pub(crate) fn of_allocations(trace: &[TraceEntry]) -> Vec<u32> {
    let mut meta: Vec<u32> = trace
        .iter()
        .map(|e| if e.action == Action::Alloc { e.meta } else { NO_META })
        .collect();
    // Address → the live allocation's entry; the map is keyed per process
    // (std's random state), so a crafted trace cannot aim at its buckets.
    let mut live: HashMap<u64, usize> = HashMap::new();
    for (i, e) in trace.iter().enumerate() {
        match e.action {
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
/// [`NO_COMPILE_CONTEXT`], for the entries that make no allocation and the
/// allocations without metadata), and the group names.
pub(crate) fn groups(
    snap: &Snapshot,
    device: Device,
    key: Option<MetaKey>,
) -> (Vec<u32>, Vec<String>) {
    let meta = of_allocations(snap.trace(device));
    let mut names = vec![NO_COMPILE_CONTEXT.to_string()];
    let mut by_name: HashMap<String, u32> = HashMap::from([(NO_COMPILE_CONTEXT.to_string(), 0)]);
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
        let e = |action, addr, meta| TraceEntry {
            addr,
            size: 8,
            time_us: crate::snapshot::NO_TIME,
            stack: StackId::default(),
            context: crate::snapshot::NO_CONTEXT,
            meta,
            action,
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
            of_allocations(&trace),
            vec![5, 7, NO_META, NO_META, NO_META, NO_META, NO_META, NO_META]
        );
    }
}
