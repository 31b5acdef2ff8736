//! Glob splitting and matching, walk order, exclusion.

use super::*;

#[track_caller]
fn check(pattern: &str, expect: (&str, &str)) {
    let (base, rest) = split_glob(pattern);
    assert_eq!((base.to_str().unwrap(), rest.as_str()), expect, "{pattern}");
}

#[test]
fn splitting() {
    check("/src/app/**/*.rs", ("/src/app", "**/*.rs"));
    check("/src/*.rs", ("/src", "*.rs"));
    check("*.rs", ("", "*.rs"));
    check("src/{a,b}/x.txt", ("src", "{a,b}/x.txt"));
    check("/a/b/c.txt", ("/a/b", "c.txt"));
    check("/*", ("/", "*"));
    check("a/[ab]/**", ("a", "[ab]/**"));
}

#[test]
fn glob_detection() {
    for s in ["*.rs", "a?", "{a,b}", "x[0-9]", "}"] {
        assert!(is_glob(s), "{s}");
    }
    for s in ["/a/b.rs", "plain", "a-b_c.d"] {
        assert!(!is_glob(s), "{s}");
    }
}

#[test]
fn matching() {
    let set = glob_set("globs", &["**/*.rs".to_string(), "*.md".to_string()]).unwrap();
    assert!(set.is_match("a/b/c.rs"));
    assert!(set.is_match("c.rs"));
    assert!(set.is_match("README.md"));
    assert!(!set.is_match("docs/README.md"));
    let err = glob_set("globs", &["a[".to_string()]).unwrap_err();
    assert!(err.to_string().contains("invalid glob"), "{err}");
}

#[test]
fn order_is_depth_first_by_name() {
    let mut paths = vec!["a.txt", "a/b", "a", "a/b/c", "a-b", "B", "a/a"];
    paths.sort_by(|a, b| path_order(Path::new(a), Path::new(b)));
    assert_eq!(paths, ["B", "a", "a/a", "a/b", "a/b/c", "a-b", "a.txt"]);
}

#[test]
fn walks_sorted_without_following_links_and_honors_excludes() {
    let root = std::env::temp_dir().join(format!("replay-walk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for dir in ["x/y", "skip/deep", ".git", "z"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    for file in
        ["x/y/f.rs", "skip/deep/g.rs", ".git/HEAD", "z/ignored.log", "top.txt", ".replay-tmp.1.2"]
    {
        std::fs::write(root.join(file), "x").unwrap();
    }
    std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    std::os::unix::fs::symlink("/", root.join("x/out")).unwrap();
    let names = |options: &WalkOptions| -> Vec<String> {
        entries(&root, options).iter().map(|e| e.rel().display().to_string()).collect()
    };
    let all = names(&WalkOptions::default());
    assert_eq!(
        all,
        [
            ".git",
            ".git/HEAD",
            ".gitignore",
            "skip",
            "skip/deep",
            "skip/deep/g.rs",
            "top.txt",
            "x",
            "x/out",
            "x/y",
            "x/y/f.rs",
            "z",
            "z/ignored.log"
        ]
    );
    let exclude = Exclude::new(&["skip".to_string()]).unwrap();
    let excluded = names(&WalkOptions { exclude, ..Default::default() });
    assert!(!excluded.iter().any(|n| n.starts_with("skip")), "{excluded:?}");
    let ignored = names(&WalkOptions { respect_gitignore: true, ..Default::default() });
    assert!(!ignored.iter().any(|n| n.starts_with(".git/") || n.ends_with(".log")), "{ignored:?}");
    assert!(ignored.contains(&".gitignore".to_string()));
    let shallow = names(&WalkOptions { max_depth: Some(1), ..Default::default() });
    assert_eq!(shallow, [".git", ".gitignore", "skip", "top.txt", "x", "z"]);
    std::fs::remove_dir_all(&root).unwrap();
}
