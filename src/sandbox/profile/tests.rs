//! The Seatbelt profile, read back with a small SBPL reader: what each operation is granted
//! on, paths with odd characters, nested roots, `--sandbox-read` and `--deny-network`.

use super::*;

/// An SBPL datum, as far as the profile uses them.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Sexp {
    Atom(String),
    Str(String),
    Regex(String),
    List(Vec<Sexp>),
}

/// Reads every top-level form of `text`; panics on anything malformed (an unclosed string or
/// list, a stray `)`), which the generator must never write.
fn read(text: &str) -> Vec<Sexp> {
    let chars: Vec<char> = text.chars().collect();
    let mut at = 0;
    let mut forms = Vec::new();
    while let Some(form) = datum(&chars, &mut at) {
        forms.push(form);
    }
    forms
}

fn datum(chars: &[char], at: &mut usize) -> Option<Sexp> {
    skip_blank(chars, at);
    let c = *chars.get(*at)?;
    *at += 1;
    match c {
        '(' => {
            let mut items = Vec::new();
            loop {
                skip_blank(chars, at);
                match chars.get(*at) {
                    Some(')') => {
                        *at += 1;
                        return Some(Sexp::List(items));
                    }
                    Some(_) => items.push(datum(chars, at).expect("a datum")),
                    None => panic!("unclosed list"),
                }
            }
        }
        ')' => panic!("stray ) at {at}"),
        '"' => Some(Sexp::Str(string(chars, at))),
        '#' if chars.get(*at) == Some(&'"') => {
            *at += 1;
            Some(Sexp::Regex(string(chars, at)))
        }
        _ => {
            let mut atom = c.to_string();
            while let Some(&c) = chars.get(*at) {
                if c.is_whitespace() || c == '(' || c == ')' {
                    break;
                }
                atom.push(c);
                *at += 1;
            }
            Some(Sexp::Atom(atom))
        }
    }
}

/// The rest of a string literal: `\x` stands for `x`.
fn string(chars: &[char], at: &mut usize) -> String {
    let mut out = String::new();
    loop {
        let c = *chars.get(*at).expect("unclosed string");
        *at += 1;
        match c {
            '"' => return out,
            '\\' => {
                out.push(*chars.get(*at).expect("unclosed string"));
                *at += 1;
            }
            c => out.push(c),
        }
    }
}

fn skip_blank(chars: &[char], at: &mut usize) {
    while let Some(&c) = chars.get(*at) {
        if c == ';' {
            while chars.get(*at).is_some_and(|&c| c != '\n') {
                *at += 1;
            }
        } else if c.is_whitespace() {
            *at += 1;
        } else {
            break;
        }
    }
}

fn atom(text: &str) -> Sexp {
    Sexp::Atom(text.to_string())
}

fn list(items: &[Sexp]) -> Sexp {
    Sexp::List(items.to_vec())
}

fn subpath(path: &str) -> Sexp {
    list(&[atom("subpath"), Sexp::Str(path.to_string())])
}

/// The filters of every `(action op ... filters)` rule that names `op`.
fn filters_of(forms: &[Sexp], action: &str, op: &str) -> Vec<Sexp> {
    let mut out = Vec::new();
    for form in forms {
        let Sexp::List(items) = form else { continue };
        if items.first() != Some(&atom(action)) {
            continue;
        }
        let ops: Vec<&Sexp> =
            items[1..].iter().take_while(|i| matches!(i, Sexp::Atom(_))).collect();
        if ops.contains(&&atom(op)) {
            out.extend(items[1 + ops.len()..].iter().cloned());
        }
    }
    out
}

/// The filters of `op`'s grants on directories (not the device files' literals and pattern).
fn dirs(forms: &[Sexp], op: &str) -> Vec<Sexp> {
    let device = |f: &Sexp| matches!(f, Sexp::List(items) if items[0] == atom("literal") || items[0] == atom("regex"));
    filters_of(forms, "allow", op).into_iter().filter(|f| !device(f)).collect()
}

fn writable(forms: &[Sexp]) -> Vec<Sexp> {
    dirs(forms, "file-write*")
}

/// Whether a rule `(action op)` without filters is there.
fn has_bare(forms: &[Sexp], action: &str, op: &str) -> bool {
    forms.contains(&list(&[atom(action), atom(op)]))
}

