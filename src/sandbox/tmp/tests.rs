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
    // This process, by its pid and start time; and its pid with another start time: a server
    // that had the pid before it, which has ended.
    let own = own_name();
    std::fs::create_dir(parent.join(&own)).unwrap();
    std::fs::create_dir(parent.join(format!("{own}.caches"))).unwrap();
    let before = format!("{}-1", std::process::id());
    std::fs::create_dir(parent.join(&before)).unwrap();
    std::fs::create_dir(parent.join(format!("{before}.caches"))).unwrap();
    std::fs::create_dir(parent.join(format!("{GONE}-5"))).unwrap();
    sweep(&parent);
    let mut kept = vec!["1".to_string(), own.clone(), format!("{own}.caches"), "notes".into()];
    kept.sort();
    assert_eq!(names(&parent), kept);
    std::fs::remove_dir_all(&parent).unwrap();
}

/// A link anywhere in a gone server's caches' directory is not followed: the directories it
/// points to keep their modes, and the overlay's own mode-0 directory is opened and removed.
#[test]
fn the_sweep_follows_no_link_in_a_caches_directory() {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let parent = scratch("links");
    let outside = parent.join("outside");
    std::fs::create_dir_all(outside.join("locked")).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let set = |p: &Path, m: u32| std::fs::set_permissions(p, PermissionsExt::from_mode(m)).unwrap();
    set(&outside.join("locked"), 0o555);
    let caches = parent.join(format!("{GONE}.caches"));
    std::fs::create_dir_all(caches.join("real/work/work")).unwrap();
    set(&caches.join("real/work/work"), 0);
    std::fs::create_dir_all(caches.join("inner")).unwrap();
    symlink(&outside, caches.join("linked")).unwrap();
    symlink(&outside, caches.join("inner/work")).unwrap();
    std::fs::create_dir_all(caches.join("deep/work")).unwrap();
    symlink(outside.join("locked"), caches.join("deep/work/work")).unwrap();
    sweep(&parent);
    let left = (names(&parent), mode(&outside.join("locked")));
    set(&outside.join("locked"), 0o755);
    std::fs::remove_dir_all(&parent).unwrap();
    assert_eq!(left, (vec!["outside".to_string()], 0o555));
}
