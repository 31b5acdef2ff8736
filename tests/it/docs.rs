//! The documents against the code: README's tool table against `schemas/`, field by field,
//! every relative link in the Markdown documents against the repository, every module
//! ARCHITECTURE.md names against `src/`, and every test SECURITY.md's rule table names against
//! the tests.
//!
//! A published copy of the repository has nothing beside it, so a link may not leave it.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

// ---------------------------------------------------------------------------------------------
// The tool table
// ---------------------------------------------------------------------------------------------

/// Parameters by name: whether each is required, and the fields of its objects (`edits`).
#[derive(Debug, PartialEq, Eq, Default)]
struct Params(BTreeMap<String, (bool, Params)>);

/// What the schema says: its properties, required ones marked, and an array's object fields.
fn schema_params(schema: &Value) -> Params {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut params = Params::default();
    for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
        let nested = if prop["type"] == "array" { &prop["items"] } else { prop };
        let fields = schema_params(nested);
        params.0.insert(name.clone(), (required.contains(&name.as_str()), fields));
    }
    params
}

/// A parameters cell: `` `name` `` or `` **`name`** `` (required), each optionally followed by
/// its fields in parentheses, separated by commas; `–` for none. Anything else is an error, so
/// that prose cannot hide a parameter from the check.
fn parse_params(cell: &str) -> Result<Params, String> {
    if cell == "–" {
        return Ok(Params::default());
    }
    let mut rest = cell;
    let params = parse_list(&mut rest)?;
    if !rest.is_empty() {
        return Err(format!("unexpected {rest:?}"));
    }
    Ok(params)
}

fn parse_list(rest: &mut &str) -> Result<Params, String> {
    let mut params = Params::default();
    loop {
        *rest = rest.trim_start();
        let required = rest.starts_with("**`");
        let open = if required { "**`" } else { "`" };
        let Some(after) = rest.strip_prefix(open) else {
            return Err(format!("expected `name` or **`name`** at {rest:?}"));
        };
        let end = after.find('`').ok_or_else(|| format!("unclosed name at {rest:?}"))?;
        let name = &after[..end];
        let close = if required { "`**" } else { "`" };
        *rest = after[end..]
            .strip_prefix(close)
            .ok_or_else(|| format!("`{name}`: expected {close:?} after it"))?
            .trim_start();
        let mut fields = Params::default();
        if let Some(inner) = rest.strip_prefix('(') {
            *rest = inner;
            fields = parse_list(rest)?;
            *rest = rest
                .trim_start()
                .strip_prefix(')')
                .ok_or_else(|| format!("`{name}`: expected ')' at {rest:?}"))?;
        }
        if params.0.insert(name.to_string(), (required, fields)).is_some() {
            return Err(format!("`{name}` is listed twice"));
        }
        *rest = rest.trim_start();
        match rest.strip_prefix(',') {
            Some(more) => *rest = more,
            None => return Ok(params),
        }
    }
}

/// Where the table and the schema disagree, one line per parameter, under `at` (`edits.`).
fn differences(at: &str, table: &Params, schema: &Params, out: &mut Vec<String>) {
    for (name, (required, fields)) in &schema.0 {
        match table.0.get(name) {
            None => out.push(format!("`{at}{name}` is in the schema but not in the table")),
            Some((in_table, table_fields)) => {
                if in_table != required {
                    let (is, shown) =
                        if *required { ("required", "not bold") } else { ("optional", "bold") };
                    out.push(format!(
                        "`{at}{name}` is {is} in the schema but {shown} in the table"
                    ));
                }
                differences(&format!("{at}{name}."), table_fields, fields, out);
            }
        }
    }
    for name in table.0.keys().filter(|name| !schema.0.contains_key(*name)) {
        out.push(format!("`{at}{name}` is in the table but not in the schema"));
    }
}

/// A table row's cells; `\|` inside a cell is not a separator.
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    let mut cells = vec![String::new()];
    let mut prev = ' ';
    for ch in inner.chars() {
        if ch == '|' && prev != '\\' {
            cells.push(String::new());
        } else {
            cells.last_mut().expect("a cell").push(ch);
        }
        prev = ch;
    }
    cells.iter().map(|cell| cell.trim().to_string()).collect()
}

