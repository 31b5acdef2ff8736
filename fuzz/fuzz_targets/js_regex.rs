//! Fuzz target: an arbitrary JavaScript pattern. `translate` and `JsRegex::new` never panic;
//! a pattern that compiles is run over a short haystack without panicking; and where the
//! byte-level `FastRegex` says it applies, it finds the same first match as the exact engine
//! (grep relies on the two agreeing).

#![no_main]

use libfuzzer_sys::fuzz_target;
use replay::fuzz::js_regex::{translate, FastRegex, JsRegex};

// The input: a flags byte (bit 0: case-insensitive), then UTF-8 `pattern NUL haystack`, so that
// seeds are easy to write by hand.
fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let (pattern, haystack) = text.split_once('\0').unwrap_or((text, ""));
    let case_insensitive = flags & 1 != 0;
    let _ = translate(pattern);
    let Ok(exact) = JsRegex::new(pattern, case_insensitive) else { return };
    // The same program with a smaller backtracking budget: at JsRegex's 50 million steps
    // (about 2 s), every mutation of `(a+)+$` hits the limit and the fuzzer runs three inputs a
    // second. Until it gives up, the search is the same.
    let regex = fancy_regex::RegexBuilder::new(exact.regex().as_str())
        .backtrack_limit(100_000)
        .build()
        .expect("a compiled pattern compiles again");
    let haystack = &haystack[..haystack.floor_char_boundary(256)];
    // A bounded walk over the matches: `captures_iter` repeats a backtracking-limit error
    // forever.
    let mut exact_first = None;
    for (n, found) in regex.captures_iter(haystack).enumerate() {
        let Ok(captures) = found else { return };
        if n == 0 {
            exact_first = captures.get(0).map(|m| m.range());
        }
        for g in 0..=exact.group_count() {
            let _ = captures.get(g).map(|m| m.as_str());
        }
        if n > 64 {
            break;
        }
    }
    let Some(fast) = FastRegex::new(pattern, case_insensitive) else { return };
    if !fast.applies_to(haystack.as_bytes()) {
        return;
    }
    let fast_first = fast.regex().find(haystack.as_bytes()).map(|m| m.range());
    assert_eq!(
        exact_first, fast_first,
        "FastRegex disagrees with JsRegex: pattern {pattern:?}, haystack {haystack:?}, i={case_insensitive}"
    );
});
