//! `search_files`, `glob_search` and `grep_files` through the real binary: name, glob and content rows, file selection, errors, and walks that never leave the root.
//!
//! Expectations are written relative to the root: `check_search` and `check_glob` rows list
//! paths below it, `check_grep` rows spell the reply with `{f}` for `root/f.txt` and `{root}`
//! for the root. Every row is called twice and must answer the same both times. Name rows run
//! under the canonical argument names and the legacy MCP-spec aliases; grep rows run on the LF
//! text (the fast engine) and again with CRLF line ends (the exact engine), which must print the
//! same lines.

use serde_json::{json, Value};

use crate::harness::{path_str, replay_command, Server, TestEnv};

const NO_MATCHES: &str = "(no matches found)";
const SKIPPED_ONE: &str = "[1 path(s) skipped: outside the allowed directories]";

/// `rels` (relative to the root) as the reply lists them: absolute, one per line, or
/// `(no matches found)` when there are none.
fn listing(env: &TestEnv, rels: &[&str]) -> String {
    if rels.is_empty() {
        return NO_MATCHES.to_owned();
    }
    let root = path_str(&env.root());
    rels.iter().map(|rel| format!("{root}/{rel}")).collect::<Vec<_>>().join("\n")
}

/// Calls `tool` twice with `args`; both replies must be the same text, which is returned.
#[track_caller]
fn call_stable(server: &mut Server, tool: &str, args: &Value) -> String {
    let first = server.call_text(tool, args.clone());
    let second = server.call_text(tool, args.clone());
    assert_eq!(first, second, "{tool} {args} answered differently the second time");
    first
}

/// `tool` with `args` fails with `code`, and the message contains `names`.
#[track_caller]
fn check_rejects(server: &mut Server, tool: &str, args: Value, code: i64, names: &str) {
    let error = server.call_err(tool, args.clone(), code);
    assert!(
        error.message.contains(names),
        "{tool} {args}: message does not name {names:?}: {:?}",
        error.message
    );
}

// ---------------------------------------------------------------------------------------------
// search_files and glob_search: the name tree
// ---------------------------------------------------------------------------------------------

/// The tree the name rows search, below the root. Names hold `*`, `?` and `.` so that a
/// pattern reading of `nameContains` would show; `sub` and `sub-x.txt` tell depth-first order
/// from a plain string sort; `B.TXT` sorts before `a.txt` in byte order.
const NAME_FILES: &[&str] = &[
    "B.TXT",
    "a.txt",
    "ab.txt",
    "c.md",
    "node_modules/pkg/index.js",
    "node_modules/pkg/readme.txt",
    "q?.log",
    "sub/d.txt",
    "sub/deep/F.md",
    "sub/deep/e.txt",
    "sub-x.txt",
    "v1.2.txt",
    "v1x2.txt",
    "x*y.txt",
    "\u{c4}rger.txt",
];
const NAME_DIRS: &[&str] = &["root/empty", "root/sub/txt_dir"];

fn name_env() -> TestEnv {
    let env = TestEnv::new(NAME_DIRS, &[]);
    for rel in NAME_FILES {
        env.write(&format!("root/{rel}"), "x\n");
    }
    env
}

/// Every name below the root containing "txt", in walk order.
const ALL_TXT: &[&str] = &[
    "B.TXT",
    "a.txt",
    "ab.txt",
    "node_modules/pkg/readme.txt",
    "sub/d.txt",
    "sub/deep/e.txt",
    "sub/txt_dir",
    "sub-x.txt",
    "v1.2.txt",
    "v1x2.txt",
    "x*y.txt",
    "\u{c4}rger.txt",
];

/// `search_files` for `needle` in the name tree, skipping `excludes`, lists exactly `expect`;
/// the same through the legacy names `path` / `pattern` / `excludePatterns`.
#[track_caller]
fn check_search_excluding(needle: &str, excludes: &[&str], expect: &[&str]) {
    let env = name_env();
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    let want = listing(&env, expect);
    let canonical = json!({"directory": root, "nameContains": needle, "excludeGlobs": excludes});
    let legacy = json!({"path": root, "pattern": needle, "excludePatterns": excludes});
    for args in [canonical, legacy] {
        let got = call_stable(&mut server, "search_files", &args);
        // Nothing found: the contract's line first; a glob-like needle gets a hint after it
        // (`fence::search_files_with_glob_characters_and_no_match_points_to_glob_search`).
        let got = if expect.is_empty() { got.lines().next().unwrap_or("").to_owned() } else { got };
        assert_eq!(got, want, "{args}");
    }
}

#[track_caller]
fn check_search(needle: &str, expect: &[&str]) {
    check_search_excluding(needle, &[], expect);
}

#[test]
fn search_files_rows() {
    check_search("txt", ALL_TXT);
    check_search("TXT", ALL_TXT);
    check_search("tXt", ALL_TXT);
    check_search("b.t", &["B.TXT", "ab.txt"]);
    check_search("md", &["c.md", "sub/deep/F.md"]);
    check_search("e.t", &["node_modules/pkg/readme.txt", "sub/deep/e.txt"]);
    check_search("zzz", &[]);
    // Directories match too, and only by their own name: not their contents.
    check_search("sub", &["sub", "sub-x.txt"]);
    check_search("deep", &["sub/deep"]);
    check_search("_dir", &["sub/txt_dir"]);
    check_search("empty", &["empty"]);
    check_search("node", &["node_modules"]);
    // A basename never holds a `/`.
    check_search("sub/d", &[]);
    check_search("\u{e4}rger", &["\u{c4}rger.txt"]);
    check_search("\u{c4}RGER", &["\u{c4}rger.txt"]);
}

/// `nameContains` is a literal: glob and regex characters match only themselves.
#[test]
fn search_files_literal_rows() {
    check_search("*", &["x*y.txt"]);
    check_search("x*y", &["x*y.txt"]);
    check_search("?", &["q?.log"]);
    check_search("1.2", &["v1.2.txt"]);
    check_search(".*", &[]);
    check_search("*.txt", &[]);
    check_search("[ab]", &[]);
    check_search("a|b", &[]);
    check_search("^a", &[]);
    check_search("txt$", &[]);
    check_search("\\.", &[]);
}

#[test]
fn search_files_exclude_rows() {
    let without = |drop: &[&str]| -> Vec<&str> {
        ALL_TXT.iter().copied().filter(|rel| !drop.contains(rel)).collect()
    };
    // A directory name excludes the directory and everything below it.
    check_search_excluding("txt", &["node_modules"], &without(&["node_modules/pkg/readme.txt"]));
    check_search_excluding(
        "txt",
        &["**/node_modules/**"],
        &without(&["node_modules/pkg/readme.txt"]),
    );
    check_search_excluding(
        "txt",
        &["sub"],
        &without(&["sub/d.txt", "sub/deep/e.txt", "sub/txt_dir"]),
    );
    // A path relative to the directory.
    check_search_excluding("txt", &["sub/deep"], &without(&["sub/deep/e.txt"]));
    check_search_excluding("txt", &["sub/*.txt"], &without(&["sub/d.txt"]));
    // A basename glob applies at every depth.
    check_search_excluding("txt", &["*.txt"], &["B.TXT", "sub/txt_dir"]);
    check_search_excluding("txt", &["txt_dir"], &without(&["sub/txt_dir"]));
    // Several globs.
    check_search_excluding(
        "txt",
        &["deep", "node_modules", "x*"],
        &without(&["sub/deep/e.txt", "node_modules/pkg/readme.txt", "x*y.txt"]),
    );
    // An excluded directory is not listed itself either.
    check_search_excluding("sub", &["sub"], &["sub-x.txt"]);
    check_search_excluding("md", &["nothing-matches-this"], &["c.md", "sub/deep/F.md"]);
}

/// The canonical names win when both spellings are given.
#[test]
fn search_files_canonical_names_win_over_aliases() {
    let env = name_env();
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    let sub = env.p("root/sub");
    let rows: [(Value, &[&str]); 3] = [
        (
            json!({"directory": sub, "path": root, "nameContains": "txt"}),
            &["sub/d.txt", "sub/deep/e.txt", "sub/txt_dir"],
        ),
        (
            json!({"directory": root, "nameContains": "md", "pattern": "txt"}),
            &["c.md", "sub/deep/F.md"],
        ),
        (
            json!({"directory": root, "nameContains": "md", "excludeGlobs": ["c.md"], "excludePatterns": ["F.md"]}),
            &["sub/deep/F.md"],
        ),
    ];
    for (args, expect) in rows {
        assert_eq!(
            call_stable(&mut server, "search_files", &args),
            listing(&env, expect),
            "{args}"
        );
    }
}

