//! `read_file` and `read_multiple_files`: exact text, binary as image/audio/resource blobs, limits and errors.

use serde_json::json;

use crate::harness::{base64_decode, path_str, Content, Server, TestEnv};

#[test]
fn read_file_returns_exact_text() {
    let content =
        "line one\r\nunicode: h\u{e9}llo \u{2603} \u{1f980}\n\ttabbed\n\nno trailing newline";
    let env = TestEnv::new(&[], &[("root/t.txt", content)]);
    let mut server = Server::start(&env);
    let reply = server.call("read_file", json!({"path": env.p("root/t.txt")}));
    assert_eq!(reply.tool_result().content, [Content::Text { text: content.to_owned() }]);
}

#[test]
fn read_file_empty_file_is_empty_text() {
    let env = TestEnv::new(&[], &[("root/empty.txt", "")]);
    let mut server = Server::start(&env);
    assert_eq!(server.call_text("read_file", json!({"path": env.p("root/empty.txt")})), "");
}

#[test]
fn read_file_relative_path_resolves_against_first_root() {
    let env =
        TestEnv::new(&["second"], &[("root/sub/a.txt", "first"), ("second/sub/a.txt", "second")]);
    let mut server = Server::start_also(&env, &[("second", "rw")]);
    assert_eq!(server.call_text("read_file", json!({"path": "sub/a.txt"})), "first");
    assert_eq!(server.call_text("read_file", json!({"path": "./sub/../sub/a.txt"})), "first");
}

#[test]
fn read_file_images_are_image_items() {
    for (name, mime) in [
        ("p.png", "image/png"),
        ("p.jpg", "image/jpeg"),
        ("p.gif", "image/gif"),
        ("p.webp", "image/webp"),
    ] {
        let env = TestEnv::new(&[], &[]);
        env.copy_fixture("binary/pixel.png", &format!("root/{name}"));
        let mut server = Server::start(&env);
        let reply = server.call("read_file", json!({"path": env.p(&format!("root/{name}"))}));
        let content = reply.tool_result().content;
        match &content[..] {
            [Content::Image { data, mime_type }] => {
                assert_eq!(mime_type, mime, "{name}");
                assert_eq!(base64_decode(data), env.read(&format!("root/{name}")), "{name}");
            }
            other => panic!("{name}: expected one image item, got {other:?}"),
        }
    }
}

#[test]
fn read_file_audio_is_audio_items() {
    let bytes: &[u8] = b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\xff\xfe";
    let cases: [(&str, &[&str]); 4] = [
        ("s.wav", &["audio/wav", "audio/x-wav", "audio/wave"]),
        ("s.mp3", &["audio/mpeg"]),
        ("s.ogg", &["audio/ogg"]),
        ("s.flac", &["audio/flac", "audio/x-flac"]),
    ];
    for (name, mimes) in cases {
        let env = TestEnv::new(&[], &[]);
        env.write(&format!("root/{name}"), bytes);
        let mut server = Server::start(&env);
        let reply = server.call("read_file", json!({"path": env.p(&format!("root/{name}"))}));
        match &reply.tool_result().content[..] {
            [Content::Audio { data, mime_type }] => {
                assert!(mimes.contains(&mime_type.as_str()), "{name}: mimeType {mime_type}");
                assert_eq!(base64_decode(data), bytes, "{name}");
            }
            other => panic!("{name}: expected one audio item, got {other:?}"),
        }
    }
}

#[test]
fn read_file_other_binary_is_resource_blob() {
    let env = TestEnv::new(&[], &[]);
    env.copy_fixture("binary/bytes.bin", "root/data.bin");
    let bytes = env.read("root/data.bin");
    assert!(bytes.len() > 256, "every byte value is in the fixture");
    let mut server = Server::start(&env);
    let reply = server.call("read_file", json!({"path": env.p("root/data.bin")}));
    match &reply.tool_result().content[..] {
        [Content::Resource { resource }] => {
            assert_eq!(resource.uri, format!("file://{}", env.p("root/data.bin")));
            assert_eq!(resource.mime_type.as_deref(), Some("application/octet-stream"));
            assert_eq!(base64_decode(resource.blob.as_deref().expect("blob")), bytes);
        }
        other => panic!("expected one resource item, got {other:?}"),
    }
}

