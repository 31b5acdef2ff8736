//! The commit stopped after each of its steps, as a kill would stop it, then recovered: each
//! file all old or all new, nothing of the commit left behind.

use super::*;
use std::os::unix::fs::MetadataExt;

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("replay-journal-test-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("files")).expect("scratch dir");
    dir
}

/// The directory's files as `name=content`, sorted, leftovers included.
fn contents(dir: &Path) -> String {
    let mut out: Vec<String> = fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| {
            let e = e.expect("entry");
            let content = fs::read_to_string(e.path()).unwrap_or_else(|_| "?".into());
            format!("{}={content}", e.file_name().to_string_lossy())
        })
        .collect();
    out.sort();
    out.join(" ")
}

/// What recovery does with `root` as the one read-write directory, no deny rules.
fn recover(state: &StateDir, root: &Path) -> Vec<Recovered> {
    let roots = [AllowedRoot { path: root.to_path_buf(), access: Access::Write }];
    state.recover(&roots, &DenyRules::default()).unwrap()
}

const OLD: &str = "a=A b=B d=D";
const NEW: &str = "a=A2 c=C2 e=B2";

/// A change of `path`: a write of `content`, or a deletion.
fn change(path: PathBuf, content: Option<&str>) -> Change {
    let parent = File::open(path.parent().unwrap()).expect("the parent directory");
    let name = path.file_name().unwrap().to_os_string();
    let slot = Slot { dir: parent.into(), name };
    Change { path, slot, content: content.map(|c| c.as_bytes().to_vec()), new_mode: None }
}

/// Rewrite `a`, add `c`, delete `d`, move `b` to `e` with new content.
fn scenario(files: &Path) -> Vec<Change> {
    for (name, content) in [("a", "A"), ("b", "B"), ("d", "D")] {
        fs::write(files.join(name), content).unwrap();
    }
    vec![
        change(files.join("a"), Some("A2")),
        change(files.join("c"), Some("C2")),
        change(files.join("d"), None),
        change(files.join("e"), Some("B2")),
        change(files.join("b"), None),
    ]
}

/// The state directory's files once nothing is in flight: the lock and the empty journal.
fn idle_state() -> String {
    let pid = std::process::id();
    format!("{pid}.journal= {pid}.lock=")
}

#[track_caller]
fn check(stop_at: Option<Step>, expect: &str) {
    let root = scratch(&format!("{stop_at:?}").replace(['(', ')'], "_"));
    let files = root.join("files");
    let state = StateDir::open(&root.join("state")).unwrap();
    let changes = scenario(&files);
    commit_until(&state, &changes, |step| Some(step) == stop_at).unwrap();
    let recovered = recover(&state, &root);
    let what = match recovered.as_slice() {
        [] => "clean",
        [Recovered::RolledBack { .. }] => "back",
        [Recovered::RolledForward { .. }] => "forward",
        _ => "several",
    };
    assert_eq!(format!("{what}: {}", contents(&files)), expect, "stopped after {stop_at:?}");
    // Nothing left: an empty journal (it and the lock stay while the server runs).
    assert_eq!(contents(&root.join("state")), idle_state());
    // A second recovery finds nothing.
    assert_eq!(recover(&state, &root), vec![]);
    fs::remove_dir_all(&root).unwrap();
}

#[test]
fn recovery_after_each_step() {
    check(None, &format!("clean: {NEW}"));
    check(Some(Step::Planned), &format!("back: {OLD}"));
    for i in 0..5 {
        check(Some(Step::Staged(i)), &format!("back: {OLD}"));
    }
    check(Some(Step::Committed), &format!("forward: {NEW}"));
    for i in 0..5 {
        check(Some(Step::Applied(i)), &format!("forward: {NEW}"));
    }
    check(Some(Step::Cleaned), &format!("forward: {NEW}"));
}

#[test]
fn mode_is_kept_and_new_files_get_the_default() {
    let root = scratch("mode");
    let files = root.join("files");
    let state = StateDir::open(&root.join("state")).unwrap();
    fs::write(files.join("x"), "old").unwrap();
    fs::set_permissions(files.join("x"), fs::Permissions::from_mode(0o4751)).unwrap();
    let changes = vec![change(files.join("x"), Some("new")), change(files.join("y"), Some("y"))];
    commit(&state, &changes).unwrap();
    let mode = |name: &str| fs::metadata(files.join(name)).unwrap().mode() & 0o7777;
    // setuid dropped (`fs::KEPT_MODE_BITS`), the rest kept.
    assert_eq!(mode("x"), 0o751);
    let umask = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));
    nix::sys::stat::umask(umask);
    assert_eq!(mode("y"), 0o666 & !umask.bits() as u32);
    assert_eq!(contents(&files), "x=new y=y");
    fs::remove_dir_all(&root).unwrap();
}

/// A change that cannot be staged (its target became a directory) leaves every file as it was.
#[test]
fn a_failed_stage_changes_nothing() {
    let root = scratch("failed");
    let files = root.join("files");
    let state = StateDir::open(&root.join("state")).unwrap();
    let mut changes = scenario(&files);
    fs::create_dir(files.join("f")).unwrap();
    changes.push(change(files.join("f"), Some("f")));
    assert!(commit(&state, &changes).is_err());
    assert_eq!(contents(&files), format!("{OLD} f=?"));
    assert_eq!(contents(&root.join("state")), idle_state());
    fs::remove_dir_all(&root).unwrap();
}

