//! Deny rules: which rule denies a path, and which paths the default set leaves alone.

use std::path::Path;

use super::DenyRules;

/// The rule that denies `path` under the root `/r`, or `-`.
#[track_caller]
fn check(rules: &DenyRules, path: &str, expect: &str) {
    let got = rules.matching(Path::new("/r"), Path::new(path)).map_or("-", |r| r.glob.as_str());
    assert_eq!(got, expect, "{path}");
}

#[test]
fn default_rules() {
    let rules = DenyRules::new(&[], false).unwrap();
    check(&rules, "/r/.env", ".env");
    check(&rules, "/r/app/.env", ".env");
    check(&rules, "/r/app/.env.production", ".env.*");
    check(&rules, "/r/.env.example", "-");
    check(&rules, "/r/.env.sample", "-");
    check(&rules, "/r/src/main.rs", "-");
    check(&rules, "/r/env", "-");
    check(&rules, "/r/certs/server.pem", "*.pem");
    check(&rules, "/r/tls.key", "*.key");
    check(&rules, "/r/keys/id_rsa", "id_rsa*");
    check(&rules, "/r/keys/id_ed25519.pub", "id_ed25519*");
    check(&rules, "/r/.ssh", ".ssh/");
    check(&rules, "/r/home/.ssh/config", ".ssh/");
    check(&rules, "/r/.aws/credentials", ".aws/");
    check(&rules, "/r/.netrc", ".netrc");
    check(&rules, "/r/gcp/credentials.json", "credentials.json");
    // The root itself and what lies above it are the user's to allow.
    check(&rules, "/r", "-");
    check(&rules, "/.ssh/r/x", "-");
}

#[test]
fn user_rules() {
    let user = ["secrets/**", "config/prod.yaml", "/r/private", ".env.example", "*.sqlite"];
    let rules = DenyRules::new(&user.map(String::from), true).unwrap();
    check(&rules, "/r/.env", "-");
    check(&rules, "/r/secrets", "secrets/**");
    check(&rules, "/r/app/secrets/db/pw.txt", "secrets/**");
    check(&rules, "/r/app/config/prod.yaml", "config/prod.yaml");
    check(&rules, "/r/config/dev.yaml", "-");
    check(&rules, "/r/private/notes", "/r/private");
    check(&rules, "/r/app/private", "-");
    check(&rules, "/r/data.sqlite", "*.sqlite");
    check(&rules, "/r/a/b", "-");
    // A rule the user names wins over the defaults' exception.
    let both = DenyRules::new(&[".env.example".to_string()], false).unwrap();
    check(&both, "/r/.env.example", ".env.example");
}

#[test]
fn walk_entries() {
    let user = ["config/prod.yaml", "/r/private"].map(String::from);
    let rules = DenyRules::new(&user, false).unwrap();
    let denies = |path: &str| {
        let rel = Path::new(path).strip_prefix("/r").unwrap();
        rules.denies_entry(Path::new(path), rel)
    };
    assert!(denies("/r/a/.env"));
    assert!(denies("/r/a/config/prod.yaml"));
    assert!(denies("/r/private"));
    assert!(!denies("/r/a/.env.example"));
    assert!(!denies("/r/a/config"));
    assert!(!denies("/r/a/main.rs"));
}

#[test]
fn bad_rules_name_the_glob() {
    let bad = |glob: &str| DenyRules::new(&[glob.to_string()], false).unwrap_err();
    assert!(bad("a[").contains("\"a[\" is not a valid glob"), "{}", bad("a["));
    assert!(bad("**").contains("would deny every path"), "{}", bad("**"));
    assert!(bad("/").contains("would deny every path"), "{}", bad("/"));
}

#[test]
fn affixes_of_name_globs() {
    let check = |glob: &str, prefix: &str, suffix: &str| {
        let (p, s) = super::affixes(glob);
        assert_eq!((p.as_slice(), s.as_slice()), (prefix.as_bytes(), suffix.as_bytes()), "{glob}");
    };
    check(".env", ".env", ".env");
    check(".env.*", ".env.", "");
    check("*.pem", "", ".pem");
    check("client_secret*.json", "client_secret", ".json");
    check("a[bc]d", "a", "d");
    check("{x,y}.txt", "", ".txt");
    check("*", "", "");
}

/// Private paths are denied exactly, with all below them, whatever glob metacharacters their
/// names hold, before any other rule; the rules without them are as they were.
#[test]
fn private_paths() {
    let plain = DenyRules::new(&[], false).unwrap();
    let private = ["/r/state/replay", "/r/a[b]*/log"].map(std::path::PathBuf::from);
    let rules = plain.with_private(&private);
    check(&rules, "/r/state/replay", "/r/state/replay");
    check(&rules, "/r/state/replay/1.journal", "/r/state/replay");
    check(&rules, "/r/state/replay.old", "-");
    check(&rules, "/r/state", "-");
    check(&rules, "/r/a[b]*/log", "/r/a[b]*/log");
    check(&rules, "/r/ab/log", "-");
    check(&rules, "/r/axx/log", "-");
    check(&rules, "/r/state/replay/.env", "/r/state/replay");
    check(&rules, "/r/.env", ".env");
    check(&plain, "/r/state/replay/1.journal", "-");
    assert!(rules.denies_entry(Path::new("/r/state/replay"), Path::new("state/replay")));
    assert!(!rules.denies_entry(Path::new("/r/state"), Path::new("state")));
    let shown = rules.matching(Path::new("/r"), Path::new("/r/state/replay")).unwrap();
    assert!(shown.to_string().contains("replay's private state"), "{shown}");
    assert_eq!(rules.private().count(), 2);
}
