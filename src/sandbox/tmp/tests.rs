//! `sweep`: what a starting server does with the directories it finds in the per-user parent.

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
fn gone_servers_directories_are_removed_and_nothing_else() {
    let parent = scratch("sweep");
    std::fs::create_dir_all(parent.join(GONE).join("sub")).unwrap();
    std::fs::write(parent.join(GONE).join("left"), "x").unwrap();
    std::fs::create_dir(parent.join("4194302")).unwrap();
    std::fs::write(parent.join("4194301"), "a file, not a directory").unwrap();
    // pid 1 is running; a name that is not a pid is not a server's.
    std::fs::create_dir(parent.join("1")).unwrap();
    std::fs::create_dir(parent.join("notes")).unwrap();
    sweep(&parent);
    assert_eq!(names(&parent), ["1", "notes"]);
    std::fs::remove_dir_all(&parent).unwrap();
}
