//! The sizes agree with what serde_json writes, byte for byte.

use serde_json::json;

use super::*;

#[track_caller]
fn check(text: &str, expect: usize) {
    let written = serde_json::to_string(text).unwrap().len();
    assert_eq!(written, expect, "serde_json wrote {text:?} in {written} bytes");
    assert_eq!(escaped_len(text), expect, "{text:?}");
}

#[test]
fn escaped_lengths() {
    check("", 2);
    check("plain", 7);
    check("a\"b", 6);
    check("a\\b", 6);
    check("\n\t\r\u{8}\u{c}", 12);
    check("\u{0}\u{1}\u{1f}", 20);
    check("\u{7f}", 3);
    check("é日本🎉", 2 + "é日本🎉".len());
    // Every byte value an ASCII string can hold, and a long run past the block size.
    let all: String = (0u8..128).map(char::from).collect();
    check(&all, serde_json::to_string(&all).unwrap().len());
    check(&"\u{1}".repeat(1000), 6002);
    check(&"x\"".repeat(777), 2 + 777 * 3);
}

#[test]
fn json_lengths() {
    for value in [
        json!(null),
        json!(true),
        json!(false),
        json!(-12.5),
        json!(1e300),
        json!(u64::MAX),
        json!("a\u{1}b"),
        json!([]),
        json!({}),
        json!([1, "two", [3], {"four": 4}]),
        json!({"content": [{"type": "text", "text": "x\n\"y\""}], "isError": true, "k\u{2}": null}),
    ] {
        assert_eq!(json_len(&value), value.to_string().len(), "{value}");
    }
}

/// (value, the least and the most it takes): the exact length lies between, reached at the
/// least by strings that escape nothing, at the most by strings of control bytes.
#[test]
fn json_length_ranges() {
    let check = |value: serde_json::Value, expect: (usize, usize)| {
        let (least, most) = json_len_range(&value);
        assert_eq!((least, most), expect, "{value}");
        assert!((least..=most).contains(&json_len(&value)), "{value}");
    };
    check(json!(null), (4, 4));
    check(json!(-12.5), (5, 5));
    check(json!(""), (2, 2));
    check(json!("abc"), (5, 20));
    check(json!("\u{1}\u{1f}"), (4, 14));
    check(json!("\u{1}\u{1f}\u{1}"), (5, 20));
    check(json!([]), (2, 2));
    check(json!([1, "ab"]), (8, 18));
    check(json!({"k": "v"}), (9, 19));
    check(json!({"content": [{"type": "text", "text": "x\n\"y\""}], "isError": true}), (59, 214));
}

#[test]
fn base64_lengths() {
    assert_eq!(base64_len(0), 0);
    assert_eq!(base64_len(1), 4);
    assert_eq!(base64_len(3), 4);
    assert_eq!(base64_len(4), 8);
    assert_eq!(base64_len(16 << 20), crate::base64::encode(&vec![0; 16 << 20]).len());
}

#[test]
fn a_budget_takes_what_fits() {
    let mut budget = Budget::of(10);
    assert!(budget.take(4));
    assert!(!budget.take(7));
    assert_eq!(budget.left(), 6);
    assert!(budget.take(6));
    assert!(!budget.take(1));
}

#[track_caller]
fn check_written(text: &str) {
    let mut out = b"prefix".to_vec();
    push_json_string(&mut out, text);
    let expect = format!("prefix{}", serde_json::to_string(text).unwrap());
    assert_eq!(String::from_utf8(out).unwrap(), expect, "{text:?}");
}

#[test]
fn strings_are_written_as_serde_json_writes_them() {
    check_written("");
    check_written("plain");
    check_written("a\"b\\c");
    check_written("\n\t\r\u{8}\u{c}\u{0}\u{1}\u{1f}\u{7f} /");
    check_written("é日本🎉 and \u{2028}");
    // Every byte value an ASCII string can hold, at every offset within an 8-byte word, and
    // each escape alone at every position of a run longer than a word.
    let all: String = (0u8..128).map(char::from).collect();
    for shift in 0..8 {
        check_written(&format!("{}{all}", "x".repeat(shift)));
    }
    for c in (0u8..128).map(char::from) {
        for at in 0..20 {
            check_written(&format!("{}{c}{}", "y".repeat(at), "z".repeat(19 - at)));
        }
    }
    // Bytes just above and below the ones escaped, which a word-at-a-time test must not miss
    // or mistake.
    check_written(&"\u{1f} !\"#[\\]".repeat(100));
    check_written(&"€\u{80}\u{ff}\u{100}".repeat(50));
}

