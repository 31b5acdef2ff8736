//! The command line's tables: access suffixes, which invocation each command line is, and
//! print-config's server arguments parsing back to the same configuration.

use super::*;
use crate::selection::writers;

#[track_caller]
fn check(input: &str, expect: (&str, Access)) {
    let (path, access) = split_access(input);
    assert_eq!((path.as_str(), access), expect);
}

#[test]
fn access_suffixes() {
    check("/a", ("/a", Access::Write));
    check("/a:rw", ("/a", Access::Write));
    check("/a:ro", ("/a", Access::Read));
    check("/a:b", ("/a:b", Access::Write));
    check("/a:b:ro", ("/a:b", Access::Read));
}

fn parse_line(line: &[&str]) -> Invocation {
    let mut args = vec![OsString::from("replay")];
    args.extend(line.iter().map(OsString::from));
    parse_from(args)
}

/// What `line` parses to, in a word: `serve`, `call`, `tools`, `schema`, `print-config`,
/// `install`, `uninstall`, `help`, or `exit N`.
fn kind(line: &[&str]) -> String {
    match parse_line(line) {
        Invocation::Serve(_) => "serve".into(),
        Invocation::Call(_) => "call".into(),
        Invocation::Tools(_) => "tools".into(),
        Invocation::Schema(_) => "schema".into(),
        Invocation::PrintConfig(_) => "print-config".into(),
        Invocation::Sandbox(_) => "sandbox".into(),
        Invocation::Install(_) => "install".into(),
        Invocation::Uninstall { .. } => "uninstall".into(),
        Invocation::Help(_) => "help".into(),
        Invocation::Exit(Exit { status, .. }) => format!("exit {status}"),
    }
}

#[test]
fn invocations() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let rows: &[(&[&str], &str)] = &[
        (&["--mcp-server"], "serve"),
        (&["--mcp-server", dir], "serve"),
        (&[dir, "--mcp-server"], "serve"),
        (&[], "exit 2"),
        (&[dir], "exit 2"),
        (&["tools"], "tools"),
        (&["tools", "--read-only"], "tools"),
        (&["tools", "--allow", dir], "exit 2"),
        (&["tools", "--mcp-server"], "exit 2"),
        (&["call", "--mcp-server"], "exit 2"),
        (&["schema", "read_file"], "schema"),
        (&["schema", "cat"], "exit 2"),
        (&["schema"], "exit 2"),
        (&["call", "read_file", "{}", dir], "call"),
        (&["call", "read_file", "--allow", dir], "call"),
        (&["call", "list_allowed_directories"], "call"),
        (&["call", "cat", "{}"], "exit 2"),
        (&["call", "read_file", dir], "exit 2"),
        (&["call", "read_file", "{}", "--tool-errors", "result"], "exit 2"),
        (&["call", "read_file", "{}", "/no/such/dir/anywhere"], "exit 1"),
        (&["print-config", "cursor", dir], "print-config"),
        (&["print-config", "cursor", "--mcp-server", "--allow", dir], "print-config"),
        (&["print-config", "emacs"], "exit 2"),
        (&["install", "zed", dir], "install"),
        (&["install", "codex", "--npx", "--force", "--dry-run", "--allow", dir], "install"),
        (&["install", "cursor", "--config", "/c.json", "--project", dir], "exit 2"),
        (&["install", "cursor", "--tools", "cat"], "exit 2"),
        (&["install", "cursor", "/no/such/dir/anywhere"], "exit 1"),
        (&["install", "emacs"], "exit 2"),
        (&["uninstall", "opencode", "--project", dir, "--dry-run"], "uninstall"),
        (&["uninstall", "opencode", dir], "exit 2"),
        (&["--mcp-server", "--tools", "read_file,cat"], "exit 2"),
        (&["--mcp-server", "--disable-tool", "cat"], "exit 2"),
        // The unknown tool is reported before the missing directory.
        (&["--mcp-server", "--tools", "cat", "/no/such/dir/anywhere"], "exit 2"),
        // A subcommand's name after the first argument is a directory.
        (&["--mcp-server", "tools"], "exit 1"),
        (&["--mcp-server", dir, "call"], "exit 1"),
    ];
    for (line, expect) in rows {
        assert_eq!(kind(line), *expect, "replay {}", line.join(" "));
    }
}

