//! The verdict as JSON (docs/figures.md#json-documents): `schema_version` first, kebab-case
//! keys, sizes in bytes.

use crate::compare::Verdict;

pub fn render(v: &Verdict) -> String {
    let mut text =
        serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}
