//! Partial reads, table-tested: every row runs forward through a whole reader and one that
//! yields a byte at a time, and backwards with blocks of 1, 2, 3 bytes and 64 KiB.

use std::io::{self, Read};

use super::*;
use crate::reply_size::size_name;

/// The real limits, where no file in these tables is big.
const SMALL: Limits = Limits { cap: 16 << 20, json_cap: usize::MAX, count_up_to: 16 << 20 };

/// The grammar documented in schemas/read_file.json.
const NOTE: &str = r"^\[(?:lines (?:\d+-\d+|none) of (?:\d+|at least \d+ in \d+ bytes)|last \d+ lines of \d+ bytes)(?:; offset=\d+ is past the end)?(?:; cut at the [^;\]]+ cap)?(?:; next: offset=\d+)?(?:; encoding: [^;\]]+; edits keep it)?\]$";

/// Yields one byte per read, to put every line across buffer boundaries.
struct Trickle<'a>(&'a [u8]);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match (self.0.split_first(), buf.first_mut()) {
            (Some((&b, rest)), Some(slot)) => {
                *slot = b;
                self.0 = rest;
                Ok(1)
            }
            _ => Ok(0),
        }
    }
}

fn run(input: &str, range: Range, numbers: bool, limits: Limits) -> Vec<Result<Page, String>> {
    let bytes = input.as_bytes();
    let size = bytes.len() as u64;
    let shown = |r: Result<Page, PageError>| r.map_err(|e| format!("{e:?}"));
    match range {
        Range::From { first, count } => vec![
            shown(from_start(bytes, first, count, numbers, size, limits, &|| false)),
            shown(from_start(Trickle(bytes), first, count, numbers, size, limits, &|| false)),
        ],
        Range::Last(n) => [1, 2, 3, 64 * 1024]
            .into_iter()
            .map(|block| {
                let read_at = |buf: &mut [u8], at: u64| {
                    let at = at as usize;
                    buf.copy_from_slice(&bytes[at..at + buf.len()]);
                    Ok(())
                };
                shown(last_lines_in_blocks(read_at, n, numbers, size, limits, block))
            })
            .collect(),
    }
}

#[track_caller]
fn check_with(input: &str, range: Range, numbers: bool, limits: Limits, expect: (&str, &str)) {
    let grammar = regex::Regex::new(NOTE).unwrap();
    for (i, page) in run(input, range, numbers, limits).into_iter().enumerate() {
        let page = page.unwrap_or_else(|e| panic!("{input:?} {range:?} (run {i}): {e}"));
        let got = (String::from_utf8(page.text.clone()).unwrap(), page.note());
        assert_eq!((got.0.as_str(), got.1.as_str()), expect, "{input:?} {range:?} (run {i})");
        assert!(grammar.is_match(&got.1), "note outside the grammar: {}", got.1);
    }
}

#[track_caller]
fn check(input: &str, range: Range, expect: (&str, &str)) {
    check_with(input, range, false, SMALL, expect);
}

#[track_caller]
fn check_err(input: &str, range: Range, numbers: bool, limits: Limits, expect: &str) {
    for (i, page) in run(input, range, numbers, limits).into_iter().enumerate() {
        match page {
            Err(e) => assert_eq!(e, expect, "{input:?} {range:?} (run {i})"),
            Ok(page) => panic!("{input:?} {range:?} (run {i}): expected an error, got {page:?}"),
        }
    }
}

fn from(first: u64, count: Option<u64>) -> Range {
    Range::From { first, count }
}

#[test]
fn ranges_from_the_start() {
    let abc = "a\nb\nc\n";
    check(abc, from(1, Some(2)), ("a\nb\n", "[lines 1-2 of 3; next: offset=3]"));
    check(abc, from(2, None), ("b\nc\n", "[lines 2-3 of 3]"));
    check(abc, from(3, Some(5)), ("c\n", "[lines 3-3 of 3]"));
    check(abc, from(1, None), (abc, "[lines 1-3 of 3]"));
    check(abc, from(4, Some(1)), ("", "[lines none of 3; offset=4 is past the end]"));
    check(abc, from(9, None), ("", "[lines none of 3; offset=9 is past the end]"));
    check(abc, from(2, Some(1)), ("b\n", "[lines 2-2 of 3; next: offset=3]"));
}

