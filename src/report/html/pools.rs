//! The pool table of a page (docs/figures.md#pools): each memory pool of a
//! device with its peaks, for a device with more than the default pool.

use std::fmt::Write as _;

use super::escape;
use crate::analysis::PoolFigures;
use crate::units::Bytes;

/// The table, or nothing for a device with only the default pool.
pub(super) fn pools_table(pools: &[PoolFigures]) -> String {
    if pools.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<table class=\"pools\"><caption>By memory pool</caption><tr><th>pool</th>\
         <th>kind</th><th>allocated peak</th><th>reserved peak</th>\
         <th>at the device's allocated peak</th><th>cached free at its reserved peak</th></tr>\n",
    );
    for p in pools {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&p.name),
            p.kind.id(),
            Bytes(p.allocated_peak),
            Bytes(p.reserved_peak),
            Bytes(p.at_allocated_peak),
            Bytes(p.cached_free_at_reserved_peak),
        );
    }
    out.push_str("</table>\n");
    out
}
