//! `ToolError`'s messages and codes, and its inline forms: the texts clients see, pinned.

use super::*;

#[track_caller]
fn check(error: ToolError, code: i32, expect: &str) {
    assert_eq!(error.code(), code, "{error}");
    assert_eq!(error.to_string(), expect);
}

#[test]
fn messages_and_codes() {
    let path = || PathBuf::from("/r/f");
    check(
        ToolError::NotRegularFile { path: path() },
        INTERNAL,
        "not a regular file: /r/f is a device, FIFO or socket",
    );
    check(
        ToolError::Binary { path: path() },
        INTERNAL,
        "edit failed: /r/f: not text (a NUL byte, or bytes no text encoding has); binary files \
         cannot be edited",
    );
    check(
        ToolError::Unrepresentable {
            op: "edit",
            path: path(),
            what: crate::encoding::Unrepresentable {
                ch: '€',
                line: 2,
                column: 5,
                encoding: "Shift_JIS",
            },
        },
        INTERNAL,
        "edit failed: /r/f: '€' (U+20AC) at line 2, column 5 cannot be written in the file's \
         encoding Shift_JIS: write it another way (an escape the file's language has) or convert \
         the file to UTF-8 with write_file first; nothing was written",
    );
    check(
        ToolError::HardLinked { path: path(), links: 2 },
        INTERNAL,
        "append failed: /r/f: the file has 2 hard links, and appending in place would change the \
         other names too; write the whole content without append instead",
    );
    check(
        ToolError::DirectoryInTheWay { path: path() },
        INTERNAL,
        "overwrite failed: /r/f: it is a directory, and copy_file overwrites files only; delete \
         it first with delete_file if that is really intended",
    );
    check(
        ToolError::FileInTheWay { path: path() },
        INTERNAL,
        "overwrite failed: /r/f: a directory does not replace a file; delete the file first with \
         delete_file if that is really intended",
    );
    check(
        ToolError::LineTooLong { path: path(), line: Some(3), cap: Cap::Bytes(16 << 20) },
        INTERNAL,
        "read failed: /r/f: line 3 alone is longer than the 16 MiB a partial read returns",
    );
    check(
        ToolError::LineTooLong { path: path(), line: None, cap: Cap::Json(16 << 20) },
        INTERNAL,
        "read failed: /r/f: the last line alone takes more than the 16 MiB of JSON a reply may \
         hold (control characters take 6 bytes each once escaped)",
    );
}

#[test]
fn an_unusable_path_is_bad_params_and_a_refused_one_not_allowed() {
    let invalid = Denied { path: "a\0b".into(), reason: DenyReason::Invalid { detail: "NUL" } };
    let invalid = ToolError::from(invalid);
    assert!(matches!(invalid, ToolError::InvalidPath(_)));
    assert_eq!(invalid.code(), INVALID_PARAMS);
    let outside =
        Denied { path: "/etc".into(), reason: DenyReason::Outside { real: "/etc".into() } };
    let outside = ToolError::from(outside);
    assert!(matches!(outside, ToolError::NotAllowed(_)));
    assert_eq!(outside.code(), NOT_ALLOWED);
}

#[test]
fn inline_forms() {
    let error = ToolError::NotFound { path: PathBuf::from("/r/f") };
    assert_eq!(error.as_item(), "[error: not found: /r/f]");
    assert_eq!(error.as_line(Path::new("/r/f")), "/r/f: [error -32002] not found: /r/f");
    assert_eq!(as_text(-32002, "not found: /r/f"), "error -32002: not found: /r/f");
}
