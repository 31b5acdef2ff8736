//! The table against the schemas: every schema has a row and every row a schema, and each row
//! says what its schema's annotations say; and the keys each writer's write turn takes.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::*;
use crate::policy::{Access, AllowedRoot, Policy};

#[test]
fn every_schema_file_has_a_row_and_every_row_a_schema_file() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/schemas");
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let Some(tool) = name.strip_suffix(".json") else { continue };
        let row = Tool::from_name(tool).unwrap_or_else(|| panic!("schemas/{name} has no row"));
        let text = std::fs::read_to_string(format!("{dir}/{name}")).unwrap();
        assert_eq!(row.spec().schema, text, "{tool}: the row embeds another file");
    }
    for tool in Tool::ALL {
        let file = format!("{dir}/{}.json", tool.name());
        assert!(std::path::Path::new(&file).is_file(), "{tool:?} has no {file}");
        assert_eq!(Tool::from_name(tool.name()), Some(tool));
    }
    assert_eq!(Tool::from_name("no_such_tool"), None);
}

/// The row's schema file, parsed.
fn definition(tool: Tool) -> Value {
    serde_json::from_str(tool.spec().schema).unwrap()
}

/// The row's class, as `(readOnlyHint, openWorldHint)`.
#[track_caller]
fn check_class(tool: Tool, expect: (bool, bool)) {
    let hints = &definition(tool)["annotations"];
    let got = (hints["readOnlyHint"] == true, hints["openWorldHint"] == true);
    assert_eq!(got, expect, "{tool:?}: the schema's annotations against the row");
}

#[test]
fn every_row_says_what_its_schema_annotations_say() {
    for tool in Tool::ALL {
        let spec = tool.spec();
        match spec.effect {
            Effect::ReadOnly => check_class(tool, (true, false)),
            Effect::Writes(targets) => {
                check_class(tool, (false, false));
                assert!(!targets.is_empty(), "{tool:?} writes but names no path argument");
            }
            // The writers whose paths no argument names (commands and their sessions): they
            // take no write turn.
            Effect::OpenWorld => {
                check_class(tool, (false, true));
                assert!(
                    matches!(tool, Tool::ExecuteCommand | Tool::CommandSession),
                    "{tool:?} is open-world: only the tools that run commands may be"
                );
            }
        }
    }
}

/// Each argument a row names (a write turn's targets, the one that moves a call off the
/// reading thread) is one its schema takes, so a renamed argument cannot leave a row behind.
#[test]
fn every_argument_a_row_names_is_in_its_schema() {
    for tool in Tool::ALL {
        let spec = tool.spec();
        let properties = &definition(tool)["inputSchema"]["properties"];
        let mut named = Vec::new();
        if let Effect::Writes(targets) = spec.effect {
            for target in targets {
                match *target {
                    Target::Path(key) | Target::GlobBases(key) => named.push(key),
                    Target::Found(_) => {}
                }
            }
        }
        if let Runs::InlineWithout(key) = spec.runs {
            named.push(key);
        }
        for key in named {
            assert!(properties.get(key).is_some(), "{tool:?}: `{key}` is not in its schema");
        }
    }
}

/// Only quick reads are answered on the reading thread: never a writer, nor a call that waits.
#[test]
fn only_read_only_tools_run_inline() {
    for tool in Tool::ALL {
        let spec = tool.spec();
        if spec.runs != Runs::Pool {
            assert_eq!(spec.effect, Effect::ReadOnly, "{tool:?}");
        }
    }
}

/// The keys a `tools/call` with `params` takes its write turn on.
fn turn_keys(policy: &Policy, params: &Value) -> Option<Vec<PathBuf>> {
    let tool = Tool::from_name(params.get("name")?.as_str()?)?;
    tool.write_keys(policy, params.get("arguments").unwrap_or(&Value::Null))
}

/// A fresh directory with `dir/f.txt` and `alias -> dir`, allowed read-write.
fn tree() -> (PathBuf, Policy) {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let base = std::env::temp_dir().join(format!("replay-turns-{}-{n}", std::process::id()));
    std::fs::create_dir_all(base.join("dir")).unwrap();
    std::fs::write(base.join("dir/f.txt"), "f").unwrap();
    std::os::unix::fs::symlink("dir", base.join("alias")).unwrap();
    let base = std::fs::canonicalize(&base).unwrap();
    let policy = Policy::new(
        vec![AllowedRoot { path: base.clone(), access: Access::Write }],
        None,
        Default::default(),
    );
    (base, policy)
}

#[track_caller]
fn check_keys(
    policy: &Policy,
    base: &std::path::Path,
    params: serde_json::Value,
    expect: Option<&[&str]>,
) {
    let got = turn_keys(policy, &params).map(|keys| {
        keys.iter()
            .map(|key| match key.strip_prefix(base) {
                Ok(rel) => format!("B/{}", rel.display()),
                Err(_) => key.display().to_string(),
            })
            .collect::<Vec<_>>()
    });
    let expect = expect.map(|e| e.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(got, expect, "{params}");
}

#[test]
fn keys_name_the_path_as_spelled_and_as_resolved() {
    let (base, policy) = tree();
    let b = |rel: &str| format!("{}/{rel}", base.display());
    let call = |name: &str, args: serde_json::Value| json!({"name": name, "arguments": args});
    let p = &policy;
    check_keys(
        p,
        &base,
        call("write_file", json!({"path": b("dir/f.txt")})),
        Some(&["B/dir/f.txt"]),
    );
    check_keys(
        p,
        &base,
        call("write_file", json!({"path": b("alias/f.txt")})),
        Some(&["B/alias/f.txt", "B/dir/f.txt"]),
    );
    check_keys(
        p,
        &base,
        call("edit_file", json!({"path": "alias/../dir/f.txt"})),
        Some(&["B/dir/f.txt"]),
    );
    check_keys(
        p,
        &base,
        call("write_file", json!({"path": b("dir/new/g.txt")})),
        Some(&["B/dir/new/g.txt"]),
    );
    check_keys(
        p,
        &base,
        call("move_file", json!({"source": b("alias"), "destination": b("moved")})),
        Some(&["B/alias", "B/dir", "B/moved"]),
    );
    check_keys(
        p,
        &base,
        call("edit_files", json!({"paths": ["alias/*.txt", "**/*.md", b("dir/f.txt")]})),
        Some(&["B/alias", "B/dir", "B/", "B/dir/f.txt"]),
    );
    // Outside, or no path: `/`.
    check_keys(p, &base, call("delete_file", json!({"path": "/etc/passwd"})), Some(&["/"]));
    check_keys(p, &base, call("copy_file", json!({"source": b("dir/f.txt")})), Some(&["/"]));
    // No turn.
    check_keys(p, &base, call("edit_file", json!({"path": b("dir/f.txt"), "dryRun": true})), None);
    check_keys(p, &base, call("read_file", json!({"path": b("dir/f.txt")})), None);
    check_keys(p, &base, call("execute_command", json!({"command": "true"})), None);
    let _ = std::fs::remove_dir_all(&base);
}
