//! What the unit tests need of the machine: a missing capability fails them under `CI=true`.

/// Whether a unit test that needs `capability` can go on: `available` says whether it is here.
/// Under `CI=true` a missing capability fails the test, so CI never passes a test that checked
/// nothing; elsewhere the test is skipped, saying `skipped:` and why on stderr. The twin of
/// `require` in `tests/it/harness.rs`.
#[track_caller]
pub(crate) fn require(capability: &str, available: bool) -> bool {
    if available {
        return true;
    }
    let in_ci = std::env::var_os("CI").is_some_and(|v| v == "true");
    assert!(!in_ci, "CI=true, and this test needs {capability}, which this machine lacks");
    // Straight to the stderr handle: libtest captures `eprintln!` and shows it only for a failed
    // test or under `--nocapture`, so a skipped test would pass as `ok` without a word.
    let line = format!("skipped: this test needs {capability}\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    false
}
