//! The near match of a missed oldText: one `check` line per cause of drift, each showing the
//! line number and the file's text.

use super::*;

/// `nearest(text, old)` rendered, or `"-"` for none.
#[track_caller]
fn check(text: &str, old: &str, expect: &str) {
    let got = match nearest(text, old) {
        Some(near) => near.to_string(),
        None => "-".to_string(),
    };
    assert_eq!(got, expect, "text {text:?}, oldText {old:?}");
}

/// Lines 3-5 are the ones the cases aim at.
const CODE: &str = "use std::io;\n\nfn main() {\n    let name = \u{201c}world\u{201d};\n\tprintln!(\"hi {name}\");  \n    let t = (1, 2);\n}\n";

#[rustfmt::skip]
#[test]
fn quotes() {
    check(CODE, "    let name = \"world\";\n",
        "the nearest text is line 4; line 4: the file has typographic “ ” where oldText has ASCII quotes or dashes. The file there:\n     4\t    let name = “world”;");
    check("say \"hi\"\n", "say \u{201c}hi\u{201d}",
        "the nearest text is line 1; line 1: oldText has typographic “ ” where the file has ASCII quotes or dashes. The file there:\n     1\tsay \"hi\"");
    check("it\u{2019}s \u{2014} ok\n", "it's - ok",
        "the nearest text is line 1; line 1: the file has typographic ’ — where oldText has ASCII quotes or dashes. The file there:\n     1\tit’s — ok");
}

#[rustfmt::skip]
#[test]
fn tabs_and_indentation() {
    check("if a {\n\tb();\n\tc();\n}\n", "if a {\n    b();\n\tc();\n}",
        "the nearest text is lines 1-4; line 2: the file indents with a tab where oldText has 4 spaces. The file there:\n     1\tif a {\n     2\t\tb();\n     3\t\tc();\n     4\t}");
    check("if a {\n    b();\n}\n", "if a {\n\tb();\n}",
        "the nearest text is lines 1-3; line 2: the file indents with 4 spaces where oldText has a tab. The file there:\n     1\tif a {\n     2\t    b();\n     3\t}");
    // A block indented differently as a whole is the whitespace-normalized match's case; it is
    // named when that match does not run (caseInsensitive, limit other than 1).
    check("    x = 1\n    y = 2\n", "x = 1\ny = 2",
        "the nearest text is lines 1-2; the file's lines are indented by \"    \" where oldText's are by \"\". The file there:\n     1\t    x = 1\n     2\t    y = 2");
    // The block's indent is the engine's (`block::common_indent`: spaces and tabs only), so a
    // no-break space is not called a common indent the whitespace-normalized match forgives.
    check("\u{a0}x = 1\n\u{a0}y = 2\n", "x = 1\ny = 2",
        "the nearest text is lines 1-2; line 1: the file indents by \"\\u{a0}\" where oldText has \"\"; line 2: the file indents by \"\\u{a0}\" where oldText has \"\". The file there:\n     1\t\u{a0}x = 1\n     2\t\u{a0}y = 2");
}

#[rustfmt::skip]
#[test]
fn spacing_and_trailing_whitespace() {
    check(CODE, "    let t = (1,2);",
        "the nearest text is line 6; line 6: spacing inside the line: file \"let t = (1, 2);\" vs oldText \"let t = (1,2);\". The file there:\n     6\t    let t = (1, 2);");
    check("a  =  b\n", "a = b",
        "the nearest text is line 1; line 1: spacing inside the line: file \"a  =  b\" vs oldText \"a = b\". The file there:\n     1\ta  =  b");
    check("x = 1 \ny = 2\n", "x = 1\ny = 2\n",
        "the nearest text is lines 1-2; line 1: trailing whitespace: the file has \" \" at the end of the line, oldText \"\". The file there:\n     1\tx = 1 \n     2\ty = 2");
    check("x = 1\ny = 2\n", "x = 1\t\ny = 2\n",
        "the nearest text is lines 1-2; line 1: trailing whitespace: the file has \"\" at the end of the line, oldText \"\\t\". The file there:\n     1\tx = 1\n     2\ty = 2");
}

#[rustfmt::skip]
#[test]
fn one_line_of_several() {
    check(CODE, "fn main() {\n    let name = \u{201c}world\u{201d};\n\tprintln!(\"bye {name}\");",
        "the nearest text is lines 3-5; line 5: the text differs: file \"\\tprintln!(\\\"hi {name}\\\");  \" vs oldText \"\\tprintln!(\\\"bye {name}\\\");\". The file there:\n     3\tfn main() {\n     4\t    let name = “world”;\n     5\t\tprintln!(\"hi {name}\");  ");
    // A typo in the only line: found by likeness.
    check("alpha beta gamma\ndelta\n", "alpha beta gamna",
        "the nearest text is line 1; line 1: the text differs: file \"…pha beta gamma\" vs oldText \"…pha beta gamna\". The file there:\n     1\talpha beta gamma");
    // oldText runs past the end of the text.
    check("a = 1\nb = 2\n", "a = 1\nb = 2\nc = 3",
        "the nearest text is lines 1-2; oldText goes on for 1 more line(s) after the end of the text. The file there:\n     1\ta = 1\n     2\tb = 2");
}

