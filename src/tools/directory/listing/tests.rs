//! The listing holds only what fits, and shows what sorting every entry and cutting would.

use super::{Listed, Listing};
use crate::policy::confined::Kind;
use crate::tools::directory::SortBy as Order;

/// One entry: its name (bytes), kind, size and time.
type Entry = (&'static [u8], Kind, Option<u64>, Option<i64>);

/// What a listing shows: the names, in order, and how many were left out with their totals
/// (count, files, dirs, links, bytes).
fn listed(order: Order, room: usize, entries: &[Entry]) -> (Vec<String>, [u64; 5]) {
    let mut listing = Listing::new(order, room);
    for &(name, kind, size, modified) in entries {
        listing.add(name, kind, size, modified);
    }
    let listing = listing.finish();
    let names = listing.entries().map(|e| listing.name(e).into_owned()).collect();
    let out = &listing.left_out;
    let totals = [out.count as u64, out.files as u64, out.dirs as u64, out.links as u64, out.bytes];
    (names, totals)
}

#[track_caller]
fn check(order: Order, room: usize, entries: &[Entry], expect: &str, left_out: [u64; 5]) {
    let (names, totals) = listed(order, room, entries);
    assert_eq!(names.join(" "), expect);
    assert_eq!(totals, left_out);
}

const F: Kind = Kind::File;
const D: Kind = Kind::Dir;
const L: Kind = Kind::Symlink;

#[test]
fn shows_the_first_entries_in_order_that_fit() {
    // A one-byte name costs 2 + 48, a size 48 more, a time 96: a, b 146, the others 194.
    let abcd: [Entry; 5] = [
        (b"d", F, Some(4), Some(1)),
        (b"b", D, None, Some(3)),
        (b"e", F, Some(9), Some(2)),
        (b"a", L, None, Some(3)),
        (b"c", F, Some(1), Some(5)),
    ];
    check(Order::Name, 1000, &abcd, "a b c d e", [0; 5]);
    check(Order::Name, 600, &abcd, "a b c", [2, 2, 0, 0, 13]);
    check(Order::Name, 145, &abcd, "", [5, 3, 1, 1, 14]);
    check(Order::Size, 1000, &abcd, "e d c a b", [0; 5]);
    check(Order::Size, 600, &abcd, "e d c", [2, 0, 1, 1, 0]);
    check(Order::Modified, 1000, &abcd, "c a b e d", [0; 5]);
    check(Order::Modified, 400, &abcd, "c a", [3, 2, 1, 0, 13]);
    // An entry gone before it was looked at has no time: last, in name order.
    check(Order::Modified, 1000, &[(b"b", F, None, None), (b"a", F, None, None)], "a b", [0; 5]);
    // Names that are not UTF-8 are shown lossily and sorted as shown, then by their bytes.
    let lossy: [Entry; 3] =
        [(b"\xff2", F, None, None), (b"\xfe1", F, None, None), (b"z", F, None, None)];
    check(Order::Name, 1000, &lossy, "z \u{fffd}1 \u{fffd}2", [0; 5]);
    let twins: [Entry; 2] = [(b"\xff", F, Some(2), None), (b"\xfe", F, Some(1), None)];
    check(Order::Name, 1000, &twins, "\u{fffd} \u{fffd}", [0; 5]);
    check(Order::Name, 110, &twins, "\u{fffd}", [1, 1, 0, 0, 2]);
}

/// A long name costs more: the entries shown are a prefix of the order, never one that fits
/// after one that did not.
#[test]
fn stops_at_the_first_entry_that_does_not_fit() {
    let long: &'static [u8] = &[b'b'; 100];
    let entries: [Entry; 3] = [(b"c", F, None, None), (long, F, None, None), (b"a", F, None, None)];
    check(Order::Name, 250, &entries, "a", [2, 2, 0, 0, 0]);
}

/// Thousands of entries in a scrambled order, through rooms small enough that the listing
/// trims many times, against sorting them all and cutting once.
#[test]
fn trimming_as_it_reads_shows_what_sorting_all_would() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut entries = Vec::new();
    for i in 0..5000u64 {
        let len = 1 + (next() % 40) as usize;
        let name: Vec<u8> = std::iter::repeat_n(b'a' + (next() % 3) as u8, len)
            .chain(format!("{i}").into_bytes())
            .chain((next() % 7 == 0).then_some(0xff))
            .collect();
        let kind = [F, D, L][(next() % 3) as usize];
        let size = (kind == F).then(|| next() % 50);
        let modified = (next() % 5 != 0).then(|| (next() % 100) as i64);
        entries.push((&*Vec::leak(name), kind, size, modified));
    }
    for order in [Order::Name, Order::Size, Order::Modified] {
        for room in [0, 500, 10_000, 100_000, 1_000_000] {
            let (names, left_out) = listed(order, room, &entries);
            // Sort them all, then cut.
            let mut all = Listing::new(order, usize::MAX / 4);
            for &(name, kind, size, modified) in &entries {
                all.add(name, kind, size, modified);
            }
            let all = all.finish();
            let mut left = room;
            let mut expect = Vec::new();
            let mut totals = [0u64; 5];
            for held in all.entries() {
                let (entry, name) = (&held.key, all.name(held));
                let details = 48 * usize::from(entry.size().is_some())
                    + 96 * usize::from(entry.modified().is_some());
                let cost = 2 * crate::reply_size::escaped_text_len(name.as_bytes()) + 48 + details;
                if totals[0] == 0 && cost <= left {
                    left -= cost;
                    expect.push(name.into_owned());
                    continue;
                }
                totals[0] += 1;
                totals[1 + [F, D, L].iter().position(|k| *k == entry.kind).expect("kind")] += 1;
                totals[4] += entry.size().unwrap_or(0);
            }
            assert_eq!(names, expect, "{order:?} in {room}");
            assert_eq!(left_out, totals, "{order:?} in {room}");
        }
    }
}

