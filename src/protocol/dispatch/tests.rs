//! The `resource_link` of a path a search found: its URI and its media type.

use super::*;

#[test]
fn file_uris_escape_all_but_the_unreserved_bytes_and_slashes() {
    #[track_caller]
    fn check(path: &str, expect: &str) {
        assert_eq!(file_uri(path), expect, "{path:?}");
    }
    check("/a/b.txt", "file:///a/b.txt");
    check("/a b/c#1?.md", "file:///a%20b/c%231%3F.md");
    check("/100%/x~y_z-w", "file:///100%25/x~y_z-w");
    check("/é/\n", "file:///%C3%A9/%0A");
}

#[test]
fn link_media_types_come_from_known_extensions_only() {
    #[track_caller]
    fn check(name: &str, expect: Option<&str>) {
        assert_eq!(link_mime_type(name), expect, "{name:?}");
    }
    check("one.swift", Some("text/x-swift"));
    check("README.MD", Some("text/markdown"));
    check("main.cpp", Some("text/x-c++"));
    check("lib.rs", Some("text/x-rust"));
    check("Cargo.toml", Some("application/toml"));
    check("info.plist", None);
    check("Makefile", None);
    check("archive.tar.gz", None);
}