#[test]
fn values_are_written_as_serde_json_writes_them() {
    for value in [
        json!(null),
        json!(true),
        json!(-12.5),
        json!(1e300),
        json!(u64::MAX),
        json!([]),
        json!({}),
        json!([1, "two\n", [3], {"four": 4, "a\"": null}]),
        json!({"content": [{"type": "text", "text": "x\n\"y\""}], "isError": true, "k\u{2}": null}),
    ] {
        let mut out = Vec::new();
        push_json(&mut out, &value);
        assert_eq!(String::from_utf8(out).unwrap(), value.to_string());
    }
}

#[test]
fn escapes_are_found_alike_with_and_without_vector_instructions() {
    for a in 0u8..=255 {
        for at in 0..16 {
            let mut block = [b'x'; 16];
            block[at] = a;
            block[15 - at] = a.wrapping_add(1);
            let expect: u32 =
                (0..16).filter(|&i| ESCAPE_EXTRA[usize::from(block[i])] != 0).map(|i| 1 << i).sum();
            assert_eq!(escapes_in(&block), expect, "{block:?}");
            assert_eq!(escapes_in_words(&block), expect, "{block:?}");
        }
    }
}

#[test]
fn escaped_text_len_counts_every_byte_value_across_blocks() {
    // Every byte value, many times over, so that the one-byte counters of each 255-byte block
    // are filled to their most (255 control bytes make 1,275 bytes of escapes).
    let bytes: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 256) as u8).collect();
    let by_table = |b: &[u8]| {
        b.len() + b.iter().map(|&x| usize::from(ESCAPE_EXTRA[usize::from(x)])).sum::<usize>()
    };
    for len in [0, 1, 254, 255, 256, 511, 5000] {
        assert_eq!(escaped_text_len(&bytes[..len]), by_table(&bytes[..len]), "{len}");
    }
    assert_eq!(escaped_text_len(&[1; 1000]), 6000);
    assert_eq!(escaped_text_len(&[b'\n'; 1000]), 2000);
}

/// A name's bytes as shown (`String::from_utf8_lossy`), escaped.
#[test]
fn shown_lengths() {
    for raw in [
        &b""[..],
        b"abc",
        b"\xff",
        b"\xff\xfe",
        b"a\xe2\x82",
        b"\xe2\x82a\"",
        b"\x01\xf0\x9f\x98\x80\xf0\x9f",
        &[0x80; 255],
    ] {
        let shown = String::from_utf8_lossy(raw);
        assert_eq!(shown_escaped_len(raw), escaped_text_len(shown.as_bytes()), "{raw:?}");
    }
}

/// Fair shares of a budget: what a small item wants it gets, the big ones split the rest.
#[test]
fn fair_shares_fill_the_small_wants_first() {
    #[track_caller]
    fn check(wants: &[usize], total: usize, expect: &[usize]) {
        assert_eq!(fair_shares(wants, total), expect, "{wants:?} of {total}");
    }
    check(&[], 100, &[]);
    check(&[10, 20], 100, &[10, 20]);
    check(&[500, 10, 500], 100, &[45, 10, 45]);
    check(&[500, 500, 500], 90, &[30, 30, 30]);
    check(&[30, 500], 100, &[30, 70]);
    check(&[7], 0, &[0]);
}

/// The bound in tokens is the bound in escaped bytes less room for the notes, named by its
/// tokens; 0 is the 24 MiB bound as before.
#[test]
fn token_budgets() {
    let default = Budget::of_tokens(REPLY_TOKENS);
    assert_eq!((default.left(), default.name()), (20_000 - 1024, "20,000-token".to_owned()));
    assert_eq!(default.page_cap().name(), "20,000-token");
    let off = Budget::of_tokens(0);
    assert_eq!((off.left(), off.name(), off.tokens()), (REPLY_BYTES, "24 MiB".to_owned(), None));
    assert_eq!(Budget::of_tokens(100).left(), 50);
    assert_eq!(Budget::of_tokens(u32::MAX).left(), REPLY_BYTES - 1024);
    assert_eq!(default.within(5).left(), 5);
    assert_eq!(default.spent().left(), 0);
    for (n, shown) in [(0, "0"), (999, "999"), (1000, "1,000"), (1_234_567, "1,234,567")] {
        assert_eq!(thousands(n), shown);
    }
}
