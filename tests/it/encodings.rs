//! Text in other encodings than plain UTF-8: read as text with the encoding named, edited and
//! written back in its own encoding, BOM and line endings, byte-identical outside the edit;
//! refused where the encoding cannot hold the new text; binary bytes never taken for text.

use encoding_rs::Encoding;
use serde_json::{json, Value};

use crate::harness::{Content, Server, TestEnv};

/// A file's text, in one encoding, as a Windows or legacy tool writes it.
struct Sample {
    /// The encoding's WHATWG name, as replay names it.
    name: &'static str,
    bom: &'static [u8],
    text: &'static str,
    /// A word of line 2, replaced by the edit.
    word: &'static str,
    replacement: &'static str,
}

const SAMPLES: [Sample; 7] = [
    Sample {
        name: "UTF-8",
        bom: b"\xEF\xBB\xBF",
        text: "Grüße aus Köln.\nDas Wetter ist heute schön.\nEnde.\n",
        word: "schön",
        replacement: "trüb",
    },
    Sample {
        name: "UTF-16LE",
        bom: b"\xFF\xFE",
        text: "Windows notepad text.\nLine two, with ünïcödé and 日本.\nEnd.\n",
        word: "two",
        replacement: "zwei 😀",
    },
    Sample {
        name: "UTF-16BE",
        bom: b"\xFE\xFF",
        text: "Big endian text.\nLine two, with ünïcödé and 中文.\nEnd.\n",
        word: "two",
        replacement: "deux",
    },
    Sample {
        name: "windows-1252",
        bom: b"",
        text: "Le café crème est très bon, déjà vu à la façade.\nLa deuxième ligne: naïveté \
               et élégance.\nÇa suffit, voilà.\n",
        word: "naïveté",
        replacement: "œuvre",
    },
    Sample {
        name: "Shift_JIS",
        bom: b"",
        text: "日本語のテキストファイルです。これはテストです。\n東京の天気は晴れです。\
               明日は雨が降るでしょう。\n以上です。\n",
        word: "晴れ",
        replacement: "曇り",
    },
    Sample {
        name: "GBK",
        bom: b"",
        text: "这是一个中文文本文件，用于测试编码。\n北京今天的天气很好，我们去公园散步吧。\n\
               谢谢大家。\n",
        word: "公园",
        replacement: "图书馆",
    },
    Sample {
        name: "EUC-KR",
        bom: b"",
        text: "한국어 텍스트 파일입니다. 인코딩을 시험합니다.\n서울의 날씨는 오늘 \
               맑습니다. 내일은 비가 옵니다.\n감사합니다.\n",
        word: "맑습니다",
        replacement: "흐립니다",
    },
];

/// `text` in the sample's encoding, after its BOM.
fn encode(sample: &Sample, text: &str) -> Vec<u8> {
    let encoding = Encoding::for_label(sample.name.as_bytes()).expect("a WHATWG name");
    let mut bytes = sample.bom.to_vec();
    match sample.name {
        "UTF-16LE" => bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes)),
        "UTF-16BE" => bytes.extend(text.encode_utf16().flat_map(u16::to_be_bytes)),
        _ => {
            let (encoded, _, unmappable) = encoding.encode(text);
            assert!(!unmappable, "{}: the sample must be representable", sample.name);
            bytes.extend_from_slice(&encoded);
        }
    }
    bytes
}

fn structured(reply: &crate::harness::Response) -> Value {
    reply.result()["structuredContent"].clone()
}

fn texts(reply: &crate::harness::Response) -> Vec<String> {
    reply.tool_result().content.into_iter().map(|c| text_of(&c)).collect()
}

#[track_caller]
fn text_of(content: &Content) -> String {
    match content {
        Content::Text { text } => text.clone(),
        other => panic!("expected a text item, got {other:?}"),
    }
}

/// Each encoding, LF and CRLF: read as its text with the encoding named, then edited in line
/// 2 (with a line added, which takes the file's ending), and every byte outside the edit kept.
#[test]
fn each_encoding_reads_as_text_and_edits_round_trip() {
    for sample in &SAMPLES {
        for ending in ["\n", "\r\n"] {
            let case = format!("{} {ending:?}", sample.name);
            let text = sample.text.replace('\n', ending);
            let env = TestEnv::new(&["root"], &[]);
            let bytes = encode(sample, &text);
            env.write("root/f.txt", &bytes);
            let mut server = Server::start(&env);

            let reply = server.call("read_file", json!({"path": env.p("root/f.txt")}));
            let got = texts(&reply);
            assert_eq!(got[0], text, "{case}: the text");
            assert!(got[1].contains(sample.name), "{case}: the note names it: {got:?}");
            assert_eq!(structured(&reply)["encoding"], sample.name, "{case}");

            let new_text = format!("{}\nadded line", sample.replacement);
            let args = json!({
                "path": env.p("root/f.txt"),
                "edits": [{"oldText": sample.word, "newText": new_text}],
            });
            server.call_text("edit_file", args);
            let edited = text.replacen(sample.word, &new_text.replace('\n', ending), 1);
            let after = env.read("root/f.txt");
            assert_eq!(after, encode(sample, &edited), "{case}: the file after the edit");
            // What the edit left alone is the file's own bytes.
            let at = text.find(sample.word).expect("the word");
            let head = encode(sample, &text[..at]).len();
            let tail = encode(sample, &text[at + sample.word.len()..]).len() - sample.bom.len();
            assert_eq!(after[..head], bytes[..head], "{case}: bytes before the edit");
            assert_eq!(after[after.len() - tail..], bytes[bytes.len() - tail..], "{case}: after");
        }
    }
}

