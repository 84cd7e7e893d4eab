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

/// The `crate::name` modules a file refers to outside comments, a
/// `crate::{a, b::c}` group naming each of its first names.
fn imports(file: &Path) -> BTreeSet<String> {
    let text = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
    let code: String = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The first name of each item at the group's own depth.
            let mut depth = 0;
            let mut item_start = true;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if c.is_whitespace() => {}
                    _ if item_start && depth == 0 => {
                        found.insert(ident(&group[k..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(ident(rest));
        }
    }
    found.remove("");
    found.remove("self");
    found
}

/// Each module's files: `src/NAME.rs` and everything under `src/NAME/`.
fn files_of(module: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    sources(&root().join("src").join(module), &mut files);
    sources(&root().join("src").join(format!("{module}.rs")), &mut files);
    files
}

#[test]
fn every_module_imports_only_what_the_architecture_document_allows() {
    let table = allowed();
    assert!(table.len() >= 10, "the table was not found: {table:?}");
    let mut problems = Vec::new();
    for (module, deps) in &table {
        let files = files_of(module);
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
        let line = line.trim();
        if let Some(name) = ["pub mod ", "pub(crate) mod ", "mod "]
            .iter()
            .find_map(|p| line.strip_prefix(p))
        {
            let name = name.trim_end_matches(';');
            assert!(
                table.contains_key(name),
                "src/lib.rs has `{name}` without a row"
            );
        }
    }
}

#[test]
fn every_import_the_table_allows_is_one_the_code_makes() {
    let mut problems = Vec::new();
    for (module, deps) in allowed() {
        let used: BTreeSet<String> = files_of(&module).iter().flat_map(|f| imports(f)).collect();
        for d in deps.difference(&used) {
            problems.push(format!(
                "the row of {module} allows {d}, which it never imports"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn budget_never_reaches_the_analysis_through_any_module() {
    let table = allowed();
    let mut reached = BTreeSet::from(["budget".to_string()]);
    let mut todo = vec!["budget".to_string()];
    while let Some(m) = todo.pop() {
        for d in table.get(&m).into_iter().flatten() {
            if reached.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    for layer in ["analysis", "snapshot", "input", "baseline"] {
        assert!(
            !reached.contains(layer),
            "budget reaches {layer}: {reached:?}"
        );
    }
}

#[test]
fn an_import_group_names_each_of_its_modules() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("m.rs");
    std::fs::write(
        &f,
        "use crate::{input, snapshot::{self, Content}};\n// crate::report\nuse crate::walk::expand;\n",
    )
    .unwrap();
    let want: BTreeSet<String> = ["input", "snapshot", "walk"].map(String::from).into();
    assert_eq!(imports(&f), want);
}
