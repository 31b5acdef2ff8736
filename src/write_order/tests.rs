//! Who waits for whom.

use std::path::PathBuf;
use std::sync::Arc;

use super::*;

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
    let link = first.gate();
    assert!(link.begin());
    link.made_and_end();
    // The change is in place: a writer arriving now waits for the second only.
    assert_eq!(turns.take(key()).ahead, [second.seq()]);
    // Ending it again, or dropping it, releases nothing else.
    link.made_and_end();
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
    assert!(!first.gate().begin());
    assert!(turns.take(key()).is_free());
    drop(first);
    // Cancelled while it makes it: the turn holds until it is made.
    let second = turns.take(key());
    assert!(second.start(&cancel));
    let link = second.gate();
    assert!(link.begin());
    turns.cancelled(second.seq());
    assert_eq!(turns.take(key()).ahead, [second.seq()]);
    // Made, but the call goes on (edit_files): the cancel that came meanwhile ends it now.
    link.made_and_hold();
    assert!(turns.take(key()).is_free());
    drop(second);
    // Made with no cancel meanwhile: the turn goes on until a cancel, or the call's end.
    let third = turns.take(key());
    assert!(third.start(&cancel));
    let link = third.gate();
    assert!(link.begin());
    link.made_and_hold();
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
