//! Partial reads (`read_file`'s offset, limit, head, tail and lineNumbers) through the real
//! binary: the lines and the note, every parameter and error, CRLF, missing final newlines,
//! files over 16 MiB, and `cat -n` itself.

use regex::Regex;
use serde_json::{json, Value};

use crate::harness::{Server, TestEnv};

const MIB: usize = 1024 * 1024;

/// The note's grammar, as schemas/read_file.json documents it.
const NOTE: &str = r"^\[(?:lines (?:\d+-\d+|none) of (?:\d+|at least \d+ in \d+ bytes)|last \d+ lines of \d+ bytes)(?:; offset=\d+ is past the end)?(?:; cut at the 16 MiB cap)?(?:; next: offset=\d+)?(?:; encoding: [^;\]]+; edits keep it)?\]$";

/// A partial read: the lines item and the note item, the note checked against the grammar.
#[track_caller]
fn page(server: &mut Server, args: Value) -> (String, String) {
    let reply = server.call("read_file", args);
    let texts = reply.texts();
    let [lines, note] = <[String; 2]>::try_from(texts)
        .unwrap_or_else(|t| panic!("expected the lines and a note, got {t:?}"));
    assert!(Regex::new(NOTE).unwrap().is_match(&note), "note outside the grammar: {note:?}");
    (lines, note)
}

#[track_caller]
fn check(server: &mut Server, args: Value, lines: &str, note: &str) {
    let got = page(server, args.clone());
    assert_eq!((got.0.as_str(), got.1.as_str()), (lines, note), "{args}");
}

/// `n` numbered lines, `line 1\n` to `line n\n`.
fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn offset_and_limit_page_through_a_file() {
    let env = TestEnv::new(&[], &[("root/f.txt", &numbered(10))]);
    let mut server = Server::start(&env);
    let p = env.p("root/f.txt");
    check(
        &mut server,
        json!({"path": p, "offset": 1, "limit": 4}),
        "line 1\nline 2\nline 3\nline 4\n",
        "[lines 1-4 of 10; next: offset=5]",
    );
    check(
        &mut server,
        json!({"path": p, "offset": 5, "limit": 4}),
        "line 5\nline 6\nline 7\nline 8\n",
        "[lines 5-8 of 10; next: offset=9]",
    );
    check(
        &mut server,
        json!({"path": p, "offset": 9, "limit": 4}),
        "line 9\nline 10\n",
        "[lines 9-10 of 10]",
    );
    // offset alone reads to the end; limit alone reads from line 1.
    check(&mut server, json!({"path": p, "offset": 10}), "line 10\n", "[lines 10-10 of 10]");
    check(
        &mut server,
        json!({"path": p, "limit": 1}),
        "line 1\n",
        "[lines 1-1 of 10; next: offset=2]",
    );
}

#[test]
fn head_and_tail() {
    let env = TestEnv::new(&[], &[("root/f.txt", &numbered(5))]);
    let mut server = Server::start(&env);
    let p = env.p("root/f.txt");
    check(
        &mut server,
        json!({"path": p, "head": 2}),
        "line 1\nline 2\n",
        "[lines 1-2 of 5; next: offset=3]",
    );
    check(&mut server, json!({"path": p, "tail": 2}), "line 4\nline 5\n", "[lines 4-5 of 5]");
    // Bigger than the file: all of it.
    check(&mut server, json!({"path": p, "head": 50}), &numbered(5), "[lines 1-5 of 5]");
    check(&mut server, json!({"path": p, "tail": 50}), &numbered(5), "[lines 1-5 of 5]");
    check(&mut server, json!({"path": p, "head": 5}), &numbered(5), "[lines 1-5 of 5]");
}