#[test]
fn read_file_nul_bytes_make_a_text_extension_binary() {
    let env = TestEnv::new(&[], &[]);
    env.copy_fixture("binary/nul.txt", "root/nul.txt");
    let bytes = env.read("root/nul.txt");
    assert!(bytes.contains(&0), "the fixture has its NUL");
    let mut server = Server::start(&env);
    let reply = server.call("read_file", json!({"path": env.p("root/nul.txt")}));
    match &reply.tool_result().content[..] {
        [Content::Resource { resource }] => {
            assert_eq!(resource.uri, format!("file://{}", env.p("root/nul.txt")));
            assert_eq!(base64_decode(resource.blob.as_deref().expect("blob")), bytes);
        }
        other => panic!("expected one resource item, got {other:?}"),
    }
}

/// Text in other encodings comes back decoded, with a note that names the encoding: UTF-16
/// (BOM, NUL bytes) and latin-1 (bytes that are not UTF-8). See `encodings` for each encoding.
#[test]
fn read_file_text_in_other_encodings_is_decoded() {
    for (fixture, text, note) in [
        ("text/utf16le.txt", "hello\r\nworld\r\n", "[encoding: UTF-16LE with BOM; edits keep it]"),
        // Three lines of latin-1 say little: chardetng guesses Turkish, whose 0xFE is `ş`.
        ("text/latin1.txt", "café\nÿş\nneedle", "[encoding: windows-1254; edits keep it]"),
    ] {
        let env = TestEnv::new(&[], &[]);
        env.copy_fixture(fixture, "root/other.txt");
        let mut server = Server::start(&env);
        let reply = server.call("read_file", json!({"path": env.p("root/other.txt")}));
        let expected = [Content::Text { text: text.into() }, Content::Text { text: note.into() }];
        assert_eq!(reply.tool_result().content, expected, "{fixture}");
    }
}

#[test]
fn read_file_over_16_mib_is_refused_with_the_size() {
    let env = TestEnv::new(&[], &[]);
    let size = 16 * 1024 * 1024 + 1;
    let file = std::fs::File::create(env.path("root/big.txt")).expect("create");
    file.set_len(size).expect("set_len");
    let mut server = Server::start(&env);
    let error = server.call_err("read_file", json!({"path": env.p("root/big.txt")}), -32603);
    let mentions_size = error.message.contains(&size.to_string())
        || error.message.contains("MiB")
        || error.message.contains("MB");
    assert!(mentions_size, "message does not mention the size: {}", error.message);
}

#[test]
fn read_file_exactly_16_mib_is_served() {
    let env = TestEnv::new(&[], &[]);
    let content = "a".repeat(16 * 1024 * 1024);
    env.write("root/edge.txt", &content);
    let mut server = Server::start(&env);
    let text = server.call_text("read_file", json!({"path": env.p("root/edge.txt")}));
    assert_eq!(text.len(), content.len());
    assert!(text == content, "content differs");
}

#[test]
fn read_file_directory_is_internal_error() {
    let env = TestEnv::new(&["root/d"], &[]);
    let mut server = Server::start(&env);
    server.call_err("read_file", json!({"path": env.p("root/d")}), -32603);
}

#[test]
fn read_file_missing_is_not_found_naming_the_path() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let path = env.p("root/missing.txt");
    let error = server.call_err("read_file", json!({"path": path}), -32002);
    assert!(error.message.contains(&path), "{}", error.message);
}

#[test]
fn read_file_missing_path_param_is_invalid_params() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let error = server.call_err("read_file", json!({}), -32602);
    assert!(error.message.contains("path"), "{}", error.message);
    let error = server.call_err("read_file", json!({"path": 42}), -32602);
    assert!(error.message.contains("path"), "{}", error.message);
}