fn root(path: &str, access: Access) -> AllowedRoot {
    AllowedRoot { path: PathBuf::from(path), access }
}

fn profile(
    roots: &[AllowedRoot],
    tmp: Option<&str>,
    read: &[&str],
    deny_network: bool,
) -> Vec<Sexp> {
    let read: Vec<PathBuf> = read.iter().map(PathBuf::from).collect();
    let grants = Grants { roots, tmp: tmp.map(Path::new), read: &read, deny_network };
    let text = render(&grants).expect("renders");
    read_all(&text)
}

/// Reads `text`, and checks the frame every profile has.
fn read_all(text: &str) -> Vec<Sexp> {
    let forms = read(text);
    assert_eq!(forms[0], list(&[atom("version"), atom("1")]), "{text}");
    assert_eq!(forms[1], list(&[atom("deny"), atom("default")]), "{text}");
    assert!(!has_bare(&forms, "allow", "default"), "{text}");
    // Nothing is written or read everywhere: every such rule has filters.
    for op in ["file-write*", "file-read*", "file-read-data", "process-exec*", "process-exec"] {
        assert!(!has_bare(&forms, "allow", op), "a bare (allow {op}):\n{text}");
    }
    forms
}

#[track_caller]
fn check_quoted(path: &str, expect: &str) {
    assert_eq!(quoted(Path::new(path)).as_deref(), Ok(expect), "{path:?}");
}

