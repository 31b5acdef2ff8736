//! The encodings' tables: detection of each encoding, binary refused, byte-identical round trips
//! and edits, CRLF kept, unrepresentable characters refused.

use super::*;

const JAPANESE: &str =
    "日本語のテキストファイルです。\n文字コードはシフトJISで、行末はそのままです。\n\
                        東京都の天気は晴れ、気温は二十度でした。\n";
const CHINESE: &str = "这是一个简体中文的文本文件。\n编码是国标扩展，行尾保持不变。\n\
                       北京今天天气晴朗，气温二十度。\n";
const FRENCH: &str =
    "Le café où nous étions était très agréable.\nÀ côté, un garçon lisait « Les Misérables ».\n\
                      Où est la bibliothèque ? Déjà fermée, hélas.\n";

fn legacy(name: &str, text: &str) -> Vec<u8> {
    let encoding = Encoding::for_label(name.as_bytes()).unwrap();
    let (bytes, _, unmappable) = encoding.encode(text);
    assert!(!unmappable, "the sample is not all {name}");
    bytes.into_owned()
}

fn utf16(text: &str, little: bool) -> Vec<u8> {
    let mut out = if little { vec![0xFF, 0xFE] } else { vec![0xFE, 0xFF] };
    for unit in text.encode_utf16() {
        out.extend(if little { unit.to_le_bytes() } else { unit.to_be_bytes() });
    }
    out
}

/// `encoding bom line_ending`, or `binary`.
fn describe(bytes: &[u8]) -> String {
    match decode(bytes) {
        Some(d) => format!("{} bom={} {:?}", d.encoding_name(), d.bom, d.line_ending),
        None => "binary".to_string(),
    }
}

#[track_caller]
fn check(bytes: &[u8], expect: &str) {
    assert_eq!(describe(bytes), expect);
}

