//! Attacks on the deny rules, the client roots and the audit log: a client root inside a
//! denied directory, decoys that exhaust the commands' covers, the audit log replaced through
//! a tool, an odd roots answer, and what apply_patch's audit line names.

use serde_json::json;

use crate::harness::{Server, TestEnv};

/// A client root inside a denied directory (`file:///…/.aws`) becomes an allowed directory of
/// its own; the rules still count from the command line's directory, so `.aws/` still matches
/// and `credentials` is refused.
#[test]
fn a_client_root_inside_a_denied_directory_does_not_lift_the_rule() {
    let env = TestEnv::new(
        &[],
        &[("root/.aws/credentials", "aws_secret_access_key=AKIASECRET\n"), ("root/a", "a")],
    );
    let allow = format!("{}:rw", env.p("root"));
    let mut server = Server::spawn(["--mcp-server", "--allow", &allow]);
    crate::roots::initialize_with_roots(&mut server);
    crate::roots::answer_roots(&mut server, &[env.p("root/.aws")]);
    server.call_err("read_file", json!({"path": env.p("root/.aws/credentials")}), -32001);
    server.call_err(
        "grep_files",
        json!({"directory": env.p("root/.aws"), "regex": "AKIA"}),
        -32001,
    );
}
