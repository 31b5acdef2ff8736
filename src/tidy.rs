//! Tidy checks on the source tree itself, as rust-analyzer's `tidy`: every Rust file opens with
//! a `//!` line saying what it is for, no module imports from a layer above it (`use` trees
//! parsed, grouped ones included, and `crate::` paths in code), and no two files import each
//! other, directly or around a circle.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("tests/it"), &mut files);
    let missing: Vec<String> = files
        .iter()
        .filter(|f| !std::fs::read_to_string(f).unwrap().starts_with("//!"))
        .map(|f| f.strip_prefix(root).unwrap().display().to_string())
        .collect();
    assert!(missing.is_empty(), "files without a leading `//!` line: {missing:?}");
    assert!(files.len() > 20, "found only {} files", files.len());
}

/// A source file as a module: its path under `src/` and its module path (`protocol/calls.rs`
/// is `protocol::calls`, `tools/mod.rs` is `tools`, `main.rs` and `lib.rs` the crate root).
struct Module {
    shown: String,
    path: Vec<String>,
    text: String,
}

fn modules() -> Vec<Module> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .map(|file| {
            let rel = file.strip_prefix(&src).unwrap().with_extension("");
            let mut path: Vec<String> =
                rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            if matches!(path.last().map(String::as_str), Some("mod" | "main" | "lib")) {
                path.pop();
            }
            let text = std::fs::read_to_string(&file).unwrap();
            Module { shown: format!("src/{}", rel.with_extension("rs").display()), path, text }
        })
        .collect()
}

/// The code of `text` without comments, string and char literals, so that a path in a doc
/// comment or a message is no import.
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '"' => {
                let mut escaped = false;
                for c in chars.by_ref() {
                    match c {
                        '\\' if !escaped => escaped = true,
                        '"' if !escaped => break,
                        _ => escaped = false,
                    }
                }
                out.push_str("\"\"");
            }
            // A char literal ('x', '\n', '\''), not a lifetime ('a): skipped whole.
            '\'' => {
                let rest: String = chars.clone().take(4).collect();
                let len = if rest.starts_with('\\') {
                    rest.find('\'').filter(|&n| n > 1).map(|n| n + 1)
                } else if rest.chars().nth(1) == Some('\'') {
                    Some(rest.chars().next().map_or(0, char::len_utf8) + 1)
                } else {
                    None
                };
                match len {
                    Some(n) => {
                        let skip = rest[..n].chars().count();
                        for _ in 0..skip {
                            chars.next();
                        }
                        out.push_str("' '");
                    }
                    None => out.push(c),
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Expands one `use` tree (`crate::{a, b::{c, d as e}}`) into its paths, each as segments.
fn expand(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if tree.is_empty() {
        return;
    }
    // Split off a leading `a::b::` before a brace group.
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim().trim_end_matches("::");
        let mut path = prefix.to_vec();
        path.extend(head.split("::").map(str::trim).filter(|s| !s.is_empty()).map(String::from));
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut depth = 0;
        let mut start = 0;
        for (n, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..n], &path, out);
                    start = n + 1;
                }
                _ => {}
            }
        }
        expand(&inner[start..], &path, out);
        return;
    }
    let tree = tree.split(" as ").next().unwrap_or(tree).trim();
    let mut path = prefix.to_vec();
    path.extend(tree.split("::").map(str::trim).filter(|s| !s.is_empty()).map(String::from));
    if path.last().is_some_and(|s| s == "self" || s == "*") {
        path.pop();
    }
    out.push(path);
}

/// Every crate path `module` names, resolved from the crate root: its `use` trees (grouped ones
/// included, `crate::`, `self::` and `super::` alike) and the `crate::` paths in its code.
fn imports(module: &Module) -> Vec<Vec<String>> {
    let code = code_of(&module.text);
    let mut raw = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = find_use(rest) {
        let tail = &rest[at..];
        let end = tail.find(';').unwrap_or(tail.len());
        expand(&tail[4..end], &[], &mut raw);
        rest = &tail[end..];
    }
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '{') {
            continue;
        }
        let path: String = code[at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        raw.push(path.split("::").filter(|s| !s.is_empty()).map(String::from).collect());
    }
    raw.into_iter()
        .filter_map(|path| {
            let first = path.first()?.as_str();
            let mut resolved = match first {
                "crate" => Vec::new(),
                "self" => module.path.clone(),
                "super" => {
                    let mut base = module.path.clone();
                    let mut rest = path.iter().peekable();
                    while rest.next_if(|s| *s == "super").is_some() {
                        base.pop();
                    }
                    base.extend(rest.cloned());
                    return Some(base).filter(|p| !p.is_empty());
                }
                _ => return None,
            };
            resolved.extend(path[1..].iter().cloned());
            Some(resolved).filter(|p| !p.is_empty())
        })
        .collect()
}

