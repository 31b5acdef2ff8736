//! `toolchains` and `hint`: which places a home and an environment grant, and when a failed
//! command's stderr gets the refusal line.

use super::*;

/// Grants for a home `/h` where the directories `existing` exist (paths relative to `/h`, or
/// absolute), with `vars`; as `reach path` lines.
#[track_caller]
fn check(vars: &[(&str, &str)], existing: &[&str], strict: bool, expect: &[&str]) {
    let home = Path::new("/h");
    let existing: Vec<PathBuf> = existing.iter().map(|p| home.join(p)).collect();
    let env = Environment {
        home: Some(home.to_path_buf()),
        vars: vars.iter().map(|(n, v)| (n.to_string(), OsString::from(v))).collect(),
        temp: Some(PathBuf::from("/tmp")),
        writable: vec![PathBuf::from("/rw")],
        path: vec![PathBuf::from("/h"), PathBuf::from("/opt/tool/bin"), PathBuf::from("/rw/bin")],
    };
    let resolve = |p: &Path| existing.contains(&p.to_path_buf()).then(|| p.to_path_buf());
    let grants = toolchains(&env, strict, &[], &[PathBuf::from("/w")], &|p| {
        if p == Path::new("/w") {
            Some(p.to_path_buf())
        } else {
            resolve(p)
        }
    });
    let got: Vec<String> =
        grants.iter().map(|g| format!("{:?} {}", g.reach, g.path.display())).collect();
    assert_eq!(got, expect);
}

#[test]
fn toolchain_homes() {
    check(
        &[],
        &[".cargo", ".cargo/bin", ".cargo/registry", ".cargo/credentials.toml", ".rustup", ".npm"],
        false,
        &[
            "Run /h/.cargo/bin",
            "Write /h/.cargo/registry",
            "Run /h/.rustup",
            "Write /h/.npm",
            "Write /w",
        ],
    );
    // Strict: only the user's own flags.
    check(&[], &[".cargo/bin", ".rustup"], true, &["Write /w"]);
    // Configuration read, and git's credential file beside it not.
    check(
        &[],
        &[".gitconfig", ".config/git/config", ".config/git/credentials"],
        false,
        &["Read /h/.gitconfig", "Read /h/.config/git/config", "Write /w"],
    );
    // Maven and Gradle: their caches, never their settings with passwords.
    check(
        &[],
        &[".m2", ".m2/repository", ".gradle", ".gradle/caches"],
        false,
        &["Write /h/.m2/repository", "Write /h/.gradle/caches", "Write /w"],
    );
}

#[test]
fn named_variables() {
    let exists = &["/opt/jdk", "/t", ".config", ".ssh", ".local/share", "/tmp", "/home", "/var/x"];
    let mut vars = vec![("JAVA_HOME", "/opt/jdk")];
    check(&vars, exists, false, &["Run /opt/jdk", "Write /w"]);
    // The home itself, a directory above it, one holding credentials, an XDG base directory,
    // a variable named for a secret, a relative path: nothing.
    vars.extend([
        ("A_HOME", "/h"),
        ("B_ROOT", "/"),
        ("C_HOME", "/h/.config"),
        ("XDG_DATA_HOME", "/h/.local/share"),
        ("GNUPGHOME", "/t"),
        ("SSH_ROOT", "/t"),
        ("D_HOME", "/h/.ssh"),
        ("E_ROOT", "t"),
        // One level down, or above every server's TMPDIR.
        ("F_HOME", "/home"),
        ("G_HOME", "/tmp"),
    ]);
    check(&vars, exists, false, &["Run /opt/jdk", "Write /w"]);
    check(&vars, exists, true, &["Write /w"]);
    // Inside a read-write root a command chooses what a path is: nothing there is granted
    // (the root grants commands all of it anyway).
    check(
        &[("JAVA_HOME", "/rw/jdk"), ("CARGO_HOME", "/rw/.cargo")],
        &["/rw/jdk", "/rw/.cargo/bin", "/rw/.cargo/registry"],
        false,
        &["Write /w"],
    );
    // Only the toolchains' variables; none in or holding a credential place by its name,
    // whatever home it is in.
    check(
        &[("COMPOSER_HOME", "/opt/c"), ("JAVA_HOME", "/o/.ssh/k"), ("GOROOT", "/opt/go")],
        &["/opt/c", "/o/.ssh/k", "/opt/go", "/opt/go/auth.json"],
        false,
        &["Write /w"],
    );
    // Named explicitly, the temporary directory is refused too.
    check(
        &[("PYENV_ROOT", "/tmp"), ("NVM_DIR", "/var/x")],
        exists,
        false,
        &["Run /var/x", "Write /w"],
    );
}

#[test]
fn path_directories() {
    // The home on `PATH` holds credentials: refused; a directory in a read-write root too.
    check(&[], &["/h", "/opt/tool/bin", "/rw/bin"], false, &["Run /opt/tool/bin", "Write /w"]);
    check(&[], &["/opt/tool/bin"], true, &["Run /opt/tool/bin", "Write /w"]);
}

#[track_caller]
fn hint_of(stderr: &str) -> Option<&'static str> {
    // Reads: /r and /w; writes: /w.
    hint(stderr.as_bytes(), &|path, write| {
        path.starts_with("/w") || (!write && path.starts_with("/r"))
    })
}

#[test]
fn hints() {
    let read = Some(READ_HINT);
    let write = Some(WRITE_HINT);
    assert_eq!(hint_of("cat: /x/y: Permission denied\n"), read);
    assert_eq!(
        hint_of("error: could not read '/x/settings.toml': Permission denied (os error 13)"),
        read
    );
    assert_eq!(hint_of("touch: cannot touch '/r/f': Read-only file system"), write);
    assert_eq!(hint_of("OSError: [Errno 18] Invalid cross-device link: 'a' -> '/r/h'"), write);
    // A credential place: no flag offered.
    assert_eq!(hint_of("cat: /x/.ssh/id_rsa: Permission denied"), Some(CREDENTIAL_HINT));
    // Inside the grants, or no path, or another error: an ordinary failure.
    assert_eq!(hint_of("cat: /w/f: Permission denied"), None);
    assert_eq!(hint_of("cat: /r/f: Permission denied"), None);
    assert_eq!(hint_of("cat: f: Permission denied"), None);
    assert_eq!(hint_of("cat: /x/f: No such file or directory"), None);
    assert_eq!(hint_of(""), None);
}
