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