#[rustfmt::skip]
#[test]
fn unicode_normalization() {
    check("caf\u{e9} = 1\n", "cafe\u{301} = 1",
        "the nearest text is line 1; line 1: Unicode normalization: the file's accented letters are composed (NFC), oldText's decomposed (NFD). The file there:\n     1\tcafé = 1");
    check("cafe\u{301} = 1\n", "caf\u{e9} = 1",
        "the nearest text is line 1; line 1: Unicode normalization: the file's accented letters are decomposed (NFD), oldText's composed (NFC). The file there:\n     1\tcafe\u{301} = 1");
}

#[rustfmt::skip]
#[test]
fn part_of_a_line() {
    // oldText is a piece of a line: only that piece is compared.
    check("let v = call(a,b) + 1;\n", "call(a, b)",
        "the nearest text is line 1; line 1: spacing inside the line: file \"call(a,b)\" vs oldText \"call(a, b)\". The file there:\n     1\tlet v = call(a,b) + 1;");
    check("x = \u{2018}a\u{2019}; y = 2\n", "= 'a'; y",
        "the nearest text is line 1; line 1: the file has typographic ‘ ’ where oldText has ASCII quotes or dashes. The file there:\n     1\tx = ‘a’; y = 2");
}

#[rustfmt::skip]
#[test]
fn crlf_lines_are_compared_without_their_cr() {
    check("a = 1\r\nb =  2\r\n", "a = 1\r\nb = 2\r\n",
        "the nearest text is lines 1-2; line 2: spacing inside the line: file \"b =  2\" vs oldText \"b = 2\". The file there:\n     1\ta = 1\n     2\tb =  2");
}

#[rustfmt::skip]
#[test]
fn nothing_similar_stays_short() {
    check("one\ntwo\nthree\n", "zzz", "-");
    check("one\ntwo\nthree\n", "something else entirely", "-");
    check("}\n}\n}\n", "}\n}", "-");
    check("", "abc", "-");
    check("abc\n", "", "-");
    // Half of oldText's lines must line up for a window to count.
    check("alpha\nbeta\n", "alpha\nxxxxx\nyyyyy\nzzzzz", "-");
}

#[test]
fn long_windows_show_a_few_lines_from_the_first_difference() {
    let text: String = (1..=40).map(|i| format!("line number {i}\n")).collect();
    let old = text.replace("line number 30\n", "line numbr 30\n");
    let old = &old[old.find("line number 21").unwrap()..old.find("line number 36").unwrap()];
    let near = nearest(&text, old).expect("near");
    assert_eq!((near.first, near.last, near.shown_from), (21, 35, 29));
    assert_eq!(near.shown.len(), MAX_SHOWN_LINES);
    assert_eq!(near.shown[1], "line number 30");
    assert_eq!(
        near.differences,
        ["line 30: the text differs: file \"line number 30\" vs oldText \"line numbr 30\""]
    );
}

#[test]
fn the_hint_is_bounded_whatever_the_lines() {
    // Wide characters, control characters and long whitespace in every quoted place.
    let wide = "\u{1F600}\u{1}".repeat(400);
    let lead = " ".repeat(300);
    let text: String = (0..20).map(|i| format!("{lead}{wide}{i}  {wide}\t{lead}\n")).collect();
    let old: String = (0..20).map(|i| format!("\t{wide}{i} {wide}\n")).collect();
    let shown = nearest(&text, &old).expect("near").to_string();
    assert!(shown.len() < 2048, "{} bytes: {shown}", shown.len());
}

#[test]
fn the_hint_is_bounded() {
    // Long lines are cut, and at most three differences are named.
    let long = "x".repeat(5000);
    let text: String = (0..20).map(|i| format!("{long} {i}\n")).collect();
    let old: String = (0..20).map(|i| format!("{long}  {i}\n")).collect();
    let shown = nearest(&text, &old).expect("near").to_string();
    assert!(shown.len() < 2048, "{} bytes: {shown}", shown.len());
    assert!(shown.contains("; 17 more line(s) differ."), "{shown}");
}

#[test]
fn a_huge_old_line_is_keyed_by_its_start() {
    // A 1 MB oldText line that the file holds with one quote changed near its start: found by
    // the first 4 KB of the line, and compared in full.
    let body = "word ".repeat(200_000);
    let text = format!("x\nsay \u{201c}{body}\n");
    let old = format!("say \"{body}");
    let shown = nearest(&text, &old).expect("near").to_string();
    assert!(
        shown.starts_with("the nearest text is line 2; line 2: the file has typographic “ where"),
        "{shown}"
    );
}
