//! The layers, checked: every top-level module of the crate imports only what ARCHITECTURE.md's
//! table of layers lets it, and no two top-level modules import each other, directly or round a
//! circle. Read from the sources, so a new `use` that crosses a layer fails `cargo test`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The rows of ARCHITECTURE.md's table between these markers: `| module | layer | may import |`.
const TABLE_START: &str = "<!-- layers: start -->";
const TABLE_END: &str = "<!-- layers: end -->";

struct Row {
    layer: u32,
    may_import: BTreeSet<String>,
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn declared_layers() -> BTreeMap<String, Row> {
    let text = std::fs::read_to_string(manifest_dir().join("ARCHITECTURE.md"))
        .expect("read ARCHITECTURE.md");
    let start = text
        .find(TABLE_START)
        .expect("ARCHITECTURE.md has the layers table");
    let end = text.find(TABLE_END).expect("the layers table ends");
    let mut rows = BTreeMap::new();
    for line in text[start..end]
        .lines()
        .filter(|line| line.starts_with("| `"))
    {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let [module, layer, may_import, ..] = cells[..] else {
            panic!("a row of the layers table has three cells: {line}");
        };
        let layer = layer
            .parse()
            .unwrap_or_else(|_| panic!("a layer number: {line}"));
        let may_import = may_import
            .split(',')
            .map(|name| name.trim().trim_matches('`').to_owned())
            .filter(|name| !name.is_empty() && name != "-")
            .collect();
        rows.insert(
            module.trim_matches('`').to_owned(),
            Row { layer, may_import },
        );
    }
    rows
}

/// The library's top-level modules, as `lib.rs` declares them, each with its files (`src/x.rs`
/// or `src/x/`). The binary's own modules (`src/cli/`) sit above every layer: not checked.
fn top_level_modules() -> BTreeMap<String, Vec<PathBuf>> {
    let src = manifest_dir().join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("read lib.rs");
    let mut modules = BTreeMap::new();
    for line in lib.lines().map(str::trim) {
        let Some(name) = line
            .strip_prefix("pub mod ")
            .or_else(|| line.strip_prefix("mod "))
            .and_then(|rest| rest.strip_suffix(';'))
        else {
            continue;
        };
        if name == "layering" {
            continue;
        }
        let mut files = Vec::new();
        let dir = src.join(name);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
        let file = src.join(format!("{name}.rs"));
        if file.is_file() {
            files.push(file);
        }
        assert!(!files.is_empty(), "no source for module `{name}`");
        modules.insert(name.to_owned(), files);
    }
    modules
}

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

/// The top-level modules named after `crate::` in `source`, comments left out: `crate::a::b`
/// and each item of `crate::{a, b::c}`.
fn crate_paths(source: &str) -> BTreeSet<String> {
    let code: String = source
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut named = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        let preceded_by_ident = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        rest = &rest[at + "crate::".len()..];
        if preceded_by_ident {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            named.extend(group_heads(group));
        } else {
            named.insert(ident_at(rest));
        }
    }
    named.remove("");
    named
}

/// The first identifier of each top-level item of a `{a, b::{c, d}, e}` group.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = vec![ident_at(group.trim_start())];
    let mut depth = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => heads.push(ident_at(group[i + 1..].trim_start())),
            _ => {}
        }
    }
    heads
}

fn ident_at(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Top-level module -> the other top-level modules its files name.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for (module, files) in top_level_modules() {
        let mut named = BTreeSet::new();
        for file in files {
            let source = std::fs::read_to_string(&file).expect("read source");
            named.extend(crate_paths(&source));
        }
        named.remove(&module);
        graph.insert(module, named);
    }
    graph
}

/// A circle of imports, if there is one: the modules round it, the first repeated at the end.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| m == module) {
            let mut round = path[at..].to_vec();
            round.push(module.to_owned());
            return Some(round);
        }
        if !done.insert(module.to_owned()) {
            return None;
        }
        path.push(module.to_owned());
        for next in graph.get(module).into_iter().flatten() {
            if let Some(round) = visit(next, graph, path, done) {
                return Some(round);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|module| visit(module, graph, &mut Vec::new(), &mut done))
}

#[test]
fn every_top_level_module_imports_only_what_its_layer_allows() {
    let declared = declared_layers();
    let mut wrong = Vec::new();
    for (module, named) in imports() {
        let Some(row) = declared.get(&module) else {
            wrong.push(format!(
                "`{module}` is not in ARCHITECTURE.md's layers table"
            ));
            continue;
        };
        for other in named
            .iter()
            .filter(|other| !row.may_import.contains(*other))
        {
            wrong.push(format!(
                "`{module}` imports `{other}`, which its row does not allow"
            ));
        }
        for other in &row.may_import {
            match declared.get(other) {
                Some(below) if below.layer <= row.layer => {}
                Some(_) => wrong.push(format!(
                    "`{module}` may import `{other}`, of a higher layer"
                )),
                None => wrong.push(format!(
                    "`{module}` may import `{other}`, which is no module"
                )),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_two_top_level_modules_import_each_other_round_a_circle() {
    let graph = imports();
    assert_eq!(circle(&graph), None, "imports: {graph:#?}");
}

#[test]
fn imports_are_read_from_paths_groups_and_nested_groups() {
    let source = "use crate::a::X;\n// use crate::commented;\nuse crate::{b, c::{D, E}, d::F};\nfn f() { crate::e::g(); x_crate::h(); }";
    let names: Vec<String> = crate_paths(source).into_iter().collect();
    assert_eq!(names, ["a", "b", "c", "d", "e"]);
}

#[test]
fn a_circle_is_found_and_named() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(m, to)| (m.to_owned(), to.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(
        circle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}
