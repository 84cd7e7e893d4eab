//! The environment a snapshot was recorded in (docs/figures.md#environment):
//! what the snapshot says (its `allocator_settings`, the torch generation its
//! layout looks like) and what `record()` wrote beside it (torch, CUDA or
//! CANN version, device name and memory, world size, the allocator's
//! environment variables), and the differences between two of them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One snapshot's environment; every part is optional (a file `record()`
/// did not write has only what the snapshot itself says).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct Fingerprint {
    /// The torch generation the snapshot's layout looks like (`2.3+`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<String>,
    /// The snapshot's `allocator_settings`, each value as JSON text.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocator_settings: BTreeMap<String, String>,
    /// `cuda` or `npu` (record()'s `backend`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cann: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_name: Option<String>,
    /// The device's total memory in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_memory: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_size: Option<u64>,
    /// `PYTORCH_CUDA_ALLOC_CONF`, `PYTORCH_ALLOC_CONF`,
    /// `PYTORCH_NPU_ALLOC_CONF`, as set when recording.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocator_conf: BTreeMap<String, String>,
}

/// One part that differs: its name, the baseline's value and the run's
/// (`None`: not set there).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct Difference {
    pub key: String,
    pub baseline: Option<String>,
    pub current: Option<String>,
}

/// At most this many bytes of an environment file are read.
pub const ENV_FILE_LIMIT: u64 = 64 * 1024;
/// The longest value kept (longer ones are cut, as snapshot strings are).
const VALUE_LIMIT: usize = 256;

impl Fingerprint {
    /// What the snapshot says: its generation and `allocator_settings`.
    pub(crate) fn of_snapshot(
        generation: &str,
        settings: Option<&serde_json::Value>,
    ) -> Fingerprint {
        let allocator_settings = settings
            .and_then(|s| s.as_object())
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (cut(k), cut(&v.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        Fingerprint {
            generation: Some(generation.to_string()),
            allocator_settings,
            ..Fingerprint::default()
        }
    }

    /// Adds what `record()` wrote (`text`, the `.NAME.env.json` file); an
    /// error says what is wrong with it.
    pub fn with_record(mut self, text: &str) -> Result<Fingerprint, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        if v.get("kind").and_then(|k| k.as_str()) != Some("memgate-environment") {
            return Err(
                "not a memgate environment file (`kind` is not \"memgate-environment\")".into(),
            );
        }
        let text_of = |key: &str| -> Result<Option<String>, String> {
            match v.get(key) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(cut(s))),
                Some(other) => Err(format!("`{key}` must be a string, not {other}")),
            }
        };
        let number = |v: Option<&serde_json::Value>, key: &str| -> Result<Option<u64>, String> {
            match v {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(n) => n
                    .as_u64()
                    .map(Some)
                    .ok_or_else(|| format!("`{key}` must be a whole number, not {n}")),
            }
        };
        self.device_kind = text_of("backend")?;
        self.torch = text_of("torch")?;
        self.cuda = text_of("cuda")?;
        self.cann = text_of("cann")?;
        self.world_size = number(v.get("world_size"), "world_size")?;
        if let Some(d) = v.get("device").filter(|d| !d.is_null()) {
            let name = d.get("name").filter(|n| !n.is_null());
            self.device_name = match name {
                None => None,
                Some(serde_json::Value::String(s)) => Some(cut(s)),
                Some(other) => return Err(format!("`device.name` must be a string, not {other}")),
            };
            self.device_memory = number(d.get("total_memory"), "device.total_memory")?;
        }
        if let Some(a) = v.get("allocator").filter(|a| !a.is_null()) {
            let a = a.as_object().ok_or("`allocator` must be a mapping")?;
            for (k, val) in a {
                let val = val
                    .as_str()
                    .ok_or_else(|| format!("`allocator.{}` must be a string", cut(k)))?;
                self.allocator_conf.insert(cut(k), cut(val));
            }
        }
        Ok(self)
    }

    /// Every part both environments state and that differs, or that one
    /// of two settings tables lacks, in a fixed order.
    pub fn differences(base: &Fingerprint, cur: &Fingerprint) -> Vec<Difference> {
        let mut out = Vec::new();
        let mut single = |key: &str, b: Option<String>, c: Option<String>| {
            if b.is_some() && c.is_some() && b != c {
                out.push(Difference {
                    key: key.to_string(),
                    baseline: b,
                    current: c,
                });
            }
        };
        single(
            "generation",
            base.generation.clone(),
            cur.generation.clone(),
        );
        single(
            "device-kind",
            base.device_kind.clone(),
            cur.device_kind.clone(),
        );
        single("torch", base.torch.clone(), cur.torch.clone());
        single("cuda", base.cuda.clone(), cur.cuda.clone());
        single("cann", base.cann.clone(), cur.cann.clone());
        single(
            "device-name",
            base.device_name.clone(),
            cur.device_name.clone(),
        );
        let mem = |f: &Fingerprint| f.device_memory.map(|m| m.to_string());
        single("device-memory", mem(base), mem(cur));
        let ws = |f: &Fingerprint| f.world_size.map(|m| m.to_string());
        single("world-size", ws(base), ws(cur));
        table(
            &mut out,
            "allocator-settings",
            &base.allocator_settings,
            &cur.allocator_settings,
        );
        // Only when both files were written by record(): a file without
        // them says nothing of the variables.
        if base.device_kind.is_some() && cur.device_kind.is_some() {
            table(
                &mut out,
                "allocator-conf",
                &base.allocator_conf,
                &cur.allocator_conf,
            );
        }
        out
    }
}