/// A relative directory resolves in the project directory, and replies show the normalized path.
#[test]
fn search_files_directory_forms() {
    let env = name_env();
    let mut server = Server::start(&env);
    let want = listing(&env, &["sub/deep/F.md"]);
    let root = path_str(&env.root());
    for directory in ["sub".to_owned(), "./sub/".to_owned(), format!("{root}/sub/deep/../../sub")] {
        let args = json!({"directory": directory, "nameContains": "md"});
        assert_eq!(call_stable(&mut server, "search_files", &args), want, "{directory}");
    }
    let args = json!({"directory": root, "nameContains": "md"});
    assert_eq!(
        call_stable(&mut server, "search_files", &args),
        listing(&env, &["c.md", "sub/deep/F.md"])
    );
    // The directory searched is not a result of its own search.
    let args = json!({"directory": env.p("root/sub/deep"), "nameContains": "deep"});
    assert_eq!(call_stable(&mut server, "search_files", &args), NO_MATCHES);
}

#[test]
fn search_files_errors() {
    let env = name_env();
    env.mkdir("outside");
    env.symlink("../outside", "root/link_out");
    let before = env.snapshot();
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    let outside = env.p("outside");
    let missing = env.p("root/missing");
    let file = env.p("root/a.txt");
    let link_out = env.p("root/link_out");
    let tool = "search_files";
    check_rejects(&mut server, tool, json!({"nameContains": "x"}), -32602, "directory");
    check_rejects(&mut server, tool, json!({"directory": root}), -32602, "nameContains");
    check_rejects(&mut server, tool, json!({}), -32602, "directory");
    check_rejects(&mut server, tool, json!({"path": root}), -32602, "nameContains");
    check_rejects(&mut server, tool, json!({"pattern": "x"}), -32602, "directory");
    check_rejects(
        &mut server,
        tool,
        json!({"directory": outside, "nameContains": "x"}),
        -32001,
        &outside,
    );
    check_rejects(
        &mut server,
        tool,
        json!({"directory": "../outside", "nameContains": "x"}),
        -32001,
        "outside",
    );
    check_rejects(
        &mut server,
        tool,
        json!({"directory": link_out, "nameContains": "x"}),
        -32001,
        &link_out,
    );
    check_rejects(&mut server, tool, json!({"path": outside, "pattern": "x"}), -32001, &outside);
    check_rejects(
        &mut server,
        tool,
        json!({"directory": missing, "nameContains": "x"}),
        -32002,
        &missing,
    );
    check_rejects(
        &mut server,
        tool,
        json!({"directory": file, "nameContains": "x"}),
        -32603,
        &file,
    );
    assert_eq!(before.diff(&env.snapshot()), "");
}

// ---------------------------------------------------------------------------------------------
// glob_search
// ---------------------------------------------------------------------------------------------

/// `glob_search` with `globs` and `excludes` in the name tree lists exactly the files `expect`.
#[track_caller]
fn check_glob_excluding(globs: &[&str], excludes: &[&str], expect: &[&str]) {
    let env = name_env();
    let mut server = Server::start(&env);
    let args =
        json!({"directory": path_str(&env.root()), "globs": globs, "excludeGlobs": excludes});
    assert_eq!(call_stable(&mut server, "glob_search", &args), listing(&env, expect), "{args}");
}

#[track_caller]
fn check_glob(globs: &[&str], expect: &[&str]) {
    check_glob_excluding(globs, &[], expect);
}

#[test]
fn glob_search_rows() {
    let top_txt =
        ["a.txt", "ab.txt", "sub-x.txt", "v1.2.txt", "v1x2.txt", "x*y.txt", "\u{c4}rger.txt"];
    check_glob(&["*.txt"], &top_txt);
    check_glob(&["./*.txt"], &top_txt);
    check_glob(&["**/*.md"], &["c.md", "sub/deep/F.md"]);
    check_glob(
        &["**/*.txt"],
        &[
            "a.txt",
            "ab.txt",
            "node_modules/pkg/readme.txt",
            "sub/d.txt",
            "sub/deep/e.txt",
            "sub-x.txt",
            "v1.2.txt",
            "v1x2.txt",
            "x*y.txt",
            "\u{c4}rger.txt",
        ],
    );
    check_glob(&["?.txt"], &["a.txt"]);
    check_glob(&["??.txt"], &["ab.txt"]);
    check_glob(&["{a,c}.*"], &["a.txt", "c.md"]);
    check_glob(&["[ab]*.txt"], &["a.txt", "ab.txt"]);
    check_glob(&["v1[.x]2.txt"], &["v1.2.txt", "v1x2.txt"]);
    check_glob(&["sub/*"], &["sub/d.txt"]);
    check_glob(&["sub/**"], &["sub/d.txt", "sub/deep/F.md", "sub/deep/e.txt"]);
    check_glob(&["sub/*/e.txt"], &["sub/deep/e.txt"]);
    check_glob(&["**/index.js"], &["node_modules/pkg/index.js"]);
    check_glob(&["c.md"], &["c.md"]);
    check_glob(&["nothing*"], &[]);
    // Several globs: one sorted union, each file once.
    check_glob(&["sub/*.txt", "*.md"], &["c.md", "sub/d.txt"]);
    check_glob(&["a.*", "?.txt", "a.txt"], &["a.txt"]);
    // Linux names are case-sensitive, and so are globs.
    check_glob(&["*.TXT"], &["B.TXT"]);
}

/// Directories are never results, however the glob is spelled.
#[test]
fn glob_search_returns_no_directories() {
    check_glob(&["**/*dir*"], &[]);
    check_glob(&["sub"], &[]);
    check_glob(&["empty"], &[]);
    check_glob(&["**/deep"], &[]);
    check_glob(
        &["*"],
        &[
            "B.TXT",
            "a.txt",
            "ab.txt",
            "c.md",
            "q?.log",
            "sub-x.txt",
            "v1.2.txt",
            "v1x2.txt",
            "x*y.txt",
            "\u{c4}rger.txt",
        ],
    );
}

#[test]
fn glob_search_exclude_rows() {
    check_glob_excluding(
        &["**/*.txt"],
        &["sub", "node_modules", "*-x.txt", "v1x2.txt", "x*"],
        &["a.txt", "ab.txt", "v1.2.txt", "\u{c4}rger.txt"],
    );
    check_glob_excluding(&["**/*.md"], &["sub/deep"], &["c.md"]);
    check_glob_excluding(&["**/*.md"], &["*.md"], &[]);
    check_glob_excluding(&["**/*.md"], &["F.md"], &["c.md"]);
    check_glob_excluding(&["**/*.js"], &["**/node_modules/**"], &[]);
}

/// Symlinks are not results, even to files inside the root.
#[test]
fn glob_search_skips_symlinks() {
    let env = TestEnv::new(&["root/dir"], &[("root/a.txt", "a"), ("root/dir/b.txt", "b")]);
    env.symlink("a.txt", "root/link.txt");
    env.symlink("dir", "root/link_dir");
    let mut server = Server::start(&env);
    let args = json!({"directory": path_str(&env.root()), "globs": ["**/*.txt", "link*"]});
    assert_eq!(
        call_stable(&mut server, "glob_search", &args),
        listing(&env, &["a.txt", "dir/b.txt"])
    );
}

/// The names `n.txt` for n in `0..count`, zero-padded so they sort numerically.
fn numbered(count: usize) -> Vec<String> {
    (0..count).map(|n| format!("{n:04}.txt")).collect()
}

#[test]
fn glob_search_max() {
    let env = TestEnv::new(&[], &[]);
    let names = numbered(1001);
    for name in &names {
        env.write(&format!("root/{name}"), "");
    }
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    let rels: Vec<&str> = names.iter().map(String::as_str).collect();
    let search = |server: &mut Server, extra: Value| {
        let mut args = json!({"directory": root, "globs": ["*.txt"]});
        args.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
        call_stable(server, "glob_search", &args)
    };

    // Default 1000: the first thousand in order, then the notice.
    let text = search(&mut server, json!({}));
    let (list, notice) = text.rsplit_once('\n').expect("several lines");
    assert_eq!(list, listing(&env, &rels[..1000]));
    assert!(notice.starts_with("[results truncated at max=1000"), "{notice:?}");

    // 0 is unlimited.
    assert_eq!(search(&mut server, json!({"max": 0})), listing(&env, &rels));
    assert_eq!(search(&mut server, json!({"max": 1001})), listing(&env, &rels));
    assert_eq!(search(&mut server, json!({"max": 5000})), listing(&env, &rels));

    for max in [1usize, 3, 1000] {
        let text = search(&mut server, json!({"max": max}));
        let (list, notice) = text.rsplit_once('\n').expect("several lines");
        assert_eq!(list, listing(&env, &rels[..max]), "max {max}");
        let head = format!("[results truncated at max={max}");
        assert!(notice.starts_with(&head), "max {max}: {notice:?}");
    }
}