/// A listing may hold hundreds of thousands of entries.
#[test]
fn an_entry_is_small() {
    assert_eq!(std::mem::size_of::<Listed>(), 24);
}

#[test]
fn names_not_utf8_are_compared_and_costed_as_shown() {
    use super::{cmp_shown, shown_parts, Reply};
    use crate::reply_size::escaped_text_len;
    use crate::walk::first::Room;
    let names: [&[u8]; 15] = [
        b"",
        b"a",
        b"\xff",
        b"\xfe\xff",
        b"x\xffy",
        b"x\xef\xbf\xbdy",
        b"\xe2\x82",
        b"\xe2\x82x",
        b"\xf0\x9f\x98",
        b"\xf0\x9f\x98\x80\xff",
        b"\x01\xff\"",
        b"\xed\xa0\x80",
        b"\xef\xbf\xbd",
        b"\xef\xbf\xbd\xff",
        b"a\xffb",
    ];
    let reply = Reply { order: Order::Name, room: 1 << 20 };
    for a in names {
        let lossy = String::from_utf8_lossy(a);
        assert_eq!(shown_parts(a).collect::<Vec<_>>().concat(), lossy.as_bytes(), "{a:?}");
        let key = |raw: &[u8]| {
            let utf8 = std::str::from_utf8(raw).is_ok();
            Listed { size: 0, modified: 0, kind: F, flags: if utf8 { super::UTF8 } else { 0 } }
        };
        let expect = 2 * escaped_text_len(lossy.as_bytes()) + 48;
        assert_eq!(reply.cost(&key(a), a), expect, "{a:?}");
        for b in names {
            let expect = lossy.cmp(&String::from_utf8_lossy(b)).then_with(|| a.cmp(b));
            assert_eq!(reply.order((&key(a), a), (&key(b), b)), expect, "{a:?} {b:?}");
            let shown = lossy.as_bytes().cmp(String::from_utf8_lossy(b).as_bytes());
            assert_eq!(cmp_shown(a, b), shown, "{a:?} {b:?}");
        }
    }
}

/// Sparse files can claim sizes that together pass `u64`: the sum saturates (it overflowed:
/// four of 9e18 bytes).
#[test]
fn sizes_left_out_add_up_without_overflow() {
    let huge = Some(9_000_000_000_000_000_000);
    let entries: [Entry; 4] = [
        (b"a", F, huge, None),
        (b"b", F, huge, None),
        (b"c", F, huge, None),
        (b"d", F, huge, None),
    ];
    check(Order::Name, 0, &entries, "", [4, 4, 0, 0, u64::MAX]);
}
