//! Crashes: a server SIGKILLed mid-write leaves every file one whole version, never torn, and
//! the next server's first write into a directory sweeps the temp files dead servers left
//! there, and only those. Run with `--nocapture` to see the rounds' statistics.

use std::io::Write;
use std::process::Stdio;
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::sys::signal::kill;
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::harness::{
    raw_request, replay_command, report, temp_files, Proc, Server, TestEnv, REPLY_TIMEOUT,
    TEMP_PREFIX,
};

/// A pid that no process has now: a child that ran and was reaped.
fn dead_pid() -> u32 {
    let mut child = replay_command()
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawning replay --version");
    let pid = child.id();
    child.wait().expect("waiting for replay --version");
    let raw = Pid::from_raw(i32::try_from(pid).expect("pid fits i32"));
    assert_eq!(kill(raw, None), Err(nix::errno::Errno::ESRCH), "pid {pid} was reused at once");
    pid
}

const CRASH_ROUNDS: usize = 20;
/// Versions each round queues per file, alternating write_file and edit_file.
const CRASH_STEPS: u32 = 6;
/// The files' sizes: each version fills a whole file with one 128-byte tag.
const CRASH_SIZES: [usize; 3] = [2 << 20, 7 << 19, 5 << 20];
const TAG_BYTES: usize = 128;

/// Version `k` of crash file `f`: its tag, `TAG_BYTES` long, repeated to the file's size.
fn crash_content(f: usize, k: u32) -> String {
    let mut tag = format!("<file {f} version {k:06}>");
    tag.extend(std::iter::repeat_n('.', TAG_BYTES - 1 - tag.len()));
    tag.push('\n');
    tag.repeat(CRASH_SIZES[f] / TAG_BYTES)
}

/// The version crash file `f` holds, after checking that it is one whole version.
#[track_caller]
fn crash_version(env: &TestEnv, f: usize) -> u32 {
    let bytes = env.read(&format!("root/crash/f{f}.txt"));
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(TAG_BYTES)]).into_owned();
    let version = head
        .strip_prefix(&format!("<file {f} version "))
        .and_then(|rest| rest.get(..6))
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_else(|| {
            panic!("f{f}.txt ({} bytes) starts with no version tag: {head:?}", bytes.len())
        });
    let whole = bytes.len() == CRASH_SIZES[f] && bytes == crash_content(f, version).as_bytes();
    assert!(
        whole,
        "f{f}.txt ({} bytes) is not one whole version {version}: torn or truncated",
        bytes.len()
    );
    version
}

