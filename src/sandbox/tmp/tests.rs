//! `sweep`: what a starting server does with the directories it finds in the per-user parent.

use std::os::unix::fs::PermissionsExt;

use super::*;

/// A pid no process has: the kernel's largest.
const GONE: &str = "4194303";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("replay-tmp-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).expect("scratch dir");
    dir
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_gone_servers_directory_is_reused_emptied_and_private() {
    let parent = scratch("reuse");
    let gone = parent.join(GONE);
    std::fs::create_dir_all(gone.join("sub")).unwrap();
    std::fs::write(gone.join("left"), "x").unwrap();
    std::fs::set_permissions(&gone, std::fs::Permissions::from_mode(0o777)).unwrap();
    // pid 1 is running; a name that is not a pid is not a server's.
    std::fs::create_dir(parent.join("1")).unwrap();
    std::fs::create_dir(parent.join("notes")).unwrap();
    let mine = parent.join(std::process::id().to_string());
    assert!(sweep(&parent, &mine));
    assert_eq!(names(&mine), Vec::<String>::new());
    assert_eq!(std::fs::metadata(&mine).unwrap().permissions().mode() & 0o777, 0o700);
    let mut expect = vec!["1".to_string(), "notes".to_string(), std::process::id().to_string()];
    expect.sort();
    assert_eq!(names(&parent), expect);
    std::fs::remove_dir_all(&parent).unwrap();
}

#[test]
fn only_one_is_reused_and_the_others_are_removed() {
    let parent = scratch("remove");
    for pid in [GONE, "4194302", "4194301"] {
        std::fs::create_dir(parent.join(pid)).unwrap();
    }
    std::fs::write(parent.join("4194300"), "a file, not a directory").unwrap();
    let mine = parent.join(std::process::id().to_string());
    assert!(sweep(&parent, &mine));
    assert_eq!(names(&parent), [std::process::id().to_string()]);
    std::fs::remove_dir_all(&parent).unwrap();
}

#[test]
fn with_nothing_to_reuse_nothing_is_claimed() {
    let parent = scratch("none");
    std::fs::create_dir(parent.join("1")).unwrap();
    let mine = parent.join(std::process::id().to_string());
    assert!(!sweep(&parent, &mine));
    assert_eq!(names(&parent), ["1"]);
    std::fs::remove_dir_all(&parent).unwrap();
}