/// Every difference between `readme`'s tool table and the schemas (`name` → tool definition).
fn table_errors(readme: &str, schemas: &BTreeMap<String, Value>) -> Vec<String> {
    let header = "| tool | title | parameters | returns |";
    let Some(start) = readme.lines().position(|line| line == header) else {
        return vec![format!("README.md has no table headed {header:?}")];
    };
    let mut errors = Vec::new();
    let mut seen = BTreeMap::new();
    for row in readme.lines().skip(start + 2).take_while(|line| line.starts_with('|')) {
        let cells = cells(row);
        let [tool, title, params, _returns] = &cells[..] else {
            errors.push(format!("{row:?}: expected 4 cells, found {}", cells.len()));
            continue;
        };
        let tool = tool.trim_matches('`');
        if seen.insert(tool.to_string(), ()).is_some() {
            errors.push(format!("{tool}: listed twice"));
        }
        let Some(def) = schemas.get(tool) else {
            errors.push(format!("{tool}: in the table, but schemas/ has no such tool"));
            continue;
        };
        if def["title"] != title.as_str() {
            errors.push(format!("{tool}: title {title:?}, the schema's is {}", def["title"]));
        }
        match parse_params(params) {
            Err(e) => errors.push(format!("{tool}: parameters cell: {e}")),
            Ok(table) => {
                let mut diffs = Vec::new();
                differences("", &table, &schema_params(&def["inputSchema"]), &mut diffs);
                errors.extend(diffs.into_iter().map(|d| format!("{tool}: {d}")));
            }
        }
    }
    for tool in schemas.keys().filter(|tool| !seen.contains_key(*tool)) {
        errors.push(format!("{tool}: in schemas/, but not in the table"));
    }
    errors
}

fn schemas() -> BTreeMap<String, Value> {
    let mut schemas = BTreeMap::new();
    for entry in fs::read_dir(root().join("schemas")).expect("schemas/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|ext| ext == "json") {
            let def: Value = serde_json::from_str(&read(&path)).expect("a schema is JSON");
            schemas.insert(def["name"].as_str().expect("name").to_string(), def);
        }
    }
    schemas
}

#[test]
fn readme_tool_table_matches_the_schemas_field_by_field() {
    let errors = table_errors(&read(&root().join("README.md")), &schemas());
    assert!(
        errors.is_empty(),
        "README.md's tool table disagrees with schemas/ (fix the table, or rewrite it with \
         `python3 scripts/tool_table.py --write`):\n{}",
        errors.join("\n")
    );
}

/// The check itself catches what it is for: a parameter left out, one too many, a required
/// one shown as optional (at the top and among an array's fields), a tool left out.
#[test]
fn the_table_check_catches_each_kind_of_drift() {
    let readme = read(&root().join("README.md"));
    let schemas = schemas();
    let edited = |from: &str, to: &str| {
        assert!(readme.contains(from), "README.md no longer has {from:?}");
        table_errors(&readme.replacen(from, to, 1), &schemas)
    };
    let grep = "`maxResults`, `respectGitignore`, `outputMode` |";
    assert_eq!(
        edited(grep, "`maxResults`, `respectGitignore` |"),
        ["grep_files: `outputMode` is in the schema but not in the table"]
    );
    assert_eq!(
        edited(grep, "`maxResults`, `respectGitignore`, `outputMode`, `regexp` |"),
        ["grep_files: `regexp` is in the table but not in the schema"]
    );
    assert_eq!(
        edited(
            "| Write file | **`path`**, **`content`**,",
            "| Write file | **`path`**, `content`,"
        ),
        ["write_file: `content` is required in the schema but not bold in the table"]
    );
    assert_eq!(
        edited(
            "| Edit file | **`path`**, **`edits`** (**`oldText`**,",
            "| Edit file | **`path`**, **`edits`** (`oldText`,"
        ),
        ["edit_file: `edits.oldText` is required in the schema but not bold in the table"]
    );
    let row = readme.lines().find(|line| line.starts_with("| `delete_file` |")).expect("row");
    assert_eq!(edited(&format!("{row}\n"), ""), ["delete_file: in schemas/, but not in the table"]);
    assert_eq!(
        edited("**`command`**, `workingDirectory`", "**`command`**, the `workingDirectory`"),
        ["execute_command: parameters cell: expected `name` or **`name`** at \"the `workingDirectory`, `timeout`, `background`, `waitSeconds`, `tty`\""]
    );
}

// ---------------------------------------------------------------------------------------------
// Links
// ---------------------------------------------------------------------------------------------

