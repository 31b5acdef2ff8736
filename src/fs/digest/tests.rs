//! sha256 against known digests, and the guard's message.

use super::*;

#[track_caller]
fn check_hex(input: &[u8], expect: &str) {
    assert_eq!(sha256_hex(input), expect);
    assert_eq!(sha256_of(input).unwrap(), expect);
}

#[test]
fn known_digests() {
    check_hex(b"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_hex(b"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    let big = vec![b'x'; 200_000];
    assert_eq!(sha256_of(&big[..]).unwrap(), sha256_hex(&big));
}

#[test]
fn check_takes_either_case_and_names_both_hashes() {
    let path = Path::new("/f");
    let actual = sha256_hex(b"abc");
    assert!(check(path, &actual.to_uppercase(), Some(actual.clone())).is_ok());
    let message = check(path, "00", Some(actual.clone())).unwrap_err().to_string();
    assert!(message.contains(&format!("its sha256 is {actual}, not 00")), "{message}");
    let message = check(path, "00", None).unwrap_err().to_string();
    assert!(message.starts_with("/f does not exist"), "{message}");
}