/// A cap equal to the number of matches truncates nothing.
#[test]
fn glob_search_max_equal_to_matches_has_no_notice() {
    let env = name_env();
    let mut server = Server::start(&env);
    let args = json!({"directory": path_str(&env.root()), "globs": ["**/*.md"], "max": 2});
    assert_eq!(
        call_stable(&mut server, "glob_search", &args),
        listing(&env, &["c.md", "sub/deep/F.md"])
    );
    let args = json!({"directory": path_str(&env.root()), "globs": ["nothing"], "max": 1});
    assert_eq!(call_stable(&mut server, "glob_search", &args), NO_MATCHES);
}

#[test]
fn glob_search_directory_forms() {
    let env = name_env();
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    let want = listing(&env, &["sub/deep/F.md", "sub/deep/e.txt"]);
    for directory in ["sub".to_owned(), "./sub".to_owned(), format!("{root}/sub/deep/..")] {
        let args = json!({"directory": directory, "globs": ["*/*"]});
        assert_eq!(call_stable(&mut server, "glob_search", &args), want, "{directory}");
    }
}

#[test]
fn glob_search_errors() {
    let env = name_env();
    env.mkdir("outside");
    env.write("outside/o.txt", "o");
    env.symlink("../outside", "root/link_out");
    let before = env.snapshot();
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    let outside = env.p("outside");
    let link_out = env.p("root/link_out");
    let missing = env.p("root/missing");
    let tool = "glob_search";
    check_rejects(&mut server, tool, json!({"globs": ["*"]}), -32602, "directory");
    check_rejects(&mut server, tool, json!({"directory": root}), -32602, "globs");
    check_rejects(&mut server, tool, json!({"directory": root, "globs": "*.txt"}), -32602, "globs");
    check_rejects(&mut server, tool, json!({"directory": 1, "globs": ["*"]}), -32602, "directory");
    check_rejects(
        &mut server,
        tool,
        json!({"directory": root, "globs": ["*"], "max": -1}),
        -32602,
        "max",
    );
    check_rejects(
        &mut server,
        tool,
        json!({"directory": root, "globs": ["*"], "max": "5"}),
        -32602,
        "max",
    );
    check_rejects(
        &mut server,
        tool,
        json!({"directory": outside, "globs": ["*"]}),
        -32001,
        &outside,
    );
    check_rejects(
        &mut server,
        tool,
        json!({"directory": "..", "globs": ["outside/*"]}),
        -32001,
        "allowed",
    );
    check_rejects(
        &mut server,
        tool,
        json!({"directory": link_out, "globs": ["*"]}),
        -32001,
        &link_out,
    );
    check_rejects(
        &mut server,
        tool,
        json!({"directory": missing, "globs": ["*"]}),
        -32002,
        &missing,
    );
    // Expectation chosen here (the implementation's choice): a malformed glob is -32602.
    check_rejects(&mut server, tool, json!({"directory": root, "globs": ["{a"]}), -32602, "globs");
    assert_eq!(before.diff(&env.snapshot()), "");
}

// ---------------------------------------------------------------------------------------------
// grep_files: content rows
// ---------------------------------------------------------------------------------------------

/// `template` with `{root}` and `{f}` (the file `root/f.txt`) spelled out.
fn fill(env: &TestEnv, template: &str) -> String {
    let root = path_str(&env.root());
    template.replace("{f}", &format!("{root}/f.txt")).replace("{root}", &root)
}

/// `grep_files` with `args` (plus `directory`: the root, unless `args` selects files itself)
/// over a root holding `files` answers `expect`. Run twice: as written, and with every `\n`
/// turned into `\r\n`, which the exact engine searches and which must print the same lines.
#[track_caller]
fn check_grep_tree(files: &[(&str, &str)], args: Value, expect: &str) {
    for (variant, newline) in [("LF", "\n"), ("CRLF", "\r\n")] {
        let tree: Vec<(&str, String)> =
            files.iter().map(|(rel, text)| (*rel, text.replace('\n', newline))).collect();
        check_grep_files(variant, &tree, &args, expect);
    }
}

#[track_caller]
fn check_grep_files(variant: &str, files: &[(&str, String)], args: &Value, expect: &str) {
    let env = TestEnv::new(&[], &[]);
    for (rel, text) in files {
        env.write(&format!("root/{rel}"), text);
    }
    let mut server = Server::start(&env);
    let mut args = args.clone();
    let object = args.as_object_mut().expect("arguments are an object");
    if !object.contains_key("directory") && !object.contains_key("globs") {
        object.insert("directory".to_owned(), json!(path_str(&env.root())));
    }
    let text = call_stable(&mut server, "grep_files", &args);
    assert_eq!(text, fill(&env, expect), "{variant}: grep_files {args}");
}

/// `check_grep_tree` for a root holding only `f.txt`.
#[track_caller]
fn check_grep(content: &str, args: Value, expect: &str) {
    check_grep_tree(&[("f.txt", content)], args, expect);
}

fn re(regex: &str) -> Value {
    json!({"regex": regex})
}

#[test]
fn grep_regex_rows() {
    check_grep("foo\nbar\nfoo bar\n", re("bar"), "{f}:2:bar\n{f}:3:foo bar\n[2 matches]");
    check_grep("foo\nbar\n", re("baz"), NO_MATCHES);
    check_grep("one match\n", re("match"), "{f}:1:one match\n[1 matches]");
    check_grep("a1\nb\nc22\n", re("\\d"), "{f}:1:a1\n{f}:3:c22\n[2 matches]");
    check_grep("a1\nb\nc22\n", re("\\d{2}"), "{f}:3:c22\n[1 matches]");
    check_grep(
        "foo\nfoobar\nbarfoo\na foo.\n",
        re("\\bfoo\\b"),
        "{f}:1:foo\n{f}:4:a foo.\n[2 matches]",
    );
    check_grep("ab\ncb\nb\n", re("(?<=a)b"), "{f}:1:ab\n[1 matches]");
    check_grep("ab\ncb\nb\n", re("(?<!a)b"), "{f}:2:cb\n{f}:3:b\n[2 matches]");
    check_grep("foobar\nfoobaz\n", re("foo(?!bar)"), "{f}:2:foobaz\n[1 matches]");
    check_grep("foo\n foo\nxfoo\n", re("^foo"), "{f}:1:foo\n[1 matches]");
    check_grep("foo\nfoo \nfoox\n", re("foo$"), "{f}:1:foo\n[1 matches]");
    check_grep("foo\nfoo \n", re("^foo$"), "{f}:1:foo\n[1 matches]");
    check_grep("abc\na\nc\n", re("a.c"), "{f}:1:abc\n[1 matches]");
    check_grep("a.b\naxb\n", re("a\\.b"), "{f}:1:a.b\n[1 matches]");
    check_grep("a*b\naab\n", re("a\\*b"), "{f}:1:a*b\n[1 matches]");
    check_grep("cat\ndog\nbird\n", re("cat|dog"), "{f}:1:cat\n{f}:2:dog\n[2 matches]");
    check_grep("aa\nab\n", re("(a)\\1"), "{f}:1:aa\n[1 matches]");
    check_grep(
        "on 2024-05\nno\n",
        re("(?<y>\\d{4})-(?<m>\\d{2})"),
        "{f}:1:on 2024-05\n[1 matches]",
    );
    check_grep(
        "h\u{e9}llo\nhello\nhllo\n",
        re("h.llo"),
        "{f}:1:h\u{e9}llo\n{f}:2:hello\n[2 matches]",
    );
    // JavaScript's `\d` and `\w` are ASCII-only.
    check_grep("\u{663}\n7\n", re("\\d"), "{f}:2:7\n[1 matches]");
    check_grep("\u{e9}\ne\n", re("^\\w$"), "{f}:2:e\n[1 matches]");
    // Several matches on one line count once.
    check_grep("x x x\ny\n", re("x"), "{f}:1:x x x\n[1 matches]");
    // The line without a final newline is a line too.
    check_grep("a\nlast", re("last"), "{f}:2:last\n[1 matches]");
}