#[test]
fn crlf_and_a_missing_final_newline_come_back_byte_for_byte() {
    let env = TestEnv::new(&[], &[("root/last.txt", "a\nb")]);
    env.copy_fixture("text/crlf.txt", "root/crlf.txt");
    let crlf = env.read_string("root/crlf.txt");
    assert_eq!(crlf, "one\r\ntwo\r\nthree", "the fixture");
    let mut server = Server::start(&env);
    let p = env.p("root/crlf.txt");
    check(
        &mut server,
        json!({"path": p, "head": 1}),
        "one\r\n",
        "[lines 1-1 of 3; next: offset=2]",
    );
    check(&mut server, json!({"path": p, "offset": 2}), "two\r\nthree", "[lines 2-3 of 3]");
    check(&mut server, json!({"path": p, "tail": 2}), "two\r\nthree", "[lines 2-3 of 3]");
    check(
        &mut server,
        json!({"path": p, "tail": 1, "lineNumbers": true}),
        "     3\tthree",
        "[lines 3-3 of 3]",
    );
    let p = env.p("root/last.txt");
    check(&mut server, json!({"path": p, "tail": 1}), "b", "[lines 2-2 of 2]");
    check(&mut server, json!({"path": p, "offset": 1}), "a\nb", "[lines 1-2 of 2]");
}

#[test]
fn empty_files_and_offsets_past_the_end() {
    let env = TestEnv::new(&[], &[("root/empty.txt", ""), ("root/f.txt", &numbered(3))]);
    let mut server = Server::start(&env);
    let empty = env.p("root/empty.txt");
    check(&mut server, json!({"path": empty, "head": 3}), "", "[lines none of 0]");
    check(&mut server, json!({"path": empty, "tail": 3}), "", "[lines none of 0]");
    check(&mut server, json!({"path": empty, "lineNumbers": true}), "", "[lines none of 0]");
    check(
        &mut server,
        json!({"path": empty, "offset": 2}),
        "",
        "[lines none of 0; offset=2 is past the end]",
    );
    let p = env.p("root/f.txt");
    check(
        &mut server,
        json!({"path": p, "offset": 4}),
        "",
        "[lines none of 3; offset=4 is past the end]",
    );
    check(
        &mut server,
        json!({"path": p, "offset": 1000, "limit": 5}),
        "",
        "[lines none of 3; offset=1000 is past the end]",
    );
}

#[test]
fn line_numbers_are_cat_n_with_and_without_ranges() {
    let env = TestEnv::new(&[], &[("root/f.txt", "alpha\n\n\tgamma\r\ndelta")]);
    let mut server = Server::start(&env);
    let p = env.p("root/f.txt");
    check(
        &mut server,
        json!({"path": p, "lineNumbers": true}),
        "     1\talpha\n     2\t\n     3\t\tgamma\r\n     4\tdelta",
        "[lines 1-4 of 4]",
    );
    check(
        &mut server,
        json!({"path": p, "offset": 2, "limit": 2, "lineNumbers": true}),
        "     2\t\n     3\t\tgamma\r\n",
        "[lines 2-3 of 4; next: offset=4]",
    );
    check(
        &mut server,
        json!({"path": p, "head": 1, "lineNumbers": true}),
        "     1\talpha\n",
        "[lines 1-1 of 4; next: offset=2]",
    );
    // lineNumbers: false is the same as leaving it out: the contract's whole-file reply.
    let reply = server.call("read_file", json!({"path": p, "lineNumbers": false}));
    assert_eq!(reply.texts(), ["alpha\n\n\tgamma\r\ndelta"]);
}

