//! The release's metadata against the rules it must pass: server.json against the MCP registry's
//! published schema (vendored as tests/data/server.schema.json, the URL its `$schema` names), and
//! the names and versions that server.json, the npm launcher and the bundle's manifest share.

use std::fs;
use std::path::PathBuf;

use serde_json::{json, Value};

fn load(relative: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {relative}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {relative}: {e}"))
}

/// The registry schema's complaints about `server`, one line each.
fn registry_errors(server: &Value) -> Vec<String> {
    let schema = load("tests/data/server.schema.json");
    let validator = jsonschema::validator_for(&schema).expect("the vendored schema compiles");
    validator.iter_errors(server).map(|e| format!("{}: {e}", e.instance_path())).collect()
}

#[test]
fn server_json_passes_the_registry_schema() {
    let server = load("server.json");
    let schema = load("tests/data/server.schema.json");
    assert_eq!(server["$schema"], schema["$id"], "server.json names the schema vendored here");
    assert_eq!(registry_errors(&server), Vec::<String>::new());
}

#[test]
fn the_vendored_schema_refuses_what_the_registry_refuses() {
    let cases = [
        ("/name", json!("replay")),
        ("/description", json!("x".repeat(101))),
        ("/packages/1/fileSha256", json!("not a sha-256")),
        ("/packages/0/version", json!("latest")),
    ];
    for (pointer, bad) in cases {
        let mut server = load("server.json");
        *server.pointer_mut(pointer).unwrap() = bad;
        assert!(!registry_errors(&server).is_empty(), "accepted a bad {pointer}");
    }
}

#[test]
fn server_json_npm_and_bundle_name_the_same_release() {
    let version = env!("CARGO_PKG_VERSION");
    let repository = env!("CARGO_PKG_REPOSITORY");
    let server = load("server.json");
    let launcher = load("packaging/npm/replay-mcp/package.json");
    let manifest = load("packaging/mcpb/manifest.json");

    assert_eq!(server["version"], version);
    assert_eq!(server["repository"]["url"], repository);
    assert_eq!(launcher["mcpName"], server["name"], "the registry checks mcpName on npm");
    assert_eq!(launcher["version"], version);
    assert_eq!(manifest["repository"]["url"], repository);
    assert!(
        manifest.get("tools").is_none(),
        "scripts/package-mcpb.sh lists the tools from schemas/"
    );

    let packages = server["packages"].as_array().unwrap();
    let by_type = |kind: &str| packages.iter().find(|p| p["registryType"] == kind).unwrap();
    assert_eq!(by_type("npm")["identifier"], launcher["name"]);
    let bundle = by_type("mcpb");
    assert_eq!(
        bundle["identifier"],
        format!("{repository}/releases/download/v{version}/replay.mcpb")
    );
    for package in packages {
        assert_eq!(package["version"], version, "{package}");
    }
    for dependency in launcher["optionalDependencies"].as_object().unwrap().values() {
        assert_eq!(dependency, version);
    }
}