/// The top-level documents, and every .md under docs/ (docs/design/ included).
fn documents() -> Vec<PathBuf> {
    let mut docs = Vec::new();
    let mut dirs = vec![root().join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                docs.push(path);
            }
        }
    }
    docs.sort();
    let top = ["README.md", "ARCHITECTURE.md", "SECURITY.md", "CHANGELOG.md"];
    docs.splice(0..0, top.map(|name| root().join(name)));
    docs
}

/// The text outside fenced code blocks and code spans, where a `[text](target)` is a link.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            // Drop code spans: what is between pairs of backticks.
            out.extend(line.split('`').step_by(2).flat_map(|part| [part, " "]));
            out.push('\n');
        }
    }
    out
}

/// The targets of the inline links `[text](target)` in `text`.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    prose
        .match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &prose[at + 2..];
            rest.find(')').map(|end| rest[..end].to_string())
        })
        .collect()
}

/// GitHub's anchors for the headings of a Markdown text: lowercased, punctuation dropped,
/// spaces made hyphens, a repeated anchor numbered `-1`, `-2`, ...
fn anchors(text: &str) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let Some(heading) = line.strip_prefix('#').filter(|_| !fenced) else { continue };
        let heading = heading.trim_start_matches('#').trim();
        let slug: String = heading
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        anchors.push(if *n == 0 { slug.clone() } else { format!("{slug}-{n}") });
        *n += 1;
    }
    anchors
}

/// What is wrong with `target`, a link in `doc`, if anything.
fn link_error(doc: &Path, target: &str) -> Option<String> {
    if target.starts_with("https://") || target.starts_with("http://") {
        return None;
    }
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    let file = if path.is_empty() { doc.to_path_buf() } else { doc.parent()?.join(path) };
    let Ok(file) = file.canonicalize() else {
        return Some(format!("{target}: no such file in the repository"));
    };
    if !file.starts_with(root().canonicalize().expect("root")) {
        return Some(format!("{target}: outside the repository"));
    }
    if !anchor.is_empty() && !anchors(&read(&file)).iter().any(|a| a == anchor) {
        return Some(format!("{target}: {} has no heading with that anchor", file.display()));
    }
    None
}

#[test]
fn every_relative_link_in_the_docs_points_into_the_repository() {
    let mut errors = Vec::new();
    for doc in documents() {
        let text = read(&doc);
        let name = doc.strip_prefix(root()).expect("in the repository").display().to_string();
        for target in links(&text) {
            if let Some(e) = link_error(&doc, &target) {
                errors.push(format!("{name}: {e}"));
            }
        }
        // A published copy has no ../shared beside it, not even to mention in passing.
        if text.contains("../shared") {
            errors.push(format!("{name}: mentions ../shared, which a published copy lacks"));
        }
    }
    assert!(errors.is_empty(), "broken links:\n{}", errors.join("\n"));
}

#[test]
fn the_link_check_catches_a_broken_link() {
    let readme = root().join("README.md");
    assert_eq!(link_error(&readme, "docs/guide.md#the-policy"), None);
    assert_eq!(link_error(&readme, "#tools"), None);
    assert!(link_error(&readme, "docs/nothing.md").is_some());
    assert!(link_error(&readme, "../shared/spec/replay-tools.md").is_some());
    assert!(link_error(&readme, "docs/guide.md#no-such-heading").is_some());
    assert_eq!(links("a [x](y.md) `[not](a-link)` b"), ["y.md"]);
    assert_eq!(anchors("# A, b `c`\n## A, b c\n"), ["a-b-c", "a-b-c-1"]);
}

/// `.ci/run` runs the test command README gives, so what CI runs is what a newcomer runs.
#[test]
fn ci_runs_the_readme_test_command() {
    let readme = read(&root().join("README.md"));
    let after = readme.split_once("Run the tests").expect("README says how to run the tests").1;
    let block = after.split_once("```sh\n").expect("a sh block after it").1;
    let command = block.split_once("\n```").expect("the block ends").0.trim();
    let ci = read(&root().join(".ci/run"));
    assert!(
        ci.lines().any(|line| line.trim() == command),
        ".ci/run does not run README's test command {command:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// ARCHITECTURE.md's module names
// ---------------------------------------------------------------------------------------------

/// The modules `text` names, by ARCHITECTURE.md's convention: every code span that is a path of
/// lowercase names joined by `::` (`protocol::transport`; `ToolError::Cancelled` is a type's
/// item, not a module), and every name in a code span of a heading under "Code map".
fn named_modules(text: &str) -> Vec<String> {
    let is_module_path = |span: &str| {
        !span.is_empty()
            && span.split("::").all(|name| {
                name.starts_with(|c: char| c.is_ascii_lowercase())
                    && name.chars().all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
            })
    };
    let mut names = Vec::new();
    let mut in_code_map = false;
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            in_code_map = heading.trim() == "Code map";
        }
        let heading = in_code_map && line.starts_with("### ");
        for span in line.split('`').skip(1).step_by(2) {
            for name in span.split(", ") {
                if is_module_path(name) && (name.contains("::") || heading) {
                    names.push(name.to_string());
                }
            }
        }
    }
    names
}