/// The numbers are `cat -n`'s, byte for byte: compared with the real `cat -n` (run through
/// execute_command; its exact stdout is in structuredContent), past line 999999 too.
#[test]
fn line_numbers_match_cat_n_exactly() {
    let many = numbered(1_000_003);
    let env = TestEnv::new(&[], &[("root/many.txt", &many), ("root/odd.txt", "x\r\n\n y\tz\nend")]);
    let mut server = Server::start(&env);
    let cat_n = |server: &mut Server, rel: &str, sed: &str| -> String {
        let command = format!("cat -n '{}' | sed -n '{sed}'", env.p(rel));
        let reply = server.call("execute_command", json!({"command": command}));
        reply.result()["structuredContent"]["stdout"].as_str().expect("stdout").to_owned()
    };
    let odd = env.p("root/odd.txt");
    let (lines, _) = page(&mut server, json!({"path": odd, "lineNumbers": true}));
    assert_eq!(lines, cat_n(&mut server, "root/odd.txt", "1,$p"));
    let (lines, _) = page(&mut server, json!({"path": odd, "tail": 2, "lineNumbers": true}));
    assert_eq!(lines, cat_n(&mut server, "root/odd.txt", "3,4p"));
    let p = env.p("root/many.txt");
    let (lines, note) =
        page(&mut server, json!({"path": p, "offset": 999_998, "limit": 4, "lineNumbers": true}));
    assert_eq!(lines, cat_n(&mut server, "root/many.txt", "999998,1000001p"));
    assert!(lines.contains("1000000\tline 1000000\n"), "{lines:?}");
    assert_eq!(note, "[lines 999998-1000001 of 1000003; next: offset=1000002]");
}

#[test]
fn conflicting_and_invalid_parameters_are_invalid_params() {
    let env = TestEnv::new(&[], &[("root/f.txt", &numbered(3))]);
    let mut server = Server::start(&env);
    let p = env.p("root/f.txt");
    let conflicts = [
        (json!({"head": 1, "tail": 1}), "`tail` cannot be combined with `head`"),
        (json!({"head": 1, "offset": 2}), "`head` cannot be combined with `offset`"),
        (json!({"head": 1, "limit": 2}), "`head` cannot be combined with `limit`"),
        (json!({"tail": 1, "offset": 2, "limit": 1}), "`tail` cannot be combined with `offset`"),
        (json!({"tail": 1, "limit": 1}), "`tail` cannot be combined with `limit`"),
    ];
    for (mut args, expect) in conflicts {
        args["path"] = json!(p);
        let error = server.call_err("read_file", args.clone(), -32602);
        assert!(error.message.contains(expect), "{args}: {}", error.message);
        assert!(
            error.message.contains("give `head`, or `tail`, or `offset` and `limit`"),
            "{}",
            error.message
        );
    }
    for (field, value) in [
        ("offset", json!(0)),
        ("limit", json!(0)),
        ("head", json!(0)),
        ("tail", json!(0)),
        ("offset", json!(-3)),
        ("limit", json!("10")),
        ("head", json!(1.5)),
        ("lineNumbers", json!("yes")),
    ] {
        let args = json!({"path": p, field: value});
        let error = server.call_err("read_file", args.clone(), -32602);
        assert!(error.message.contains(&format!("`{field}`")), "{args}: {}", error.message);
    }
    // Parameters are checked before the policy and the filesystem.
    let error =
        server.call_err("read_file", json!({"path": "/nonexistent", "head": 1, "tail": 1}), -32602);
    assert!(error.message.contains("`tail`"), "{}", error.message);
}

