//! Tidy checks on the source tree itself, as rust-analyzer's `tidy`: every Rust file opens with
//! a `//!` line saying what it is for, and no module imports from a layer above it.

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

/// The modules above each layer, which it must not import: nothing below the tools reaches up
/// into them, and the tools never see the protocol. Paths are relative to `src/`; a directory
/// covers the module's children too (`walk` is `walk.rs` and `walk/`).
const LAYERS: &[(&[&str], &[&str])] = &[
    (
        &[
            "base64",
            "error",
            "fs",
            "js_regex",
            "platform",
            "policy",
            "progress",
            "reply_size",
            "sandbox",
            "walk",
        ],
        &["tools", "protocol", "cli", "oneshot", "schema", "selection", "client_config"],
    ),
    (&["tools"], &["protocol", "cli", "oneshot", "client_config"]),
];

#[test]
fn no_module_imports_from_a_layer_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut offences = Vec::new();
    let mut checked = 0;
    for (modules, above) in LAYERS {
        for module in *modules {
            let mut files = Vec::new();
            let file = src.join(format!("{module}.rs"));
            if file.exists() {
                files.push(file);
            }
            if src.join(module).is_dir() {
                rust_files(&src.join(module), &mut files);
            }
            assert!(!files.is_empty(), "no source for module `{module}`");
            for file in files {
                checked += 1;
                let text = std::fs::read_to_string(&file).unwrap();
                for (n, line) in text.lines().enumerate() {
                    for upper in *above {
                        if line.contains(&format!("crate::{upper}::"))
                            || line.contains(&format!("crate::{upper};"))
                            || line.contains(&format!("crate::{upper}}}"))
                        {
                            let shown = file.strip_prefix(&src).unwrap().display().to_string();
                            offences.push(format!("src/{shown}:{}: {}", n + 1, line.trim()));
                        }
                    }
                }
            }
        }
    }
    assert!(offences.is_empty(), "imports from a layer above:\n{}", offences.join("\n"));
    assert!(checked > 20, "checked only {checked} files");
}