#[test]
fn read_multiple_files_prefixes_each_item_and_keeps_order() {
    let env = TestEnv::new(&["outside"], &[("root/a.txt", "alpha"), ("root/b.txt", "beta\n")]);
    let marker = env.marker().to_owned();
    env.write("outside/secret.txt", &marker);
    let paths = [
        env.p("root/b.txt"),
        env.p("root/missing.txt"),
        env.p("outside/secret.txt"),
        env.p("root/a.txt"),
    ];
    let mut server = Server::start(&env);
    let reply = server.call("read_multiple_files", json!({"paths": paths}));
    assert!(!reply.line.contains(&marker), "leaked the outside file: {}", reply.line);
    let items = reply.texts();
    assert_eq!(items.len(), 4, "{items:?}");
    assert_eq!(items[0], format!("{}:\nbeta\n", paths[0]));
    assert!(items[1].starts_with(&format!("{}:\n[error", paths[1])), "{}", items[1]);
    assert!(items[2].starts_with(&format!("{}:\n[error", paths[2])), "{}", items[2]);
    assert!(items[2].contains("outside the allowed directories"), "{}", items[2]);
    assert_eq!(items[3], format!("{}:\nalpha", paths[3]));
}

#[test]
fn read_multiple_files_directory_is_inline_error() {
    let env = TestEnv::new(&["root/d"], &[]);
    let mut server = Server::start(&env);
    let items = server.call("read_multiple_files", json!({"paths": [env.p("root/d")]})).texts();
    assert_eq!(items.len(), 1);
    assert!(items[0].starts_with(&format!("{}:\n[error", env.p("root/d"))), "{}", items[0]);
}

#[test]
fn read_multiple_files_missing_or_empty_paths_is_invalid_params() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    for args in [json!({}), json!({"paths": []}), json!({"paths": "not-an-array"})] {
        let error = server.call_err("read_multiple_files", args.clone(), -32602);
        assert!(error.message.contains("paths"), "{args}: {}", error.message);
    }
}

#[test]
fn read_multiple_files_caps_at_50_paths() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a")]);
    let mut server = Server::start(&env);
    let fifty = vec![env.p("root/a.txt"); 50];
    let items = server.call("read_multiple_files", json!({"paths": fifty})).texts();
    assert_eq!(items.len(), 50);
    let fifty_one = vec![env.p("root/a.txt"); 51];
    let error = server.call_err("read_multiple_files", json!({"paths": fifty_one}), -32602);
    assert!(error.message.contains("paths") || error.message.contains("50"), "{}", error.message);
}

#[test]
fn read_multiple_files_globs_are_not_expanded() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a")]);
    let mut server = Server::start(&env);
    let glob = format!("{}/*.txt", path_str(&env.root()));
    let items = server.call("read_multiple_files", json!({"paths": [glob]})).texts();
    assert_eq!(items.len(), 1);
    assert!(items[0].starts_with(&format!("{glob}:\n[error")), "{}", items[0]);
}

/// A FIFO where a regular file is needed gets one message from every tool, and none of them
/// waits on it: read_file, read_multiple_files (inline), edit_file, write_file's append and
/// copy_file. See: #17 (one "not a regular file").
#[test]
fn every_tool_says_the_same_of_a_fifo() {
    let env = TestEnv::new(&["root"], &[]);
    let fifo = env.path("root/fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).expect("mkfifo");
    let mut server = Server::start(&env);
    let path = env.p("root/fifo");
    let expected = format!("not a regular file: {path} is a device, FIFO or socket");
    let calls = [
        ("read_file", json!({"path": path})),
        ("edit_file", json!({"path": path, "edits": [{"oldText": "a", "newText": "b"}]})),
        ("write_file", json!({"path": path, "content": "x", "append": true})),
        ("copy_file", json!({"source": path, "destination": env.p("root/copy")})),
    ];
    for (tool, args) in calls {
        let error = server.call_err(tool, args, -32603);
        assert_eq!(error.message, expected, "{tool}");
    }
    let text = server.call_text("read_multiple_files", json!({"paths": [path]}));
    assert_eq!(text, format!("{path}:\n[error: {expected}]"));
}