/// The last line of a file that ends with a newline prints like every other line: without
/// its line end, so the reply has no blank line before the footer.
#[test]
fn grep_last_line_prints_without_its_line_end() {
    check_grep("m\n", re("m"), "{f}:1:m\n[1 matches]");
    check_grep("a\nm\n", re("m"), "{f}:2:m\n[1 matches]");
    check_grep("m\na\n", ctx("m", 1), "{f}:1:m\n{f}-2-a\n[1 matches]");
    check_grep("m", re("m"), "{f}:1:m\n[1 matches]");
    check_grep_tree(
        &[("a.txt", "m\n"), ("b.txt", "m\n")],
        re("m"),
        "{root}/a.txt:1:m\n{root}/b.txt:1:m\n[2 matches]",
    );
}

/// `^$` finds the blank lines, in CRLF files too: the empty string between a `\r` and its
/// `\n` is not a blank line.
#[test]
fn grep_blank_lines() {
    check_grep("a\n\nb\n", re("^$"), "{f}:2:\n[1 matches]");
    check_grep("a\n  \nb\n", re("^\\s*$"), "{f}:2:  \n[1 matches]");
}

/// Expectation chosen here (the implementation documents it): a match spanning lines marks
/// every line it touches, each counted.
#[test]
fn grep_multiline_match_marks_each_line() {
    check_grep("a\nb\nc\n", re("a\\r?\\nb"), "{f}:1:a\n{f}:2:b\n[2 matches]");
}

#[test]
fn grep_case_rows() {
    let ci = |regex: &str| json!({"regex": regex, "caseInsensitive": true});
    let cs = |regex: &str| json!({"regex": regex, "caseInsensitive": false});
    check_grep("FOO\nfoo\nbar\n", re("foo"), "{f}:2:foo\n[1 matches]");
    check_grep("FOO\nfoo\nbar\n", cs("foo"), "{f}:2:foo\n[1 matches]");
    check_grep("FOO\nfoo\nbar\n", ci("foo"), "{f}:1:FOO\n{f}:2:foo\n[2 matches]");
    check_grep("FOO\nfoo\nbar\n", ci("^F[O]+$"), "{f}:1:FOO\n{f}:2:foo\n[2 matches]");
    check_grep(
        "Caf\u{c9}\ncaf\u{e9}\n",
        ci("caf\u{e9}"),
        "{f}:1:Caf\u{c9}\n{f}:2:caf\u{e9}\n[2 matches]",
    );
    check_grep("A1\nb\n", ci("\\ba\\d"), "{f}:1:A1\n[1 matches]");
}

/// U+2028 is a JavaScript line terminator: `^` and `$` see it, `.` does not cross it, and the
/// line printed is the file's `\n` line that holds it.
#[test]
fn grep_unicode_line_separator_rows() {
    check_grep("one\u{2028}two\nthree\n", re("^two"), "{f}:1:one\u{2028}two\n[1 matches]");
    check_grep("one\u{2028}two\nthree\n", re("one$"), "{f}:1:one\u{2028}two\n[1 matches]");
    check_grep("one\u{2029}two\n", re("^two$"), "{f}:1:one\u{2029}two\n[1 matches]");
    check_grep("one\u{2028}two\nthree\n", re("one.two"), NO_MATCHES);
    check_grep("one\u{2028}two\nthree\n", re("^three$"), "{f}:2:three\n[1 matches]");
}

/// CRLF files without a twin: `$` holds before the `\r`, and lines print without it.
#[test]
fn grep_crlf_lines_print_without_carriage_return() {
    let rows: &[(&str, &str, &str)] = &[
        ("foo\r\nbar\r\n", "foo$", "{f}:1:foo\n[1 matches]"),
        ("foo\r\nbar\r\n", "^bar$", "{f}:2:bar\n[1 matches]"),
        ("a\r\nb\nc\r\n", "^[abc]$", "{f}:1:a\n{f}:2:b\n{f}:3:c\n[3 matches]"),
        ("x\r\n", "x", "{f}:1:x\n[1 matches]"),
    ];
    for (content, regex, expect) in rows {
        check_grep_files("CRLF", &[("f.txt", (*content).to_owned())], &re(regex), expect);
    }
}

// ---------------------------------------------------------------------------------------------
// grep_files: context, groups, truncation
// ---------------------------------------------------------------------------------------------

fn ctx(regex: &str, lines: u64) -> Value {
    json!({"regex": regex, "contextLines": lines})
}

const SEVEN: &str = "1\n2\nm3\n4\n5\n6\nm7\n8\n";

#[test]
fn grep_context_rows() {
    check_grep(SEVEN, ctx("m", 0), "{f}:3:m3\n{f}:7:m7\n[2 matches]");
    check_grep(
        SEVEN,
        ctx("m", 1),
        "{f}-2-2\n{f}:3:m3\n{f}-4-4\n--\n{f}-6-6\n{f}:7:m7\n{f}-8-8\n[2 matches]",
    );
    // Groups that touch are merged: lines 2-4 and 5-7 print as one run without `--`.
    check_grep(
        "1\n2\nm3\n4\n5\nm6\n7\n",
        ctx("m", 1),
        "{f}-2-2\n{f}:3:m3\n{f}-4-4\n{f}-5-5\n{f}:6:m6\n{f}-7-7\n[2 matches]",
    );
    // Groups that overlap print each line once.
    check_grep("1\nm2\nm3\n4\n", ctx("m", 2), "{f}-1-1\n{f}:2:m2\n{f}:3:m3\n{f}-4-4\n[2 matches]");
    // Context is clipped at both ends of the file.
    check_grep("m1\n2\n3\n", ctx("m", 5), "{f}:1:m1\n{f}-2-2\n{f}-3-3\n[1 matches]");
    check_grep("1\n2\nm3", ctx("m", 1), "{f}-2-2\n{f}:3:m3\n[1 matches]");
    // Empty context lines print with nothing after the second `-`.
    check_grep("\nm\n\n", ctx("m", 1), "{f}-1-\n{f}:2:m\n{f}-3-\n[1 matches]");
    check_grep(
        SEVEN,
        ctx("m", 2),
        "{f}-1-1\n{f}-2-2\n{f}:3:m3\n{f}-4-4\n{f}-5-5\n{f}-6-6\n{f}:7:m7\n{f}-8-8\n[2 matches]",
    );
    check_grep(
        SEVEN,
        ctx("m", 50),
        "{f}-1-1\n{f}-2-2\n{f}:3:m3\n{f}-4-4\n{f}-5-5\n{f}-6-6\n{f}:7:m7\n{f}-8-8\n[2 matches]",
    );
}

#[test]
fn grep_output_across_files() {
    let files = [("a.txt", "x\nm\n"), ("b.txt", "nothing\n"), ("c.txt", "m\ny\n")];
    check_grep_tree(&files, ctx("m", 0), "{root}/a.txt:2:m\n{root}/c.txt:1:m\n[2 matches]");
    check_grep_tree(
        &files,
        ctx("m", 1),
        "{root}/a.txt-1-x\n{root}/a.txt:2:m\n--\n{root}/c.txt:1:m\n{root}/c.txt-2-y\n[2 matches]",
    );
    // Files come in walk order: depth-first, siblings by name.
    let nested = [("b.txt", "m\n"), ("a/z.txt", "m\n"), ("a-b.txt", "m\n"), ("A.txt", "m\n")];
    check_grep_tree(
        &nested,
        re("m"),
        "{root}/A.txt:1:m\n{root}/a/z.txt:1:m\n{root}/a-b.txt:1:m\n{root}/b.txt:1:m\n[4 matches]",
    );
}

/// `check_grep_tree`, for a reply whose first line is the truncation notice: `expect` is the
/// rest of the reply.
#[track_caller]
fn check_grep_truncated(files: &[(&str, &str)], args: Value, expect: &str) {
    for (variant, newline) in [("LF", "\n"), ("CRLF", "\r\n")] {
        let env = TestEnv::new(&[], &[]);
        for (rel, text) in files {
            env.write(&format!("root/{rel}"), text.replace('\n', newline));
        }
        let mut server = Server::start(&env);
        let mut args = args.clone();
        args["directory"] = json!(path_str(&env.root()));
        let text = call_stable(&mut server, "grep_files", &args);
        let (notice, rest) = text.split_once('\n').expect("a notice line and results");
        assert!(
            notice.starts_with("[results truncated:"),
            "{variant}: grep_files {args}: no truncation notice in {text:?}"
        );
        assert_eq!(rest, fill(&env, expect), "{variant}: grep_files {args}");
    }
}

fn capped(regex: &str, max: u64, context: u64) -> Value {
    json!({"regex": regex, "maxResults": max, "contextLines": context})
}