/// The request that takes crash file `path` (number `f`) from version `k - 1` to `k`: a
/// write_file when `step` is even, else an edit_file. Built by hand: serde_json in a debug build
/// takes about 100 ms to serialize 5 MB, which would decide when the kill lands.
fn crash_request(id: usize, path: &str, f: usize, k: u32, step: usize) -> String {
    let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":"#);
    let path = Value::from(path);
    if step % 2 == 0 {
        // The content's only character that JSON escapes is the newline.
        let content = crash_content(f, k).replace('\n', "\\n");
        format!(
            r#"{head}{{"name":"write_file","arguments":{{"path":{path},"content":"{content}"}}}}}}"#
        )
    } else {
        let edit = json!({"oldText": format!("version {:06}", k - 1),
                          "newText": format!("version {k:06}"), "limit": 0});
        format!(r#"{head}{{"name":"edit_file","arguments":{{"path":{path},"edits":[{edit}]}}}}}}"#)
    }
}

/// xorshift64*: enough randomness for kill delays, with a seed that can be reported.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// Rounds of: a server gets write_file and edit_file calls on three 2-5 MB files, pipelined,
/// and is SIGKILLed 2-200 ms after a random one of its first replies (or after none). Each file
/// must then hold exactly one whole version, no older than the last one acknowledged. Then a
/// new server's first write in the directory must leave no temp file of a dead server there
/// (the kills' leftovers plus a planted one). `REPLAY_CRASH_SEED` replays a reported seed.
#[test]
fn sigkill_mid_write_leaves_whole_files_and_the_next_server_sweeps_temp_files() {
    let env = TestEnv::new(&["root/crash"], &[]);
    for f in 0..CRASH_SIZES.len() {
        env.write(&format!("root/crash/f{f}.txt"), crash_content(f, 0));
    }
    let seed =
        std::env::var("REPLAY_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1
        });
    let mut rng = Rng(seed);
    let crash_dir = env.path("root/crash");
    let (mut rounds_acked, mut rounds_with_temp, mut acks) = (0, 0, 0);
    for round in 0..CRASH_ROUNDS {
        let acked = crash_round(&env, &mut rng, round, seed);
        rounds_acked += usize::from(acked > 0);
        acks += acked;
        rounds_with_temp += usize::from(!temp_files(&crash_dir).is_empty());
    }
    report(
        "crash",
        &format!(
            "seed {seed}; {CRASH_ROUNDS} rounds, {acks} writes acknowledged, \
         {rounds_acked} rounds with an acknowledged write, \
         {rounds_with_temp} rounds that left a temp file behind"
        ),
    );

    // Whatever the kills left, plus one left by a server that is surely dead.
    let planted = format!("{TEMP_PREFIX}{}.0", dead_pid());
    env.write(&format!("root/crash/{planted}"), "stale");
    let leftovers = temp_files(&crash_dir);
    let mut server = Server::start(&env);
    server.call_text("write_file", json!({"path": env.p("root/crash/next.txt"), "content": "n"}));
    assert_eq!(
        temp_files(&crash_dir),
        Vec::<String>::new(),
        "stale temp files survived (were: {leftovers:?})"
    );
    for f in 0..CRASH_SIZES.len() {
        crash_version(&env, f);
    }
}

/// One round of the test above: a server gets the next `CRASH_STEPS` versions of every crash
/// file, pipelined, and is SIGKILLed at a random point; each file must then hold one whole
/// version, no older than the last acknowledged. Returns how many writes were acknowledged.
fn crash_round(env: &TestEnv, rng: &mut Rng, round: usize, seed: u64) -> usize {
    let before: Vec<u32> = (0..CRASH_SIZES.len()).map(|f| crash_version(env, f)).collect();
    // Request id -> (file, version it makes, step); ids in sending order.
    let mut plan = Vec::new();
    for step in 1..=CRASH_STEPS {
        for (f, &base) in before.iter().enumerate() {
            plan.push((f, base + step, round + f + step as usize));
        }
    }
    let mut server = Proc::spawn(env);
    let replies = server.lines();
    let mut stdin = server.take_stdin();
    // The clock starts once the server is up: its start-up is not what is tested.
    writeln!(stdin, "{}", raw_request("ready", "ping", json!({}))).expect("writing");
    let ready = server.next_message(&replies, REPLY_TIMEOUT);
    assert_eq!(ready["id"], json!("ready"), "{ready}");
    let paths: Vec<String> =
        (0..CRASH_SIZES.len()).map(|f| env.p(&format!("root/crash/f{f}.txt"))).collect();
    let sent = plan.clone();
    // The writer hands its end of the pipe back rather than closing it: on EOF a server that
    // finished every write in time would exit 0 before the kill (CI saw it in round 9).
    let writer = thread::spawn(move || {
        for (id, &(f, k, step)) in sent.iter().enumerate() {
            let line = crash_request(id, &paths[f], f, k, step);
            // Fails with EPIPE once the server is killed.
            if writeln!(stdin, "{line}").and_then(|()| stdin.flush()).is_err() {
                break;
            }
        }
        stdin
    });
    // A debug build takes 100-250 ms per call on these files, so a delay counted from
    // the start would mostly kill the server before its first write. Counted from a random
    // reply, it lands anywhere in the next call: parsing, writing the temp file, renaming.
    let (wait_for, delay) = (rng.below(3), Duration::from_millis(2 + rng.below(199)));
    let mut early = Vec::new();
    while early.len() < wait_for as usize {
        early.push(server.next_message(&replies, REPLY_TIMEOUT));
    }
    thread::sleep(delay);
    server.sigkill();
    let status = server.wait(REPLY_TIMEOUT);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "round {round}: replay ended before the kill: {status:?}; stderr:\n{}",
        server.stderr()
    );
    drop(writer.join().expect("writer thread"));
    let (mut acked, mut acks) = (vec![0; CRASH_SIZES.len()], 0);
    early.extend(server.rest_of_output(&replies, REPLY_TIMEOUT));
    for reply in early {
        let id = reply["id"].as_u64().unwrap_or_else(|| panic!("round {round}: {reply}")) as usize;
        let &(f, k, _) =
            plan.get(id).unwrap_or_else(|| panic!("round {round}: unknown id {reply}"));
        assert!(reply.get("error").is_none(), "round {round}: request {id} failed: {reply}");
        acked[f] = acked[f].max(k);
        acks += 1;
    }
    for (f, &base) in before.iter().enumerate() {
        let version = crash_version(env, f);
        let newest_sent = base + CRASH_STEPS;
        assert!(
            version >= base.max(acked[f]) && version <= newest_sent,
            "round {round} (kill {delay:?} after reply {wait_for}, seed {seed}): \
             f{f}.txt holds version {version}; it held {base}, version {} was acknowledged, \
             {newest_sent} the last sent",
            acked[f]
        );
    }
    acks
}

