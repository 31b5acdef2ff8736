//! Who waits for whom, and the keys each call takes its turn on.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::policy::{Access, AllowedRoot};

/// Takes turns in order, each on the space-separated keys of one entry, all held; `expect[i]`
/// is who the i-th waits for.
#[track_caller]
fn check(sequence: &[&str], expect: &[&[u64]]) {
    let turns = Arc::new(Turns::default());
    let held: Vec<Turn> = sequence
        .iter()
        .map(|keys| turns.take(keys.split(' ').map(PathBuf::from).collect()))
        .collect();
    let got: Vec<&[u64]> = held.iter().map(|turn| turn.ahead.as_slice()).collect();
    assert_eq!(got, expect, "{sequence:?}");
}

#[test]
fn overlapping_writers_wait_in_arrival_order() {
    check(&["/r/a", "/r/b", "/r/a"], &[&[], &[], &[0]]);
    // The latest on a key is enough: it waits for the ones before it.
    check(&["/r/a", "/r/a", "/r/a"], &[&[], &[0], &[1]]);
    // Inside and around.
    check(&["/r/d/f", "/r/d", "/r/d/g"], &[&[], &[0], &[1]]);
    check(&["/r/d", "/r/d/f", "/r/d/e/f"], &[&[], &[0], &[0]]);
    // A string prefix is not a parent.
    check(&["/r/a", "/r/ab", "/r/a.b", "/r/a/x"], &[&[], &[], &[], &[0]]);
    // Two keys (a move, or a path and where it resolves): both count, once each.
    check(&["/r/a", "/r/b", "/r/a /r/b", "/r/b/c"], &[&[], &[], &[0, 1], &[2]]);
    // `/` overlaps everything, both ways.
    check(&["/r/a", "/", "/q/z"], &[&[], &[0], &[1]]);
}

#[test]
fn a_released_turn_is_waited_for_no_more() {
    let turns = Arc::new(Turns::default());
    let first = turns.take(vec![PathBuf::from("/r/a")]);
    drop(first);
    assert!(turns.take(vec![PathBuf::from("/r/a")]).is_free());
}

#[test]
fn a_turn_made_and_ended_is_waited_for_no_more_while_still_held() {
    let turns = Arc::new(Turns::default());
    let key = || vec![PathBuf::from("/r/f")];
    let first = turns.take(key());
    let second = turns.take(key());
    assert_eq!(second.ahead, [first.seq()]);
    let link = first.link();
    assert!(link.begin());
    link.made(true);
    // The change is in place: a writer arriving now waits for the second only.
    assert_eq!(turns.take(key()).ahead, [second.seq()]);
    // Ending it again, or dropping it, releases nothing else.
    link.made(true);
    drop(first);
    assert_eq!(turns.take(key()).ahead, [second.seq()]);
    drop(second);
    assert!(turns.take(key()).is_free());
}

/// A cancel ends a running writer's turn at once, but not while it makes its change visible:
/// a writer whose turn a cancel ended must not make it (the writer behind has gone).
#[test]
fn a_cancel_and_a_change_made_visible_never_cross() {
    let turns = Arc::new(Turns::default());
    let key = || vec![PathBuf::from("/r/f")];
    let cancel = Cancel::default();
    // Cancelled before it begins: its turn is over, and it may not make its change.
    let first = turns.take(key());
    assert!(first.start(&cancel));
    turns.cancelled(first.seq());
    assert!(!first.link().begin());
    assert!(turns.take(key()).is_free());
    drop(first);
    // Cancelled while it makes it: the turn holds until it is made.
    let second = turns.take(key());
    assert!(second.start(&cancel));
    let link = second.link();
    assert!(link.begin());
    turns.cancelled(second.seq());
    assert_eq!(turns.take(key()).ahead, [second.seq()]);
    // Made, but the call goes on (edit_files): the cancel that came meanwhile ends it now.
    link.made(false);
    assert!(turns.take(key()).is_free());
    drop(second);
    // Made with no cancel meanwhile: the turn goes on until a cancel, or the call's end.
    let third = turns.take(key());
    assert!(third.start(&cancel));
    let link = third.link();
    assert!(link.begin());
    link.made(false);
    assert_eq!(turns.take(key()).ahead, [third.seq()]);
    turns.cancelled(third.seq());
    assert!(turns.take(key()).is_free());
}

#[test]
fn a_cancelled_running_writer_lets_the_next_go_at_once() {
    let turns = Arc::new(Turns::default());
    let key = || vec![PathBuf::from("/r/f")];
    let cancel = Cancel::default();
    let running = turns.take(key());
    assert!(running.start(&cancel));
    let waiting = turns.take(key());
    assert_eq!(waiting.ahead, [running.seq()]);
    cancel.cancel();
    turns.cancelled(running.seq());
    // The work may still run; the turn is over.
    let later = turns.take(key());
    assert_eq!(later.ahead, [waiting.seq()]);
    drop((waiting, later));
    assert!(turns.take(key()).is_free());
    drop(running);
}

#[test]
fn a_writer_cancelled_while_waiting_does_not_start() {
    let turns = Arc::new(Turns::default());
    let first = turns.take(vec![PathBuf::from("/r/f")]);
    let second = turns.take(vec![PathBuf::from("/r/f")]);
    let cancel = Cancel::default();
    cancel.cancel();
    // Not running: the cancel leaves it in line until its own waits are over.
    turns.cancelled(second.seq());
    assert_eq!(turns.take(vec![PathBuf::from("/r/f")]).ahead, [second.seq()]);
    drop(first);
    assert!(!second.start(&cancel));
    assert!(turns.take(vec![PathBuf::from("/r/f")]).is_free());
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
    let policy = Policy::new(vec![AllowedRoot { path: base.clone(), access: Access::Write }], None);
    (base, policy)
}

#[track_caller]
fn check_keys(
    policy: &Policy,
    base: &std::path::Path,
    params: serde_json::Value,
    expect: Option<&[&str]>,
) {
    let got = keys(policy, &params).map(|keys| {
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