/// Expectation chosen here: the footer counts the matching lines shown.
#[test]
fn grep_truncation_rows() {
    check_grep_truncated(
        &[("f.txt", "m1\nm2\nm3\n")],
        capped("m", 2, 0),
        "{f}:1:m1\n{f}:2:m2\n[2 matches]",
    );
    check_grep_truncated(&[("f.txt", "m1\nm2\nm3\n")], capped("m", 1, 0), "{f}:1:m1\n[1 matches]");
    // The last kept match keeps its own context, but not the context leading to the next one.
    check_grep_truncated(
        &[("f.txt", "m1\na\nb\nc\nm5\n")],
        capped("m", 1, 1),
        "{f}:1:m1\n{f}-2-a\n[1 matches]",
    );
    check_grep_truncated(
        &[("f.txt", "0\nm1\na\nb\nm4\nc\nm6\n")],
        capped("m", 2, 1),
        "{f}-1-0\n{f}:2:m1\n{f}-3-a\n{f}-4-b\n{f}:5:m4\n{f}-6-c\n[2 matches]",
    );
    // A cut across files: the first N matching lines in file order.
    let files = [("a.txt", "m\nm\n"), ("b.txt", "m\nm\n"), ("c.txt", "m\n")];
    check_grep_truncated(
        &files,
        capped("m", 3, 0),
        "{root}/a.txt:1:m\n{root}/a.txt:2:m\n{root}/b.txt:1:m\n[3 matches]",
    );
    check_grep_truncated(
        &files,
        capped("m", 3, 1),
        "{root}/a.txt:1:m\n{root}/a.txt:2:m\n--\n{root}/b.txt:1:m\n[3 matches]",
    );
}

/// A cap met exactly at the end of a file still says more matches were left out.
#[test]
fn grep_truncation_at_a_file_boundary() {
    let files = [("a.txt", "m\nm\n"), ("b.txt", "m\n")];
    for _ in 0..20 {
        check_grep_truncated(
            &files,
            capped("m", 2, 0),
            "{root}/a.txt:1:m\n{root}/a.txt:2:m\n[2 matches]",
        );
    }
}

#[test]
fn grep_cap_equal_to_matches_is_not_truncated() {
    check_grep("m\nm\n", capped("m", 2, 0), "{f}:1:m\n{f}:2:m\n[2 matches]");
    check_grep_tree(
        &[("a.txt", "m\n"), ("b.txt", "m\n")],
        capped("m", 2, 0),
        "{root}/a.txt:1:m\n{root}/b.txt:1:m\n[2 matches]",
    );
    check_grep("m\n", capped("m", 10000, 0), "{f}:1:m\n[1 matches]");
}

#[test]
fn grep_default_cap_is_500() {
    let content: String = (1..=501).map(|n| format!("m{n}\n")).collect();
    let expect: String = (1..=500).map(|n| format!("{{f}}:{n}:m{n}\n")).collect();
    check_grep_truncated(
        &[("f.txt", content.as_str())],
        re("m"),
        &format!("{expect}[500 matches]"),
    );
    let content: String = (1..=500).map(|n| format!("m{n}\n")).collect();
    check_grep(&content, re("m"), &format!("{expect}[500 matches]"));
}

// ---------------------------------------------------------------------------------------------
// grep_files: binary files and output modes
// ---------------------------------------------------------------------------------------------

#[test]
fn grep_skips_binary_files() {
    let env = TestEnv::new(&[], &[("root/text.txt", "needle\n")]);
    env.write("root/bin.dat", b"needle\n\x00\x01needle\n");
    // The NUL as the last byte of the first 4 KB: binary.
    let mut late = vec![b'a'; 4095];
    late.extend_from_slice(b"\x00\nneedle\n");
    env.write("root/late.dat", &late);
    // The NUL just past the first 4 KB: text.
    let mut later = vec![b'a'; 4096];
    later.extend_from_slice(b"\x00\nneedle\n");
    env.write("root/later.dat", &later);
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    let args = json!({"regex": "needle", "directory": root});
    assert_eq!(
        call_stable(&mut server, "grep_files", &args),
        format!("{root}/later.dat:2:needle\n{root}/text.txt:1:needle\n[2 matches]")
    );
    let args = json!({"regex": "needle", "directory": root, "globs": ["bin.dat"]});
    assert_eq!(call_stable(&mut server, "grep_files", &args), NO_MATCHES);
}

#[test]
fn grep_output_mode_rows() {
    let files = [("a.txt", "m\nx\nm\n"), ("b.txt", "x\n"), ("c/d.txt", "m\n")];
    let mode = |m: &str| json!({"regex": "m", "outputMode": m});
    check_grep_tree(
        &files,
        mode("content"),
        "{root}/a.txt:1:m\n{root}/a.txt:3:m\n{root}/c/d.txt:1:m\n[3 matches]",
    );
    check_grep_tree(&files, mode("files_with_matches"), "{root}/a.txt\n{root}/c/d.txt\n[2 files]");
    check_grep_tree(
        &files,
        mode("count"),
        "{root}/a.txt:2\n{root}/c/d.txt:1\n[3 matches in 2 files]",
    );
    let none = json!({"regex": "zzz", "outputMode": "files_with_matches"});
    check_grep_tree(&files, none, NO_MATCHES);
    let none = json!({"regex": "zzz", "outputMode": "count"});
    check_grep_tree(&files, none, NO_MATCHES);
}

/// In the per-file modes `maxResults` counts files.
#[test]
fn grep_per_file_modes_cap_files() {
    let files = [("a.txt", "m\nm\n"), ("b.txt", "m\n"), ("c.txt", "m\n")];
    let capped_mode = |mode: &str| json!({"regex": "m", "outputMode": mode, "maxResults": 2});
    check_grep_truncated(
        &files,
        capped_mode("files_with_matches"),
        "{root}/a.txt\n{root}/b.txt\n[2 files]",
    );
    check_grep_truncated(
        &files,
        capped_mode("count"),
        "{root}/a.txt:2\n{root}/b.txt:1\n[3 matches in 2 files]",
    );
    let all = json!({"regex": "m", "outputMode": "files_with_matches", "maxResults": 3});
    check_grep_tree(&files, all, "{root}/a.txt\n{root}/b.txt\n{root}/c.txt\n[3 files]");
}

/// Text that is not valid UTF-8 (but has no NUL) is searched, and line numbers stay right.
#[test]
fn grep_searches_text_that_is_not_utf8() {
    let env = TestEnv::new(&[], &[]);
    env.copy_fixture("text/latin1.txt", "root/latin1.txt");
    let mut server = Server::start(&env);
    let args = json!({"regex": "^needle$", "directory": path_str(&env.root())});
    assert_eq!(
        call_stable(&mut server, "grep_files", &args),
        format!("{}:3:needle\n[1 matches]", env.p("root/latin1.txt"))
    );
}

/// The sample source tree (`fixtures/tree`) through each tool that walks: names, globs, contents
/// and the tree itself, all depth-first with siblings by name.
#[test]
fn the_sample_tree_through_every_walking_tool() {
    let env = TestEnv::new(&[], &[]);
    env.copy_fixture("tree", "root/sample");
    let mut server = Server::start(&env);
    let dir = env.p("root/sample");
    let args = json!({"directory": dir, "nameContains": "UTIL"});
    assert_eq!(call_stable(&mut server, "search_files", &args), format!("{dir}/src/util.rs"));
    let args = json!({"directory": dir, "globs": ["**/*.rs"], "excludeGlobs": ["net"]});
    assert_eq!(
        call_stable(&mut server, "glob_search", &args),
        format!("{dir}/src/main.rs\n{dir}/src/util.rs")
    );
    let args = json!({"regex": "TODO: \\w+", "directory": dir, "globs": ["**/*.rs"]});
    assert_eq!(
        call_stable(&mut server, "grep_files", &args),
        format!(
            "{dir}/src/main.rs:4:    // TODO: parse arguments\n\
             {dir}/src/net/client.rs:1:// TODO: retry on timeout\n[2 matches]"
        )
    );
    let args = json!({"path": dir, "format": "text"});
    assert_eq!(
        call_stable(&mut server, "directory_tree", &args),
        "sample/\n  Cargo.toml\n  README.md\n  docs/\n    guide.md\n  src/\n    main.rs\n    \
         net/\n      client.rs\n      mod.rs\n    util.rs"
    );
}

