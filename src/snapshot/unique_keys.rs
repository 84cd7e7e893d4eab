//! JSON parsed with every object's keys unique. serde_json keeps the last of
//! two equal keys without a word, so a golden summary with a second
//! `"devices"` would be judged on whichever came last: here a repeated key,
//! at any depth, is an error naming it. One pass, building the same
//! `serde_json::Value` serde_json's own visitor builds (and under its
//! nesting limit).

use std::fmt;
use std::io::Read;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Longest key shown in the error (a key can be megabytes long).
const SHOWN_KEY: usize = 64;

/// Parse one JSON value from `reader`, refusing an object that names a key
/// twice. The error is the message a load error carries: `invalid JSON: …`
/// for bad syntax, `duplicate key …` with its line and column otherwise.
pub(crate) fn from_reader(reader: impl Read) -> Result<Value, String> {
    let mut de = serde_json::Deserializer::from_reader(reader);
    let value = UniqueKeys
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v))
        .map_err(|e| message(&e))?;
    Ok(value)
}

fn message(e: &serde_json::Error) -> String {
    if e.is_data() {
        // Our own error: the duplicate key, placed by serde_json.
        e.to_string()
    } else {
        format!("invalid JSON: {e}")
    }
}

fn duplicate<E: de::Error>(key: &str) -> E {
    let shown: String = key.chars().take(SHOWN_KEY).collect();
    let cut = if shown.len() < key.len() {
        format!("… ({} bytes)", key.len())
    } else {
        String::new()
    };
    E::custom(format_args!(
        "duplicate key `{shown}{cut}` in one object (each key may appear once; the last \
         would silently win)"
    ))
}

/// A `Value` seed whose objects refuse a second key of one name.
#[derive(Clone, Copy)]
struct UniqueKeys;

impl<'de> DeserializeSeed<'de> for UniqueKeys {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueKeys {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        // JSON has no NaN or infinity, so every parsed float is finite.
        Ok(Number::from_f64(n).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element_seed(self)? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(duplicate(&key));
            }
            let v = map.next_value_seed(self)?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_named_twice_at_any_depth_is_an_error_naming_it_and_its_place() {
        let top = from_reader(&br#"{"devices": [], "kind": "x", "devices": []}"#[..]);
        let e = top.unwrap_err();
        assert!(e.contains("duplicate key `devices`"), "{e}");
        assert!(e.contains("line 1 column"), "{e}");
        let deep = from_reader(&b"{\"a\": [{\"b\": {\"peak\": 1,\n \"peak\": 2}}]}"[..]);
        let e = deep.unwrap_err();
        assert!(
            e.contains("duplicate key `peak`") && e.contains("line 2"),
            "{e}"
        );
    }

    #[test]
    fn unique_keys_parse_to_the_value_serde_json_builds() {
        let text = r#"{"z": 1, "a": [1.5, -2, 18446744073709551615, null, true, "s\u00e9"],
                       "o": {"a": {}, "b": []}, "p": {"a": 1}}"#;
        let ours = from_reader(text.as_bytes()).unwrap();
        let theirs: Value = serde_json::from_str(text).unwrap();
        assert_eq!(ours, theirs);
        // Key order kept (preserve_order): a report lists keys as written.
        let keys: Vec<&String> = ours.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["z", "a", "o", "p"]);
    }

    #[test]
    fn bad_syntax_and_trailing_bytes_stay_invalid_json() {
        let e = from_reader(&b"{\"a\": }"[..]).unwrap_err();
        assert!(e.starts_with("invalid JSON: "), "{e}");
        let e = from_reader(&b"{} x"[..]).unwrap_err();
        assert!(e.starts_with("invalid JSON: "), "{e}");
    }

    #[test]
    fn a_long_duplicate_key_is_cut_with_its_length() {
        let k = "k".repeat(10_000);
        let text = format!("{{\"{k}\": 1, \"{k}\": 2}}");
        let e = from_reader(text.as_bytes()).unwrap_err();
        assert!(e.contains("… (10000 bytes)"), "{e}");
        assert!(e.len() < 400, "{e}");
    }
}