/// What the sweep takes: in the directory written to, the `.replay-tmp.<pid>.<n>` regular
/// files of dead pids, and their directories (a copy_file cut short) with what is in them; not
/// a live process's, not other names, not other directories. It runs once per directory per process: a stale file planted after the first
/// write there stays until another process writes there.
#[test]
fn the_first_write_into_a_directory_sweeps_only_dead_servers_temp_files() {
    let env = TestEnv::new(&["root/d", "root/other"], &[]);
    let dead = dead_pid();
    let live = std::process::id();
    let stale = [format!("{TEMP_PREFIX}{dead}.0"), format!("{TEMP_PREFIX}{dead}.17")];
    let kept = [
        format!("{TEMP_PREFIX}{live}.3"),
        format!("{TEMP_PREFIX}x{dead}.1"),
        format!("{TEMP_PREFIX}{dead}"),
        format!("{TEMP_PREFIX}{dead}.5.bak"),
        format!("{TEMP_PREFIX}0.1"),
    ];
    for name in stale.iter().chain(&kept) {
        env.write(&format!("root/d/{name}"), "t");
    }
    env.write(&format!("root/d/{TEMP_PREFIX}{dead}.4/half-copied/file"), "t");
    env.write(&format!("root/other/{TEMP_PREFIX}{dead}.0"), "t");
    let mut expected: Vec<String> = kept.to_vec();
    expected.sort();

    let mut server = Server::start(&env);
    server.call_text("write_file", json!({"path": env.p("root/d/a.txt"), "content": "a"}));
    assert_eq!(temp_files(&env.path("root/d")), expected);
    assert_eq!(temp_files(&env.path("root/other")), [format!("{TEMP_PREFIX}{dead}.0")]);

    // Swept once: a second write in root/d does not read the directory again.
    let late = format!("{TEMP_PREFIX}{dead}.99");
    env.write(&format!("root/d/{late}"), "t");
    server.call_text(
        "edit_file",
        json!({"path": env.p("root/d/a.txt"), "edits": [{"oldText": "a", "newText": "b"}]}),
    );
    assert!(env.exists(&format!("root/d/{late}")), "root/d was read again on a later write");
    server.call_text("write_file", json!({"path": env.p("root/other/o.txt"), "content": "o"}));
    assert_eq!(temp_files(&env.path("root/other")), Vec::<String>::new());

    // A new process sweeps root/d again.
    drop(server);
    let mut server = Server::start(&env);
    server.call_text("write_file", json!({"path": env.p("root/d/a.txt"), "content": "c"}));
    assert!(!env.exists(&format!("root/d/{late}")), "a new server left {late}");
    assert_eq!(temp_files(&env.path("root/d")), expected);
}