#[test]
fn quoting() {
    check_quoted("/Users/me/proj", r#""/Users/me/proj""#);
    check_quoted(r#"/a"b"#, r#""/a\"b""#);
    check_quoted(r"/a\b", r#""/a\\b""#);
    check_quoted(r#"/a\"b"#, r#""/a\\\"b""#);
    check_quoted("/Users/me/Café/日本", "\"/Users/me/Café/日本\"");
    check_quoted("/a\nb\tc", "\"/a\nb\tc\"");
    check_quoted("/x\")) (allow default) ; (", r#""/x\")) (allow default) ; (""#);
}

#[test]
fn a_path_that_is_not_utf8_is_an_error() {
    use std::os::unix::ffi::OsStrExt;
    let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/\xff"));
    let roots = [AllowedRoot { path: odd.clone(), access: Access::Write }];
    let grants = Grants { roots: &roots, tmp: None, read: &[], deny_network: false };
    assert_eq!(render(&grants), Err(NotExpressible(odd)));
}

/// Odd names read back as exactly themselves, in the rules they belong to, and add no rule.
#[test]
fn odd_paths_round_trip() {
    let odd = [
        r#"/Users/me/a "quoted" dir"#,
        r"/Users/me/back\slash\",
        "/Users/me/Café/日本語",
        "/Users/me/new\nline",
        "/Users/me/x\")) (allow default) (allow file-write* (subpath \"/",
    ];
    let plain = profile(&[root("/Users/me/plain", Access::Write)], None, &[], false);
    for path in odd {
        let forms = profile(&[root(path, Access::Write)], None, &[], false);
        assert_eq!(forms.len(), plain.len(), "{path:?} changed the rules");
        assert!(filters_of(&forms, "allow", "file-read*").contains(&subpath(path)), "{path:?}");
        assert_eq!(writable(&forms), vec![subpath(path)], "{path:?}");
    }
}

/// Read-only means read-only, metadata included: a read-only root is in no write grant, even
/// inside a read-write one; a read-write root inside that is writable again.
#[test]
fn read_only_roots_are_never_writable() {
    let roots = [
        root("/p", Access::Write),
        root("/p/vendor", Access::Read),
        root("/p/vendor/build", Access::Write),
        root("/elsewhere", Access::Read),
        root("/pp", Access::Read),
    ];
    let forms = profile(&roots, Some("/private/var/folders/x/T/replay-cmd-tmp-501/42"), &[], false);
    let not = |p: &str| list(&[atom("require-not"), subpath(p)]);
    assert_eq!(
        writable(&forms),
        vec![
            list(&[atom("require-all"), subpath("/p"), not("/p/vendor")]),
            subpath("/p/vendor/build"),
            subpath("/private/var/folders/x/T/replay-cmd-tmp-501/42"),
        ]
    );
    let readable = filters_of(&forms, "allow", "file-read*");
    for root in &roots {
        assert!(readable.contains(&subpath(root.path.to_str().unwrap())), "{root:?}");
    }
    // The same places run programs.
    assert_eq!(filters_of(&forms, "allow", "process-exec*"), dirs(&forms, "file-read*"));
}

#[test]
fn sandbox_read_paths_are_readable_and_runnable_not_writable() {
    let forms = profile(
        &[root("/p", Access::Write)],
        None,
        &["/opt/toolchain", "/Users/me/.gitconfig"],
        false,
    );
    for path in ["/opt/toolchain", "/Users/me/.gitconfig"] {
        assert!(filters_of(&forms, "allow", "file-read*").contains(&subpath(path)), "{path}");
        assert!(filters_of(&forms, "allow", "process-exec*").contains(&subpath(path)), "{path}");
        assert!(!writable(&forms).contains(&subpath(path)), "{path}");
    }
}

/// The system's places are readable, never writable, and the allowed directories add to them.
#[test]
fn system_paths_are_read_only() {
    let forms = profile(&[root("/p", Access::Read)], None, &[], false);
    let readable = filters_of(&forms, "allow", "file-read*");
    for system in SYSTEM_READ {
        assert!(readable.contains(&subpath(system)), "{system}");
    }
    // Only the device files are written: nothing else with no read-write root or TMPDIR.
    assert_eq!(writable(&forms), vec![]);
    assert!(has_bare(&forms, "allow", "file-read-metadata"));
}

#[test]
fn deny_network_denies_it_all() {
    let open = profile(&[root("/p", Access::Write)], None, &[], false);
    assert!(has_bare(&open, "allow", "network*"));
    assert!(!has_bare(&open, "deny", "network*"));
    let name = |n: &str| list(&[atom("global-name"), Sexp::Str(n.to_string())]);
    assert!(filters_of(&open, "allow", "mach-lookup").contains(&name("com.apple.dnssd.service")));

    let closed = profile(&[root("/p", Access::Write)], None, &[], true);
    assert!(has_bare(&closed, "deny", "network*"));
    assert!(!has_bare(&closed, "allow", "network*"));
    assert!(!filters_of(&closed, "allow", "mach-lookup").contains(&name("com.apple.dnssd.service")));
}

/// Processes: commands fork and run programs, and signal only their own sandbox's processes.
#[test]
fn processes_stay_in_the_sandbox() {
    let forms = profile(&[root("/p", Access::Write)], None, &[], false);
    assert!(has_bare(&forms, "allow", "process-fork"));
    let same = list(&[atom("target"), atom("same-sandbox")]);
    assert_eq!(filters_of(&forms, "allow", "signal"), vec![same]);
    assert!(!filters_of(&forms, "allow", "mach-lookup").contains(&list(&[
        atom("global-name"),
        Sexp::Str("com.apple.coreservices.launchservicesd".into())
    ])));
}

/// The whole profile for one read-write and one read-only root, for review.
#[test]
fn golden() {
    let roots = [root("/Users/me/proj", Access::Write), root("/Users/me/proj/docs", Access::Read)];
    let read = [PathBuf::from("/opt/homebrew/bin")];
    let grants = Grants {
        roots: &roots,
        tmp: Some(Path::new("/private/tmp/r/1")),
        read: &read,
        deny_network: true,
    };
    let text = render(&grants).unwrap();
    let tail = &text[text.find("; Write").unwrap()..];
    assert_eq!(
        tail,
        r#"; Write, metadata included: the read-write directories, less the read-only ones inside them, and the commands' TMPDIR.
(allow file-write*
  (require-all (subpath "/Users/me/proj") (require-not (subpath "/Users/me/proj/docs")))
  (subpath "/private/tmp/r/1"))

; Device files.
(allow file-read* file-write-data file-ioctl
  (literal "/dev/null")
  (literal "/dev/zero")
  (literal "/dev/tty")
  (literal "/dev/random")
  (literal "/dev/urandom")
  (literal "/dev/dtracehelper"))
(allow file-read* file-write* file-ioctl
  (literal "/dev/ptmx")
  (regex #"^/dev/ttys[0-9]+$"))

; The network.
(deny network*)
"#
    );
    assert!(text.contains("\n  (subpath \"/opt/homebrew/bin\")\n  (subpath \"/Users/me/proj\")\n  (subpath \"/Users/me/proj/docs\"))\n"), "{text}");
}