/// Where the next `use` statement starts in `code`.
fn find_use(code: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(n) = code[from..].find("use ") {
        let at = from + n;
        let before = code[..at].trim_end_matches(' ');
        let starts = before.is_empty()
            || before.ends_with(['\n', ';', '{', '}'])
            || before.ends_with("pub")
            || before.ends_with(')');
        if starts && !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            return Some(at);
        }
        from = at + 4;
    }
    None
}

/// The file a crate path lands in: the module with the longest path that begins it.
fn target<'a>(modules: &'a [Module], path: &[String]) -> Option<&'a Module> {
    modules
        .iter()
        .filter(|m| !m.path.is_empty() && path.starts_with(&m.path))
        .max_by_key(|m| m.path.len())
}

/// The top-level module a file belongs to (`walk` is `walk.rs` and `walk/`).
fn top(module: &Module) -> &str {
    module.path.first().map_or("", String::as_str)
}

/// The edges between files: `(from, to)` by index into `modules`. An edge from a file to its
/// own ancestor (a child using its parent's items, as `super::` does) is how a module shares
/// within itself, and not counted.
fn edges(modules: &[Module]) -> Vec<(usize, usize)> {
    let mut edges = Vec::new();
    for (n, module) in modules.iter().enumerate() {
        for path in imports(module) {
            let Some(to) = target(modules, &path) else { continue };
            let m = modules.iter().position(|x| std::ptr::eq(x, to)).unwrap();
            if m != n && !module.path.starts_with(&to.path) {
                edges.push((n, m));
            }
        }
    }
    edges.sort_unstable();
    edges.dedup();
    edges
}

/// The modules each layer must not import: nothing below the tools reaches up into them, the
/// tools never see the protocol or the command line, and the protocol never sees the command
/// line. Read from the graph: `levels` below prints it.
const LAYERS: &[(&[&str], &[&str])] = &[
    // The leaves and the lower layers: the file system, the policy, the sandbox.
    (
        &[
            "audit",
            "base64",
            "error",
            "fs",
            "interrupt",
            "js_regex",
            "memory",
            "platform",
            "policy",
            "progress",
            "reply_size",
            "sandbox",
            "walk",
        ],
        &[
            "write_order",
            "tools",
            "schema",
            "selection",
            "protocol",
            "oneshot",
            "cli",
            "client_config",
            "start",
        ],
    ),
    // Write ordering: below the tools that pass its gate.
    (
        &["write_order"],
        &["tools", "schema", "selection", "protocol", "oneshot", "cli", "client_config", "start"],
    ),
    (&["tools"], &["schema", "selection", "protocol", "oneshot", "cli", "client_config", "start"]),
    (&["schema", "selection"], &["protocol", "oneshot", "cli", "client_config", "start"]),
    (&["client_config"], &["protocol", "oneshot", "cli", "start", "tools", "schema", "selection"]),
    (&["protocol"], &["oneshot", "cli", "client_config", "start"]),
    (&["oneshot"], &["cli", "client_config", "start"]),
    (&["cli"], &["oneshot", "start"]),
];

/// The imports of `modules` that break a layer rule, as `file: path`.
fn offences(modules: &[Module]) -> Vec<String> {
    let mut offences = Vec::new();
    for module in modules {
        let Some((_, above)) = LAYERS.iter().find(|(layer, _)| layer.contains(&top(module))) else {
            continue;
        };
        for path in imports(module) {
            if above.contains(&path[0].as_str()) {
                offences.push(format!("{}: crate::{}", module.shown, path.join("::")));
            }
        }
    }
    offences.sort();
    offences.dedup();
    offences
}

/// A circle among files, if there is one, as the files in order.
fn circle(modules: &[Module], edges: &[(usize, usize)]) -> Option<Vec<String>> {
    // Depth-first, colouring: 0 unseen, 1 on the stack, 2 done.
    fn visit(
        n: usize,
        edges: &[(usize, usize)],
        colour: &mut [u8],
        stack: &mut Vec<usize>,
    ) -> Option<Vec<usize>> {
        colour[n] = 1;
        stack.push(n);
        for &(_, m) in edges.iter().filter(|(from, _)| *from == n) {
            if colour[m] == 1 {
                let at = stack.iter().position(|&s| s == m).unwrap();
                return Some(stack[at..].to_vec());
            }
            if colour[m] == 0 {
                if let Some(found) = visit(m, edges, colour, stack) {
                    return Some(found);
                }
            }
        }
        stack.pop();
        colour[n] = 2;
        None
    }
    let mut colour = vec![0; modules.len()];
    for n in 0..modules.len() {
        if colour[n] == 0 {
            if let Some(found) = visit(n, edges, &mut colour, &mut Vec::new()) {
                return Some(found.into_iter().map(|n| modules[n].shown.clone()).collect());
            }
        }
    }
    None
}

