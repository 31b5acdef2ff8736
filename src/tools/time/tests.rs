//! `iso8601_utc` against dates worked out by hand.

use super::*;

#[track_caller]
fn check(secs: i64, expect: &str) {
    assert_eq!(iso8601_utc(secs), expect);
}

#[test]
fn iso8601() {
    check(0, "1970-01-01T00:00:00Z");
    check(951_782_400, "2000-02-29T00:00:00Z");
    check(1_795_316_354, "2026-11-22T02:59:14Z");
    check(-1, "1969-12-31T23:59:59Z");
    check(4_102_444_800, "2100-01-01T00:00:00Z");
}