#[test]
fn read_only_makes_every_root_read_only_and_leaves_the_writers_out() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let Invocation::Serve(config) = parse_line(&["--mcp-server", "--read-only", "--allow", dir])
    else {
        panic!("not a server")
    };
    assert!(config.read_only);
    assert!(config.roots.iter().all(|r| r.access == Access::Read), "{config:?}");
    let mut left_out: Vec<&str> = config.disabled_tools.iter().map(|t| t.name()).collect();
    left_out.sort();
    let mut writers = writers();
    writers.sort();
    assert_eq!(left_out, writers);
}

#[test]
fn no_exec_is_disable_tool_execute_command() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let disabled = |flags: &[&str]| match parse_line(&[&["--mcp-server", dir], flags].concat()) {
        Invocation::Serve(config) => {
            config.disabled_tools.iter().map(|t| t.name().to_string()).collect::<Vec<_>>()
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(disabled(&["--no-exec"]), ["execute_command", "command_session"]);
    assert_eq!(disabled(&["--disable-tool", "execute_command"]), ["execute_command"]);
    assert_eq!(disabled(&[]), Vec::<String>::new());
}

/// The server arguments print-config writes, given back to replay, configure the server the
/// original flags did.
#[test]
fn print_config_arguments_round_trip() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let schemas = format!("{dir}/schemas");
    let flags: Vec<&str> = vec![
        "--allow",
        dir,
        "--allow-read",
        &schemas,
        "--read-only",
        "--tools",
        "read_file,grep_files,execute_command",
        "--disable-tool",
        "grep_files",
        "--no-exec",
        "--deny-command",
        "rm",
        "--no-sandbox",
        "--deny-network",
        "--sandbox-read",
        "/usr",
        "--tool-errors",
        "result",
        "--log-level",
        "debug",
    ];
    let Invocation::PrintConfig(print) =
        parse_line(&[&["print-config", "vscode"], &flags[..]].concat())
    else {
        panic!("not print-config")
    };
    let mut from_print = vec!["replay"];
    from_print.extend(print.server_args.iter().map(String::as_str));
    let direct = parse_line(&[&["--mcp-server"], &flags[..]].concat());
    let again = parse_from(from_print.iter().map(OsString::from).collect());
    assert_eq!(format!("{again:?}"), format!("{direct:?}"));
    assert!(matches!(direct, Invocation::Serve(_)), "{direct:?}");
}

#[test]
fn print_config_makes_paths_absolute() {
    let Invocation::PrintConfig(print) =
        parse_line(&["print-config", "cursor", ".", "--sandbox-read", "rel"])
    else {
        panic!("not print-config")
    };
    let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
    let sandbox_read = std::env::current_dir().unwrap().join("rel");
    assert_eq!(
        print.server_args,
        [
            "--mcp-server".to_string(),
            "--allow".into(),
            format!("{}:rw", cwd.display()),
            "--sandbox-read".into(),
            sandbox_read.display().to_string(),
        ]
    );
}

#[test]
fn read_only_help_names_the_writers() {
    let mut command = command();
    let help = command.render_help().to_string();
    for writer in writers() {
        assert!(help.contains(writer), "--help lacks {writer}: {help}");
    }
    let call = command.find_subcommand_mut("call").unwrap().render_help().to_string();
    assert!(call.contains("execute_command"), "{call}");
}

#[test]
fn arguments_default_to_an_empty_object_and_must_be_json() {
    assert_eq!(arguments(None), Ok(Arguments::Given(serde_json::json!({}))));
    assert_eq!(
        arguments(Some(r#"{"path": "a"}"#)),
        Ok(Arguments::Given(serde_json::json!({"path": "a"})))
    );
    assert_eq!(arguments(Some("-")), Ok(Arguments::Stdin));
    let err = arguments(Some("/tmp/dir")).unwrap_err();
    assert!(err.starts_with("replay call: JSON-ARGS is not JSON"), "{err}");
    assert!(err.contains("\"/tmp/dir\""), "{err}");
}
