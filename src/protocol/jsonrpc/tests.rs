//! Reading lines and classifying messages; ids kept as sent.

use super::*;

#[track_caller]
fn check(input: &str, expect: &str) {
    let got = match parse(input.as_bytes()) {
        Err(e) => format!("parse error {}", e.code),
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
        let Err(e) = parse(line.as_bytes()) else { panic!("parsed: {line}") };
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