/// The three tools only read, so a read-only root serves them, and so does a second root.
#[test]
fn searches_work_in_read_only_and_second_roots() {
    let env = TestEnv::new(&[], &[("root/a.txt", "needle"), ("ro/sub/b.txt", "needle")]);
    let mut server = Server::start_also(&env, &[("ro", "ro")]);
    let before = env.snapshot();
    let ro = env.p("ro");
    let b = env.p("ro/sub/b.txt");
    let args = json!({"directory": ro, "nameContains": "b."});
    assert_eq!(call_stable(&mut server, "search_files", &args), b);
    let args = json!({"directory": ro, "globs": ["**/*.txt"]});
    assert_eq!(call_stable(&mut server, "glob_search", &args), b);
    let args = json!({"regex": "needle", "directory": ro});
    assert_eq!(call_stable(&mut server, "grep_files", &args), format!("{b}:1:needle\n[1 matches]"));
    let args = json!({"regex": "needle", "globs": [format!("{ro}/**/*.txt")]});
    assert_eq!(call_stable(&mut server, "grep_files", &args), format!("{b}:1:needle\n[1 matches]"));
    assert_eq!(before.diff(&env.snapshot()), "");
}

// ---------------------------------------------------------------------------------------------
// grep_files: file selection
// ---------------------------------------------------------------------------------------------

/// The selection fixture: `needle` in every file, and in files outside the root and in the
/// directory the server is started in.
///
/// ```text
/// root/top.txt  root/top.rs  root/sub/s.txt  root/sub/s.rs  root/sub/deep/d.rs  root/other/o.rs
/// second/two.txt            a second allowed directory
/// outside/{marker}.txt      the server's working directory; never searched
/// ```
fn selection_env() -> TestEnv {
    let env = TestEnv::new(
        &["outside"],
        &[
            ("root/top.txt", "needle\n"),
            ("root/top.rs", "needle\n"),
            ("root/sub/s.txt", "needle\n"),
            ("root/sub/s.rs", "needle\n"),
            ("root/sub/deep/d.rs", "needle\n"),
            ("root/other/o.rs", "needle\n"),
            ("second/two.txt", "needle\n"),
        ],
    );
    let marker = env.marker().to_owned();
    env.write(&format!("outside/{marker}.txt"), format!("needle {marker}\n"));
    env.write("outside/top.txt", format!("needle {marker}\n"));
    env.write("outside/sub/s.txt", format!("needle {marker}\n"));
    env
}

/// `replay --mcp-server --allow root:rw --allow second:rw`, started in `outside`.
fn start_in_outside(env: &TestEnv) -> Server {
    let mut cmd = replay_command();
    cmd.args(["--mcp-server", "--allow", &format!("{}:rw", path_str(&env.root()))]);
    cmd.args(["--allow", &format!("{}:rw", env.p("second"))]);
    cmd.current_dir(env.path("outside"));
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    server
}

/// What grep_files says when its globs select no file at all.
const NO_FILES: &str = "(no files to search: no file matches the globs; check them, or leave \
                        them out to search every file)";

/// `grep_files` for `needle` with `args` finds exactly the files `expect` (relative to `base`),
/// followed by `trailer` lines; the outside marker never appears.
#[track_caller]
fn check_selection(args: Value, expect: &[&str], trailer: &[&str]) {
    let env = selection_env();
    let mut server = start_in_outside(&env);
    let mut args = args;
    let base = path_str(env.base());
    // Rows spell paths below the temp dir as `{base}`.
    let text = serde_json::to_string(&args).expect("json").replace("{base}", &base);
    args = serde_json::from_str(&text).expect("json");
    args["regex"] = json!("needle");
    let reply = server.call("grep_files", args.clone());
    assert!(!reply.line.contains(env.marker()), "outside content leaked: {}", reply.line);
    let mut want: Vec<String> = expect.iter().map(|rel| format!("{base}/{rel}:1:needle")).collect();
    if expect.is_empty() {
        // Every file holds the needle: a row that finds none selects no file (replay v2.2's
        // words for it).
        want.push(NO_FILES.to_owned());
    } else {
        want.push(format!("[{} matches]", expect.len()));
    }
    want.extend(trailer.iter().map(|line| (*line).to_owned()));
    assert_eq!(reply.text(), want.join("\n"), "grep_files {args}");
    assert_eq!(call_stable(&mut server, "grep_files", &args), want.join("\n"));
}

#[test]
fn grep_selection_rows() {
    let all = [
        "root/other/o.rs",
        "root/sub/deep/d.rs",
        "root/sub/s.rs",
        "root/sub/s.txt",
        "root/top.rs",
        "root/top.txt",
    ];
    // Directory only: everything below it.
    check_selection(json!({"directory": "{base}/root"}), &all, &[]);
    check_selection(
        json!({"directory": "{base}/root/sub"}),
        &["root/sub/deep/d.rs", "root/sub/s.rs", "root/sub/s.txt"],
        &[],
    );
    check_selection(
        json!({"directory": "sub"}),
        &["root/sub/deep/d.rs", "root/sub/s.rs", "root/sub/s.txt"],
        &[],
    );
    check_selection(json!({"directory": "{base}/second"}), &["second/two.txt"], &[]);
    // Relative globs hang off the directory.
    check_selection(
        json!({"directory": "{base}/root/sub", "globs": ["*.rs"]}),
        &["root/sub/s.rs"],
        &[],
    );
    check_selection(
        json!({"directory": "{base}/root/sub", "globs": ["**/*.rs"]}),
        &["root/sub/deep/d.rs", "root/sub/s.rs"],
        &[],
    );
    check_selection(
        json!({"directory": "{base}/root", "globs": ["*.txt", "other/*"]}),
        &["root/other/o.rs", "root/top.txt"],
        &[],
    );
    check_selection(
        json!({"directory": "{base}/root", "globs": ["./sub/*.txt"]}),
        &["root/sub/s.txt"],
        &[],
    );
    // Absolute globs are used as they are, with or without a directory.
    check_selection(
        json!({"directory": "{base}/root/sub", "globs": ["{base}/root/other/*.rs"]}),
        &["root/other/o.rs"],
        &[],
    );
    check_selection(
        json!({"directory": "{base}/root/other", "globs": ["*.rs", "{base}/root/sub/*.txt"]}),
        &["root/other/o.rs", "root/sub/s.txt"],
        &[],
    );
    check_selection(
        json!({"globs": ["{base}/root/sub/**/*.rs"]}),
        &["root/sub/deep/d.rs", "root/sub/s.rs"],
        &[],
    );
    check_selection(json!({"globs": ["{base}/second/*.txt"]}), &["second/two.txt"], &[]);
    // Without a directory, relative globs hang off the first allowed directory, never the cwd.
    check_selection(json!({"globs": ["*.txt"]}), &["root/top.txt"], &[]);
    check_selection(json!({"globs": ["**/*.txt"]}), &["root/sub/s.txt", "root/top.txt"], &[]);
    check_selection(json!({"globs": ["sub/*.txt"]}), &["root/sub/s.txt"], &[]);
    check_selection(json!({"globs": ["two.txt"]}), &[], &[]);
    // Exclusions apply in every mode.
    check_selection(
        json!({"directory": "{base}/root", "excludeGlobs": ["sub", "*.txt"]}),
        &["root/other/o.rs", "root/top.rs"],
        &[],
    );
    check_selection(
        json!({"globs": ["**/*.rs"], "excludeGlobs": ["deep"]}),
        &["root/other/o.rs", "root/sub/s.rs", "root/top.rs"],
        &[],
    );
    check_selection(
        json!({"globs": ["{base}/root/sub/**"], "excludeGlobs": ["*.rs"]}),
        &["root/sub/s.txt"],
        &[],
    );
}

#[test]
fn grep_selection_outside_glob_is_skipped_with_a_note() {
    check_selection(
        json!({"globs": ["{base}/outside/*.txt", "*.txt"]}),
        &["root/top.txt"],
        &[SKIPPED_ONE],
    );
    check_selection(json!({"globs": ["{base}/outside/*.txt"]}), &[], &[SKIPPED_ONE]);
    check_selection(
        json!({"globs": ["{base}/root/../outside/**"], "directory": "{base}/root/other"}),
        &[],
        &[SKIPPED_ONE],
    );
    check_selection(
        json!({"globs": ["{base}/outside/**", "{base}/root/other/*"]}),
        &["root/other/o.rs"],
        &[SKIPPED_ONE],
    );
    check_selection(
        json!({"globs": ["{base}/outside/**", "{base}/root/*.txt", "/*/x"], "outputMode": "content"}),
        &["root/top.txt"],
        &["[2 path(s) skipped: outside the allowed directories]"],
    );
}

/// Results from several walks (a directory and absolute globs) still come out sorted.
#[test]
fn grep_selection_across_scopes_is_sorted() {
    check_selection(
        json!({"directory": "{base}/root/sub", "globs": ["*.txt", "{base}/root/other/*.rs"]}),
        &["root/other/o.rs", "root/sub/s.txt"],
        &[],
    );
    check_selection(
        json!({"globs": ["{base}/root/sub/*.txt", "{base}/root/other/*.rs"]}),
        &["root/other/o.rs", "root/sub/s.txt"],
        &[],
    );
}