#[test]
fn use_trees_expand_to_every_path() {
    let module = Module {
        shown: "src/a/b.rs".into(),
        path: vec!["a".into(), "b".into()],
        text: "use crate::{x, y::{z, w as v}};\npub(crate) use super::c::*;\n\
               use self::d;\nuse std::io;\n// use crate::comment;\n\
               fn f() { crate::inline::f(\"crate::string\"); let c = '{'; }\n"
            .into(),
    };
    let got: Vec<String> = imports(&module).iter().map(|p| p.join("::")).collect();
    assert_eq!(got, ["x", "y::z", "y::w", "a::c", "a::b::d", "inline::f"]);
}

#[test]
fn no_module_imports_from_a_layer_above_it() {
    let modules = modules();
    assert!(modules.len() > 20, "found only {} files", modules.len());
    for (layer, _) in LAYERS {
        for name in *layer {
            assert!(modules.iter().any(|m| top(m) == *name), "no source for module `{name}`");
        }
    }
    let offences = offences(&modules);
    assert!(offences.is_empty(), "imports from a layer above:\n{}", offences.join("\n"));
}

#[test]
fn a_planted_upward_import_is_found() {
    let mut modules = modules();
    let walk = modules.iter_mut().find(|m| m.shown == "src/walk.rs").unwrap();
    walk.text.push_str("\nuse crate::{error, tools::{self, Ctx}};\n");
    assert_eq!(offences(&modules), ["src/walk.rs: crate::tools", "src/walk.rs: crate::tools::Ctx"]);
    let mut modules = self::modules();
    let schedule = modules.iter_mut().find(|m| m.shown == "src/protocol/schedule.rs").unwrap();
    schedule.text.push_str("\nuse crate::protocol::session::Session;\n");
    let edges = edges(&modules);
    let found = circle(&modules, &edges).expect("a circle");
    assert!(found.contains(&"src/protocol/schedule.rs".to_string()), "{found:?}");
}

#[test]
fn no_import_circle_between_files() {
    let modules = modules();
    let edges = edges(&modules);
    assert!(edges.len() > 50, "found only {} edges", edges.len());
    if let Some(found) = circle(&modules, &edges) {
        panic!("an import circle: {}", found.join(" -> "));
    }
}

/// The module graph by levels, each module one above the highest it imports, as lines:
/// `N modules, E edges, L levels`, then `level: modules` from the top.
fn levels(modules: &[Module]) -> Vec<String> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, to) in edges(modules) {
        let (from, to) = (top(&modules[from]), top(&modules[to]));
        if from.is_empty() || to.is_empty() {
            continue;
        }
        graph.entry(to).or_default();
        let below = graph.entry(from).or_default();
        if from != to {
            below.insert(to);
        }
    }
    let mut level: BTreeMap<&str, usize> = BTreeMap::new();
    // As many rounds as modules: enough for the longest chain of a graph without circles.
    for _ in 0..graph.len() {
        for (&name, below) in &graph {
            let l = below.iter().map(|b| level.get(b).map_or(0, |l| l + 1)).max().unwrap_or(0);
            level.insert(name, l);
        }
    }
    let highest = level.values().copied().max().unwrap_or(0);
    let edges: usize = graph.values().map(BTreeSet::len).sum();
    let mut lines = vec![format!("{} modules, {edges} edges, {} levels", graph.len(), highest + 1)];
    for l in (0..=highest).rev() {
        let names: Vec<&str> = level.iter().filter(|(_, v)| **v == l).map(|(k, _)| *k).collect();
        lines.push(format!("{l}: {}", names.join(" ")));
    }
    lines
}

/// No circle among the top-level modules either (`protocol` → `cli` → `oneshot` → `protocol`
/// made three entry points one tangle): each module's imports, followed, never lead back to it.
#[test]
fn no_import_circle_between_modules() {
    let modules = modules();
    let mut below: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> =
        std::collections::BTreeMap::new();
    for (from, to) in edges(&modules) {
        let (from, to) = (top(&modules[from]), top(&modules[to]));
        if from != to && !from.is_empty() && !to.is_empty() {
            below.entry(from).or_default().insert(to);
        }
    }
    for &start in below.keys() {
        let mut seen = std::collections::BTreeSet::new();
        let mut next: Vec<&str> = below[start].iter().copied().collect();
        while let Some(module) = next.pop() {
            assert_ne!(module, start, "`{start}` imports, through others, from itself");
            if seen.insert(module) {
                next.extend(below.get(module).into_iter().flatten().copied());
            }
        }
    }
}

/// `start` is the top; the command line and the one-shot calls sit side by side under it, and
/// the protocol below both (the cli takes only `protocol::ToolErrors` from it).
#[test]
fn the_entry_points_sit_side_by_side_under_start() {
    let modules = modules();
    let levels = levels(&modules);
    let shown = levels.join("\n");
    let level_of =
        |name: &str| levels[1..].iter().position(|line| line.split(' ').skip(1).any(|m| m == name));
    assert_eq!(level_of("start"), Some(0), "{shown}");
    assert_eq!(level_of("cli"), level_of("oneshot"), "{shown}");
    assert!(level_of("protocol") > level_of("cli"), "{shown}");
}
