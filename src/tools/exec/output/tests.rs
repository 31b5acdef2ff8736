//! The head-and-tail capture and its character boundaries.

use super::*;

/// Pushes `chunks` and renders with the note `[cut N]`.
#[track_caller]
fn check(chunks: &[Vec<u8>], expect_len: usize, expect_cut: Option<usize>) {
    let mut captured = Captured::default();
    for chunk in chunks {
        captured.push(chunk);
    }
    let text = captured.render(|n| format!("[cut {n}]"));
    let total: usize = chunks.iter().map(Vec::len).sum();
    assert_eq!(captured.total, total);
    match expect_cut {
        None => assert!(!captured.cut() && text.len() == expect_len, "len {}", text.len()),
        Some(n) => {
            let note = format!("[cut {n}]");
            assert!(text.contains(&note), "no {note} in {} bytes", text.len());
            assert_eq!(text.len() - note.len(), expect_len);
        }
    }
}

fn bytes(n: usize, b: u8) -> Vec<u8> {
    vec![b; n]
}

#[test]
fn head_and_tail() {
    check(&[bytes(10, b'a')], 10, None);
    check(&[bytes(HEAD + TAIL, b'a')], HEAD + TAIL, None);
    check(&[bytes(HEAD + TAIL + 1, b'a')], HEAD + TAIL, Some(1));
    check(&[bytes(HEAD, b'a'), bytes(TAIL, b'b'), bytes(7, b'c')], HEAD + TAIL, Some(7));
    // Byte by byte through the ring, and one chunk larger than the ring.
    let small: Vec<Vec<u8>> = (0..HEAD + TAIL + 5).map(|_| vec![b'x']).collect();
    check(&small, HEAD + TAIL, Some(5));
    check(&[bytes(3 * (HEAD + TAIL), b'a')], HEAD + TAIL, Some(2 * (HEAD + TAIL)));
}

#[test]
fn the_tail_is_the_last_bytes_in_order() {
    let mut captured = Captured::default();
    let data: Vec<u8> = (0..2_000_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    for chunk in data.chunks(4099) {
        captured.push(chunk);
    }
    let text = captured.render(|n| format!("<{n}>"));
    let cut = data.len() - HEAD - TAIL;
    let expect = format!(
        "{}<{cut}>{}",
        std::str::from_utf8(&data[..HEAD]).unwrap(),
        std::str::from_utf8(&data[data.len() - TAIL..]).unwrap()
    );
    assert!(text == expect, "head or tail out of order");
}

#[test]
fn a_character_split_by_the_cut_counts_as_cut() {
    // 'é' is 2 bytes: the head ends in its first byte, the tail starts with its second.
    let mut data = bytes(HEAD - 1, b'a');
    data.extend_from_slice("é".as_bytes());
    data.extend_from_slice(&bytes(100, b'b'));
    data.extend_from_slice("€".as_bytes());
    data.extend_from_slice(&bytes(TAIL - 1, b'c'));
    check(&[data], HEAD - 1 + TAIL - 1, Some(2 + 100 + 3));
}

#[test]
fn character_boundaries() {
    let cases: &[(&[u8], usize, usize)] = &[
        (b"", 0, 0),
        (b"abc", 3, 0),
        ("é".as_bytes(), 2, 0),
        (&"é".as_bytes()[..1], 0, 0),
        (&"€".as_bytes()[1..], 2, 2),
        (&"𝄞".as_bytes()[..3], 0, 0),
        (&"𝄞".as_bytes()[1..], 3, 3),
        ("a€".as_bytes(), 4, 0),
    ];
    for &(bytes, end, start) in cases {
        assert_eq!((char_end(bytes), char_start(bytes)), (end, start), "{bytes:?}");
    }
}
