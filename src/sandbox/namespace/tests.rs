//! `plan`: which places get a mount of their own, in which order.

use super::*;

/// `places` as `path:rw` or `path:ro`; `expect` as `ro /` or `rw /` then the mounts in order.
#[track_caller]
fn check(places: &[&str], expect: &str) {
    let places: Vec<Place> = places
        .iter()
        .map(|spec| {
            let (path, access) = spec.rsplit_once(':').expect("path:access");
            Place { path: PathBuf::from(path), writable: access == "rw" }
        })
        .collect();
    let plan = plan(&places);
    let mut got = vec![format!("{} /", if plan.read_only_root { "ro" } else { "rw" })];
    for place in plan.binds {
        got.push(format!("{}:{}", place.path.display(), if place.writable { "rw" } else { "ro" }));
    }
    assert_eq!(got.join(" "), expect, "{places:?}");
}

#[test]
fn places_differing_from_around_them_get_a_mount() {
    check(&[], "ro /");
    check(&["/w:rw"], "ro / /w:rw");
    // A read-only root needs nothing: / is read-only already.
    check(&["/r:ro"], "ro /");
    check(&["/w:rw", "/r:ro"], "ro / /w:rw");
    // Nested: outermost first, whatever the order given.
    check(&["/w/r:ro", "/w:rw"], "ro / /w:rw /w/r:ro");
    check(&["/w:rw", "/w/r:ro", "/w/r/w2:rw"], "ro / /w:rw /w/r:ro /w/r/w2:rw");
    // A writable place inside a writable one needs no mount of its own.
    check(&["/w:rw", "/w/tmp:rw"], "ro / /w:rw");
    check(&["/r:ro", "/r/w:rw", "/r/w/r2:ro"], "ro / /r/w:rw /r/w/r2:ro");
}

#[test]
fn writable_places_holding_a_read_only_one_get_a_mount() {
    // The directories between (`places` adds them) become mount points, which cannot be renamed.
    check(
        &["/w:rw", "/w/a:rw", "/w/a/b:rw", "/w/a/b/r:ro"],
        "ro / /w:rw /w/a:rw /w/a/b:rw /w/a/b/r:ro",
    );
    check(&["/:rw", "/a:rw", "/a/r:ro"], "rw / /a:rw /a/r:ro");
}

#[test]
fn prefix_siblings_are_not_nested() {
    check(&["/w:rw", "/w2:ro", "/w-x/r:ro"], "ro / /w:rw");
    check(&["/w:rw", "/wr:rw"], "ro / /w:rw /wr:rw");
}

#[test]
fn the_same_path_twice_is_writable_if_either_is() {
    check(&["/w:ro", "/w:rw"], "ro / /w:rw");
    check(&["/w:rw", "/w:ro"], "ro / /w:rw");
    check(&["/w:rw", "/w:rw"], "ro / /w:rw");
}

#[test]
fn a_writable_slash_leaves_everything_writable() {
    check(&["/:rw"], "rw /");
    check(&["/:rw", "/r:ro", "/w:rw"], "rw / /r:ro");
    check(&["/:ro", "/w:rw"], "ro / /w:rw");
}

/// `places` as for `check`, `keep` and `masks` as paths; `expect` as the mounts in order, then
/// `| mask(dirs,…)` for each mask that applies.
#[track_caller]
fn check_masks(places: &[&str], keep: &[&str], masks: &[&str], expect: &str) {
    let places: Vec<Place> = places
        .iter()
        .map(|spec| {
            let (path, access) = spec.rsplit_once(':').expect("path:access");
            Place { path: PathBuf::from(path), writable: access == "rw" }
        })
        .collect();
    let keep: Vec<PathBuf> = keep.iter().map(PathBuf::from).collect();
    let masks: Vec<PathBuf> = masks.iter().map(PathBuf::from).collect();
    let plan = plan(&places);
    let masked = mask_plan(&places, &keep, &masks, &plan.binds);
    let mut got: Vec<String> = masked
        .binds
        .iter()
        .map(|p| format!("{}:{}", p.path.display(), if p.writable { "rw" } else { "ro" }))
        .collect();
    for mask in masked.masks {
        let dirs: Vec<String> = mask.dirs.iter().map(|d| d.display().to_string()).collect();
        got.push(format!("| {}({})", mask.path.display(), dirs.join(",")));
    }
    assert_eq!(got.join(" "), expect, "{places:?} {keep:?} {masks:?}");
}

#[test]
fn masks_keep_the_places_and_grants_under_them() {
    check_masks(&[], &[], &["/tmp", "/run"], "| /tmp() | /run()");
    // A read-only root under a mask gets a mount of its own, and mount points.
    check_masks(&["/tmp/a/r:ro"], &[], &["/tmp"], "/tmp/a/r:ro | /tmp(a,a/r)");
    check_masks(
        &["/tmp/w:rw", "/tmp/w/r:ro"],
        &[],
        &["/tmp"],
        "/tmp/w:rw /tmp/w/r:ro | /tmp(w,w/r)",
    );
    // A kept directory under a mask is read-only; inside a place, the place's copy holds it.
    check_masks(
        &["/tmp/w:rw"],
        &["/tmp/h/.cargo", "/tmp/w/c"],
        &["/tmp"],
        "/tmp/w:rw /tmp/h/.cargo:ro | /tmp(w,h,h/.cargo)",
    );
    // A mask that is a place or a kept directory is granted whole.
    check_masks(&["/tmp:rw"], &["/run"], &["/tmp", "/run"], "/tmp:rw");
    // A mask inside a place goes on after it; one given twice once.
    check_masks(&["/var:rw"], &[], &["/var/run", "/var/run"], "/var:rw | /var/run()");
    // Places outside every mask are as `plan` makes them.
    check_masks(&["/w:rw", "/r:ro"], &[], &["/tmp"], "/w:rw | /tmp()");
}