#[test]
fn partial_reads_of_binary_files_are_refused() {
    let env = TestEnv::new(&[], &[]);
    env.write("root/p.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01");
    // A NUL byte in the first 4 KiB makes the file binary, even where the lines asked for are
    // clean text.
    let mut nul_early = b"head\x00er\n".to_vec();
    nul_early.extend_from_slice(numbered(3).as_bytes());
    env.write("root/nul-early.txt", &nul_early);
    // Beyond the first 4 KiB, only the lines returned are looked at.
    let mut nul_late = numbered(1000).into_bytes();
    nul_late.extend_from_slice(b"nul \x00 here\nlast\n");
    env.write("root/nul-late.txt", &nul_late);
    let mut latin1 = numbered(3).into_bytes();
    latin1.extend_from_slice(b"caf\xe9\n");
    env.write("root/latin1.txt", &latin1);
    let mut server = Server::start(&env);
    for (rel, args) in [
        ("root/p.png", json!({"head": 1})),
        ("root/p.png", json!({"tail": 1})),
        ("root/p.png", json!({"lineNumbers": true})),
        ("root/nul-early.txt", json!({"offset": 2, "limit": 1})),
        ("root/nul-late.txt", json!({"offset": 1001, "limit": 1})),
        ("root/nul-late.txt", json!({"tail": 2})),
    ] {
        let mut args = args;
        args["path"] = json!(env.p(rel));
        let error = server.call_err("read_file", args.clone(), -32602);
        assert!(error.message.contains("applies to text files only"), "{args}: {}", error.message);
        assert!(error.message.contains(&env.p(rel)), "{}", error.message);
    }
    let error =
        server.call_err("read_file", json!({"path": env.p("root/p.png"), "tail": 1}), -32602);
    assert!(error.message.starts_with("invalid params: `tail` "), "{}", error.message);
    // Text lines elsewhere in those files are served.
    check(
        &mut server,
        json!({"path": env.p("root/nul-late.txt"), "tail": 1}),
        "last\n",
        "[lines 1002-1002 of 1002]",
    );
    // Text in a legacy encoding is decoded, and its pages name it.
    check(
        &mut server,
        json!({"path": env.p("root/latin1.txt"), "head": 1}),
        "line 1\n",
        "[lines 1-1 of 4; next: offset=2; encoding: windows-1252; edits keep it]",
    );
    check(
        &mut server,
        json!({"path": env.p("root/latin1.txt"), "tail": 1}),
        "café\n",
        "[lines 4-4 of 4; encoding: windows-1252; edits keep it]",
    );
    // And the whole binary file still comes back as before.
    let reply = server.call("read_file", json!({"path": env.p("root/p.png")}));
    assert_eq!(reply.tool_result().content.len(), 1);
}

/// Over 16 MiB: a whole read is refused, pointing at paging; a partial read is served, and the
/// lines are counted only as far as the read went.
#[test]
fn files_over_16_mib_are_read_in_parts() {
    // "line 0000001\n" is 13 bytes: 1,400,000 lines make 18,200,000 bytes.
    let n = 1_400_000;
    let text: String = (1..=n).map(|i| format!("line {i:07}\n")).collect();
    let size = text.len();
    assert!(size > 16 * MIB);
    let env = TestEnv::new(&[], &[("root/big.log", &text)]);
    let mut server = Server::start(&env);
    let p = env.p("root/big.log");

    let error = server.call_err("read_file", json!({"path": p}), -32603);
    assert!(error.message.contains(&size.to_string()), "{}", error.message);
    assert!(error.message.contains("offset and limit"), "{}", error.message);

    check(
        &mut server,
        json!({"path": p, "head": 2}),
        "line 0000001\nline 0000002\n",
        &format!("[lines 1-2 of at least 3 in {size} bytes; next: offset=3]"),
    );
    check(
        &mut server,
        json!({"path": p, "offset": 101, "limit": 1, "lineNumbers": true}),
        "   101\tline 0000101\n",
        &format!("[lines 101-101 of at least 102 in {size} bytes; next: offset=102]"),
    );
    // A read that reaches the end counts exactly.
    check(
        &mut server,
        json!({"path": p, "offset": n - 1, "limit": 10}),
        "line 1399999\nline 1400000\n",
        "[lines 1399999-1400000 of 1400000]",
    );
    check(
        &mut server,
        json!({"path": p, "offset": n + 1}),
        "",
        "[lines none of 1400000; offset=1400001 is past the end]",
    );
    // The tail is read from the end: no line numbers.
    check(
        &mut server,
        json!({"path": p, "tail": 2}),
        "line 1399999\nline 1400000\n",
        &format!("[last 2 lines of {size} bytes]"),
    );
    let error =
        server.call_err("read_file", json!({"path": p, "tail": 2, "lineNumbers": true}), -32602);
    assert!(
        error.message.contains("`lineNumbers` cannot be combined with `tail`"),
        "{}",
        error.message
    );

    // offset alone would return it all: cut before the line that crosses 16 MiB.
    let per_line = 13;
    let fit = 16 * MIB / per_line;
    let (lines, note) = page(&mut server, json!({"path": p, "offset": 1}));
    assert_eq!(lines.len(), fit * per_line);
    assert!(lines == text[..fit * per_line], "the page is not the file's first lines");
    assert_eq!(
        note,
        format!("[lines 1-{fit} of at least {} in {size} bytes; cut at the 16 MiB cap; next: offset={}]", fit + 1, fit + 1)
    );
    let (lines, note) = page(&mut server, json!({"path": p, "tail": n}));
    assert_eq!(lines.len(), fit * per_line);
    assert!(lines == text[size - fit * per_line..], "the page is not the file's last lines");
    assert_eq!(note, format!("[last {fit} lines of {size} bytes; cut at the 16 MiB cap]"));
}