/// The keys of two tables whose values differ (or that one lacks), when
/// both tables are known (non-empty).
fn table(
    out: &mut Vec<Difference>,
    name: &str,
    base: &BTreeMap<String, String>,
    cur: &BTreeMap<String, String>,
) {
    if name == "allocator-settings" && (base.is_empty() || cur.is_empty()) {
        return;
    }
    let keys: std::collections::BTreeSet<&String> = base.keys().chain(cur.keys()).collect();
    for k in keys {
        let (b, c) = (base.get(k), cur.get(k));
        if b != c {
            out.push(Difference {
                key: format!("{name}.{k}"),
                baseline: b.cloned(),
                current: c.cloned(),
            });
        }
    }
}

/// `s`, cut to [`VALUE_LIMIT`] bytes (back to a character boundary).
fn cut(s: &str) -> String {
    if s.len() <= VALUE_LIMIT {
        return s.to_string();
    }
    let mut end = VALUE_LIMIT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…[cut: {} bytes]", &s[..end], s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(conf: &str) -> Fingerprint {
        let text = format!(
            r#"{{"schema_version": 1, "kind": "memgate-environment", "backend": "cuda",
               "rank": 0, "world_size": 8, "torch": "2.5.1", "cuda": "12.4", "cann": null,
               "device": {{"index": 0, "name": "NVIDIA H100 80GB HBM3", "total_memory": 85029158912}},
               "allocator": {{"PYTORCH_CUDA_ALLOC_CONF": "{conf}"}}}}"#
        );
        let settings = serde_json::json!({"expandable_segments": conf.contains("True")});
        Fingerprint::of_snapshot("2.3+", Some(&settings))
            .with_record(&text)
            .unwrap()
    }

    #[test]
    fn a_record_file_fills_every_part() {
        let f = recorded("expandable_segments:True");
        assert_eq!(f.device_memory, Some(85029158912));
        assert_eq!(f.world_size, Some(8));
        assert_eq!(f.device_name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(f.cann, None);
        assert_eq!(f.allocator_settings["expandable_segments"], "true");
    }

    #[test]
    fn another_expandable_segments_setting_is_named_in_both_places() {
        let d = Fingerprint::differences(
            &recorded("expandable_segments:True"),
            &recorded("expandable_segments:False"),
        );
        let keys: Vec<&str> = d.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "allocator-settings.expandable_segments",
                "allocator-conf.PYTORCH_CUDA_ALLOC_CONF"
            ]
        );
        assert_eq!(d[0].baseline.as_deref(), Some("true"));
        assert_eq!(d[0].current.as_deref(), Some("false"));
        let same = recorded("expandable_segments:True");
        assert!(Fingerprint::differences(&same, &same).is_empty());
    }

    #[test]
    fn a_part_only_one_side_states_is_no_difference() {
        let bare = Fingerprint::of_snapshot("2.3+", None);
        assert!(Fingerprint::differences(&bare, &recorded("x")).is_empty());
    }

    #[test]
    fn a_malformed_record_file_says_what_is_wrong() {
        let bare = || Fingerprint::of_snapshot("2.3+", None);
        assert!(bare().with_record("{").unwrap_err().starts_with("not JSON"));
        assert!(bare()
            .with_record("{}")
            .unwrap_err()
            .contains("memgate-environment"));
        let bad = r#"{"kind": "memgate-environment", "world_size": "8"}"#;
        assert_eq!(
            bare().with_record(bad).unwrap_err(),
            "`world_size` must be a whole number, not \"8\""
        );
    }
}
