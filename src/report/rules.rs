//! The built-in category table as text (`memgate profile --print-rules`).

use std::fmt::Write as _;

use crate::analysis::rules::default_rows;

/// The default table, a header saying how it is read, then one row a line.
pub(crate) fn default_rules() -> String {
    let mut out = String::from(
        "# memgate default category rules (see docs/figures.md#the-default-rules)\n\
         # Frames are scanned innermost first; for each frame the rows are tried in\n\
         # order and the first row whose patterns all match decides (case-insensitive\n\
         # regexes on the function name and the file name). `(skip)` rows mark\n\
         # allocator internals that never decide. No frame matched: other; no frames:\n\
         # unknown. Custom [categories] rules are tried before these.\n\n",
    );
    for (category, name, file) in default_rows() {
        let cat = category.unwrap_or("(skip)");
        let test = match (name, file) {
            (Some(n), Some(f)) => format!("name ~ {n}  and  file ~ {f}"),
            (Some(n), None) => format!("name ~ {n}"),
            (None, Some(f)) => format!("file ~ {f}"),
            (None, None) => "any frame".to_string(),
        };
        let _ = writeln!(out, "{cat:<16} {test}");
    }
    out
}