/// A live server's journal is not another's to recover; once its lock is free, it is.
#[test]
fn a_live_servers_journal_is_left_alone() {
    let root = scratch("live");
    let files = root.join("files");
    let state_path = root.join("state");
    let state = StateDir::open(&state_path).unwrap();
    fs::write(files.join("a"), "A").unwrap();
    fs::write(files.join(".replay-patch.7.0.0.new"), "A2").unwrap();
    let entry = Entry {
        target: files.join("a"),
        temp: Some(files.join(".replay-patch.7.0.0.new")),
        backup: None,
    };
    fs::write(state_path.join("7.journal"), journal_text(true, &[entry])).unwrap();
    let other = take_lock(&state_path, 7, FlockArg::LockExclusive).unwrap().unwrap();
    assert_eq!(recover(&state, &root), vec![]);
    assert_eq!(contents(&files), ".replay-patch.7.0.0.new=A2 a=A");
    drop(other);
    let journal = state_path.join("7.journal");
    assert_eq!(recover(&state, &root), vec![Recovered::RolledForward { journal }]);
    assert_eq!(contents(&files), "a=A2");
    assert_eq!(contents(&state_path), idle_state());
    fs::remove_dir_all(&root).unwrap();
}

#[test]
fn journal_format() {
    let entries = vec![
        Entry { target: "/t/a b".into(), temp: Some("/t/.n".into()), backup: None },
        Entry {
            target: PathBuf::from(OsStr::from_bytes(b"/t/\xFF")),
            temp: None,
            backup: Some("/t/.o".into()),
        },
    ];
    let text = journal_text(false, &entries);
    assert_eq!(
        text,
        "replay-journal 1\nstaging  \n2f742f612062 2f742f2e6e -\n2f742fff - 2f742f2e6f\nend\n"
    );
    let journal = parse_journal(text.as_bytes()).unwrap();
    assert!(!journal.committed);
    assert_eq!(journal.entries, entries);
    let committed = journal_text(true, &entries);
    assert!(parse_journal(committed.as_bytes()).unwrap().committed);
    // A journal cut short is not guessed at.
    assert!(parse_journal(b"replay-journal 1\ncommitted\n2f742f61 - -\n").is_none());
    assert!(parse_journal(b"replay-journal 1\nstag").is_none());
}

#[test]
fn state_dir() {
    let check = |xdg: Option<&str>, home: Option<&str>, expect: Option<&str>| {
        let got = state_dir_from(xdg.map(Into::into), home.map(Into::into));
        assert_eq!(got.as_deref(), expect.map(Path::new), "XDG_STATE_HOME={xdg:?} HOME={home:?}");
    };
    check(Some("/x/state"), Some("/home/u"), Some("/x/state/replay"));
    check(None, Some("/home/u"), Some("/home/u/.local/state/replay"));
    check(Some("relative"), Some("/home/u"), Some("/home/u/.local/state/replay"));
    check(Some(""), Some("/home/u"), Some("/home/u/.local/state/replay"));
    check(None, Some("rel"), None);
    check(None, None, None);
    let env = |name: &str| std::env::var_os(name);
    assert_eq!(default_state_dir(), state_dir_from(env("XDG_STATE_HOME"), env("HOME")));
}

/// A journal cut short while it was first written is discarded: nothing was staged yet.
#[test]
fn a_torn_journal_is_discarded() {
    let root = scratch("torn");
    let state_path = root.join("state");
    let state = StateDir::open(&state_path).unwrap();
    fs::write(state_path.join("8.journal"), "replay-journal 1\nstag").unwrap();
    let journal = state_path.join("8.journal");
    assert_eq!(recover(&state, &root), vec![Recovered::Discarded { journal }]);
    assert_eq!(contents(&state_path), idle_state());
    fs::remove_dir_all(&root).unwrap();
}

/// Recovery replays only what this server's commit would have written: targets in a
/// read-write root, under no deny rule, reached through no symlink, with `.replay-patch.<pid>.*`
/// siblings in their own directory. `-` where the entry resolves, else a word of the refusal.
#[test]
fn recovery_resolves_each_entry_again() {
    let root = scratch("resolve");
    let files = root.join("files");
    fs::create_dir_all(files.join("ro")).unwrap();
    fs::create_dir_all(root.join("outside")).unwrap();
    std::os::unix::fs::symlink(root.join("outside"), files.join("link")).unwrap();
    let roots = [
        AllowedRoot { path: files.clone(), access: Access::Write },
        AllowedRoot { path: files.join("ro"), access: Access::Read },
    ];
    let deny = DenyRules::new(&[], false).unwrap();
    let check = |target: &str, temp: Option<&str>, backup: Option<&str>, expect: &str| {
        let at = |name: &str| root.join(name);
        let entry = Entry { target: at(target), temp: temp.map(at), backup: backup.map(at) };
        let got = match resolve(&entry, 7, &roots, &deny) {
            Ok(_) => "-".to_string(),
            Err(why) => why,
        };
        assert!(got.contains(expect), "{target} {temp:?} {backup:?}: {got}");
    };
    check("files/a", Some("files/.replay-patch.7.0.0.new"), None, "-");
    check("files/a", None, Some("files/.replay-patch.7.0.0.old"), "-");
    check("files/a", Some("files/.replay-patch.8.0.0.new"), None, "is not a .replay-patch.7.*");
    check("files/a", Some("files/evil"), None, "is not a .replay-patch.7.*");
    check("files/a", Some("outside/.replay-patch.7.0.0.new"), None, "beside");
    check("outside/a", None, None, "no read-write allowed directory");
    check("files/ro/a", None, None, "no read-write allowed directory");
    check("files/.env", None, None, "denied");
    check("files/link/a", None, None, "without a symlink");
    check("files/../outside/a", None, None, "not an absolute path");
    fs::remove_dir_all(&root).unwrap();
}
