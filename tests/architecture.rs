//! The layering in docs/architecture.md is kept true: every `crate::`
//! import in a module must be one its row of the table allows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The "may import" table of the architecture document.
fn allowed() -> BTreeMap<String, BTreeSet<String>> {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let mut rows = BTreeMap::new();
    let mut in_table = false;
    for line in doc.lines() {
        if line.starts_with("| module | may import |") {
            in_table = true;
            continue;
        }
        if in_table && !line.starts_with('|') {
            break;
        }
        if !in_table || line.starts_with("|---") {
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let deps = cells[1]
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        rows.insert(cells[0].to_string(), deps);
    }
    rows
}

fn sources(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            sources(&e.unwrap().path(), out);
        }
    } else if path.is_file() && path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

/// The `crate::name` modules a file refers to outside comments.
fn imports(file: &Path) -> BTreeSet<String> {
    let text = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

#[test]
fn every_module_imports_only_what_the_architecture_document_allows() {
    let table = allowed();
    assert!(table.len() >= 10, "the table was not found: {table:?}");
    let mut problems = Vec::new();
    for (module, deps) in &table {
        let dir = root().join("src").join(module);
        let mut files = Vec::new();
        sources(&dir, &mut files);
        sources(&root().join("src").join(format!("{module}.rs")), &mut files);
        assert!(!files.is_empty(), "no source for module {module}");
        for f in files {
            for name in imports(&f) {
                if name != *module && !deps.contains(&name) {
                    problems.push(format!("{} imports crate::{name}", f.display()));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_library_module_has_a_row_in_the_table() {
    let table = allowed();
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    for line in lib.lines() {
        if let Some(name) = line
            .trim()
            .strip_prefix("pub mod ")
            .or_else(|| line.trim().strip_prefix("mod "))
        {
            let name = name.trim_end_matches(';');
            assert!(
                table.contains_key(name),
                "src/lib.rs has `{name}` without a row"
            );
        }
    }
}
