//! `thresholds.example.toml` is the documented example of the budget file:
//! it must name every key the raw structs accept (set, or commented out
//! with its explanation), so adding a key without documenting it fails.

use super::raw::{
    budget_keys, tolerance_keys, DEFAULTS_KEYS, OWNERS_KEYS, RANKS_KEYS, SITES_KEYS, TARGET_KEYS,
    TOP_KEYS,
};
use super::waiver::WAIVER_KEYS;

const EXAMPLE: &str = include_str!("../../thresholds.example.toml");

/// The keys the example sets (commented-out ones included) in each table,
/// by table path (`""`, `"defaults"`, `"target.budget"`, …). A table header
/// also counts as its parent setting the last component.
fn keys_by_table() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut table = String::new();
    for line in EXAMPLE.lines() {
        let l = line.trim();
        // A table the example only shows commented out (`# [[waiver]]`):
        // a bare array-of-tables header, nothing else on the line.
        let bare = l.trim_start_matches('#').trim();
        let commented_header = l.starts_with('#')
            && bare.starts_with("[[")
            && bare.ends_with("]]")
            && bare[2..bare.len() - 2]
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '-');
        let l = if commented_header { bare } else { l };
        if l.starts_with('[') {
            table = l.trim_matches(|c| c == '[' || c == ']').trim().to_string();
            // `[a.b.c]` sets c in a.b, and b in a (the example's table
            // names hold no quoted dots).
            let mut path = table.as_str();
            while let Some((parent, last)) = path.rsplit_once('.') {
                out.push((parent.to_string(), last.to_string()));
                path = parent;
            }
            out.push((String::new(), path.to_string()));
            continue;
        }
        let l = l.trim_start_matches('#').trim_start();
        if let Some((k, _)) = l.split_once('=') {
            let k = k.trim();
            if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                out.push((table.clone(), k.to_string()));
            }
        }
    }
    out
}

#[test]
fn the_example_budget_file_names_every_key_memgate_accepts() {
    let tables: [(&str, Vec<&str>); 9] = [
        ("", TOP_KEYS.to_vec()),
        ("defaults", DEFAULTS_KEYS.to_vec()),
        ("target", TARGET_KEYS.to_vec()),
        ("target.budget", budget_keys()),
        ("target.tolerance", tolerance_keys()),
        ("target.ranks", RANKS_KEYS.to_vec()),
        ("sites", SITES_KEYS.to_vec()),
        ("owners", OWNERS_KEYS.to_vec()),
        ("waiver", WAIVER_KEYS.to_vec()),
    ];
    let present = keys_by_table();
    let missing: Vec<String> = tables
        .iter()
        .flat_map(|(t, keys)| keys.iter().map(move |k| (*t, *k)))
        .filter(|(t, k)| !present.iter().any(|(pt, pk)| pt == t && pk == k))
        .map(|(t, k)| format!("[{t}] {k}"))
        .collect();
    assert!(
        missing.is_empty(),
        "thresholds.example.toml does not mention: {missing:?}"
    );
}

#[test]
fn the_example_budget_file_is_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    if let Err(errors) = super::parse(EXAMPLE, "thresholds.example.toml", dir, true) {
        let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        panic!("{}", lines.join("\n"));
    }
}
