//! The tool flags' table: which tools each combination serves, and the writer list against the
//! schemas' annotations.

use super::*;

fn names(list: &str) -> Vec<String> {
    list.split(',').filter(|s| !s.is_empty()).map(String::from).collect()
}

/// `read_only`, `--tools` (None: absent), `--disable-tool`s → the served tools, comma-joined.
#[track_caller]
fn check(read_only: bool, only: Option<&str>, disabled: &str, expect: &str) {
    let selection = Selection { read_only, only: only.map(names), disabled: names(disabled) };
    assert_eq!(selection.check(), Ok(()));
    assert_eq!(selection.served().join(","), expect);
    let mut all = selection.served().into_iter().map(String::from).collect::<Vec<_>>();
    all.extend(selection.left_out().into_iter().map(|tool| tool.name().to_string()));
    all.sort();
    let mut every = tool_names();
    every.sort();
    assert_eq!(all, every, "served and left out together are every tool");
}

#[test]
fn selections() {
    let every = tool_names().join(",");
    check(false, None, "", &every);
    check(
        true,
        None,
        "",
        "read_file,read_multiple_files,list_directory,directory_tree,get_file_info,\
         list_allowed_directories,search_files,glob_search,grep_files",
    );
    check(false, Some("read_file,grep_files"), "", "read_file,grep_files");
    // --tools keeps tools/list order, not the flag's.
    check(false, Some("grep_files,read_file"), "", "read_file,grep_files");
    check(false, Some("read_file,write_file"), "write_file", "read_file");
    check(true, Some("read_file,write_file"), "", "read_file");
    check(false, None, "execute_command", &every.replace(",execute_command", ""));
    check(false, Some("execute_command"), "execute_command", "");
    check(false, Some(""), "", "");
}

#[track_caller]
fn check_unknown(only: Option<&str>, disabled: &str, expect: &str) {
    let selection =
        Selection { read_only: false, only: only.map(names), disabled: names(disabled) };
    let err = selection.check().unwrap_err().to_string();
    assert!(err.starts_with(expect), "{err:?} does not start with {expect:?}");
    assert!(err.contains("read_file, read_multiple_files, "), "lists the tools: {err}");
}

#[test]
fn unknown_names() {
    check_unknown(Some("read_file,cat"), "", r#"replay: --tools names no tool: "cat""#);
    check_unknown(None, "rm", r#"replay: --disable-tool names no tool: "rm""#);
    check_unknown(Some("Read_File"), "", r#"replay: --tools names no tool: "Read_File""#);
}

/// `--read-only` leaves out exactly the tools whose schema says they are not read-only: a new
/// writing tool that the table does not mark as one fails here.
#[test]
fn writers_are_the_tools_not_marked_read_only() {
    let mut from_schemas: Vec<&str> = crate::schema::definitions()
        .iter()
        .filter(|d| d.definition["annotations"]["readOnlyHint"] != true)
        .map(|d| d.name)
        .collect();
    from_schemas.sort_unstable();
    let mut writers = writers();
    writers.sort_unstable();
    assert_eq!(writers, from_schemas);
}