#[test]
fn a_last_line_without_newline_is_a_line() {
    check("a\nb", from(2, Some(1)), ("b", "[lines 2-2 of 2]"));
    check("a\nb", from(1, Some(1)), ("a\n", "[lines 1-1 of 2; next: offset=2]"));
    check("a\nb", from(3, None), ("", "[lines none of 2; offset=3 is past the end]"));
    check("a\nb", Range::Last(1), ("b", "[lines 2-2 of 2]"));
    check("a", Range::Last(1), ("a", "[lines 1-1 of 1]"));
    check("a", from(1, None), ("a", "[lines 1-1 of 1]"));
}

#[test]
fn empty_files_and_empty_lines() {
    check("", from(1, Some(10)), ("", "[lines none of 0]"));
    check("", from(1, None), ("", "[lines none of 0]"));
    check("", from(2, None), ("", "[lines none of 0; offset=2 is past the end]"));
    check("", Range::Last(3), ("", "[lines none of 0]"));
    check("\n", from(1, None), ("\n", "[lines 1-1 of 1]"));
    check("\n", Range::Last(1), ("\n", "[lines 1-1 of 1]"));
    check("\n\n", from(2, None), ("\n", "[lines 2-2 of 2]"));
    check("\n\n", Range::Last(1), ("\n", "[lines 2-2 of 2]"));
    check("a\n\n", Range::Last(1), ("\n", "[lines 2-2 of 2]"));
    check("\n\nx", Range::Last(2), ("\nx", "[lines 2-3 of 3]"));
}

#[test]
fn crlf_comes_back_byte_for_byte() {
    let crlf = "a\r\nb\r\nc";
    check(crlf, from(1, Some(1)), ("a\r\n", "[lines 1-1 of 3; next: offset=2]"));
    check(crlf, from(2, Some(1)), ("b\r\n", "[lines 2-2 of 3; next: offset=3]"));
    check(crlf, Range::Last(2), ("b\r\nc", "[lines 2-3 of 3]"));
    check("a\rb\r\n", from(1, None), ("a\rb\r\n", "[lines 1-1 of 1]"));
}

#[test]
fn tails() {
    let abc = "a\nb\nc\n";
    check(abc, Range::Last(2), ("b\nc\n", "[lines 2-3 of 3]"));
    check(abc, Range::Last(3), (abc, "[lines 1-3 of 3]"));
    check(abc, Range::Last(50), (abc, "[lines 1-3 of 3]"));
    check("a\nb\nc", Range::Last(1), ("c", "[lines 3-3 of 3]"));
}

#[test]
fn line_numbers_are_cat_n() {
    assert_eq!(number_prefix(7), "     7\t");
    assert_eq!(number_prefix(999_999), "999999\t");
    assert_eq!(number_prefix(1_234_567), "1234567\t");
    let n = |input, range, expect| check_with(input, range, true, SMALL, expect);
    n("a\nb", from(1, None), ("     1\ta\n     2\tb", "[lines 1-2 of 2]"));
    n("a\n\nc\n", from(2, Some(1)), ("     2\t\n", "[lines 2-2 of 3; next: offset=3]"));
    n("a\nb\nc", Range::Last(2), ("     2\tb\n     3\tc", "[lines 2-3 of 3]"));
    n("a\r\nb\r\n", from(2, None), ("     2\tb\r\n", "[lines 2-2 of 2]"));
    n("", from(1, None), ("", "[lines none of 0]"));
}

#[test]
fn big_files_are_counted_only_as_far_as_the_read_went() {
    // Files over `count_up_to` bytes (4 here) are big.
    let big = Limits { cap: 1000, json_cap: usize::MAX, count_up_to: 4 };
    let file = "a\nb\nc\nd\n";
    let c = |range, expect| check_with(file, range, false, big, expect);
    c(from(1, Some(2)), ("a\nb\n", "[lines 1-2 of at least 3 in 8 bytes; next: offset=3]"));
    // The read reached the end: the count is exact.
    c(from(3, Some(2)), ("c\nd\n", "[lines 3-4 of 4]"));
    c(from(2, None), ("b\nc\nd\n", "[lines 2-4 of 4]"));
    c(from(7, Some(1)), ("", "[lines none of 4; offset=7 is past the end]"));
    c(Range::Last(2), ("c\nd\n", "[last 2 lines of 8 bytes]"));
    // Back at the start, the numbers are known without counting.
    c(Range::Last(9), (file, "[lines 1-4 of 4]"));
    check_with(
        "a\nb\nc",
        from(1, Some(2)),
        false,
        big,
        ("a\nb\n", "[lines 1-2 of at least 3 in 5 bytes; next: offset=3]"),
    );
}

