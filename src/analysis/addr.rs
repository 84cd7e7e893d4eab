//! Maps keyed by allocation address, with a hasher cheap enough for the
//! replay's one lookup per trace entry.
//!
//! Addresses come from the snapshot, so a pull request chooses them: an
//! unkeyed hasher lets it pick addresses that all land in one bucket and
//! make every lookup walk them all (quadratic). foldhash's `fast` hasher
//! is seeded at random per map, so no file can aim at its buckets, and it
//! costs about what the old unkeyed splitmix finalizer did.

use std::collections::HashMap;

/// A map keyed by allocation address.
pub(crate) type AddrMap<V> = HashMap<u64, V, foldhash::fast::RandomState>;