#[test]
fn paging_reads_decoded_lines() {
    let sample = &SAMPLES[4];
    let env = TestEnv::new(&["root"], &[]);
    env.write("root/sjis.txt", encode(sample, sample.text));
    let mut server = Server::start(&env);
    let args = json!({"path": env.p("root/sjis.txt"), "offset": 2, "limit": 1});
    let reply = server.call("read_file", args);
    let got = texts(&reply);
    assert_eq!(got[0], "東京の天気は晴れです。明日は雨が降るでしょう。\n");
    assert_eq!(got[1], "[lines 2-2 of 3; next: offset=3; encoding: Shift_JIS; edits keep it]");
    let args = json!({"path": env.p("root/sjis.txt"), "tail": 1, "lineNumbers": true});
    assert_eq!(texts(&server.call("read_file", args))[0], "     3\t以上です。\n");
}

#[test]
fn read_multiple_files_names_the_encoding() {
    let sample = &SAMPLES[5];
    let env = TestEnv::new(&["root"], &[("root/plain.txt", "plain")]);
    env.write("root/gbk.txt", encode(sample, sample.text));
    let mut server = Server::start(&env);
    let args = json!({"paths": [env.p("root/gbk.txt"), env.p("root/plain.txt")]});
    let got = texts(&server.call("read_multiple_files", args));
    let gbk =
        format!("{}:\n{}\n[encoding: GBK; edits keep it]", env.p("root/gbk.txt"), sample.text);
    assert_eq!(got, [gbk, format!("{}:\nplain", env.p("root/plain.txt"))]);
}

/// A character the file's encoding lacks is refused, naming it and where, and the file keeps
/// its bytes; so is a write_file in an encoding that lacks it.
#[test]
fn unrepresentable_text_is_refused_and_nothing_written() {
    let sample = &SAMPLES[4];
    let env = TestEnv::new(&["root"], &[]);
    let bytes = encode(sample, sample.text);
    env.write("root/sjis.txt", &bytes);
    let mut server = Server::start(&env);
    let args = json!({
        "path": env.p("root/sjis.txt"),
        "edits": [{"oldText": "以上", "newText": "以上 😀"}],
    });
    let err = server.call_err("edit_file", args, -32603);
    assert!(err.message.contains("U+1F600") && err.message.contains("line 3"), "{err:?}");
    assert!(err.message.contains("Shift_JIS"), "{err:?}");
    assert_eq!(env.read("root/sjis.txt"), bytes);

    let args = json!({"path": env.p("root/new.txt"), "content": "😀", "encoding": "Shift_JIS"});
    let err = server.call_err("write_file", args, -32603);
    assert!(err.message.contains("U+1F600"), "{err:?}");
    assert!(!env.exists("root/new.txt"));
}

#[test]
fn write_file_writes_the_encoding_named() {
    let env = TestEnv::new(&["root"], &[]);
    let mut server = Server::start(&env);
    for sample in &SAMPLES[1..] {
        let path = env.p("root/w.txt");
        let args = json!({"path": path, "content": sample.text, "encoding": sample.name});
        server.call_text("write_file", args);
        assert_eq!(env.read("root/w.txt"), encode(sample, sample.text), "{}", sample.name);
    }
    server.call_text("write_file", json!({"path": env.p("root/u.txt"), "content": "é"}));
    assert_eq!(env.read("root/u.txt"), "é".as_bytes());
    let args = json!({"path": env.p("root/x.txt"), "content": "x", "encoding": "klingon"});
    let err = server.call_err("write_file", args, -32602);
    assert!(err.message.contains("\"klingon\"") && err.message.contains("Shift_JIS"), "{err:?}");
    assert!(!env.exists("root/x.txt"));
}

#[test]
fn grep_files_searches_utf16_as_text() {
    let env = TestEnv::new(&["root"], &[]);
    for sample in &SAMPLES[1..3] {
        env.write(&format!("root/{}.txt", sample.name), encode(sample, sample.text));
    }
    let mut server = Server::start(&env);
    let args = json!({"regex": "ünïcödé", "directory": env.p("root"), "outputMode": "content"});
    let text = server.call("grep_files", args).tool_result().content;
    let text = text_of(&text[0]);
    for name in ["UTF-16BE", "UTF-16LE"] {
        assert!(text.contains(&format!("{name}.txt:2:")), "{name}: {text}");
    }
}

