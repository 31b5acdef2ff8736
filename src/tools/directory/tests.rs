//! Sizes as list_directory writes them, and what an entry takes of the reply.

use super::listing::Listing;
use super::{format_size, write_entry, Shown, SortBy};
use crate::policy::confined::Kind;
use crate::reply_size::JsonObject;

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

/// Every entry, shown with everything it can show, takes at most what the listing costs it at
/// (so that a listing cut by the reply's bound stays within it): the longest size and time
/// text, names not UTF-8 (three bytes shown for one), quotes and control bytes.
#[test]
fn an_entry_takes_no_more_than_its_cost() {
    let names: [&[u8]; 6] =
        [b"a", b"\xff", &[0x80; 255], b"\"\\\x01\n", "\u{fffd}\u{2028}".as_bytes(), &[b'x'; 255]];
    let sizes = [None, Some(0), Some(1023), Some(u64::MAX), Some(60 << 40)];
    let times = [None, Some(0), Some(-1), Some(1 << 45), Some(i64::MAX / 2), Some(i64::MIN / 2)];
    let kinds = [Kind::File, Kind::Dir, Kind::Symlink, Kind::Other];
    let mut listing = Listing::new(SortBy::Name, usize::MAX);
    for (i, name) in names.iter().enumerate() {
        for (j, size) in sizes.iter().enumerate() {
            for (k, time) in times.iter().enumerate() {
                // A distinct name each: a listing holds every entry, whatever their names.
                let mut name = name.to_vec();
                name.extend_from_slice(format!("{i}{j}{k}").as_bytes());
                let name: &'static [u8] = Box::leak(name.into_boxed_slice());
                listing.add(name, kinds[(i + j + k) % 4], *size, *time);
            }
        }
    }
    let listing = listing.finish();
    assert_eq!(listing.len(), names.len() * sizes.len() * times.len());
    for shown in [(false, false), (true, false), (false, true), (true, true)] {
        let shown = Shown { sizes: shown.0, times: shown.1 };
        for held in listing.entries() {
            let (mut text, mut data) = (String::new(), JsonObject::default());
            write_entry(&mut text, &mut data, &held.key, &listing.name(held), shown);
            // The entry without the braces of the object written around it, and its comma in
            // the structured list.
            let took = text.len() + (data.finish().len() - 2) + 1;
            assert!(took <= listing.cost(held), "{took} > {}: {text:?}", listing.cost(held));
        }
    }
}
