//! Fuzz target: argument validation (`ToolDef::validate`) for every tool. The first byte picks
//! the tool, the rest is its arguments as JSON.
//!
//! Must never panic. Checked besides: `validate` accepts exactly what jsonschema accepts for the
//! tool's input schema on its own (the unknown-name check that runs first refuses nothing the
//! schema admits, and misses nothing it refuses), and its error is one short line that names a
//! field, however large the arguments.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use replay::fuzz::schema::{self, ToolDef};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, json)) = data.split_first() else { return };
    let Ok(args) = serde_json::from_slice::<Value>(json) else { return };
    let defs = schema::definitions();
    let index = usize::from(pick) % defs.len();
    let def = &defs[index];
    let verdict = def.validate(&args);
    let oracle = oracles()[index].is_valid(&args);
    assert_eq!(verdict.is_ok(), oracle, "{}: validate said {verdict:?} on {args}", def.name);
    if let Err(error) = verdict {
        let message = error.to_string();
        assert!(message.starts_with("invalid params: `"), "{}: {message}", def.name);
        assert!(!message.contains('\n'), "{}: not one line: {message}", def.name);
        assert!(message.len() <= 600, "{}: {} bytes: {message}", def.name, message.len());
    }
});

/// Each tool's input schema compiled by jsonschema alone, in `definitions()` order.
fn oracles() -> &'static [jsonschema::Validator] {
    static ORACLES: OnceLock<Vec<jsonschema::Validator>> = OnceLock::new();
    ORACLES.get_or_init(|| {
        schema::definitions()
            .iter()
            .map(|def: &ToolDef| {
                jsonschema::validator_for(def.input_schema()).expect("schemas/ compile")
            })
            .collect()
    })
}
