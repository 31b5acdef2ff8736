//! The ring's pieces, the read plans, and a small ring run through many appends and reads.

use super::*;

#[track_caller]
fn check_segments(at: u64, len: u64, cap: u64, expect: &[(u64, u64)]) {
    assert_eq!(segments(at, len, cap), expect, "at {at} len {len} cap {cap}");
}

#[test]
fn ring_pieces() {
    check_segments(0, 0, 10, &[]);
    check_segments(0, 10, 10, &[(0, 10)]);
    check_segments(3, 4, 10, &[(3, 4)]);
    check_segments(8, 4, 10, &[(8, 2), (0, 2)]);
    check_segments(10, 3, 10, &[(0, 3)]);
    check_segments(27, 10, 10, &[(7, 3), (0, 7)]);
}

#[track_caller]
fn check_plan(offset: u64, dropped: u64, written: u64, max: u64, expect: Option<(u64, u64, u64)>) {
    let got = plan(offset, dropped, written, max).map(|p| (p.from, p.to, p.skipped));
    assert_eq!(got, expect, "offset {offset} dropped {dropped} written {written} max {max}");
}

#[test]
fn read_plans() {
    check_plan(0, 0, 0, 5, Some((0, 0, 0)));
    check_plan(0, 0, 3, 5, Some((0, 3, 0)));
    check_plan(0, 0, 30, 5, Some((0, 5, 0)));
    check_plan(3, 0, 3, 5, Some((3, 3, 0)));
    check_plan(4, 0, 3, 5, None);
    // Dropped bytes are counted exactly, and the read starts at the oldest kept.
    check_plan(2, 10, 20, 100, Some((10, 20, 8)));
    check_plan(10, 10, 20, 100, Some((10, 20, 0)));
    check_plan(15, 10, 20, 3, Some((15, 18, 0)));
}

/// A ring of 7 bytes fed chunks of every size: each read gives exactly the bytes at its
/// offsets, and those dropped are exactly the ones older than the last 7.
#[test]
fn a_small_ring_keeps_the_last_bytes_at_their_offsets() {
    let dir = std::env::temp_dir();
    let mut spill = Spill::create(&dir).expect("spill file");
    spill.cap = 7;
    let mut all = Vec::new();
    for size in [0u8, 1, 3, 7, 2, 9, 5, 6, 1, 20, 4] {
        let first = all.len() as u8;
        let chunk: Vec<u8> = (0..size).map(|i| first.wrapping_add(i)).collect();
        spill.append(&chunk).expect("append");
        all.extend_from_slice(&chunk);
        assert_eq!(spill.written(), all.len() as u64);
        assert_eq!(spill.dropped(), (all.len() as u64).saturating_sub(7));
        for from in spill.dropped()..=spill.written() {
            let got = spill.read(from, spill.written()).expect("read");
            assert_eq!(got, &all[from as usize..], "from {from} after a chunk of {size}");
        }
    }
}