#[test]
fn grep_selection_dedups_overlapping_globs() {
    check_selection(
        json!({"directory": "{base}/root", "globs": ["*.txt", "top.*", "{base}/root/*.txt"]}),
        &["root/top.rs", "root/top.txt"],
        &[],
    );
}

#[test]
fn grep_errors() {
    let env = selection_env();
    env.symlink("../outside", "root/link_out");
    let before = env.snapshot();
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    let outside = env.p("outside");
    let link_out = env.p("root/link_out");
    let missing = env.p("root/missing");
    let tool = "grep_files";
    let rows: &[(Value, i64, &str)] = &[
        (json!({"directory": root}), -32602, "regex"),
        (json!({"regex": true, "directory": root}), -32602, "regex"),
        (json!({"regex": false, "directory": root}), -32602, "regex"),
        (json!({"regex": 5, "directory": root}), -32602, "regex"),
        (json!({"regex": "x"}), -32602, "directory"),
        (json!({"regex": "x", "globs": []}), -32602, "directory"),
        (json!({"regex": "x", "directory": root, "contextLines": 51}), -32602, "contextLines"),
        (json!({"regex": "x", "directory": root, "contextLines": -1}), -32602, "contextLines"),
        (json!({"regex": "x", "directory": root, "maxResults": 10001}), -32602, "maxResults"),
        (json!({"regex": "x", "directory": root, "maxResults": 0}), -32602, "maxResults"),
        (
            json!({"regex": "x", "directory": root, "caseInsensitive": "yes"}),
            -32602,
            "caseInsensitive",
        ),
        (json!({"regex": "x", "directory": root, "outputMode": "lines"}), -32602, "outputMode"),
        (json!({"regex": "x", "directory": root, "globs": "*.txt"}), -32602, "globs"),
        (json!({"regex": "(", "directory": root}), -32603, "("),
        (json!({"regex": "[a", "directory": root}), -32603, "[a"),
        (json!({"regex": "a{2,1}", "directory": root}), -32603, "a{2,1}"),
        (json!({"regex": "x", "directory": outside}), -32001, &outside),
        (json!({"regex": "x", "directory": "../outside"}), -32001, "outside"),
        (json!({"regex": "x", "directory": link_out}), -32001, &link_out),
        (json!({"regex": "x", "directory": missing}), -32002, &missing),
    ];
    for (args, code, names) in rows {
        check_rejects(&mut server, tool, args.clone(), *code, names);
    }
    // The limits themselves are accepted.
    let args = json!({"regex": "needle", "directory": env.p("root/sub/deep"), "contextLines": 50, "maxResults": 10000});
    assert_eq!(
        call_stable(&mut server, tool, &args),
        format!("{}:1:needle\n[1 matches]", env.p("root/sub/deep/d.rs"))
    );
    assert_eq!(before.diff(&env.snapshot()), "");
}

// ---------------------------------------------------------------------------------------------
// respectGitignore
// ---------------------------------------------------------------------------------------------

/// A tree with `.gitignore` files (no repository needed) and a `.git` directory; every file
/// but the `.gitignore`s holds "needle".
fn gitignore_env() -> TestEnv {
    TestEnv::new(
        &[],
        &[
            ("root/.gitignore", "ignored.txt\nbuild/\n"),
            ("root/.git/config", "needle\n"),
            ("root/build/out.txt", "needle\n"),
            ("root/ignored.txt", "needle\n"),
            ("root/keep.txt", "needle\n"),
            ("root/sub/.gitignore", "*.log\n"),
            ("root/sub/x.log", "needle\n"),
            ("root/sub/y.txt", "needle\n"),
        ],
    )
}

const ALL_GIT_FILES: &[&str] = &[
    ".git/config",
    ".gitignore",
    "build/out.txt",
    "ignored.txt",
    "keep.txt",
    "sub/.gitignore",
    "sub/x.log",
    "sub/y.txt",
];
const KEPT_GIT_FILES: &[&str] = &[".gitignore", "keep.txt", "sub/.gitignore", "sub/y.txt"];

#[test]
fn respect_gitignore_glob_search() {
    let env = gitignore_env();
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    let rows = [
        (json!(null), ALL_GIT_FILES),
        (json!(false), ALL_GIT_FILES),
        (json!(true), KEPT_GIT_FILES),
    ];
    for (respect, expect) in rows {
        let mut args = json!({"directory": root, "globs": ["**/*"]});
        if !respect.is_null() {
            args["respectGitignore"] = respect;
        }
        assert_eq!(call_stable(&mut server, "glob_search", &args), listing(&env, expect), "{args}");
    }
}

#[test]
fn respect_gitignore_search_files() {
    let env = gitignore_env();
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    let all = [
        ".git",
        ".gitignore",
        "build/out.txt",
        "ignored.txt",
        "keep.txt",
        "sub/.gitignore",
        "sub/x.log",
        "sub/y.txt",
    ];
    let kept = [".gitignore", "keep.txt", "sub/.gitignore", "sub/y.txt"];
    for (respect, expect) in [(false, &all[..]), (true, &kept[..])] {
        let args = json!({"directory": root, "nameContains": ".", "respectGitignore": respect});
        assert_eq!(
            call_stable(&mut server, "search_files", &args),
            listing(&env, expect),
            "{args}"
        );
    }
    let args = json!({"directory": root, "nameContains": "build"});
    assert_eq!(call_stable(&mut server, "search_files", &args), listing(&env, &["build"]));
    let args = json!({"directory": root, "nameContains": "build", "respectGitignore": true});
    assert_eq!(call_stable(&mut server, "search_files", &args), NO_MATCHES);
}

#[test]
fn respect_gitignore_grep_files() {
    let env = gitignore_env();
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    let lines = |rels: &[&str]| -> String {
        let mut out: Vec<String> =
            rels.iter().map(|rel| format!("{root}/{rel}:1:needle")).collect();
        out.push(format!("[{} matches]", rels.len()));
        out.join("\n")
    };
    let all = lines(&[
        ".git/config",
        "build/out.txt",
        "ignored.txt",
        "keep.txt",
        "sub/x.log",
        "sub/y.txt",
    ]);
    let kept = lines(&["keep.txt", "sub/y.txt"]);
    let rows = [
        (json!({"regex": "needle", "directory": root}), &all),
        (json!({"regex": "needle", "directory": root, "respectGitignore": false}), &all),
        (json!({"regex": "needle", "directory": root, "respectGitignore": true}), &kept),
        (json!({"regex": "needle", "globs": ["**/*"], "respectGitignore": true}), &kept),
    ];
    for (args, want) in rows {
        assert_eq!(&call_stable(&mut server, "grep_files", &args), want, "{args}");
    }
}

// ---------------------------------------------------------------------------------------------
// Safety: symlinks out of the root, cycles
// ---------------------------------------------------------------------------------------------

/// Links from inside the root to an outside directory and file, whose names and contents
/// carry the marker:
///
/// ```text
/// root/inside.txt, root/sub/x.txt      "inside" (no final newline: these rows are about
///                                      where the walks go, not how lines print)
/// root/link_dir       -> base/outside   (absolute)
/// root/rel_link       -> ../outside
/// root/sub/link_file  -> base/outside/{marker}.txt
/// root/chain          -> link_dir
/// outside/{marker}.txt, outside/secret.txt, outside/{marker}/deep.txt    marker
/// ```
fn escape_env() -> TestEnv {
    let env =
        TestEnv::new(&["root/sub"], &[("root/inside.txt", "inside"), ("root/sub/x.txt", "inside")]);
    let marker = env.marker().to_owned();
    env.write(&format!("outside/{marker}.txt"), format!("{marker}\n"));
    env.write("outside/secret.txt", format!("{marker}\n"));
    env.write(&format!("outside/{marker}/deep.txt"), format!("{marker}\n"));
    env.symlink(&env.p("outside"), "root/link_dir");
    env.symlink("../outside", "root/rel_link");
    env.symlink(&env.p(&format!("outside/{marker}.txt")), "root/sub/link_file");
    env.symlink("link_dir", "root/chain");
    env
}

/// Every path a reply lists (lines that are not notes) lies below the root.
#[track_caller]
fn assert_paths_under_root(env: &TestEnv, text: &str) {
    let root = format!("{}/", path_str(&env.root()));
    for line in text.lines() {
        // `(no matches found)`, `(no files to search: …)`, notes and group separators.
        if line.starts_with("(no ") || line.starts_with('[') || line == "--" {
            continue;
        }
        assert!(line.starts_with(&root), "a result outside the root: {line:?} in {text:?}");
    }
}