#[test]
fn pages_are_cut_at_the_cap_before_the_line_that_crosses_it() {
    let tiny = Limits { cap: 5, json_cap: usize::MAX, count_up_to: 1000 };
    let file = "ab\ncd\nef\n";
    let c = |range, expect| check_with(file, range, false, tiny, expect);
    c(from(1, None), ("ab\n", "[lines 1-1 of 3; cut at the 5 bytes cap; next: offset=2]"));
    c(from(2, Some(2)), ("cd\n", "[lines 2-2 of 3; cut at the 5 bytes cap; next: offset=3]"));
    c(Range::Last(3), ("ef\n", "[lines 3-3 of 3; cut at the 5 bytes cap]"));
    // Exactly at the cap is not over it.
    check_with("ab\ncd", from(1, None), false, tiny, ("ab\ncd", "[lines 1-2 of 2]"));
    check_with("ab\ncd", Range::Last(2), false, tiny, ("ab\ncd", "[lines 1-2 of 2]"));
    // Line numbers count towards the cap.
    let ten = Limits { cap: 10, json_cap: usize::MAX, count_up_to: 1000 };
    let n = |range, expect| check_with("a\nb\n", range, true, ten, expect);
    n(from(1, None), ("     1\ta\n", "[lines 1-1 of 2; cut at the 10 bytes cap; next: offset=2]"));
    n(Range::Last(2), ("     2\tb\n", "[lines 2-2 of 2; cut at the 10 bytes cap]"));
    // A big file cut at the cap.
    let big = Limits { cap: 5, json_cap: usize::MAX, count_up_to: 4 };
    check_with(
        file,
        from(1, None),
        false,
        big,
        ("ab\n", "[lines 1-1 of at least 2 in 9 bytes; cut at the 5 bytes cap; next: offset=2]"),
    );
    check_with(
        file,
        Range::Last(3),
        false,
        big,
        ("ef\n", "[last 1 lines of 9 bytes; cut at the 5 bytes cap]"),
    );
    assert_eq!(size_name(16 << 20), "16 MiB");
}

/// The JSON cap counts what the text takes escaped: a control character six bytes, a newline
/// or tab two. The raw cap is far above it in these rows.
#[test]
fn pages_are_cut_at_the_json_cap_too() {
    let json = |json_cap| Limits { cap: 1000, json_cap, count_up_to: 1000 };
    // "a\u0001\n" is 3 bytes, 9 escaped.
    let file = "a\u{1}\nb\u{1}\nc\u{1}\n";
    let c = |range, expect| check_with(file, range, false, json(20), expect);
    c(
        from(1, None),
        ("a\u{1}\nb\u{1}\n", "[lines 1-2 of 3; cut at the 20 bytes JSON cap; next: offset=3]"),
    );
    c(Range::Last(3), ("b\u{1}\nc\u{1}\n", "[lines 2-3 of 3; cut at the 20 bytes JSON cap]"));
    // Exactly at the cap is not over it.
    check_with(file, from(1, None), false, json(27), (file, "[lines 1-3 of 3]"));
    check_with(file, Range::Last(3), false, json(27), (file, "[lines 1-3 of 3]"));
    // Line numbers count escaped too: "     1\t" takes 8.
    let n = |range, expect| check_with(file, range, true, json(20), expect);
    n(
        from(1, None),
        ("     1\ta\u{1}\n", "[lines 1-1 of 3; cut at the 20 bytes JSON cap; next: offset=2]"),
    );
    n(Range::Last(3), ("     3\tc\u{1}\n", "[lines 3-3 of 3; cut at the 20 bytes JSON cap]"));
    // One line alone over it.
    let too_long = "LineTooLong { line: Some(1), cap: Json(8) }";
    check_err(file, from(1, None), false, json(8), too_long);
    check_err(file, Range::Last(3), true, json(8), "LineTooLong { line: Some(3), cap: Json(8) }");
}

/// A skip towards a far line stops when asked to.
#[test]
fn a_skip_stops_when_asked() {
    let file = "a\n".repeat(100_000);
    let asked = std::cell::Cell::new(0);
    let stop = || {
        asked.set(asked.get() + 1);
        asked.get() > 2
    };
    let size = file.len() as u64;
    let got = from_start(file.as_bytes(), 99_999, None, false, size, SMALL, &stop);
    assert!(matches!(got, Err(PageError::Stopped)), "{got:?}");
}