/// Whether `module` (`protocol::transport`) is a file under src/: `a/b.rs` or `a/b/mod.rs`.
fn module_exists(module: &str) -> bool {
    let path = root().join("src").join(module.replace("::", "/"));
    path.with_extension("rs").is_file() || path.join("mod.rs").is_file()
}

#[test]
fn every_module_architecture_md_names_exists() {
    let text = read(&root().join("ARCHITECTURE.md"));
    let names = named_modules(&text);
    assert!(names.len() > 20, "ARCHITECTURE.md names too few modules to be a map: {names:?}");
    let missing: Vec<&String> = names.iter().filter(|name| !module_exists(name)).collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names modules that are not in src/ (rename them there): {missing:?}"
    );
}

#[test]
fn the_module_check_catches_a_missing_module() {
    let text =
        "## Code map\n### `policy`, `nowhere`\nSee `protocol::transport` and `tools::nothing`, \
         not `ToolError::Cancelled` or `tools/call`.\n## Invariants\n### `elsewhere`\n";
    let names = named_modules(text);
    assert_eq!(names, ["policy", "nowhere", "protocol::transport", "tools::nothing"]);
    let missing: Vec<&String> = names.iter().filter(|name| !module_exists(name)).collect();
    assert_eq!(missing, ["nowhere", "tools::nothing"]);
}

// ---------------------------------------------------------------------------------------------
// SECURITY.md's tests
// ---------------------------------------------------------------------------------------------

/// The tests a "tried by" cell names: `module::test` (a `*` ends a prefix) and `src/` paths.
fn named_tests(table_cell: &str) -> Vec<String> {
    table_cell.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

/// What is wrong with `name`, a test SECURITY.md names, if anything.
fn test_error(name: &str) -> Option<String> {
    if name.starts_with("src/") {
        return (!root().join(name).exists()).then(|| format!("{name}: no such file"));
    }
    let Some((module, test)) = name.split_once("::") else {
        return Some(format!("{name}: not a `module::test` name"));
    };
    let file = root().join("tests/it").join(format!("{module}.rs"));
    let Ok(text) = fs::read_to_string(&file) else {
        return Some(format!("{name}: no tests/it/{module}.rs"));
    };
    let (prefix, whole) = match test.strip_suffix('*') {
        Some(prefix) => (prefix, false),
        None => (test, true),
    };
    let found = text.match_indices(prefix).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + prefix.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !word(before) && (!whole || !word(after))
    });
    (!found).then(|| format!("{name}: not in tests/it/{module}.rs"))
}

#[test]
fn every_test_security_md_names_exists() {
    let text = read(&root().join("SECURITY.md"));
    let rows: Vec<&str> = text.lines().filter(|line| line.starts_with("| ")).skip(1).collect();
    assert!(rows.len() > 20, "SECURITY.md's rule table has {} rows", rows.len());
    let mut errors = Vec::new();
    for row in rows {
        let tried_by = row.trim_end_matches('|').rsplit('|').next().expect("a last cell");
        let names = named_tests(tried_by);
        if names.is_empty() {
            errors.push(format!("a rule without a test: {row}"));
        }
        errors.extend(names.iter().filter_map(|name| test_error(name)));
    }
    assert!(
        errors.is_empty(),
        "SECURITY.md's table names tests that do not exist:\n{}",
        errors.join("\n")
    );
}

#[test]
fn the_test_check_catches_a_missing_test() {
    assert_eq!(test_error("policy::escape_prefix_sibling_*"), None);
    assert_eq!(test_error("docs::every_test_security_md_names_exists"), None);
    assert_eq!(test_error("src/policy/tests.rs"), None);
    assert!(test_error("policy::escape_prefix_sibling").is_some());
    assert!(test_error("read::no_such_test_*").is_some());
    assert!(test_error("nowhere::test").is_some());
    assert!(test_error("src/nowhere.rs").is_some());
    assert_eq!(named_tests(" `a::b`, `src/c.rs` (`d`) "), ["a::b", "src/c.rs", "d"]);
}