/// Bytes that are no text stay binary: random bytes (a fixed xorshift stream, 200 files of 64
/// bytes to 16 KiB) and the first 4 MiB of replay's own executable.
#[test]
fn binary_stays_binary() {
    let env = TestEnv::new(&["root"], &[]);
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut paths = Vec::new();
    for idx in 0..200 {
        let len = 64 << (idx % 9);
        let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let rel = format!("root/r{idx}.bin");
        env.write(&rel, bytes);
        paths.push(rel);
    }
    let mut exe = std::fs::read(env!("CARGO_BIN_EXE_replay")).expect("the binary");
    exe.truncate(4 << 20);
    env.write("root/exe.bin", exe);
    paths.push("root/exe.bin".into());
    let mut server = Server::start(&env);
    for rel in &paths {
        let reply = server.call("read_file", json!({"path": env.p(rel)}));
        let content = reply.tool_result().content;
        assert!(matches!(content[..], [Content::Resource { .. }]), "{rel}: {content:?}");
        let args = json!({"path": env.p(rel), "edits": [{"oldText": "a", "newText": "b"}]});
        server.call_err("edit_file", args, -32603);
    }
}

/// edit_files keeps each file's own encoding, and its dry run shows the decoded text.
#[test]
fn edit_files_keeps_each_encoding() {
    let env = TestEnv::new(&["root"], &[]);
    let pairs = [(&SAMPLES[1], "root/a.txt"), (&SAMPLES[4], "root/b.txt")];
    for (sample, rel) in pairs {
        env.write(rel, encode(sample, &sample.text.replace('\n', "\r\n")));
    }
    let mut server = Server::start(&env);
    let edits = json!([{"oldText": "\nEnd.", "newText": "\nEnd\nreally."}, {"oldText": "以上", "newText": "終わり"}]);
    let dry = json!({"paths": [env.p("root/b.txt")], "edits": [edits[1]], "dryRun": true});
    let diff = texts(&server.call("edit_files", dry)).join("");
    assert!(diff.contains("-以上です。\r\n+終わりです。\r\n"), "{diff}");
    for (sample, rel) in pairs {
        let one = if sample.name == "Shift_JIS" { &edits[1] } else { &edits[0] };
        server.call("edit_files", json!({"paths": [env.p(rel)], "edits": [one]})).tool_result();
        let crlf = sample.text.replace('\n', "\r\n");
        let old = one["oldText"].as_str().expect("old").replace('\n', "\r\n");
        let new = one["newText"].as_str().expect("new").replace('\n', "\r\n");
        assert_eq!(env.read(rel), encode(sample, &crlf.replacen(&old, &new, 1)), "{}", sample.name);
    }
}

/// apply_patch over every sample at once, LF and CRLF: each file keeps its encoding, BOM and
/// line endings (the added line too); then a patch whose second file cannot hold its new text
/// changes neither file.
#[test]
fn apply_patch_keeps_each_encoding_and_refuses_what_it_cannot_hold() {
    for ending in ["\n", "\r\n"] {
        let env = TestEnv::new(&["root"], &[]);
        let mut patch = String::from("*** Begin Patch\n");
        let mut expected = Vec::new();
        for (i, sample) in SAMPLES.iter().enumerate() {
            let text = sample.text.replace('\n', ending);
            env.write(&format!("root/{i}.txt"), encode(sample, &text));
            let line = sample.text.lines().nth(1).expect("line 2");
            let new_line = line.replacen(sample.word, sample.replacement, 1);
            patch.push_str(&format!(
                "*** Update File: {i}.txt\n@@\n-{line}\n+{new_line}\n+added line\n"
            ));
            let edited = text.replacen(line, &format!("{new_line}{ending}added line"), 1);
            expected.push(encode(sample, &edited));
        }
        patch.push_str("*** End Patch\n");
        let mut server = Server::start(&env);
        let args = json!({"patch": patch, "workingDirectory": env.p("root")});
        server.call_text("apply_patch", args);
        for (i, want) in expected.iter().enumerate() {
            let case = format!("{} {ending:?}", SAMPLES[i].name);
            assert_eq!(env.read(&format!("root/{i}.txt")), *want, "{case}");
        }

        let before: Vec<Vec<u8>> =
            (0..2).map(|i| env.read(&format!("root/{}.txt", i + 3))).collect();
        let patch = "*** Begin Patch\n*** Update File: 3.txt\n@@\n-Ça suffit, voilà.\n+Fin.\n\
                     *** Update File: 4.txt\n@@\n-以上です。\n+以上 😀\n*** End Patch\n";
        let args = json!({"patch": patch, "workingDirectory": env.p("root")});
        let err = server.call_err("apply_patch", args, -32603);
        assert!(err.message.contains("U+1F600") && err.message.contains("Shift_JIS"), "{err:?}");
        for (i, bytes) in before.iter().enumerate() {
            assert_eq!(env.read(&format!("root/{}.txt", i + 3)), *bytes, "file {}", i + 3);
        }
    }
}