#[test]
fn a_line_longer_than_the_cap_is_an_error() {
    let tiny = Limits { cap: 5, json_cap: usize::MAX, count_up_to: 1000 };
    let too_long = "LineTooLong { line: Some(2), cap: Bytes(5) }";
    check_err("a\nbcdefgh\nc\n", from(2, Some(1)), false, tiny, too_long);
    check_err("a\nbcdefgh", from(2, None), false, tiny, too_long);
    check_err("a\nbcdefgh", Range::Last(1), false, tiny, too_long);
    let big = Limits { cap: 5, json_cap: usize::MAX, count_up_to: 4 };
    check_err(
        "a\nbcdefgh",
        Range::Last(1),
        false,
        big,
        "LineTooLong { line: None, cap: Bytes(5) }",
    );
    let ten = Limits { cap: 10, json_cap: usize::MAX, count_up_to: 1000 };
    check_err(
        "a\nbcd\n",
        Range::Last(1),
        true,
        ten,
        "LineTooLong { line: Some(2), cap: Bytes(10) }",
    );
}

/// Every file of up to 6 bytes over `a`, `\r` and `\n` against a model built with
/// `split_inclusive`: every range, with and without numbers, with all lines counted and with
/// none (`count_up_to` 0), through every reader and block size.
#[test]
fn agrees_with_a_model_on_every_small_file() {
    let mut inputs = vec![String::new()];
    for _ in 0..6 {
        let longer: Vec<String> = inputs
            .iter()
            .filter(|s| s.len() == inputs.last().map_or(0, String::len))
            .flat_map(|s| ["a", "\r", "\n"].map(|c| format!("{s}{c}")))
            .collect();
        inputs.extend(longer);
    }
    for input in &inputs {
        let lines: Vec<&str> = input.split_inclusive('\n').collect();
        let total = lines.len() as u64;
        let numbered = |from: u64, part: &[&str], numbers: bool| -> String {
            let mut out = String::new();
            for (k, line) in part.iter().enumerate() {
                if numbers {
                    out.push_str(&number_prefix(from + k as u64));
                }
                out.push_str(line);
            }
            out
        };
        let mut ranges = vec![];
        for first in 1..=total + 2 {
            ranges.push(from(first, None));
            for count in 1..=total + 1 {
                ranges.push(from(first, Some(count)));
            }
        }
        ranges.extend((1..=total + 1).map(Range::Last));
        for range in ranges {
            let (from_line, part) = match range {
                Range::From { first, count } => {
                    let skip = (first - 1).min(total) as usize;
                    let take = count.unwrap_or(u64::MAX).min(total) as usize;
                    (first, lines.iter().skip(skip).take(take).copied().collect::<Vec<_>>())
                }
                Range::Last(n) => {
                    let skip = total.saturating_sub(n);
                    (skip + 1, lines[skip as usize..].to_vec())
                }
            };
            for numbers in [false, true] {
                let expect = numbered(from_line, &part, numbers);
                for (limits, counted) in [
                    (SMALL, true),
                    (Limits { cap: 1 << 20, json_cap: usize::MAX, count_up_to: 0 }, false),
                ] {
                    if numbers && !counted && matches!(range, Range::Last(_)) && !input.is_empty() {
                        continue; // refused by read_file: no numbers for the tail of a big file
                    }
                    for page in run(input, range, numbers, limits) {
                        let page = page.unwrap_or_else(|e| panic!("{input:?} {range:?}: {e}"));
                        let what =
                            format!("{input:?} {range:?} numbers={numbers} counted={counted}");
                        assert_eq!(String::from_utf8(page.text.clone()).unwrap(), expect, "{what}");
                        assert_eq!(page.lines, part.len() as u64, "{what}");
                        match page.total {
                            Total::Exact(t) => assert_eq!(t, total, "{what}"),
                            Total::AtLeast(t) => {
                                assert!(
                                    !counted && t <= total && t == from_line + page.lines,
                                    "{what}: {t}"
                                )
                            }
                            Total::Unknown => assert!(!counted, "{what}"),
                        }
                        if counted {
                            let next = from_line + part.len() as u64;
                            let has_next = !part.is_empty() && next <= total;
                            assert_eq!(page.next(), has_next.then_some(next), "{what}");
                        }
                    }
                }
            }
        }
    }
}
