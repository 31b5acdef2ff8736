//! Fuzz target: the apply_patch envelope parser, and the matcher on each update it parses.
//! Neither may panic; a parse error names a line of the input (or the one after its last), and
//! every message stays short whatever the input (the parser quotes at most 80 characters of a
//! line, the matcher's near match is under 2 KB). The file text is bounded to 64 KiB: the
//! matcher is quadratic in the worst case (every position tried against every old line), which
//! the tool bounds by the file size limit and libFuzzer would report as a timeout.

#![no_main]

use libfuzzer_sys::fuzz_target;
use replay::fuzz::tools::patch::apply::apply_hunks;
use replay::fuzz::tools::patch::parse::{parse, FileOp};

const MAX_TEXT_BYTES: usize = 64 * 1024;

// The input, UTF-8: `patch NUL file-text`, the file text being what each update applies to.
fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else { return };
    let (patch, text) = input.split_once('\0').unwrap_or((input, ""));
    let patch = match parse(patch) {
        Ok(patch) => patch,
        Err(error) => {
            let n_lines = patch.split('\n').count();
            assert!(error.line <= n_lines + 1, "line {} of {n_lines}: {error}", error.line);
            let message = error.to_string();
            assert!(message.len() < 1024, "{} bytes: {message}", message.len());
            return;
        }
    };
    if text.len() > MAX_TEXT_BYTES {
        return;
    }
    for file in &patch.files {
        let FileOp::Update { hunks, .. } = file else { continue };
        match apply_hunks(text, hunks) {
            // A hunk whose old and new lines are the same changes nothing but what a
            // whitespace-tolerant match let it rewrite; not checked beyond not panicking.
            Ok(_) => {}
            Err(error) => {
                assert!(error.hunk >= 1 && error.hunk <= hunks.len(), "{error}");
                let message = error.to_string();
                assert!(message.len() < 4096, "{} bytes: {message}", message.len());
            }
        }
    }
});
