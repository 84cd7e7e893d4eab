//! The verdict as JSON (docs/figures.md#json-documents): `schema_version` first, kebab-case
//! keys, sizes in bytes.

use crate::compare::Verdict;

/// The JSON report of `check --json`; nothing is written when the gate
/// could not judge (there is no verdict to write).
pub(crate) struct Json;

impl super::exporter::Exporter for Json {
    fn render(&self, v: &Verdict, _: &super::exporter::Context<'_, '_>) -> String {
        render(v)
    }

    fn render_error(&self, _: &[String], _: i64) -> Option<String> {
        None
    }
}

pub fn render(v: &Verdict) -> String {
    let mut text =
        serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}
