//! `Status::note`: what list_allowed_directories and stderr say for each state of the layers.

use super::*;

#[track_caller]
fn check(kernel: Kernel, isolation: Isolation, expect: Option<&str>) {
    let status = Status { kernel, isolation };
    assert_eq!(status.note().as_deref(), expect, "{status:?}");
}

#[test]
fn notes() {
    let why = || "unshare: EPERM".to_string();
    check(Kernel::Enforced, Isolation::Namespace, None);
    check(Kernel::Enforced, Isolation::NoCommands, None);
    check(
        Kernel::Enforced,
        Isolation::Seccomp(why()),
        Some("[sandbox: no mount namespace (unshare: EPERM): commands may not change modes, owners, times or extended attributes (chmod, chown, touch), even in read-write directories]"),
    );
    check(
        Kernel::Unsupported,
        Isolation::Namespace,
        Some("[sandbox: this kernel has no Landlock: commands can read anything the user can, and write only in the read-write directories]"),
    );
    check(
        Kernel::Unsupported,
        Isolation::Seccomp(why()),
        Some("[sandbox: this kernel has no Landlock: commands can reach anything the user can; no mount namespace (unshare: EPERM): commands may not change modes, owners, times or extended attributes (chmod, chown, touch), even in read-write directories]"),
    );
    check(
        Kernel::Partial,
        Isolation::Namespace,
        Some("[sandbox: Landlock partly enforced: this kernel's Landlock is older than replay asks for]"),
    );
    check(
        Kernel::Enforced,
        Isolation::Unavailable(why()),
        Some("[sandbox: no mount namespace (unshare: EPERM) and no seccomp filter for this architecture: commands can change the modes, owners and times of anything the user owns]"),
    );
    check(
        Kernel::Disabled,
        Isolation::Off,
        Some("[sandbox: off (--no-sandbox): commands run by execute_command can reach anything the user can]"),
    );
    check(
        Kernel::Deferred,
        Isolation::Off,
        Some("[sandbox: waiting for the client's roots: no directory is allowed yet]"),
    );
}

#[test]
fn covers_that_could_not_be_made_say_commands_are_refused() {
    #[track_caller]
    fn check(status_note: Option<&str>, covers: Option<Result<(), &str>>, expect: Option<&str>) {
        let covering =
            covers.map(|c| Arc::new(covering::Covering::done(c.map_err(str::to_string))));
        let confinement = CommandConfinement { covering, ..CommandConfinement::default() };
        assert_eq!(confinement.note(status_note).as_deref(), expect);
    }
    let refused = "deny rules could not be applied to commands (more than 4096 paths match \
                   them), so execute_command is refused: allow a narrower directory, or start \
                   replay with --no-default-deny or fewer --deny rules";
    let gave_up = Some(Err("more than 4096 paths match them"));
    check(None, None, None);
    check(None, Some(Ok(())), None);
    check(Some("[sandbox: x]"), Some(Ok(())), Some("[sandbox: x]"));
    check(None, gave_up, Some(&format!("[sandbox: {refused}]")));
    check(Some("[sandbox: x]"), gave_up, Some(&format!("[sandbox: x; {refused}]")));
}