#[test]
fn detection() {
    check(b"plain ascii\n", "UTF-8 bom=false Lf");
    check("naïve\r\n".as_bytes(), "UTF-8 bom=false CrLf");
    check(b"\xEF\xBB\xBFbom\r\n", "UTF-8 bom=true CrLf");
    check(&utf16("wide\r\ntext\r\n", true), "UTF-16LE bom=true CrLf");
    check(&utf16("wide\ntext\n", false), "UTF-16BE bom=true Lf");
    check(&legacy("shift_jis", JAPANESE), "Shift_JIS bom=false Lf");
    check(&legacy("gbk", CHINESE), "GBK bom=false Lf");
    check(&legacy("windows-1252", FRENCH), "windows-1252 bom=false Lf");
    check(&legacy("windows-1252", &FRENCH.replace('\n', "\r\n")), "windows-1252 bom=false CrLf");
    // A long ASCII prefix does not hide the encoding of what follows it.
    let late = format!("{}{JAPANESE}", "ascii line\n".repeat(20_000));
    check(&legacy("shift_jis", &late), "Shift_JIS bom=false Lf");
    // The repository's fixtures.
    let fixture = |name: &str| {
        std::fs::read(format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    };
    // Four non-ASCII bytes are too few to tell Western from Turkish: either decodes `café`.
    check(&fixture("text/latin1.txt"), "windows-1254 bom=false Lf");
    check(&fixture("text/utf16le.txt"), "UTF-16LE bom=true CrLf");
    assert!(decode(&fixture("text/latin1.txt")).unwrap().text.contains("café"));
}

#[test]
fn binary_stays_binary() {
    let fixture = |name: &str| {
        std::fs::read(format!("{}/fixtures/binary/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    };
    for name in ["pixel.png", "bytes.bin", "nul.txt"] {
        assert_eq!(describe(&fixture(name)), "binary", "fixtures/binary/{name}");
    }
    // A real executable: ELF on Linux, Mach-O on macOS.
    assert_eq!(describe(&std::fs::read("/bin/ls").unwrap()), "binary", "/bin/ls");
    // A gzip stream (header, a stored deflate block, trailer) of text.
    let mut gzip = vec![0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3, 1, 5, 0, 0xFA, 0xFF];
    gzip.extend_from_slice(b"hello\x86\xA6\x10\x36\x05\x00\x00\x00");
    assert_eq!(describe(&gzip), "binary", "gzip");
    // Compressed files the system has, if any.
    let docs = std::fs::read_dir("/usr/share/doc").into_iter().flatten().flatten();
    for entry in docs.take(200) {
        let path = entry.path().join("changelog.Debian.gz");
        if let Ok(bytes) = std::fs::read(&path) {
            assert_eq!(describe(&bytes), "binary", "{}", path.display());
        }
    }
    // UTF-16 with a BOM but an odd length, or a lone surrogate, is not text.
    check(b"\xFF\xFEa\x00b", "binary");
    check(b"\xFF\xFE\x00\xD8a\x00", "binary");
    // A BOM before invalid UTF-8.
    check(b"\xEF\xBB\xBF\xFF\xFE", "binary");
}

#[test]
fn random_bytes_are_binary() {
    // xorshift64*, seeded: the same bytes every run.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    for size in [256, 1024, 4096, 65536] {
        for round in 0..50 {
            let bytes: Vec<u8> = (0..size).map(|_| next() as u8).collect();
            assert_eq!(describe(&bytes), "binary", "size {size}, round {round}");
            // High bytes only (no control byte to give it away) still must not decode as
            // anything but binary or a legacy encoding's text that round-trips.
            let high: Vec<u8> = bytes.iter().map(|b| b | 0x80).collect();
            if let Some(d) = decode(&high) {
                assert_eq!(encode(&d, &d.text).unwrap(), high, "size {size}, round {round}");
            }
        }
    }
}

/// Each encoding's sample: decoded, encoded back byte for byte, then one line in the middle
/// changed: the bytes before and after it are the original's.
#[test]
fn round_trips_and_edits() {
    let samples: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        ("UTF-8", JAPANESE.as_bytes().to_vec(), "文字コード", "エンコード"),
        ("UTF-8 BOM", [b"\xEF\xBB\xBF".as_slice(), FRENCH.as_bytes()].concat(), "garçon", "homme"),
        ("UTF-16LE", utf16(&JAPANESE.replace('\n', "\r\n"), true), "文字コード", "符号"),
        ("UTF-16BE", utf16(CHINESE, false), "编码", "字符集"),
        ("Shift_JIS", legacy("shift_jis", JAPANESE), "文字コード", "エンコード"),
        ("GBK", legacy("gbk", CHINESE), "编码", "字符集"),
        ("windows-1252", legacy("windows-1252", &FRENCH.replace('\n', "\r\n")), "garçon", "élève"),
    ];
    for (name, bytes, from, to) in samples {
        let d = decode(&bytes).unwrap_or_else(|| panic!("{name}: decoded as binary"));
        assert_eq!(encode(&d, &d.text).unwrap(), bytes, "{name}: round trip");
        let edited = d.text.replacen(from, to, 1);
        assert_ne!(edited, d.text, "{name}: the edit changes nothing");
        let out = encode_edit(&d, &bytes, &edited).unwrap();
        let first_line = d.text.find('\n').unwrap() + 1;
        let head = encode(&d, &d.text[..first_line]).unwrap().len();
        assert_eq!(out[..head], bytes[..head], "{name}: the first line's bytes");
        let last_line = d.text[..d.text.len() - 1].rfind('\n').unwrap() + 1;
        let tail = encode(&d, &d.text[last_line..]).unwrap().len() - if d.bom { 2 } else { 0 };
        let tail = if name == "UTF-8 BOM" { tail - 1 } else { tail };
        assert_eq!(out[out.len() - tail..], bytes[bytes.len() - tail..], "{name}: last line");
        assert_eq!(decode(&out).unwrap().text, edited, "{name}: the edit reads back");
    }
}

/// Shift_JIS maps NEC's and IBM's duplicate codes for `№` to one character; an edit elsewhere
/// keeps the file's own bytes for it, where encoding the whole text would write the other.
#[test]
fn duplicate_codes_outside_the_edit_are_kept() {
    let mut bytes = b"\xFA\x59 ibm numero\n".to_vec();
    bytes.extend(legacy("shift_jis", JAPANESE));
    let d = decode(&bytes).unwrap();
    assert_eq!(d.encoding_name(), "Shift_JIS");
    assert_ne!(encode(&d, &d.text).unwrap(), bytes, "the sample needs a duplicate code");
    let edited = d.text.replacen("東京都", "大阪府", 1);
    let out = encode_edit(&d, &bytes, &edited).unwrap();
    assert_eq!(out[..2], bytes[..2]);
    assert_eq!(decode(&out).unwrap().text, edited);
}

#[test]
fn unrepresentable() {
    let check = |bytes: Vec<u8>, new: &str, expect: &str| {
        let d = decode(&bytes).unwrap();
        let got = match encode_edit(&d, &bytes, new) {
            Ok(_) => "written".to_string(),
            Err(e) => e.to_string(),
        };
        assert_eq!(got, expect);
    };
    check(
        legacy("shift_jis", JAPANESE),
        &format!("{JAPANESE}ok 😀\n"),
        "'😀' (U+1F600) at line 4, column 4 cannot be written in the file's encoding Shift_JIS: \
         write it another way (an escape the file's language has) or convert the file to UTF-8 \
         with write_file first",
    );
    check(
        legacy("windows-1252", FRENCH),
        &FRENCH.replace("café", "茶"),
        "'茶' (U+8336) at line 1, column 4 cannot be written in the file's encoding windows-1252: \
         write it another way (an escape the file's language has) or convert the file to UTF-8 \
         with write_file first",
    );
    check(legacy("gbk", CHINESE), &format!("€{CHINESE}"), "written");
    check(utf16("x\n", true), "😀\n", "written");
}

#[test]
fn write_labels() {
    let check = |label: &str, expect: Option<(&str, bool)>| {
        let got = for_label(label).map(|(e, bom)| (e.name(), bom));
        assert_eq!(got, expect, "{label}");
    };
    check("Shift_JIS", Some(("Shift_JIS", false)));
    check(" latin1 ", Some(("windows-1252", false)));
    check("utf-16", Some(("UTF-16LE", true)));
    check("UTF-16BE", Some(("UTF-16BE", true)));
    check("utf8", Some(("UTF-8", false)));
    check("replacement", None);
    check("iso-2022-kr", None);
    check("klingon", None);
}

/// Over 1 MiB, a legacy text is decoded in two halves split at a line feed: the same text, and a
/// malformed sequence just before the split still refused.
#[test]
fn split_decode() {
    let text = JAPANESE.repeat((2 << 20) / JAPANESE.len());
    let bytes = legacy("shift_jis", &text);
    assert_eq!(decode(&bytes).unwrap().text, text);
    let mut broken = bytes.clone();
    let split =
        bytes.len() / 2 + bytes[bytes.len() / 2..].iter().position(|&b| b == b'\n').unwrap();
    // A lead byte and then the line feed: "。" becomes "a" and half a character.
    broken[split - 2..split].copy_from_slice(b"a\x81");
    assert_eq!(decode(&broken), None);
    let mut broken = bytes;
    let end = broken.len() - 1;
    broken[end - 2..end].copy_from_slice(b"a\x81");
    assert_eq!(decode(&broken), None);
}
