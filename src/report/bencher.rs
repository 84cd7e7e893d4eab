//! The Bencher Metric Format (BMF) JSON of `check --bencher`: one benchmark
//! per series ([`super::series`]) holding one measure, `bytes` or `count`
//! after the figure's unit, whose `value` is the run's figure (the JSON
//! report's `current`). `bencher run --adapter json --file FILE` reads it.

use serde_json::{json, Map, Value};

use super::series::series;
use crate::compare::Verdict;

/// The BMF report of `check --bencher`; nothing is written when the gate
/// could not judge (nothing was measured).
pub(crate) struct Bencher;

impl super::exporter::Exporter for Bencher {
    fn render(&self, v: &Verdict, _: &super::exporter::Context<'_, '_>) -> String {
        render(v)
    }

    fn render_error(&self, _: &[String], _: i64) -> Option<String> {
        None
    }
}

pub(crate) fn render(v: &Verdict) -> String {
    let mut doc = Map::new();
    for s in series(v) {
        let mut measure = Map::new();
        measure.insert(
            s.check.unit.id().to_string(),
            json!({ "value": s.check.current }),
        );
        doc.insert(s.name, Value::Object(measure));
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(doc))
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}
