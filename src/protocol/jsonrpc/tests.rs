//! Reading lines and classifying messages; ids kept as sent.

use super::*;

#[track_caller]
fn check(input: &str, expect: &str) {
    let got = match parse(input.as_bytes()) {
        Err((_, e)) => format!("parse error {}", e.code),
        Ok(Incoming::Batch(elements)) => {
            let each: Vec<String> = elements.into_iter().map(describe).collect();
            format!("batch [{}]", each.join(", "))
        }
        Ok(Incoming::One(element)) => describe(element),
    };
    assert_eq!(got, expect, "input: {input}");
}

fn describe(mut element: Element<'_>) -> String {
    match element.classify() {
        Ok(Message::Request { id, method, .. }) => format!("request {id} {method}"),
        Ok(Message::Notification { method, .. }) => format!("notification {method}"),
        Ok(Message::Response { id, outcome }) => format!("response {id} {}", outcome.is_ok()),
        Err((id, e)) => format!("error {id} {}", e.code),
    }
}

#[test]
fn classification() {
    check(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, "request 1 ping");
    check(r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#, "request \"a\" ping");
    check(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, "request null ping");
    check(r#"{"jsonrpc":"2.0","method":"initialized"}"#, "notification initialized");
    check(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#, "response 3 true");
    check(r#"{"jsonrpc":"2.0","id":3,"result":null}"#, "response 3 true");
    check(r#"{"jsonrpc":"2.0","id":3,"error":{"code":1}}"#, "response 3 false");
    check(r#"{"id":1,"method":"ping"}"#, "error 1 -32600");
    check(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, "error 1 -32600");
    check(r#"{"jsonrpc":"2.0","id":1,"method":5}"#, "error 1 -32600");
    check(r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, "error null -32600");
    check(r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#, "error null -32600");
    check(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#, "error 1 -32600");
    check(r#"{"jsonrpc":"2.0","id":1}"#, "error 1 -32600");
    check(r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#, "request 2 ping");
    check(r#"{"jsonrpc":"2.0","method":"ping","extra":[[1]],"id":4}"#, "request 4 ping");
    check(r#"[]"#, "batch []");
    check(r#"7"#, "error null -32600");
    check(r#""ping""#, "error null -32600");
    check(
        r#"[7, {"jsonrpc":"2.0","id":"x","method":"ping"}, [1]]"#,
        "batch [error null -32600, request \"x\" ping, error null -32600]",
    );
    check("{not json", "parse error -32700");
    check(r#"{"jsonrpc":"2.0","id":1,"method":"ping"} trailing"#, "parse error -32700");
    check("\u{0}", "parse error -32700");
}

/// Ids come back as written, whatever a number parser would make of them.
#[test]
fn ids_are_kept_as_written() {
    for id in [
        "123456789012345678901234567890",
        "1.2345678901234567890123e+29",
        "-0",
        "1.0",
        "1E400",
        "\"\\u0061\"",
        "null",
    ] {
        check(
            &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
            &format!("request {id} ping"),
        );
        check(
            &format!(r#"[{{"jsonrpc":"2.0","id":{id},"method":"ping"}}]"#),
            &format!("batch [request {id} ping]"),
        );
    }
}

#[test]
fn id_keys_compare_strings_by_their_characters() {
    let id = |text: &str| Id(RawValue::from_string(text.to_owned()).unwrap());
    assert_eq!(id(r#""\u0061""#).key(), id(r#""a""#).key());
    assert_ne!(id(r#""1""#).key(), id("1").key());
    assert_ne!(
        id("123456789012345678901234567890").key(),
        id("123456789012345678901234567891").key()
    );
}

/// Nesting past the parser's limit is a parse error that says so, in a batch element too.
#[test]
fn deep_nesting_is_a_parse_error() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    for line in [
        "[".repeat(200),
        format!("[{}", "{\"a\":".repeat(200)),
        deep.clone(),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":{deep}}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","other":{deep}}}"#),
        format!(r#"[{{"jsonrpc":"2.0","id":1,"method":"ping"}},{deep}]"#),
    ] {
        let Err((_, e)) = parse(line.as_bytes()) else { panic!("parsed: {line}") };
        assert_eq!(e.code, PARSE_ERROR);
        assert!(e.message.contains("recursion"), "{}", e.message);
    }
}

#[test]
fn cancelled_ids_and_progress_tokens_are_read_as_sent() {
    let one = |line: &'static str| match parse(line.as_bytes()).unwrap() {
        Incoming::One(element) => element,
        Incoming::Batch(_) => panic!("a batch"),
    };
    let cancel =
        one(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.50}}"#);
    assert_eq!(cancel.cancelled_request().unwrap().as_json(), "1.50");
    let token = |line: &'static str| {
        let mut element = one(line);
        let Ok(Message::Request { params, .. }) = element.classify() else { panic!() };
        element.progress_token(&params).map(|id| id.as_json().to_owned())
    };
    let request = |token: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"_meta":{{"progressToken":{token}}}}}}}"#
        )
    };
    for (sent, back) in [
        ("7", "7"),
        ("\"t\"", "\"t\""),
        ("2.50", "2.50"),
        ("123456789012345678901234567890", "123456789012345678901234567890"),
    ] {
        let line: &'static str = Box::leak(request(sent).into_boxed_str());
        assert_eq!(token(line).as_deref(), Some(back), "{sent}");
    }
    assert_eq!(token(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{}}"#), None);
}

#[track_caller]
fn check_cost(text: &str, expect: usize) {
    assert_eq!(read_cost(text.as_bytes()).bytes, expect, "{text}");
}

#[test]
fn read_costs() {
    check_cost("", 0);
    check_cost("0", 0);
    check_cost(r#""abc""#, 3);
    check_cost(r#""a\"b""#, 2);
    // A line that is an array is a batch: each of its messages costs `BATCH_ELEMENT` more.
    check_cost("[0,0,0]", 32 + 64 + 2 * 64 + 3 * BATCH_ELEMENT);
    check_cost(r#"{"x":[0,0,0]}"#, 640 + 64 + 1 + 64 + 32 + 64 + 2 * 64);
    assert_eq!(read_cost(br#" [{"a":[1,2]},{},3]"#).elements, 3);
    assert_eq!(read_cost(br#"{"a":[1,2]}"#).elements, 0);
    check_cost(r#"{"a":0}"#, 640 + 64 + 1 + 64);
    // Brackets, commas and colons inside strings are text, not structure.
    check_cost(r#""{[,:]}""#, 6);
    check_cost(r#"{"k":"{,}"}"#, 640 + 64 + 1 + 64 + 3);
    assert_eq!(read_cost(br#"[[],{"a":[[0]]}]"#).depth, 4);
    assert_eq!(read_cost(br#"["[[[["]"#).depth, 1);
}

/// A line made of tiny objects is refused before it is read into values, answered with its id;
/// a line as big made of strings is read.
#[test]
fn costly_lines_are_refused_with_their_id() {
    let objects = "{\"a\":0},".repeat(200_000);
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{{"name":"edit_file","arguments":{{"x":[{objects}0]}}}}}}"#
    );
    let Err((id, error)) = parse(line.as_bytes()) else { panic!("read a costly line") };
    assert_eq!((id.as_json(), error.code), (r#""big""#, INVALID_REQUEST), "{}", error.message);
    assert!(error.message.contains("send fewer items"), "{}", error.message);
    let text = "x".repeat(4 << 20);
    let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"t":"{text}"}}}}"#);
    assert!(parse(line.as_bytes()).is_ok());
    // Nested too deep after the costly part: refused for its depth, before anything is read.
    let deep = format!("[{objects}{}{}]", "[".repeat(200), "]".repeat(200));
    let Err((_, error)) = parse(deep.as_bytes()) else { panic!("read a deep line") };
    assert_eq!(error.code, PARSE_ERROR, "{}", error.message);
    assert!(error.message.contains("201 levels"), "{}", error.message);
    // A batch has no one id to answer with.
    let batch = format!("[{line},{{\"a\":[{objects}0]}}]");
    let Err((id, error)) = parse(batch.as_bytes()) else { panic!("read a costly batch") };
    assert_eq!((id.as_json(), error.code), ("null", INVALID_REQUEST));
}