#[test]
fn symlinks_out_of_the_root_are_never_followed() {
    let env = escape_env();
    let before = env.snapshot();
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    let marker = env.marker().to_owned();
    let calls = [
        ("search_files", json!({"directory": root, "nameContains": "SECRET"})),
        ("search_files", json!({"directory": root, "nameContains": "deep"})),
        ("search_files", json!({"directory": root, "nameContains": "."})),
        ("search_files", json!({"directory": root, "nameContains": "t", "respectGitignore": true})),
        ("glob_search", json!({"directory": root, "globs": ["**/*"]})),
        (
            "glob_search",
            json!({"directory": root, "globs": ["link_dir/*", "rel_link/**", "chain/**", "sub/link_file"]}),
        ),
        ("grep_files", json!({"regex": "SECRET", "directory": root})),
        ("grep_files", json!({"regex": ".", "directory": root})),
        (
            "grep_files",
            json!({"regex": ".", "directory": root, "contextLines": 3, "outputMode": "count"}),
        ),
        ("grep_files", json!({"regex": "SECRET", "globs": ["**/*"]})),
        (
            "grep_files",
            json!({"regex": "SECRET", "globs": ["link_dir/*", "rel_link/**", "sub/link_file"]}),
        ),
        ("grep_files", json!({"regex": "SECRET", "globs": [format!("{root}/link_dir/*.txt")]})),
        ("grep_files", json!({"regex": "SECRET", "globs": [format!("{root}/chain/**")]})),
        (
            "grep_files",
            json!({"regex": "SECRET", "directory": root, "globs": [format!("{root}/rel_link/*"), "**"]}),
        ),
        (
            "grep_files",
            json!({"regex": "SECRET", "caseInsensitive": true, "globs": [format!("{root}/sub/link_file")]}),
        ),
    ];
    for (tool, args) in &calls {
        let reply = server.call(tool, args.clone());
        assert!(!reply.line.contains(&marker), "{tool} {args} leaked: {}", reply.line);
        assert!(
            !reply.line.contains("secret.txt"),
            "{tool} {args} named an outside file: {}",
            reply.line
        );
        if let Some(text) = reply.value.pointer("/result/content/0/text").and_then(Value::as_str) {
            assert_paths_under_root(&env, text);
        }
    }
    // The walks see the links as names, and what they hold as nothing.
    let args = json!({"directory": root, "globs": ["**/*"]});
    assert_eq!(
        call_stable(&mut server, "glob_search", &args),
        listing(&env, &["inside.txt", "sub/x.txt"])
    );
    let args = json!({"regex": ".", "directory": root});
    assert_eq!(
        call_stable(&mut server, "grep_files", &args),
        format!("{root}/inside.txt:1:inside\n{root}/sub/x.txt:1:inside\n[2 matches]")
    );
    let args = json!({"directory": root, "nameContains": "SECRET"});
    assert_eq!(call_stable(&mut server, "search_files", &args), NO_MATCHES);
    // Naming a link to the outside as the directory is refused.
    for tool_args in [
        ("search_files", json!({"directory": env.p("root/link_dir"), "nameContains": "t"})),
        ("search_files", json!({"directory": env.p("root/chain"), "nameContains": "t"})),
        ("glob_search", json!({"directory": env.p("root/rel_link"), "globs": ["*"]})),
        ("grep_files", json!({"regex": ".", "directory": env.p("root/link_dir")})),
        ("grep_files", json!({"regex": ".", "directory": "chain"})),
    ] {
        let reply = server.call(tool_args.0, tool_args.1.clone());
        assert!(!reply.line.contains(&marker), "{tool_args:?} leaked: {}", reply.line);
        reply.expect_error(-32001);
    }
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn symlink_cycles_do_not_hang() {
    let env = TestEnv::new(&["root/sub/deeper"], &[("root/sub/deeper/f.txt", "loop")]);
    env.symlink("b", "root/a");
    env.symlink("a", "root/b");
    env.symlink("..", "root/sub/up");
    env.symlink(".", "root/sub/deeper/self");
    env.symlink(&path_str(&env.root()), "root/sub/deeper/root_again");
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    let f = env.p("root/sub/deeper/f.txt");
    let args = json!({"directory": root, "globs": ["**/*"]});
    assert_eq!(call_stable(&mut server, "glob_search", &args), f);
    let args = json!({"regex": "loop", "directory": root});
    assert_eq!(call_stable(&mut server, "grep_files", &args), format!("{f}:1:loop\n[1 matches]"));
    let args = json!({"regex": "loop", "globs": ["**/*.txt"], "contextLines": 2});
    assert_eq!(call_stable(&mut server, "grep_files", &args), format!("{f}:1:loop\n[1 matches]"));
    let args = json!({"directory": root, "nameContains": "f.txt"});
    assert_eq!(call_stable(&mut server, "search_files", &args), f);
    // The links are entries with names of their own, listed once and never entered.
    let args = json!({"directory": root, "nameContains": "e"});
    let text = call_stable(&mut server, "search_files", &args);
    assert_paths_under_root(&env, &text);
    assert!(
        !text.contains("/up/") && !text.contains("/self/") && !text.contains("/root_again/"),
        "{text}"
    );
}

// ---------------------------------------------------------------------------------------------
// Order
// ---------------------------------------------------------------------------------------------

/// `rels` sorted the way the walk promises: depth-first, siblings by name (byte order).
fn walk_order(rels: &[String]) -> Vec<String> {
    let mut sorted: Vec<String> = rels.to_vec();
    sorted.sort_by(|a, b| {
        let a: Vec<&[u8]> = a.split('/').map(str::as_bytes).collect();
        let b: Vec<&[u8]> = b.split('/').map(str::as_bytes).collect();
        a.cmp(&b)
    });
    sorted
}

#[test]
fn results_are_sorted_depth_first_by_name() {
    let rels = [
        "b.txt",
        "a/z.txt",
        "a-b.txt",
        "a.txt",
        "A.txt",
        "_u.txt",
        "a/b/c.txt",
        "a/b.txt",
        "aa/x.txt",
    ];
    let env = TestEnv::new(&[], &[]);
    for rel in rels {
        env.write(&format!("root/{rel}"), "x\n");
    }
    let want = [
        "A.txt",
        "_u.txt",
        "a/b/c.txt",
        "a/b.txt",
        "a/z.txt",
        "a-b.txt",
        "a.txt",
        "aa/x.txt",
        "b.txt",
    ];
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    let args = json!({"directory": root, "globs": ["**/*.txt"]});
    assert_eq!(call_stable(&mut server, "glob_search", &args), listing(&env, &want));
    let args = json!({"directory": root, "nameContains": ".txt"});
    assert_eq!(call_stable(&mut server, "search_files", &args), listing(&env, &want));
    let args = json!({"regex": "x", "directory": root, "outputMode": "files_with_matches"});
    assert_eq!(
        call_stable(&mut server, "grep_files", &args),
        format!("{}\n[9 files]", listing(&env, &want))
    );
    let args = json!({"directory": root, "nameContains": "a"});
    assert_eq!(
        call_stable(&mut server, "search_files", &args),
        listing(&env, &["A.txt", "a", "a-b.txt", "a.txt", "aa"])
    );
}

/// A wide tree, walked on several threads, comes out in the same order every time.
#[test]
fn large_tree_order_is_stable() {
    let env = TestEnv::new(&[], &[]);
    let mut rels: Vec<String> = Vec::new();
    for dir in ["b", "a", "a/a", "c-d", "c", "Z", "c.d"] {
        for name in numbered(40) {
            let rel = format!("{dir}/{name}");
            env.write(&format!("root/{rel}"), "x\n");
            rels.push(rel);
        }
    }
    let want = walk_order(&rels);
    let want: Vec<&str> = want.iter().map(String::as_str).collect();
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    for _ in 0..3 {
        let args = json!({"directory": root, "globs": ["**/*.txt"], "max": 0});
        assert_eq!(call_stable(&mut server, "glob_search", &args), listing(&env, &want));
        let args = json!({"directory": root, "nameContains": ".txt"});
        assert_eq!(call_stable(&mut server, "search_files", &args), listing(&env, &want));
        let args = json!({"regex": "x", "directory": root, "outputMode": "files_with_matches", "maxResults": 10000});
        assert_eq!(
            call_stable(&mut server, "grep_files", &args),
            format!("{}\n[{} files]", listing(&env, &want), want.len())
        );
    }
}
