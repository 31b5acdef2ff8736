//! Sizes as list_directory writes them.

use super::format_size;

#[track_caller]
fn check(bytes: u64, expect: &str) {
    assert_eq!(format_size(bytes), expect, "{bytes}");
}

#[test]
fn sizes_are_binary_units_with_two_decimals() {
    check(0, "0 B");
    check(1, "1 B");
    check(1023, "1023 B");
    check(1024, "1.00 KB");
    check(1536, "1.50 KB");
    check(1024 * 1024 - 1, "1024.00 KB");
    check(1024 * 1024, "1.00 MB");
    check(5 * 1024 * 1024 * 1024 + 1, "5.00 GB");
    check(3 << 40, "3.00 TB");
    check(2048 << 40, "2048.00 TB");
}
