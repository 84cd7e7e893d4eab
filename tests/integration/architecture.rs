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

/// A file's module path: `src/analysis/replay.rs` is `analysis::replay`,
/// `src/analysis/mod.rs` is `analysis`.
fn module_path(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root().join("src")).unwrap();
    let mut path: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    if path.last().is_some_and(|l| l == "mod" || l == "lib") {
        path.pop();
    }
    path
}

/// The code of a file without comments or its inline `mod tests`.
fn code(file: &Path) -> String {
    let text = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|l| l.trim_start().starts_with("mod tests {"))
        {
            break;
        }
        out.push_str(line.split("//").next().unwrap_or(""));
        out.push('\n');
    }
    out
}

/// How many bytes of white space `s` starts with.
fn blank(s: &str) -> usize {
    s.len() - s.trim_start().len()
}

/// Every path a use tree names, from `s` on (after `prefix::`): `a::{b,
/// c::d}` is `a::b` and `a::c::d`; a leaf `self` is the prefix.
fn use_tree(s: &str, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut at = 0;
    loop {
        at += blank(&s[at..]);
        let rest = &s[at..];
        if let Some(list) = rest.strip_prefix('{') {
            at += 1;
            let mut inner = 0;
            loop {
                inner += use_tree(&list[inner..], prefix.clone(), out);
                inner += blank(&list[inner..]);
                if list[inner..].starts_with(',') {
                    inner += 1;
                    inner += blank(&list[inner..]);
                }
                if list[inner..].starts_with('}') {
                    return at + inner + 1;
                }
                if list[inner..].is_empty() {
                    return at + inner;
                }
            }
        }
        let ident: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if ident.is_empty() {
            out.push(prefix);
            return at;
        }
        at += ident.len();
        if ident != "self" {
            prefix.push(ident);
        }
        if s[at..].trim_start().starts_with("::") {
            at += blank(&s[at..]) + 2;
        } else {
            out.push(prefix);
            return at;
        }
    }
}

/// The absolute paths (from the crate root) that `code`, the code of the
/// module at `module`, names through `crate::`, `super::` or `self::`;
/// `relative` also takes a `use` of a child module (`use replay::X;`).
fn named_paths(module: &[String], code: &str, relative: bool) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    for (i, _) in code.char_indices() {
        if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || b"_$".contains(&bytes[i - 1])) {
            continue;
        }
        let rest = &code[i..];
        let (mut base, after) = if let Some(r) = rest.strip_prefix("crate::") {
            (Vec::new(), r)
        } else if let Some(r) = rest.strip_prefix("super::") {
            (module[..module.len().saturating_sub(1)].to_vec(), r)
        } else if let Some(r) = rest.strip_prefix("self::") {
            (module.to_vec(), r)
        } else if let (true, Some(r)) = (relative, rest.strip_prefix("use ")) {
            if ["crate::", "super::", "self::"]
                .iter()
                .any(|k| r.starts_with(k))
            {
                continue;
            }
            (module.to_vec(), r)
        } else {
            continue;
        };
        let mut after = after;
        while let Some(r) = after.strip_prefix("super::") {
            base.pop();
            after = r;
        }
        let mut leaves = Vec::new();
        use_tree(after, Vec::new(), &mut leaves);
        for leaf in leaves {
            let mut path = base.clone();
            path.extend(leaf);
            found.push(path);
        }
    }
    found
}

/// The file modules of `src/` (the library's, not the binary's `main.rs`).
fn file_modules() -> BTreeMap<Vec<String>, PathBuf> {
    let mut files = Vec::new();
    sources(&root().join("src"), &mut files);
    files
        .into_iter()
        .filter(|f| f != &root().join("src/main.rs"))
        .map(|f| (module_path(&f), f))
        .collect()
}

/// The file module a path leads to; an item a folder's `mod.rs` re-exports
/// leads on to the sibling that defines it.
fn target(
    path: &[String],
    modules: &BTreeMap<Vec<String>, PathBuf>,
    reexports: &BTreeMap<Vec<String>, Vec<String>>,
) -> Option<Vec<String>> {
    let k = (0..=path.len())
        .rev()
        .find(|&k| modules.contains_key(&path[..k]))?;
    if let Some(to) = path.get(k).and_then(|item| {
        let mut key = path[..k].to_vec();
        key.push(item.clone());
        reexports.get(&key)
    }) {
        return target(to, modules, &BTreeMap::new()).or(Some(path[..k].to_vec()));
    }
    Some(path[..k].to_vec())
}

#[test]
fn no_two_files_of_a_folder_import_each_other_even_through_others() {
    let modules = file_modules();
    // `pub use child::Item` (any visibility) in a folder's root file.
    let mut reexports = BTreeMap::new();
    for (module, file) in &modules {
        let text = code(file);
        for stmt in text.split(';') {
            let stmt = stmt.trim_start();
            let Some(tree) = ["pub use ", "pub(crate) use ", "pub(super) use "]
                .iter()
                .find_map(|p| stmt.strip_prefix(p))
            else {
                continue;
            };
            for p in named_paths(module, &format!("use {tree}"), true) {
                if let Some(item) = p.last() {
                    let mut key = module.clone();
                    key.push(item.clone());
                    reexports.insert(key, p);
                }
            }
        }
    }
    // Per folder, the edges between its children.
    let mut edges: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (module, file) in &modules {
        for path in named_paths(module, &code(file), false) {
            let Some(to) = target(&path, &modules, &reexports) else {
                continue;
            };
            let k = module.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if k < module.len() && k < to.len() {
                edges
                    .entry(module[..k].to_vec())
                    .or_default()
                    .entry(module[k].clone())
                    .or_default()
                    .insert(to[k].clone());
            }
        }
    }
    assert!(
        edges
            .get(&vec!["analysis".to_string()])
            .is_some_and(|e| e.len() > 5),
        "the import graph was not read: {edges:?}"
    );
    let mut circles = Vec::new();
    for (folder, graph) in &edges {
        if let Some(circle) = circle(graph) {
            circles.push(format!("src/{}: {}", folder.join("/"), circle.join(" -> ")));
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

/// One circle of `graph`, if there is any, as the nodes along it.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut found = stack[at..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if !done.insert(node.to_string()) {
            return None;
        }
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, done, stack) {
                return Some(found);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut done, &mut Vec::new()))
}
