//! Trimming as entries arrive takes the same first entries as sorting them all and cutting.

use std::cmp::Ordering;

use super::{First, Room};

/// By name, each entry costing its name's length and one; at most `bytes` and `entries`.
struct Names {
    bytes: usize,
    entries: usize,
}

impl Room for Names {
    type Key = u8;

    fn order(&self, a: (&u8, &[u8]), b: (&u8, &[u8])) -> Ordering {
        a.1.cmp(b.1)
    }

    fn cost(&self, _: &u8, name: &[u8]) -> usize {
        name.len() + 1
    }

    fn fits(&self, taken: usize, used: usize, cost: usize) -> bool {
        taken < self.entries && used + cost <= self.bytes
    }

    fn full(&self, held: usize, used: usize) -> bool {
        held > 2 * self.entries || used > 2 * self.bytes
    }

    fn most_held(&self) -> (usize, usize) {
        (2 * self.entries + 1, 2 * self.bytes + 256)
    }
}

/// The names taken, space-separated, and the keys left out, summed.
fn first(names: &[&str], bytes: usize, entries: usize) -> (String, usize) {
    let mut first = First::new(Names { bytes, entries });
    let mut left_out = 0;
    for (i, name) in names.iter().enumerate() {
        first.add(name.as_bytes(), (i % 7) as u8, |key| left_out += usize::from(*key) + 1);
    }
    let first = first.finish(|key| left_out += usize::from(*key) + 1);
    let taken: Vec<&str> =
        first.held().iter().map(|h| std::str::from_utf8(first.name(h)).expect("utf-8")).collect();
    (taken.join(" "), left_out)
}

#[track_caller]
fn check(names: &str, bytes: usize, entries: usize, expect: &str) {
    let names: Vec<&str> = names.split(' ').collect();
    let (taken, _) = first(&names, bytes, entries);
    assert_eq!(taken, expect);
}

#[test]
fn takes_the_first_in_order_that_fit() {
    check("d b e a c", 100, 100, "a b c d e");
    check("d b e a c", 6, 100, "a b c");
    check("d b e a c", 100, 2, "a b");
    check("d b e a c", 1, 100, "");
    // A long name that does not fit stops the taking: no later, shorter one is taken.
    check("c bbbbbbbbbb a", 8, 100, "a");
    check("", 100, 100, "");
}

#[test]
fn trimming_as_entries_arrive_takes_what_sorting_all_would() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let names: Vec<String> = (0..4000)
        .map(|i| {
            let len = 1 + (next() % 30) as usize;
            let stem: String =
                std::iter::repeat_n(char::from(b'a' + (next() % 3) as u8), len).collect();
            format!("{stem}{i}")
        })
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    for (bytes, entries) in
        [(0, 10), (50, 1000), (1000, 10), (10_000, 200), (30_000, 5000), (1 << 30, 1 << 20)]
    {
        let (taken, left_out) = first(&names, bytes, entries);
        let mut used = 0;
        let expect: Vec<&str> = sorted
            .iter()
            .take(entries)
            .take_while(|name| {
                used += name.len() + 1;
                used <= bytes
            })
            .copied()
            .collect();
        assert_eq!(taken, expect.join(" "), "{bytes} bytes, {entries} entries");
        // Every entry not taken was told of exactly once.
        let all: usize = (0..names.len()).map(|i| i % 7 + 1).sum();
        let kept: usize = names
            .iter()
            .enumerate()
            .filter(|(_, n)| expect.contains(n))
            .map(|(i, _)| i % 7 + 1)
            .sum();
        assert_eq!(left_out, all - kept, "{bytes} bytes, {entries} entries");
    }
}