#[test]
fn a_line_over_16_mib_cannot_be_read_in_part() {
    let mut text = "first\n".to_string();
    text.push_str(&"x".repeat(16 * MIB + 1));
    let env = TestEnv::new(&[], &[("root/long.txt", &text)]);
    let mut server = Server::start(&env);
    let p = env.p("root/long.txt");
    check(
        &mut server,
        json!({"path": p, "head": 1}),
        "first\n",
        &format!("[lines 1-1 of at least 2 in {} bytes; next: offset=2]", text.len()),
    );
    for args in [json!({"path": p, "offset": 2}), json!({"path": p, "tail": 1})] {
        let error = server.call_err("read_file", args.clone(), -32603);
        assert!(
            error.message.contains("alone is longer than the 16 MiB"),
            "{args}: {}",
            error.message
        );
    }
}

#[test]
fn partial_reads_keep_to_the_policy() {
    let env = TestEnv::new(&["outside"], &[("root/in.txt", "in\n")]);
    let marker = env.marker().to_owned();
    env.write("outside/secret.txt", format!("{marker}\n"));
    env.symlink(&env.p("outside/secret.txt"), "root/link.txt");
    let mut server = Server::start(&env);
    for path in
        [env.p("outside/secret.txt"), env.p("root/link.txt"), env.p("root/../outside/secret.txt")]
    {
        for args in [
            json!({"path": path, "head": 1}),
            json!({"path": path, "tail": 1}),
            json!({"path": path, "lineNumbers": true}),
        ] {
            let reply = server.call("read_file", args.clone());
            assert!(!reply.line.contains(&marker), "leaked: {}", reply.line);
            reply.expect_error(-32001);
        }
    }
    // Missing files and directories fail as whole reads do.
    server.call_err("read_file", json!({"path": env.p("root/missing.txt"), "head": 1}), -32002);
    server.call_err("read_file", json!({"path": env.p("root"), "tail": 1}), -32603);
}

#[test]
fn a_read_only_root_is_paged_too() {
    let env = TestEnv::new(&["ro"], &[("ro/f.txt", &numbered(3))]);
    let mut server = Server::start_with([
        "--mcp-server".to_owned(),
        "--allow".to_owned(),
        format!("{}:ro", env.p("ro")),
    ]);
    check(
        &mut server,
        json!({"path": env.p("ro/f.txt"), "tail": 1}),
        "line 3\n",
        "[lines 3-3 of 3]",
    );
}

#[test]
fn read_multiple_files_points_a_too_big_file_to_paging() {
    let env = TestEnv::new(&[], &[]);
    let file = std::fs::File::create(env.path("root/big.txt")).expect("create");
    file.set_len(16 * 1024 * 1024 + 1).expect("set_len");
    let mut server = Server::start(&env);
    let items =
        server.call("read_multiple_files", json!({"paths": [env.p("root/big.txt")]})).texts();
    assert!(
        items[0].contains("read it in parts with read_file's offset and limit"),
        "{}",
        items[0]
    );
}
