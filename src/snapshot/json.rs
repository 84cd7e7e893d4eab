//! JSON snapshots (what Mosaic's `get_json_snapshot` and MemoryViz accept):
//! the same layout as the pickle, tuples as arrays, fed through the same
//! folder so the model is built the same way.

use crate::pickle::{place, Arena, Folder, Obj, Slot, Value};

/// Convert parsed JSON into the decoder's value graph.
pub(crate) fn to_arena(
    json: &serde_json::Value,
    arena: &mut Arena,
    folder: &mut dyn Folder,
) -> Result<Value, String> {
    use serde_json::Value as J;
    Ok(match json {
        J::Null => Value::None,
        J::Bool(b) => Value::Bool(*b),
        J::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Int(i)
            } else if let Some(u) = n.as_u64() {
                arena.bigs.push(i128::from(u));
                let len = arena.bigs.len();
                Value::BigInt(arena.id_of_last(len, "integers wider than 64 bits"))
            } else {
                Value::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        J::String(s) => Value::Str(arena.strings.intern(s)),
        J::Array(items) => {
            let id = arena.alloc(Obj::List(Vec::with_capacity(items.len())));
            for item in items {
                let v = to_arena(item, arena, folder)?;
                let v = place(arena, folder, v, Slot::ListItem)?;
                if let Obj::List(list) = arena.obj_mut(id) {
                    list.push(v);
                }
            }
            Value::Obj(id)
        }
        J::Object(map) => {
            let id = arena.alloc(Obj::Dict(Vec::with_capacity(map.len())));
            for (k, item) in map {
                let key = Value::Str(arena.strings.intern(k));
                let v = to_arena(item, arena, folder)?;
                let v = place(arena, folder, v, Slot::DictValue(key))?;
                if let Obj::Dict(dict) = arena.obj_mut(id) {
                    dict.push((key, v));
                }
            }
            Value::Obj(id)
        }
    })
}
