//! Unknown keys, all of them: serde's `deny_unknown_fields` stops at the
//! first, so the file is also read as a generic spanned tree and walked
//! against the raw structs' own field lists (asked from serde, so the two
//! can never disagree).

use std::fmt;
use std::ops::Range;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::raw::{RawBudget, RawConfig, RawDefaults, RawPerFigure, RawTarget};

/// The field names serde derived for a struct (its `deserialize_struct`
/// call carries them).
pub fn fields_of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    struct Probe<'a>(&'a mut &'static [&'static str]);
    #[derive(Debug)]
    struct Stop;
    impl fmt::Display for Stop {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("probe")
        }
    }
    impl std::error::Error for Stop {}
    impl de::Error for Stop {
        fn custom<M: fmt::Display>(_: M) -> Self {
            Stop
        }
    }
    impl<'de> Deserializer<'de> for Probe<'_> {
        type Error = Stop;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            *self.0 = fields;
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

/// Any TOML value, with the span of every key and value where toml has
/// one. `toml::Spanned` refuses the keys and values of implicit tables
/// (`budget` in `[target.budget.category]`), which toml hands over without
/// a span, so these types speak the span protocol themselves.
#[derive(Debug)]
pub enum Node {
    Leaf,
    Array(Vec<Sp<Node>>),
    Table(Vec<(Sp<String>, Sp<Node>)>),
}

/// A value and its span, when toml knows it.
#[derive(Debug)]
pub struct Sp<T> {
    pub value: T,
    pub span: Option<Range<usize>>,
}

const SPANNED: &str = "$__serde_spanned_private_Spanned";
const START: &str = "$__serde_spanned_private_start";
const END: &str = "$__serde_spanned_private_end";
const VALUE: &str = "$__serde_spanned_private_value";

/// Read the rest of a span-protocol map whose first key was `first`.
fn spanned<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    first: &str,
    mut map: A,
) -> Result<Sp<T>, A::Error> {
    let (mut start, mut end, mut value) = (0usize, 0usize, None);
    let mut key = Some(first.to_string());
    while let Some(k) = key {
        match k.as_str() {
            START => start = map.next_value()?,
            END => end = map.next_value()?,
            _ => value = Some(map.next_value()?),
        }
        key = map.next_key::<String>()?;
    }
    let value = value.ok_or_else(|| de::Error::missing_field(VALUE))?;
    Ok(Sp {
        value,
        span: Some(start..end),
    })
}

impl<'de> Deserialize<'de> for Sp<String> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Sp<String>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table key")
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Sp {
                    value: s.to_string(),
                    span: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let first: String = map.next_key()?.unwrap_or_default();
                spanned(&first, map)
            }
        }
        d.deserialize_struct(SPANNED, &[START, END, VALUE], V)
    }
}

impl<'de> Deserialize<'de> for Sp<Node> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_struct(SPANNED, &[START, END, VALUE], NodeVisitor)
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor).map(|n| n.value)
    }
}

struct NodeVisitor;

fn leaf<E>() -> Result<Sp<Node>, E> {
    Ok(Sp {
        value: Node::Leaf,
        span: None,
    })
}

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Sp<Node>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any TOML value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        leaf()
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        leaf()
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        leaf()
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        leaf()
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        leaf()
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(x) = seq.next_element()? {
            items.push(x);
        }
        Ok(Sp {
            value: Node::Array(items),
            span: None,
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(k) = map.next_key::<Sp<String>>()? {
            if k.span.is_none() && k.value == START {
                return spanned(START, map);
            }
            // A datetime arrives as a one-key private map; it is a leaf.
            if k.value.starts_with("$__") {
                map.next_value::<de::IgnoredAny>()?;
                return leaf();
            }
            items.push((k, map.next_value()?));
        }
        Ok(Sp {
            value: Node::Table(items),
            span: None,
        })
    }
}

/// One unknown key: the key's span, the value's span, and the message.
pub struct Unknown {
    pub key: Range<usize>,
    pub value: Range<usize>,
    pub message: String,
}

fn check<'n>(
    node: &'n Node,
    known: &[&str],
    table: &str,
    out: &mut Vec<Unknown>,
) -> Vec<(String, &'n Sp<Node>)> {
    let Node::Table(items) = node else {
        return Vec::new();
    };
    let at = |s: &Option<Range<usize>>, or: &Option<Range<usize>>| {
        s.clone().or_else(|| or.clone()).unwrap_or(0..0)
    };
    let mut kept = Vec::new();
    for (k, v) in items {
        if known.contains(&k.value.as_str()) {
            kept.push((k.value.clone(), v));
        } else {
            out.push(Unknown {
                key: at(&k.span, &v.span),
                value: at(&v.span, &k.span),
                message: format!(
                    "unknown key `{}` in {table}; expected one of: {}",
                    k.value,
                    known.join(", ")
                ),
            });
        }
    }
    kept
}

/// Every unknown key of the file, in file order.
pub fn unknown_keys(root: &Node) -> Vec<Unknown> {
    let mut out = Vec::new();
    for (name, v) in check(root, fields_of::<RawConfig>(), "the top level", &mut out) {
        match (name.as_str(), &v.value) {
            ("defaults", n) => {
                check(n, fields_of::<RawDefaults>(), "[defaults]", &mut out);
            }
            ("target", Node::Array(targets)) => {
                for t in targets {
                    let keys = check(&t.value, fields_of::<RawTarget>(), "[[target]]", &mut out);
                    for (name, v) in keys {
                        let (fields, table) = match name.as_str() {
                            "budget" => (fields_of::<RawBudget>(), "[target.budget]"),
                            "tolerance" => (fields_of::<RawPerFigure>(), "[target.tolerance]"),
                            _ => continue,
                        };
                        check(&v.value, fields, table, &mut out);
                    }
                }
            }
            _ => {}
        }
    }
    out.sort_by_key(|u| u.key.start);
    out
}

/// The text with every unknown `key = value` replaced by spaces (newlines
/// kept), so the rest still parses with the same line:col positions. An
/// unknown table opened by a header (`[target.budgett]`) goes with its body
/// and its subtables.
pub fn blank_out(text: &str, unknown: &[Unknown]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for u in unknown {
        let line_start = text[..u.key.start].rfind('\n').map_or(0, |i| i + 1);
        let range = if text[line_start..].trim_start().starts_with('[') {
            // The header up to the key's end names the table and its subtables.
            let prefix = text[line_start..u.key.end]
                .trim_start()
                .trim_start_matches('[')
                .to_string();
            let mut end = text.len();
            let mut pos = text[line_start..]
                .find('\n')
                .map_or(text.len(), |i| line_start + i + 1);
            while pos < text.len() {
                let line = text[pos..].trim_start();
                let header = line.starts_with('[');
                let same = line.trim_start_matches('[').starts_with(&prefix);
                if header && !same {
                    end = pos;
                    break;
                }
                pos = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
            }
            line_start..end
        } else {
            u.key.start..u.value.end.max(u.key.end)
        };
        for b in &mut bytes[range.start.min(text.len())..range.end.min(text.len())] {
            if *b != b'\n' && *b != b'\r' {
                *b = b' ';
            }
        }
    }
    // Spans start and end on character boundaries, so every byte of a
    // replaced character became a space and the text is still UTF-8.
    String::from_utf8(bytes).unwrap_or_else(|_| text.to_string())
}
