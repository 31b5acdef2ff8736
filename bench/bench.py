#!/usr/bin/env python3
"""replay benchmark suite: replay vs ripgrep, find and other MCP filesystem servers.

Usage (from the repository root):

    python3 bench/bench.py [--corpus /tmp/replay-corpus] [--peers /tmp/replay-peers]
                           [--replay target/release/replay] [--only NAME,...] [--quick]

The corpus and the peers are made by ../shared/bench/make-corpus.sh and ../shared/bench/peers.sh;
this script sets up nothing itself. The Markdown table goes to stdout, progress to stderr, and
everything (with machine info) to bench/results/latest.json. See bench/README.md.

Python 3 standard library only, plus bench/mcpclient.c (compiled on the fly with `cc`) for the
sequential/pipelined small-read, spawn and cold-start rows.

The cold start alone (spawn → initialize → tools/list → exit, replay against the official
server, with the binary's size):

    python3 bench/bench.py --only cold-start
"""

import argparse
import atexit
import datetime
import json
import math
import os
import platform
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque

# One schema file per tool: the count tools/list must give.
TOOL_COUNT = len([f for f in os.listdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'schemas')) if f.endswith('.json')])

PROTOCOL_VERSION = "2025-06-18"
CALL_TIMEOUT = 300.0  # seconds; the slowest peer call (official-fs name search) takes ~1.5 s
GREP_CAP = 10000

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

BENCHMARKS = [
    "grep",
    "name-search",
    "glob",
    "tree",
    "small-reads",
    "read-5mib",
    "read-sjis",
    "list-dir",
    "spawn",
    "cold-start",
    "rss",
    "edits",
    "paging",
    "edit-miss",
    "patch",
    "tokens",
    "reply-budget",
    "deny-cost",
]

# Run only when named in --only: they need data of their own (scale: ../shared/bench/make-million.sh).
OPTIONAL_BENCHMARKS = ["scale", "sessions"]

# The npm tokenizer the tokens row counts with: the same package and version as
# ../shared/tools/count-tokens, installed once into this directory (REPLAY_TOKENS_DIR).
TIKTOKEN = "tiktoken@1.0.22"
TOKENS_DIR = os.environ.get("REPLAY_TOKENS_DIR", "/tmp/replay-tokens")

# (primary regex, rarer fallback used when the primary hits replay's 10,000-match cap)
GREP_REGEXES = [
    (r"impl\s+\w+\s+for\s+\w+", r"impl\s+Clone\s+for\s+\w+"),
    (r"unsafe fn", r"unsafe fn \w+\(&mut self"),
]

now = time.perf_counter


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# statistics and formatting


def median(xs):
    return statistics.median(xs) if xs else None


def p95(xs):
    """Nearest-rank 95th percentile (with 10 samples it is the slowest one)."""
    if not xs:
        return None
    s = sorted(xs)
    return s[max(0, math.ceil(0.95 * len(s)) - 1)]


def fmt_num(x):
    if x is None:
        return "n/a"
    ax = abs(x)
    if ax >= 1000:
        return f"{x:,.0f}"
    if ax >= 100:
        return f"{x:.0f}"
    if ax >= 10:
        return f"{x:.1f}"
    if ax >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def fmt_ratio(r):
    return "n/a" if r is None else f"{r:.2f}"


# --------------------------------------------------------------------------------------------
# MCP stdio client


class McpError(Exception):
    pass


class McpTimeout(McpError):
    pass


class McpClient:
    """A newline-delimited JSON-RPC 2.0 client for an MCP server on stdio.

    Replies are matched by id (they may come out of order); each reply line is stamped with
    the time its last byte was read, so a call's time is the full round trip and excludes the
    client's JSON parsing.
    """

    def __init__(self, argv, name, cwd=None):
        self.name = name
        self.argv = argv
        self.t_spawn = now()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
            cwd=cwd,
        )
        self.in_fd = self.proc.stdin.fileno()
        self.out_fd = self.proc.stdout.fileno()
        self.buf = bytearray()
        self.lines = deque()  # (arrival time, raw line)
        self.stash = {}  # id -> (arrival time, message)
        self.next_id = 1
        self._tools = None
        self.line_bytes = {}  # id -> bytes of its reply line, newline excluded

    # -- wire

    def _write_all(self, data):
        view = memoryview(data)
        while view:
            n = os.write(self.in_fd, view)
            view = view[n:]

    def send(self, msg):
        self._write_all(json.dumps(msg, separators=(",", ":")).encode() + b"\n")

    def _fill(self, deadline):
        timeout = deadline - now()
        if timeout <= 0:
            raise McpTimeout(f"{self.name}: no reply in time")
        r, _, _ = select.select([self.out_fd], [], [], timeout)
        if not r:
            raise McpTimeout(f"{self.name}: no reply in time")
        data = os.read(self.out_fd, 1 << 20)
        t = now()
        if not data:
            raise McpError(f"{self.name}: server closed stdout (exit code {self.proc.poll()})")
        had_newline = b"\n" in data
        self.buf += data
        if had_newline:
            parts = bytes(self.buf).split(b"\n")
            self.buf = bytearray(parts.pop())
            for p in parts:
                if p.strip():
                    self.lines.append((t, p))

    def wait_for(self, req_id, timeout=CALL_TIMEOUT):
        """Return (arrival time, message) of the reply to req_id."""
        deadline = now() + timeout
        while True:
            if req_id in self.stash:
                return self.stash.pop(req_id)
            while self.lines:
                t, raw = self.lines.popleft()
                try:
                    msg = json.loads(raw)
                except ValueError:
                    raise McpError(f"{self.name}: not JSON on stdout: {raw[:200]!r}")
                if isinstance(msg, list):  # a batch reply
                    for m in msg:
                        if isinstance(m, dict) and "id" in m:
                            self.stash[m["id"]] = (t, m)
                    continue
                if not isinstance(msg, dict) or "id" not in msg:
                    continue  # a notification
                self.line_bytes[msg["id"]] = len(raw)
                if "method" in msg:
                    # a request from the server (e.g. roots/list): refuse it politely
                    self.send({"jsonrpc": "2.0", "id": msg["id"],
                               "error": {"code": -32601, "message": "not supported"}})
                    continue
                self.stash[msg["id"]] = (t, msg)
            if req_id in self.stash:
                return self.stash.pop(req_id)
            self._fill(deadline)

    def new_id(self):
        i = self.next_id
        self.next_id += 1
        return i

    def request(self, method, params=None, timeout=CALL_TIMEOUT):
        """Send one request; return (seconds, reply message)."""
        rid = self.new_id()
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        t0 = now()
        self.send(msg)
        t1, reply = self.wait_for(rid, timeout)
        return t1 - t0, reply

    # -- MCP

    def initialize(self, timeout=60.0):
        """initialize + notifications/initialized; returns seconds from spawn to the reply."""
        rid = self.new_id()
        self.send({"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "replay-bench", "version": "1"},
        }})
        t1, reply = self.wait_for(rid, timeout)
        if "result" not in reply:
            raise McpError(f"{self.name}: initialize failed: {reply.get('error')}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return t1 - self.t_spawn

    def result(self, tool, args, timeout=CALL_TIMEOUT):
        """tools/call; returns its whole `result` (or raises McpError)."""
        _, reply = self.request("tools/call", {"name": tool, "arguments": args}, timeout)
        if "error" in reply:
            raise McpError(f"{self.name} {tool}: error {reply['error']}")
        return reply.get("result", {})

    def tools(self):
        if self._tools is None:
            _, reply = self.request("tools/list", {})
            self._tools = {t["name"]: t for t in reply.get("result", {}).get("tools", [])}
        return self._tools

    def call(self, tool, args, timeout=CALL_TIMEOUT):
        """tools/call; returns (seconds, text of all text content items).

        Raises McpError on a JSON-RPC error or a result with isError."""
        dt, reply = self.request("tools/call", {"name": tool, "arguments": args}, timeout)
        if "error" in reply:
            e = reply["error"]
            raise McpError(f"{self.name} {tool}: error {e.get('code')}: {str(e.get('message'))[:300]}")
        res = reply.get("result", {})
        text = "".join(c.get("text", "") for c in res.get("content", []) if c.get("type") == "text")
        if res.get("isError"):
            raise McpError(f"{self.name} {tool}: isError: {text[:300]}")
        return dt, text

    def pipelined(self, tool, args_list, timeout=CALL_TIMEOUT):
        """Write every request (from a writer thread), read every reply; returns seconds."""
        ids = []
        chunks = []
        for args in args_list:
            rid = self.new_id()
            ids.append(rid)
            chunks.append(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                      "params": {"name": tool, "arguments": args}},
                                     separators=(",", ":")).encode() + b"\n")
        data = b"".join(chunks)
        err = []

        def writer():
            try:
                self._write_all(data)
            except OSError as e:  # pragma: no cover
                err.append(e)

        t0 = now()
        th = threading.Thread(target=writer, daemon=True)
        th.start()
        last = t0
        bad = 0
        for rid in ids:
            t, reply = self.wait_for(rid, timeout)
            last = max(last, t)
            if "error" in reply or reply.get("result", {}).get("isError"):
                bad += 1
        th.join()
        if err:
            raise McpError(f"{self.name}: write failed: {err[0]}")
        if bad:
            raise McpError(f"{self.name}: {bad} of {len(ids)} pipelined calls failed")
        return last - t0

    def vm_hwm_mb(self):
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024.0
        except OSError:
            pass
        return None

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        try:
            self.proc.stdout.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --------------------------------------------------------------------------------------------
# implementations under test


class Impls:
    def __init__(self, args):
        self.corpus = os.path.abspath(args.corpus)
        self.peers = os.path.abspath(args.peers)
        self.replay = os.path.abspath(args.replay)
        bindir = os.path.join(self.peers, "bin")
        self.rg = self._exe(os.path.join(bindir, "rg"))
        self.find = shutil.which("find")
        self.mcp_peers = [  # name -> executable (None when not installed)
            ("official-fs", self._exe(os.path.join(bindir, "official-fs"))),
            ("rust-mcp-filesystem", self._exe(os.path.join(bindir, "rust-mcp-filesystem"))),
        ]

    @staticmethod
    def _exe(path):
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None

    def replay_argv(self, allow=None, budget=None):
        """replay's command line. `budget` is its --max-reply-tokens: None gives whole replies
        (0), as the peers give them, so the rows compare the same work; "default" leaves the
        flag out."""
        argv = [self.replay, "--mcp-server", "--allow", allow or f"{self.corpus}:ro"]
        if budget != "default":
            argv += ["--max-reply-tokens", str(budget or 0)]
        return argv

    @staticmethod
    def peer_argv(exe, dirs=None):
        return [exe] + list(dirs or [])

    def start_replay(self, allow=None, budget=None):
        c = McpClient(self.replay_argv(allow, budget), "replay")
        c.initialize()
        return c

    def start_peer(self, name, exe, dirs=None):
        c = McpClient(self.peer_argv(exe, dirs or [self.corpus]), name)
        c.initialize()
        return c


# --------------------------------------------------------------------------------------------
# C client for the latency rows (bench/mcpclient.c)
#
# Python's own per-call cost (JSON encode/decode, pipe reads, ~0.3 ms) is larger than a small
# read_file round trip on a fast server, so the sequential and pipelined small reads and the
# spawn row are timed by a small C client, compiled on the fly. The Python client still checks
# the content first. Without a C compiler the Python client times them, and a note says so.

_MCPCLIENT = {}


def mcpclient():
    """Path of the compiled bench/mcpclient.c, or None (with the reason in _MCPCLIENT["why"])."""
    if "path" in _MCPCLIENT:
        return _MCPCLIENT["path"]
    _MCPCLIENT["path"] = None
    cc = shutil.which("cc")
    src = os.path.join(HERE, "mcpclient.c")
    if not cc:
        _MCPCLIENT["why"] = "cc not found"
    elif not os.path.isfile(src):
        _MCPCLIENT["why"] = f"{src} missing"
    else:
        tmp = tempfile.mkdtemp(prefix="replay-bench-mcpclient-")
        atexit.register(shutil.rmtree, tmp, True)
        exe = os.path.join(tmp, "mcpclient")
        argv = [cc, "-O2", "-o", exe, src]
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode == 0:
            _MCPCLIENT["path"] = exe
            _MCPCLIENT["cmd"] = " ".join(argv)
            log(f"compiled the C client: {' '.join(argv)}")
        else:
            _MCPCLIENT["why"] = f"`cc -O2 mcpclient.c` failed: {p.stdout.strip()[:300]}"
    if _MCPCLIENT["path"] is None:
        log(f"C client unavailable ({_MCPCLIENT['why']}): the Python client times the latency rows")
    return _MCPCLIENT["path"]


def run_mcpclient(mode, n, tool, path, server_argv, warmup=0, batches=None, name="server"):
    """Run mcpclient; returns its samples in seconds (one per spawn, call or batch)."""
    argv = [mcpclient(), "-w", str(warmup)]
    if batches:
        argv += ["-b", str(batches)]
    argv += [mode, str(n), tool, path, "--"] + list(server_argv)
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise McpError(f"{name}: mcpclient {mode}: {p.stderr.strip()[:300] or f'exit {p.returncode}'}")
    return [float(x) / 1e6 for x in p.stdout.split()]


def client_note():
    """The note under the latency rows saying which client timed them."""
    if mcpclient():
        return ("timed by the C client bench/mcpclient.c (Python's per-call overhead would dominate); "
                "content checked first through the Python client")
    return f"timed by the Python client ({_MCPCLIENT.get('why')}): includes its per-call overhead"


def read_tool(client):
    """The peer's plain-text read tool (read_text_file on newer official-fs, else read_file)."""
    tools = client.tools()
    for t in ("read_text_file", "read_file"):
        if t in tools:
            return t
    return None


# --------------------------------------------------------------------------------------------
# result model


class Group:
    """One benchmark = one row group in the table."""

    def __init__(self, key, title, unit="ms", lower_is_better=True):
        self.key = key
        self.title = title
        self.unit = unit
        self.rows = []
        self.check = "n/a"
        self.check_detail = ""
        self.notes = []
        self.lower_is_better = lower_is_better

    def add(self, impl, samples=None, median_v=None, p95_v=None, result="", peer=True,
            error=None, ratio_basis=None, label=None):
        row = {
            "impl": impl,
            "label": label or impl,
            "peer": peer,
            "n": len(samples) if samples else 0,
            "median": median_v if median_v is not None else median(samples),
            "p95": p95_v if p95_v is not None else p95(samples),
            "result": result,
            "error": error,
            "samples": samples or [],
            # the number ratios are computed from (a time; lower is better)
            "basis": ratio_basis,
        }
        if row["basis"] is None:
            row["basis"] = row["median"]
        self.rows.append(row)
        return row

    def na(self, impl, why, label=None):
        return self.add(impl, result=why, error=why, label=label)

    def set_check(self, ok, detail=""):
        self.check = "OK" if ok else "MISMATCH"
        self.check_detail = detail

    def ratio(self, replay_label=None):
        reps = [r for r in self.rows if r["impl"] == "replay" and r["basis"] is not None
                and (replay_label is None or r["label"] == replay_label)]
        peers = [r for r in self.rows if r["peer"] and r["impl"] != "replay" and r["basis"] is not None
                 and not r["error"]]
        if not reps or not peers:
            return None, None
        best = min(peers, key=lambda r: r["basis"])
        if best["basis"] == 0:
            return None, None
        return reps[0]["basis"] / best["basis"], best["label"]

    def to_json(self):
        ratio, best = self.ratio()
        return {
            "key": self.key, "title": self.title, "unit": self.unit,
            "ratio_replay_over_best_peer": ratio, "best_peer": best,
            "check": self.check, "check_detail": self.check_detail, "notes": self.notes,
            "rows": self.rows,
        }


def summarize(g):
    ratio, best = g.ratio()
    parts = []
    for r in g.rows:
        if r["error"]:
            parts.append(f"{r['label']}: {r['error']}")
        else:
            parts.append(f"{r['label']}: {fmt_num(r['median'])} {g.unit}")
    s = f"[{g.key}] " + "; ".join(parts)
    if ratio is not None:
        s += f"; replay/{best} = {ratio:.2f}"
    s += f"; check {g.check}"
    if g.check_detail:
        s += f" ({g.check_detail})"
    log(s)


# --------------------------------------------------------------------------------------------
# helpers


def run_timed(argv, cwd=None):
    """Run a subprocess, draining its output through a pipe; returns (seconds, stdout)."""
    t0 = now()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd)
    dt = now() - t0
    return dt, p.stdout


def repeat(fn, n, warmup=1):
    """Run fn (returning (seconds, result)) warmup times untimed, then n times."""
    for _ in range(warmup):
        fn()
    times = []
    result = None
    for _ in range(n):
        dt, result = fn()
        times.append(dt)
    return times, result


def cold_session(argv, name):
    """One timed session (spawn → initialize → tools/list → exit), in seconds."""
    if mcpclient():
        return run_mcpclient("cold", 1, "-", "-", argv, name=name)[0]
    c = McpClient(argv, name)
    try:
        c.initialize()
        c.tools()
    finally:
        c.close()
    return now() - c.t_spawn


def ms(xs):
    return [x * 1000.0 for x in xs]


def count_lines(b):
    if isinstance(b, str):
        return sum(1 for ln in b.split("\n") if ln.strip())
    return sum(1 for ln in b.split(b"\n") if ln.strip())


def rg_counts(stdout):
    counts = {}
    for line in stdout.decode("utf-8", "surrogateescape").splitlines():
        if not line:
            continue
        path, _, n = line.rpartition(":")
        counts[path] = counts.get(path, 0) + int(n)
    return counts


GREP_LINE = re.compile(r"^(/.*?):(\d+):", re.M)
FOOTER = re.compile(r"\[(\d+) match(?:es)?\]")


def grep_footer(text):
    m = FOOTER.findall(text)
    return int(m[-1]) if m else None


# The pre-tokenizer split of OpenAI's cl100k_base, approximated with `re` (no \p{L}: a letter is
# [^\W\d_]). BPE then cuts each piece into one token or more, so the count is a floor for the
# model's tokens, and a fair way to compare two formats of the same names without a tokenizer.
PRE_TOKEN = re.compile(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\w]?[^\W\d_]+|\d{1,3}"
                       r"| ?[^\s\w]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+|_+")


def output_size(text):
    """(UTF-8 bytes, pre-tokens) of a tool's text."""
    return len(text.encode()), len(PRE_TOKEN.findall(text))


def tree_nodes(obj):
    """Count every object in a directory_tree JSON (a list at the top counts as the root's children)."""
    n = 0
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            n += 1
            ch = o.get("children")
            if isinstance(ch, list):
                stack.extend(ch)
        elif isinstance(o, list):
            stack.extend(o)
    return n


# --------------------------------------------------------------------------------------------
# benchmarks


class Bench:
    def __init__(self, args, impls):
        self.a = args
        self.im = impls
        self.quick = args.quick
        self.big = os.path.join(impls.corpus, "big")
        self.fix = os.path.join(impls.corpus, "fixtures")
        self.groups = []
        self.rss = {}  # label -> MB, filled in by grep and tree

    def n_big(self):
        return 2 if self.quick else 10

    def group(self, *a, **kw):
        g = Group(*a, **kw)
        self.groups.append(g)
        return g

    # 1. grep -------------------------------------------------------------------------------

    def replay_grep(self, client, regex):
        dt, text = client.call("grep_files", {"regex": regex, "directory": self.big,
                                              "maxResults": GREP_CAP})
        return dt, text

    def bench_grep(self):
        im = self.im
        n = self.n_big()
        client = im.start_replay()
        try:
            for primary, fallback in GREP_REGEXES:
                g = self.group("grep", f"grep over big: `{primary}`")
                regex = primary
                # warm-up call with the primary regex decides whether it is usable
                _, text = self.replay_grep(client, primary)
                got = grep_footer(text)
                capped = got is None or got >= GREP_CAP or "truncat" in text.lower()
                ref_primary = None
                if im.rg and not capped:  # replay says it is under the cap: ask rg too
                    _, out = run_timed([im.rg, "--no-ignore", "--hidden", "-c", primary, self.big])
                    ref_primary = sum(rg_counts(out).values())
                    capped = capped or ref_primary >= GREP_CAP
                if capped:
                    regex = fallback
                    g.title = f"grep over big: `{fallback}`"
                    g.notes.append(
                        f"`{primary}` hits the {GREP_CAP:,} match cap (replay footer {got}"
                        + (f", rg {ref_primary} lines" if ref_primary is not None else "") + "); "
                        f"the rarer `{fallback}` is measured instead")
                try:
                    times, text = repeat(lambda: self.replay_grep(client, regex), n)
                    n_replay = grep_footer(text)
                    g.add("replay", ms(times), result=f"{n_replay} matches", peer=False)
                except McpError as e:
                    g.na("replay", f"error: {e}")
                    n_replay, text = None, ""
                if im.rg:
                    argv = [im.rg, "--no-ignore", "--hidden", "-c", regex, self.big]
                    times, out = repeat(lambda: run_timed(argv), n)
                    ref = rg_counts(out)
                    n_ref = sum(ref.values())
                    g.add("rg", ms(times), result=f"{n_ref} lines")
                    if n_replay is None:
                        g.set_check(False, "replay returned no `[N matches]` footer")
                    elif n_replay == n_ref:
                        g.set_check(True, f"replay {n_replay} = rg {n_ref}")
                    else:
                        mine = {}
                        for m in GREP_LINE.finditer(text):
                            mine[m.group(1)] = mine.get(m.group(1), 0) + 1
                        diff = [(p, mine.get(p, 0), ref.get(p, 0))
                                for p in sorted(set(mine) | set(ref)) if mine.get(p, 0) != ref.get(p, 0)]
                        ex = "; ".join(f"{p}: replay {a} rg {b}" for p, a, b in diff[:5])
                        g.set_check(False, f"replay {n_replay} vs rg {n_ref}; "
                                           f"{len(diff)} files differ, e.g. {ex}")
                else:
                    g.na("rg", "n/a (not installed)")
                for name, exe in im.mcp_peers:
                    g.na(name, "n/a (no content-search tool)" if exe else "n/a (not installed)")
                summarize(g)
            self.rss["replay (after grep)"] = client.vm_hwm_mb()
        finally:
            client.close()

    # 2. name search ------------------------------------------------------------------------

    def bench_name_search(self):
        im = self.im
        n = self.n_big()
        g = self.group("name-search", "name search over big: `test`")
        replay_paths = None
        with im.start_replay() as client:
            try:
                times, text = repeat(lambda: client.call(
                    "search_files", {"directory": self.big, "nameContains": "test"}), n)
                replay_paths = [ln for ln in text.split("\n") if ln.strip()]
                g.add("replay", ms(times), result=f"{len(replay_paths)} paths", peer=False)
            except McpError as e:
                g.na("replay", f"error: {e}")
        if im.find:
            argv = [im.find, self.big, "-iname", "*test*"]
            times, out = repeat(lambda: run_timed(argv), n)
            ref = [ln for ln in out.decode("utf-8", "surrogateescape").split("\n") if ln]
            g.add("find", ms(times), result=f"{len(ref)} paths")
            if replay_paths is not None:
                if len(replay_paths) == len(ref) and set(replay_paths) == set(ref):
                    g.set_check(True, f"replay {len(replay_paths)} = find {len(ref)}")
                else:
                    a, b = set(replay_paths), set(ref)
                    g.set_check(False, f"replay {len(replay_paths)} vs find {len(ref)}; "
                                       f"only replay: {sorted(a - b)[:3]}; only find: {sorted(b - a)[:3]}")
        else:
            g.na("find", "n/a (not installed)")
        for name, exe in im.mcp_peers:
            if not exe:
                g.na(name, "n/a (not installed)")
                continue
            try:
                with im.start_peer(name, exe) as c:
                    times, text = repeat(lambda: c.call(
                        "search_files", {"path": self.big, "pattern": "**/*test*"}), n)
                    cnt = 0 if "no matches" in text.lower() else count_lines(text)
                    g.add(name, ms(times), result=f"{cnt} paths (glob `**/*test*`)")
            except McpError as e:
                g.na(name, f"error: {e}")
        g.notes.append("official-fs search_files takes a glob (`**/*test*`), not a name substring: "
                       "its count is shown but not checked")
        summarize(g)

    # 3. glob -------------------------------------------------------------------------------

    def bench_glob(self):
        im = self.im
        n = self.n_big()
        g = self.group("glob", "glob over big: `**/*.toml`")
        replay_paths = None
        with im.start_replay() as client:
            try:
                times, text = repeat(lambda: client.call(
                    "glob_search", {"directory": self.big, "globs": ["**/*.toml"], "max": 0}), n)
                replay_paths = [ln for ln in text.split("\n") if ln.startswith("/")]
                g.add("replay", ms(times), result=f"{len(replay_paths)} files", peer=False)
            except McpError as e:
                g.na("replay", f"error: {e}")
        if im.find:
            argv = [im.find, self.big, "-type", "f", "-name", "*.toml"]
            times, out = repeat(lambda: run_timed(argv), n)
            ref = [ln for ln in out.decode("utf-8", "surrogateescape").split("\n") if ln]
            g.add("find", ms(times), result=f"{len(ref)} files")
            if replay_paths is not None:
                if len(replay_paths) == len(ref) and set(replay_paths) == set(ref):
                    g.set_check(True, f"replay {len(replay_paths)} = find {len(ref)}")
                else:
                    a, b = set(replay_paths), set(ref)
                    g.set_check(False, f"replay {len(replay_paths)} vs find {len(ref)}; "
                                       f"only replay: {sorted(a - b)[:3]}; only find: {sorted(b - a)[:3]}")
        else:
            g.na("find", "n/a (not installed)")
        for name, exe in im.mcp_peers:
            g.na(name, "n/a (no glob tool)" if exe else "n/a (not installed)")
        summarize(g)

    # 4. directory tree ---------------------------------------------------------------------

    def bench_tree(self):
        im = self.im
        n = self.n_big()
        g = self.group("tree", "directory tree of big")
        replay_nodes = None
        tree_bytes = {}  # label -> output_size of the tree's text, for the note
        with im.start_replay() as client:
            try:
                times, text = repeat(lambda: client.call("directory_tree", {"path": self.big}), n)
                # The tree, then the note of what the default deny rules left out (the corpus
                # holds .pem files): counted back in, so the check against find still holds.
                tree, end = json.JSONDecoder().raw_decode(text)
                left_out = re.search(r"\[(\d+) entries left out by deny rules", text[end:])
                denied = int(left_out.group(1)) if left_out else 0
                replay_nodes = tree_nodes(tree) + denied
                g.add("replay", ms(times), result=f"{replay_nodes} nodes ({denied} denied)",
                      peer=False)
                tree_bytes["replay JSON"] = output_size(text)
                # format "text": the same tree, indented; one line per node (the root included).
                args = {"path": self.big, "format": "text"}
                times, text = repeat(lambda: client.call("directory_tree", args), n)
                lines = text.count("\n") + 1 + denied - (1 if denied else 0)
                g.add("replay", ms(times), result=f"{lines} lines", peer=False,
                      label="replay (format text)")
                tree_bytes["replay format text"] = output_size(text)
                if lines != replay_nodes:
                    g.notes.append(f"format text has {lines} lines for {replay_nodes} JSON nodes")
            except (McpError, ValueError) as e:
                g.na("replay", f"error: {e}")
            self.rss["replay (after tree)"] = client.vm_hwm_mb()
        if im.find:
            argv = [im.find, self.big]
            times, out = repeat(lambda: run_timed(argv), n)
            ref = count_lines(out)
            g.add("find", ms(times), result=f"{ref} entries")
            if replay_nodes is not None:
                g.set_check(replay_nodes == ref, f"replay {replay_nodes} nodes "
                            f"{'=' if replay_nodes == ref else 'vs'} find {ref} entries")
        else:
            g.na("find", "n/a (not installed)")
        for name, exe in im.mcp_peers:
            if not exe:
                g.na(name, "n/a (not installed)")
                continue
            c = None
            try:
                c = im.start_peer(name, exe)
                times, text = repeat(lambda: c.call("directory_tree", {"path": self.big}), n)
                try:
                    data = json.loads(text)
                    cnt = tree_nodes(data) + (1 if isinstance(data, list) else 0)
                    res = f"{cnt} nodes"
                except ValueError:
                    res = "(not JSON)"
                g.add(name, ms(times), result=res)
                tree_bytes[name] = output_size(text)
            except McpError as e:
                g.na(name, f"error: {e}")
            finally:
                if c:
                    self.rss[f"{name} (after tree)"] = c.vm_hwm_mb()
                    c.close()
        if tree_bytes:
            base = tree_bytes.get("replay JSON")
            parts = []
            for label, (size, pieces) in tree_bytes.items():
                part = f"{label} {size:,} bytes, {pieces:,} pre-tokens"
                if base and label != "replay JSON":
                    part += f" ({size / base[0]:.2f}x, {pieces / base[1]:.2f}x replay JSON)"
                parts.append(part)
            g.notes.append("output size of the text content (UTF-8 bytes; pre-tokens: pieces of "
                           "cl100k's split pattern, each one token or more): " + "; ".join(parts))
        summarize(g)

    # 5. small reads ------------------------------------------------------------------------

    def bench_small_reads(self):
        im = self.im
        path = os.path.join(self.fix, "small.txt")
        with open(path, encoding="utf-8") as f:
            expect = f.read()
        calls = 500 if self.quick else 2000
        batches = 2 if self.quick else 5
        gs = self.group("small-reads", f"read_file small.txt, {calls:,} sequential calls (per call)")
        gp = self.group("pipelined-reads",
                        f"read_file small.txt, {calls:,} pipelined calls (throughput)",
                        unit="calls/s", lower_is_better=False)
        oks = {}
        cclient = mcpclient()

        def one_c(c, tool, server_argv):
            """Check the content through the Python client, then time with the C client."""
            impl = c.name
            _, text = c.call(tool, {"path": path})
            c.close()
            ok = oks[impl] = text == expect
            res = "content OK" if ok else f"content differs ({len(text)} vs {len(expect)} chars)"
            times = run_mcpclient("seq", calls, tool, path, server_argv, warmup=calls, name=impl)
            gs.add(impl, ms(times), result=res, peer=impl != "replay")
            bt = run_mcpclient("pipe", calls, tool, path, server_argv, warmup=1, batches=batches,
                               name=impl)
            med, slow = median(bt), p95(bt)
            gp.add(impl, median_v=calls / med, p95_v=calls / slow, samples=None,
                   result=f"{batches} batches; {calls / med * 1:.0f} calls/s",
                   peer=impl != "replay", ratio_basis=med)
            gp.rows[-1]["samples"] = [calls / b for b in bt]
            gp.rows[-1]["n"] = batches

        def one(c, tool, server_argv):
            if cclient:
                return one_c(c, tool, server_argv)
            impl = c.name

            def run():
                times = []
                text = None
                for _ in range(calls):
                    dt, text = c.call(tool, {"path": path})
                    times.append(dt)
                return times, text

            run()  # warm-up pass
            times, text = run()
            oks[impl] = text == expect
            gs.add(impl, ms(times), result="content OK" if text == expect
                   else f"content differs ({len(text)} vs {len(expect)} chars)", peer=impl != "replay")
            args = [{"path": path}] * calls
            c.pipelined(tool, args)  # warm-up batch
            bt = [c.pipelined(tool, args) for _ in range(batches)]
            med, slow = median(bt), p95(bt)
            gp.add(impl, median_v=calls / med, p95_v=calls / slow, samples=None,
                   result=f"{batches} batches; {calls / med * 1:.0f} calls/s",
                   peer=impl != "replay", ratio_basis=med)
            gp.rows[-1]["samples"] = [calls / b for b in bt]
            gp.rows[-1]["n"] = batches

        with im.start_replay() as c:
            try:
                one(c, "read_file", im.replay_argv())
            except McpError as e:
                gs.na("replay", f"error: {e}")
                gp.na("replay", f"error: {e}")
        for name, exe in im.mcp_peers:
            if not exe:
                gs.na(name, "n/a (not installed)")
                gp.na(name, "n/a (not installed)")
                continue
            try:
                with im.start_peer(name, exe) as c:
                    one(c, read_tool(c), im.peer_argv(exe, [im.corpus]))
            except McpError as e:
                gs.na(name, f"error: {e}")
                gp.na(name, f"error: {e}")
        if "replay" in oks:
            ok = oks["replay"]
            gs.set_check(ok, "replay's text equals the file" if ok else "replay's text differs from the file")
            gp.set_check(ok, "")
        gs.notes.append(client_note())
        gp.notes.append(client_note())
        gp.notes.append("throughput rows: median column = calls/s of the median batch, p95 column = "
                        "calls/s of the slow (p95) batch; the ratio compares batch times")
        summarize(gs)
        summarize(gp)

    # 6. 5 MiB read -------------------------------------------------------------------------

    def bench_read_5mib(self):
        im = self.im
        path = os.path.join(self.fix, "big-5mb.txt")
        with open(path, encoding="utf-8") as f:
            expect = f.read()
        n = 5 if self.quick else 20
        g = self.group("read-5mib", "read_file big-5mb.txt (5 MiB, per call)")
        with im.start_replay() as c:
            try:
                times, text = repeat(lambda: c.call("read_file", {"path": path}), n, warmup=2)
                ok = text == expect
                g.add("replay", ms(times), result="content OK" if ok else "content differs", peer=False)
                g.set_check(ok, "" if ok else f"replay returned {len(text)} chars, file has {len(expect)}")
            except McpError as e:
                g.na("replay", f"error: {e}")
        for name, exe in im.mcp_peers:
            if not exe:
                g.na(name, "n/a (not installed)")
                continue
            try:
                with im.start_peer(name, exe) as c:
                    tool = read_tool(c)
                    times, text = repeat(lambda: c.call(tool, {"path": path}), n, warmup=2)
                    g.add(name, ms(times), result="content OK" if text == expect else "content differs")
            except McpError as e:
                g.na(name, f"error: {e}")
        summarize(g)

    # 6b. 5 MiB of Shift_JIS, against the same text in UTF-8 ------------------------------------

    def bench_read_sjis(self):
        """Japanese text (two-byte characters, ASCII code between) read_file decodes: 5 MiB of
        Shift_JIS may take at most 2x a read of 5 MiB of the same kind of text in UTF-8 (issue
        #25); the ratio is the first over the second. The Shift_JIS file's own text in UTF-8
        (1.5 times the bytes) is timed too, for what the reply's size costs."""
        im = self.im
        line = "日本語のテキストです。東京都の天気は晴れ、気温は二十度でした。 let x = 42; // 注釈\n"
        sjis = line * ((5 << 20) // len(line.encode("shift_jis")))
        utf8 = line * ((5 << 20) // len(line.encode("utf-8")))
        d = tempfile.mkdtemp(prefix="replay-bench-sjis-")
        try:
            # (impl, label, file, text, its encoding, a peer row: the ratio's basis)
            files = [
                ("replay", "replay Shift_JIS 5 MiB", "sjis.txt", sjis, "shift_jis", False),
                ("replay-utf8", "replay UTF-8 5 MiB", "utf8.txt", utf8, "utf-8", True),
                ("replay-same", "replay, the same text in UTF-8", "same.txt", sjis, "utf-8", False),
            ]
            for _, _, name, text, enc, _ in files:
                with open(os.path.join(d, name), "wb") as f:
                    f.write(text.encode(enc))
            n = 5 if self.quick else 20
            g = self.group("read-sjis", "read_file of Japanese text, 5 MiB of Shift_JIS against "
                           "5 MiB of UTF-8 (per call)")
            note = "[encoding: Shift_JIS; edits keep it]"
            ok_all = True
            with im.start_replay(allow=f"{d}:ro") as c:
                for impl, label, name, text, enc, peer in files:
                    path = os.path.join(d, name)
                    try:
                        times, got = repeat(lambda: c.call("read_file", {"path": path}), n, warmup=2)
                        ok = got == text + (note if enc == "shift_jis" else "")
                        ok_all &= ok
                        g.add(impl, ms(times), label=label, peer=peer,
                              result="content OK" if ok else "content differs")
                    except McpError as e:
                        ok_all = False
                        g.na(impl, f"error: {e}", label=label)
            g.set_check(ok_all, "" if ok_all else "a read differs from the text")
            g.notes.append("target: Shift_JIS within 2x UTF-8")
        finally:
            shutil.rmtree(d, ignore_errors=True)
        summarize(g)

    # 7. list a 1,000-entry directory -------------------------------------------------------

    def bench_list_dir(self):
        im = self.im
        path = os.path.join(self.fix, "dir1000")
        expect = set(os.listdir(path))
        n = 50 if self.quick else 200
        g = self.group("list-dir", f"list_directory dir1000 ({len(expect):,} entries, per call)")

        def names(text):
            out = set()
            for ln in text.split("\n"):
                m = re.match(r"^\[(?:FILE|DIR|LINK)\]\s+(.*)$", ln)
                if m:
                    out.add(m.group(1))
            return out

        with im.start_replay() as c:
            try:
                times, text = repeat(lambda: c.call("list_directory", {"path": path}), n, warmup=5)
                got = names(text)
                ok = got == expect
                g.add("replay", ms(times), result=f"{len(got)} entries", peer=False)
                g.set_check(ok, f"replay {len(got)} entries {'=' if ok else 'vs'} {len(expect)} on disk")
            except McpError as e:
                g.na("replay", f"error: {e}")
        for name, exe in im.mcp_peers:
            if not exe:
                g.na(name, "n/a (not installed)")
                continue
            try:
                with im.start_peer(name, exe) as c:
                    times, text = repeat(lambda: c.call("list_directory", {"path": path}), n, warmup=5)
                    g.add(name, ms(times), result=f"{len(names(text))} entries")
            except McpError as e:
                g.na(name, f"error: {e}")
        summarize(g)

    # 8. spawn -> initialize answered -------------------------------------------------------

    def bench_spawn(self):
        im = self.im
        n = 5 if self.quick else 20
        g = self.group("spawn", "spawn → initialize answered")

        def spawn_times(argv, name):
            if mcpclient():  # the first spawn is the warm-up
                return run_mcpclient("spawn", n, "-", "-", argv, warmup=1, name=name)
            times = []
            for i in range(n + 1):  # the first spawn is the warm-up
                c = McpClient(argv, name)
                try:
                    dt = c.initialize()
                finally:
                    c.close()
                if i:
                    times.append(dt)
            return times

        try:
            t = spawn_times(im.replay_argv(), "replay")
            g.add("replay", ms(t), result="initialize OK", peer=False)
            g.set_check(True, "every initialize got a result")
        except McpError as e:
            g.na("replay", f"error: {e}")
            g.set_check(False, str(e))
        for name, exe in im.mcp_peers:
            if not exe:
                g.na(name, "n/a (not installed)")
                continue
            try:
                t = spawn_times(im.peer_argv(exe, [im.corpus]), name)
                g.add(name, ms(t), result="initialize OK")
            except McpError as e:
                g.na(name, f"error: {e}")
        g.notes.append("timed by the C client bench/mcpclient.c, from just before fork() to the newline "
                       "of the initialize reply" if mcpclient() else client_note())
        summarize(g)

    # 8b. cold start: spawn -> initialize -> tools/list -> exit ------------------------------

    def bench_cold_start(self):
        im = self.im
        n = 5 if self.quick else 20
        g = self.group("cold-start", "cold start: spawn → initialize → tools/list → exit")

        def tool_count(argv, name):
            with McpClient(argv, name) as c:
                c.initialize()
                return len(c.tools())

        # The implementations take turns, one session each per round, so that the machine's
        # load drifting (it is shared) weighs on all of them alike. The count check is the
        # warm-up.
        impls = [("replay", im.replay_argv())] + [
            (name, im.peer_argv(exe, [im.corpus])) for name, exe in im.mcp_peers if exe]
        for name, exe in im.mcp_peers:
            if not exe:
                g.na(name, "n/a (not installed)")
        counts, samples, failed = {}, {name: [] for name, _ in impls}, {}
        for name, argv in impls:
            try:
                counts[name] = tool_count(argv, name)
            except McpError as e:
                failed[name] = str(e)
        for _ in range(n):
            for name, argv in impls:
                if name in failed:
                    continue
                try:
                    samples[name].append(cold_session(argv, name))
                except McpError as e:
                    failed[name] = str(e)
        for name, _ in impls:
            if name in failed:
                g.na(name, f"error: {failed[name]}")
            else:
                g.add(name, ms(samples[name]), result=f"{counts[name]} tools listed, exit 0",
                      peer=name != "replay")
        g.set_check(counts.get("replay") == TOOL_COUNT,
                    f"replay listed {counts.get('replay')} tools ({TOOL_COUNT} expected)")
        size = os.path.getsize(im.replay)
        g.notes.append(f"replay binary: {size:,} bytes ({size / (1 << 20):.2f} MiB), {im.replay}")
        g.notes.append("timed by the C client bench/mcpclient.c, from just before fork() to waitpid() after "
                       "stdin closed; the implementations take turns, one session each per round"
                       if mcpclient() else client_note())
        summarize(g)

    # 10. command sessions ------------------------------------------------------------------

    def bench_sessions(self):
        """Background commands and command_session (issue #23), replay alone: a session's start to
        its first output, a poll with nothing new, a poll of 1 MB, memory per idle session, and ping
        latency behind 1,000 pipelined foreground commands."""
        n = 5 if self.quick else 30
        work = tempfile.mkdtemp(prefix="replay-bench-sessions-")
        atexit.register(shutil.rmtree, work, True)
        argv = [self.im.replay, "--mcp-server", "--allow", f"{work}:rw"]

        def reply_of(c, tool, args):
            dt, reply = c.request("tools/call", {"name": tool, "arguments": args})
            if "error" in reply:
                raise McpError(f"replay {tool}: {reply['error']}")
            return dt, reply["result"]

        def start(c, command):
            _, res = reply_of(c, "execute_command", {"command": command, "background": True, "waitSeconds": 0})
            return res["structuredContent"]["session"]

        def kill(c, sid):
            reply_of(c, "command_session", {"session": sid, "kill": True})

        def pings(c, count):
            return [c.request("ping", {})[0] for _ in range(count)]

        with McpClient(argv, "replay") as c:
            c.initialize()
            # a. start -> first output: the start call, then a poll that waits for output.
            g = self.group("session-first-output", "background start → its first output")
            times = []
            for i in range(n + 1):
                t0 = now()
                _, res = reply_of(c, "execute_command", {"command": "echo ready; exec sleep 60",
                                                         "background": True, "waitSeconds": 0})
                sid = res["structuredContent"]["session"]
                out = res["structuredContent"]["stdout"]  # the start's reply may carry it already
                while "ready" not in out:
                    _, res = reply_of(c, "command_session", {"session": sid, "waitSeconds": 5})
                    out += res["structuredContent"]["output"]
                t1 = now()
                kill(c, sid)
                if i:
                    times.append(t1 - t0)
            g.add("replay", ms(times), result="output read", peer=False)
            g.notes.append("execute_command {background: true, waitSeconds: 0}, then command_session "
                           "{waitSeconds: 5} until `ready` is read; round trips through the Python client")
            summarize(g)

            # b. a poll with no new output, against a ping on the same server.
            g = self.group("session-idle-poll", "command_session poll with no new output")
            sid = start(c, "exec sleep 600")
            polls = n * 20
            reply_of(c, "command_session", {"session": sid})
            poll_t = [c.request("tools/call", {"name": "command_session", "arguments": {"session": sid}})[0]
                      for _ in range(polls)]
            ping_t = pings(c, polls)
            kill(c, sid)
            g.add("replay", ms(poll_t), result="[running], no output", peer=False, label="replay poll")
            g.add("replay", ms(ping_t), result="ping", peer=False, label="replay ping (baseline)")
            server = max(0.0, median(ms(poll_t)) - median(ms(ping_t)))
            g.notes.append(f"server time ≈ poll median − ping median = {server:.3f} ms (the round trip's "
                           "pipe and client costs are the ping's)")
            summarize(g)

            # c. a poll returning 1 MB: two replies, as one carries 512 KB at most.
            g = self.group("session-poll-1mb", "command_session: 1 MB of output read back")
            sid = start(c, "head -c 1048576 /dev/zero | tr '\\0' a; exec sleep 600")
            while True:
                _, res = reply_of(c, "command_session", {"session": sid, "offset": 0, "waitSeconds": 1})
                listed = reply_of(c, "command_session", {})[1]["structuredContent"]["sessions"]
                if any(x["session"] == sid and x["bytes"] >= 1048576 for x in listed):
                    break
            times = []
            for i in range(n + 1):
                t0 = now()
                got = 0
                offset = 0
                while got < 1048576:
                    _, res = reply_of(c, "command_session", {"session": sid, "offset": offset})
                    chunk = len(res["structuredContent"]["output"])
                    got += chunk
                    offset += chunk
                if i:
                    times.append(now() - t0)
            kill(c, sid)
            g.add("replay", ms(times), result=f"{got} bytes in 2 replies", peer=False)
            g.notes.append("offsets 0 and 524288 (READ_CAP 512 KB); Python client, JSON decoding included")
            summarize(g)

            # d. memory per idle session: the server's RSS, and the session's processes' PSS.
            g = self.group("session-memory", "memory per idle session", unit="KiB")
            def rss_kib(pid):
                with open(f"/proc/{pid}/status") as f:
                    return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
            def pss_kib(pid):
                try:
                    with open(f"/proc/{pid}/smaps_rollup") as f:
                        return next(int(l.split()[1]) for l in f if l.startswith("Pss:"))
                except (OSError, StopIteration):
                    return 0
            def descendants(root):
                kids = {}
                for d in os.listdir("/proc"):
                    if d.isdigit():
                        try:
                            with open(f"/proc/{d}/stat") as f:
                                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                            kids.setdefault(ppid, []).append(int(d))
                        except (OSError, IndexError, ValueError):
                            pass
                out, todo = [], [root]
                while todo:
                    for k in kids.get(todo.pop(), []):
                        out.append(k)
                        todo.append(k)
                return out
            live = 16
            pid = c.proc.pid
            before = rss_kib(pid)
            sids = [start(c, "exec sleep 600") for _ in range(live)]
            time.sleep(1.0)
            after = rss_kib(pid)
            procs = descendants(pid)
            pss = sum(pss_kib(p) for p in procs)
            for sid in sids:
                kill(c, sid)
            per = (after - before) / live
            g.add("replay", [per], result=f"server VmRSS {before} → {after} KiB with {live} sessions",
                  peer=False, label="replay server RSS / session")
            g.add("replay", [pss / live], result=f"{len(procs)} processes, PSS {pss} KiB",
                  peer=False, label="replay session processes PSS / session")
            g.notes.append("16 sessions of `exec sleep 600` (the most a server keeps); each is a supervisor, "
                           "its PID namespace's init and the command")
            summarize(g)

        # e. ping latency behind 1,000 pipelined foreground commands (a fresh server).
        g = self.group("session-ping-under-load", "ping behind 1,000 pipelined foreground commands")
        with McpClient(argv, "replay") as c:
            c.initialize()
            for _ in range(1000):
                rid = c.new_id()
                c.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                        "params": {"name": "execute_command", "arguments": {"command": "sleep 0.1"}}})
            t = pings(c, 200)
            g.add("replay", ms(t), result="200 pings", peer=False,
                  median_v=median(ms(t)), p95_v=sorted(ms(t))[int(0.99 * len(t)) - 1],
                  label="replay (p95 column = p99)")
            g.notes.append("1,000 `sleep 0.1` sent at once (8 run at a time on this machine), then 200 "
                           "pings one after another; the p95 column shows the p99")
            summarize(g)
            c.proc.kill()

    # 9. peak RSS ---------------------------------------------------------------------------

    def bench_rss(self):
        im = self.im
        g = self.group("rss", "peak RSS (VmHWM)", unit="MB")
        if "replay (after grep)" not in self.rss:
            log("[rss] grep was not run: one grep_files call on a fresh replay")
            c = im.start_replay()
            try:
                self.replay_grep(c, GREP_REGEXES[0][1])
                self.rss["replay (after grep)"] = c.vm_hwm_mb()
            except McpError as e:
                log(f"[rss] {e}")
            finally:
                c.close()
        for name, exe in im.mcp_peers:
            key = f"{name} (after tree)"
            if exe and key not in self.rss:
                log(f"[rss] tree was not run: one directory_tree call on a fresh {name}")
                c = None
                try:
                    c = im.start_peer(name, exe)
                    c.call("directory_tree", {"path": self.big})
                except McpError as e:
                    log(f"[rss] {e}")
                finally:
                    if c:
                        self.rss[key] = c.vm_hwm_mb()
                        c.close()
        v = self.rss.get("replay (after grep)")
        g.add("replay", median_v=v, result="after the grep benchmark", peer=False,
              label="replay (after grep)", error=None if v else "n/a")
        if "replay (after tree)" in self.rss:
            v2 = self.rss["replay (after tree)"]
            g.add("replay", median_v=v2, result="after the tree benchmark (not in the ratio)",
                  peer=False, label="replay (after tree)")
        for name, exe in im.mcp_peers:
            key = f"{name} (after tree)"
            if not exe:
                g.na(name, "n/a (not installed)")
            elif self.rss.get(key):
                g.add(name, median_v=self.rss[key], result="after the tree benchmark", label=key)
            else:
                g.na(name, "n/a (no measurement)")
        for r in g.rows:
            r["p95"] = None
        summarize(g)

    # 10. edits -----------------------------------------------------------------------------

    def bench_edits(self):
        im = self.im
        sizes = [2.5, 5.0, 10.0]  # MiB
        n = 1 if self.quick else 3
        n_edits = 1000
        g = self.group("edits", f"edit_file: {n_edits:,} literal edits / one `limit: 0` regex edit "
                                "(replay only, per call)")
        tmp = tempfile.mkdtemp(prefix="replay-bench-edits-")
        problems = []
        per_mb = {"literal": [], "regex": []}
        try:
            with im.start_replay(allow=f"{tmp}:rw") as c:
                for size in sizes:
                    path = os.path.join(tmp, f"edit-{size:g}mib.txt")
                    n_lines = int(size * (1 << 20) / len("line 000001 alpha beta\n"))
                    lines = [b"line %06d alpha beta\n" % i for i in range(1, n_lines + 1)]
                    original = b"".join(lines)
                    mb = len(original) / (1 << 20)
                    step = n_lines // n_edits
                    targets = [1 + k * step for k in range(n_edits)]
                    edits = [{"oldText": "line %06d alpha beta" % i, "newText": "line %06d EDITED beta" % i}
                             for i in targets]
                    exp_lit = list(lines)
                    for i in targets:
                        exp_lit[i - 1] = b"line %06d EDITED beta\n" % i
                    exp_lit = b"".join(exp_lit)
                    exp_re = original.replace(b"alpha", b"ALPHA")

                    def reset():
                        with open(path, "wb") as f:
                            f.write(original)
                            f.flush()
                            os.fsync(f.fileno())

                    for kind, call_edits, expect in (
                            ("literal", edits, exp_lit),
                            ("regex", [{"oldText": "alpha", "newText": "ALPHA", "isRegex": True, "limit": 0}],
                             exp_re)):
                        label = f"replay {size:g} MiB, {'1,000 literal edits' if kind == 'literal' else 'regex limit:0'}"
                        times = []
                        try:
                            # the first call of each kind (on the smallest file) is the warm-up
                            warm = 1 if size == sizes[0] else 0
                            for i in range(n + warm):
                                reset()
                                dt, text = c.call("edit_file", {"path": path, "edits": call_edits})
                                with open(path, "rb") as f:
                                    got = f.read()
                                if got != expect:
                                    problems.append(f"{label}: file content wrong after the edit "
                                                    f"({len(got)} bytes vs {len(expect)} expected)")
                                if i >= warm:
                                    times.append(dt)
                            row = g.add("replay", ms(times), peer=False, label=label)
                            row["mib"] = mb
                            row["ms_per_mib"] = row["median"] / mb
                            per_mb[kind].append(row["ms_per_mib"])
                            row["result"] = f"{row['ms_per_mib']:.1f} ms/MiB"
                        except McpError as e:
                            g.na("replay", f"error: {e}", label=label)
                            problems.append(f"{label}: {e}")
                        log(f"[edits] {label}: " + (f"{median(ms(times)):.1f} ms" if times else "failed"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        for kind, v in per_mb.items():
            if len(v) == len(sizes):
                g.notes.append(f"{kind}: ms/MiB at 10 MiB ÷ ms/MiB at 2.5 MiB = {v[-1] / v[0]:.2f} "
                               "(≈1 means linear in file size; >1 superlinear)")
        g.set_check(not problems, "; ".join(problems[:4]) if problems
                    else "every edited file has the expected content")
        summarize(g)


    # 10b. apply_patch across files ------------------------------------------------------------

    def bench_patch(self):
        """apply_patch of 100 files x 10 hunks (one journaled commit) against the same 1,000
        edits through edit_files (10 edits applied to each of the 100 files, each file its own
        atomic write). Issue #25's target: apply_patch within 2x of edit_files."""
        im = self.im
        n = 3 if self.quick else 7
        n_files, n_hunks, n_lines = 100, 10, 200
        g = self.group("patch", f"apply_patch: {n_files} files x {n_hunks} hunks, one call, vs the "
                                "same edits through edit_files (replay only, per call)")
        tmp = tempfile.mkdtemp(prefix="replay-bench-patch-")
        problems = []
        targets = [10 + 19 * k for k in range(n_hunks)]  # 1-based lines, 3 context lines apart
        lines = ["line %03d alpha beta\n" % i for i in range(1, n_lines + 1)]
        original = "".join(lines).encode()
        expect = list(lines)
        for i in targets:
            expect[i - 1] = "line %03d EDITED beta\n" % i
        expect = "".join(expect).encode()
        names = [f"f{k:03d}.txt" for k in range(n_files)]
        paths = [os.path.join(tmp, name) for name in names]
        hunks = []
        for i in targets:
            ctx_before = [" " + lines[j - 1] for j in range(i - 3, i)]
            ctx_after = [" " + lines[j - 1] for j in range(i + 1, i + 4)]
            hunks.append("@@\n" + "".join(ctx_before) + "-" + lines[i - 1]
                         + "+line %03d EDITED beta\n" % i + "".join(ctx_after))
        body = "".join(f"*** Update File: {name}\n" + "".join(hunks) for name in names)
        patch = "*** Begin Patch\n" + body + "*** End Patch\n"
        edits = [{"oldText": "line %03d alpha beta" % i, "newText": "line %03d EDITED beta" % i}
                 for i in targets]

        def reset():
            for path in paths:
                with open(path, "wb") as f:
                    f.write(original)

        calls = (
            ("apply_patch", "replay apply_patch", {"patch": patch, "workingDirectory": tmp}),
            ("edit_files", "replay edit_files", {"paths": paths, "edits": edits}),
        )
        medians = {}
        try:
            with im.start_replay(allow=f"{tmp}:rw") as c:
                for tool, label, args in calls:
                    times = []
                    try:
                        for i in range(n + 1):  # the first call is the warm-up
                            reset()
                            os.sync()
                            dt, text = c.call(tool, args)
                            for path in paths:
                                with open(path, "rb") as f:
                                    if f.read() != expect:
                                        problems.append(f"{label}: {path} has the wrong content")
                                        break
                            if i > 0:
                                times.append(dt)
                        row = g.add("replay", ms(times), peer=False, label=label)
                        medians[tool] = row["median"]
                        row["result"] = f"{row['median'] / (n_files * n_hunks) * 1000:.0f} µs/hunk"
                    except McpError as e:
                        g.na("replay", f"error: {e}", label=label)
                        problems.append(f"{label}: {e}")
                    log(f"[patch] {label}: " + (f"{median(ms(times)):.1f} ms" if times else "failed"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if len(medians) == 2:
            ratio = medians["apply_patch"] / medians["edit_files"]
            g.notes.append(f"apply_patch ÷ edit_files = {ratio:.2f} (target ≤ 2)")
        g.set_check(not problems, "; ".join(problems[:4]) if problems
                    else "every file has the expected content after each call")
        summarize(g)

    # 11. partial reads of big files ---------------------------------------------------------

    def bench_paging(self):
        """read_file's head/offset/tail on generated 1, 16 and 100 MiB and 1 GiB text files: a page
        near the start or at the end should cost the same whatever the file's size. A page from
        the middle is shown too: reaching it means reading (not keeping) everything before it."""
        im = self.im
        # 16 MiB: the biggest file whose lines are all counted, the most a page near its start
        # can cost
        sizes = [1, 16, 100, 1024]  # MiB
        n = 5 if self.quick else 20
        # 64-byte lines; every file repeats one 1 MiB chunk, so the expected lines are known.
        per_chunk = (1 << 20) // 64
        chunk_lines = [b"%05d %s\n" % (i, b"abcdefghij" * 5 + b"klmnopq"[: 57 - 50]) for i in range(per_chunk)]
        assert all(len(ln) == 64 for ln in chunk_lines)
        chunk = b"".join(chunk_lines)
        tmp = tempfile.mkdtemp(prefix="replay-bench-paging-")
        files = {}
        try:
            for mib in sizes:
                path = os.path.join(tmp, f"lines-{mib}mib.txt")
                with open(path, "wb") as f:
                    for _ in range(mib):
                        f.write(chunk)
                files[mib] = path
            log(f"[paging] wrote {', '.join(f'{m} MiB' for m in sizes)} in {tmp}")

            def lines_at(first, count):  # 1-based, within a file of whole chunks
                return b"".join(chunk_lines[(first - 1 + k) % per_chunk] for k in range(count)).decode()

            # (key, title, replay args, expected text, {peer: (tool, args)}) per size
            def ops(mib):
                total = mib * per_chunk
                mid = total // 2
                return [
                    ("head", "lines 1-100 (`head: 100`)", {"head": 100}, lines_at(1, 100),
                     {"official-fs": ("read_text_file", {"head": 100}),
                      "rust-mcp-filesystem": ("head_file", {"lines": 100})}),
                    ("near-start", "lines 1001-1100 (`offset: 1001, limit: 100`)",
                     {"offset": 1001, "limit": 100}, lines_at(1001, 100),
                     {"rust-mcp-filesystem": ("read_file_lines", {"offset": 1000, "limit": 100})}),
                    ("tail", "last 100 lines (`tail: 100`)", {"tail": 100}, lines_at(total - 99, 100),
                     {"official-fs": ("read_text_file", {"tail": 100}),
                      "rust-mcp-filesystem": ("tail_file", {"lines": 100})}),
                    ("middle", "100 lines from the middle (`offset: total/2`; reads up to it)",
                     {"offset": mid, "limit": 100}, lines_at(mid, 100),
                     {"rust-mcp-filesystem": ("read_file_lines", {"offset": mid - 1, "limit": 100})}),
                ]

            groups = {}
            problems = []
            flat = {}
            for key, title, *_ in ops(1):
                groups[key] = self.group(f"paging-{key}", f"read_file {title}, per call")
            with im.start_replay(allow=f"{tmp}:ro") as c:
                for mib in sizes:
                    for key, _, args, expect, _ in ops(mib):
                        label = f"replay {mib:,} MiB"
                        call = {"path": files[mib], **args}
                        try:
                            _, reply = c.request("tools/call", {"name": "read_file", "arguments": call})
                            content = reply.get("result", {}).get("content", [])
                            texts = [x.get("text") for x in content]
                            if "error" in reply or len(texts) != 2 or texts[0] != expect:
                                problems.append(f"{key} {mib} MiB: {str(reply)[:200]}")
                            note = texts[1] if len(texts) == 2 else "?"
                            times, _ = repeat(lambda: c.call("read_file", call), n, warmup=1)
                            row = groups[key].add("replay", ms(times), peer=False, label=label, result=note)
                            flat.setdefault(key, {})[mib] = row["median"]
                            if mib != sizes[-1]:
                                row["basis"] = None  # the ratio compares the biggest file
                        except McpError as e:
                            groups[key].na("replay", f"error: {e}", label=label)
                            problems.append(f"{key} {mib} MiB: {e}")
                        log(f"[paging] {key} {label}: "
                            + (f"{flat.get(key, {}).get(mib, float('nan')):.3f} ms" if mib in flat.get(key, {}) else "failed"))
            for name, exe in im.mcp_peers:
                if not exe:
                    for g in groups.values():
                        g.na(name, "n/a (not installed)")
                    continue
                try:
                    with im.start_peer(name, exe, [tmp]) as c:
                        tools = c.tools()
                        for mib in sizes:
                            for key, _, _, expect, peer_ops in ops(mib):
                                label = f"{name} {mib:,} MiB"
                                if name not in peer_ops or peer_ops[name][0] not in tools:
                                    if mib == sizes[0]:
                                        groups[key].na(name, "n/a (no such parameter)", label=name)
                                    continue
                                tool, pargs = peer_ops[name]
                                call = {"path": files[mib], **pargs}
                                try:
                                    first_dt, text = c.call(tool, call)
                                    if text.rstrip("\n") == expect.rstrip("\n"):
                                        result = "content OK"
                                    elif key == "tail" and expect.split("\n", 1)[1] == text:
                                        # The empty string after the final newline taken for a line.
                                        result = "99 lines: counts an empty line after the last newline"
                                    else:
                                        result = "content differs"
                                    # A peer that takes seconds per call is timed 3 times.
                                    times, _ = repeat(lambda: c.call(tool, call),
                                                      n if first_dt < 1.0 else 3, warmup=0)
                                    row = groups[key].add(name, ms(times), label=label, result=result)
                                    if mib != sizes[-1]:
                                        row["basis"] = None
                                except McpError as e:
                                    groups[key].na(name, f"error: {e}"[:120], label=label)
                except McpError as e:
                    for g in groups.values():
                        g.na(name, f"error: {e}"[:120])
            for key, g in groups.items():
                t = flat.get(key, {})
                if len(t) == len(sizes):
                    g.notes.append(f"replay at {sizes[-1]:,} MiB ÷ at {sizes[0]} MiB = {t[sizes[-1]] / t[sizes[0]]:.2f} "
                                   "(≈1: the cost does not depend on the file's size)")
                g.notes.append(f"the ratio compares the {sizes[-1]:,} MiB rows; files up to 16 MiB have all "
                               "their lines counted (the 16 MiB row is that count's most); files generated in /tmp "
                               "(page cache warm), 64-byte lines; round trips timed by the Python client, its JSON "
                               "parsing excluded")
                mine = [p for p in problems if p.startswith(key + " ")]
                g.set_check(not mine, "; ".join(mine[:3]) if mine else "replay's lines equal the file's")
                summarize(g)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# output


    # 12. a missed edit on a big file --------------------------------------------------------

    def bench_edit_miss(self):
        """edit_file whose literal oldText is not in a 2 MiB file: the miss looks for the nearest
        text and says what differs (src/tools/edit/matching/near.rs). Three misses, one per way
        the near match is found: a line that differs only by drift (its key votes), a typo (the
        likeness scan over every line), and nothing similar (both scans, no hint)."""
        im = self.im
        n = 5 if self.quick else 20
        g = self.group("edit-miss", "edit_file miss on a 2 MiB file: nearest text and what differs "
                                    "(replay only, per call)")
        tmp = tempfile.mkdtemp(prefix="replay-bench-miss-")
        path = os.path.join(tmp, "big.rs")
        lines = ["    let value_%06d = compute(\"item %d\", %d);\n" % (i, i, i * 7) for i in range(1, 45001)]
        original = "".join(lines).encode()
        target = 31337
        with open(path, "wb") as f:
            f.write(original)
        cases = [
            ("quote drift on one line",
             "    let value_%06d = compute(\u201citem %d\u201d, %d);" % (target, target, target * 7), True),
            ("a typo on one line",
             "    let value_%06d = compute(\"item %d\", %d;" % (target, target, target * 7), True),
            ("nothing similar", "fn this_is_nowhere_in_the_file() { return 42; }", False),
        ]
        problems = []
        try:
            with im.start_replay(allow=f"{tmp}:rw") as c:
                for label, old, hinted in cases:
                    times, message = [], ""
                    for i in range(n + 1):  # the first call is the warm-up
                        dt, reply = c.request("tools/call", {"name": "edit_file", "arguments": {
                            "path": path, "edits": [{"oldText": old, "newText": "x"}]}})
                        message = reply.get("error", {}).get("message", "")
                        if i:
                            times.append(dt)
                    row = g.add("replay", ms(times), peer=False,
                                label=f"replay 2 MiB, {label}",
                                result=f"error of {len(message.encode())} bytes"
                                       + (", names the line" if hinted else ", no hint"))
                    shows_line = ("\n%6d\t" % target) in message
                    if "oldText not found" not in message:
                        problems.append(f"{label}: not a miss: {message[:120]}")
                    elif hinted != shows_line:
                        problems.append(f"{label}: expected {'a' if hinted else 'no'} hint at line "
                                        f"{target}: {message[:200]}")
                    if len(message.encode()) >= 2048:
                        problems.append(f"{label}: error of {len(message.encode())} bytes")
                    log(f"[edit-miss] {label}: {row['median']:.1f} ms")
            with open(path, "rb") as f:
                if f.read() != original:
                    problems.append("the file changed")
        except McpError as e:
            g.na("replay", f"error: {e}")
            problems.append(str(e))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        g.notes.append("45,000 lines of 45-50 bytes; the hint names line 31,337 where there is one")
        g.set_check(not problems, "; ".join(problems[:3]) if problems
                    else "each error under 2 KB, the hint where expected, the file unchanged")
        summarize(g)

    # 13. what the tool list costs a model -----------------------------------------------------

    def bench_tokens(self):
        """tools/list's name + description + inputSchema in o200k_base tokens, as
        ../shared/tools/count-tokens counts them: what every agent session pays before its first
        call. Lower is better; the per-tool figures are in the notes."""
        im = self.im
        g = self.group("tokens", "tool list: o200k tokens of name + description + inputSchema",
                       unit="tokens")
        counter = tokens_counter()
        if counter is None:
            g.na("replay", f"n/a (node and npm {TIKTOKEN} needed)")
            g.set_check(False, f"no tokenizer: node and npm {TIKTOKEN} needed")
            summarize(g)
            return
        impls = [("replay", lambda: im.start_replay())] + [
            (name, (lambda name=name, exe=exe: im.start_peer(name, exe))) for name, exe in im.mcp_peers if exe]
        for name, exe in im.mcp_peers:
            if not exe:
                g.na(name, "n/a (not installed)")
        counts = {}
        for name, start in impls:
            try:
                with start() as c:
                    tools = list(c.tools().values())
                counted = counter(tools)
            except (McpError, OSError, ValueError, subprocess.SubprocessError) as e:
                g.na(name, f"error: {e}")
                continue
            counts[name] = counted
            n_tools = len(counted["per_tool"])
            g.add(name, median_v=counted["tokens"], peer=name != "replay",
                  result=f"{n_tools} tools, {counted['tokens'] / max(n_tools, 1):.0f} per tool")
            g.notes.append(f"{name} per tool: " + ", ".join(
                f"{t['name']} {t['tokens']}" for t in counted["per_tool"]))
        for r in g.rows:
            r["p95"] = None
        replay = counts.get("replay")
        g.set_check(bool(replay) and replay["tokens"] <= 2800 and len(replay["per_tool"]) == TOOL_COUNT,
                    f"replay: {replay['tokens']} tokens for {len(replay['per_tool'])} tools (budget 2,800)"
                    if replay else "replay not counted")
        summarize(g)

    # 14. scale: the million tree ------------------------------------------------------------

    # What the default deny rules cost (issue #26: at most 5 % on the big tree and grep) -----

    def bench_deny_cost(self):
        """The same calls on two servers at once, one with the default deny rules and one with
        --no-default-deny, taking turns call by call so that the machine's load drifting weighs
        on both alike; and the cold start of each. Ratios are defaults / no rules."""
        im = self.im
        n = 6 if self.quick else 30
        regex = GREP_REGEXES[0][1]
        calls = [
            ("tree", "directory_tree of big", "directory_tree", {"path": self.big}),
            ("grep", f"grep over big: `{regex}`", "grep_files",
             {"regex": regex, "directory": self.big, "maxResults": GREP_CAP}),
        ]
        argv = {"defaults": im.replay_argv(), "none": im.replay_argv() + ["--no-default-deny"]}
        clients = {}
        try:
            for name, a in argv.items():
                clients[name] = McpClient(a, f"replay ({name})")
                clients[name].initialize()
            for key, title, tool, args in calls:
                g = self.group(f"deny-cost-{key}", f"deny rules' cost: {title}")
                samples = {name: [] for name in clients}
                try:
                    for c in clients.values():
                        c.call(tool, args)
                    for _ in range(n):
                        for name, c in clients.items():
                            samples[name].append(c.call(tool, args)[0])
                except McpError as e:
                    g.na("replay", f"error: {e}")
                    continue
                self.deny_rows(g, samples)
        finally:
            for c in clients.values():
                c.close()
        g = self.group("deny-cost-start", "deny rules' cost: cold start with big allowed")
        allow = f"{self.big}:ro"
        argv = {name: im.replay_argv(allow) + extra
                for name, extra in (("defaults", []), ("none", ["--no-default-deny"]))}
        samples = {name: [] for name in argv}
        for _ in range(n):
            for name, a in argv.items():
                samples[name].append(cold_session(a, name))
        self.deny_rows(g, samples)
        g.notes.append("the commands' covers are made by a process forked at start, beside the "
                       "server (src/sandbox/covering.rs): the start does not wait for the walk")

    def deny_rows(self, g, samples):
        g.add("replay", ms(samples["defaults"]), result="the default deny rules", peer=False)
        g.add("replay --no-default-deny", ms(samples["none"]), result="no deny rules")
        ratio, _ = g.ratio()
        g.set_check(ratio is not None and ratio <= 1.05,
                    f"defaults / no rules = {ratio:.3f} (at most 1.05)" if ratio else "no ratio")
        summarize(g)

    # The reply budget (--max-reply-tokens) ------------------------------------------------

    def bench_reply_budget(self):
        """What the token budget costs: its check on a whole 5 MiB read (a budget above the
        file's size, against none), a budgeted read of 5 MiB (its first page), the peak memory of
        a budgeted read of 16 MiB against a whole one, and what a glob's resource_link blocks add
        in tokens to its path list."""
        im = self.im
        path = os.path.join(self.fix, "big-5mb.txt")
        n = 5 if self.quick else 20
        g = self.group("reply-budget", "reply budget: read_file big-5mb.txt (5 MiB, per call)")
        times = {}
        for label, budget in [("whole (--max-reply-tokens 0)", 0),
                              ("budget above the file (100000000)", 100_000_000),
                              ("default budget (20,000): first page", "default")]:
            with im.start_replay(budget=budget) as c:
                t, text = repeat(lambda: c.call("read_file", {"path": path}), n, warmup=2)
                times[budget] = median(t)
                g.add("replay", ms(t), result=f"{len(text):,} chars", peer=False, label=label)
        extra = times[100_000_000] / times[0] - 1
        g.set_check(extra <= 0.05, f"the budget's check adds {extra:+.1%} to a whole 5 MiB read")
        summarize(g)

        g = self.group("reply-budget-rss", "reply budget: read_file of a 16 MiB text file, "
                       "peak RSS (VmHWM)", unit="MB")
        with tempfile.TemporaryDirectory() as tmp:
            big = os.path.join(tmp, "16mib.txt")
            with open(big, "w") as f:
                f.write(("x" * 63 + "\n") * (16 << 20 >> 6))
            peaks = {}
            for label, budget in [("whole (--max-reply-tokens 0)", 0), ("default budget", "default")]:
                with im.start_replay(allow=f"{tmp}:ro", budget=budget) as c:
                    base = c.vm_hwm_mb()
                    c.call("read_file", {"path": big})
                    peaks[budget] = c.vm_hwm_mb()
                    g.add("replay", median_v=peaks[budget], peer=False, label=label,
                          result=f"{base:.1f} MB before the call")
            g.set_check(peaks["default"] < peaks[0] / 2,
                        f"budgeted {peaks['default']:.1f} MB, whole {peaks[0]:.1f} MB")
        for r in g.rows:
            r["p95"] = None
        summarize(g)

        g = self.group("reply-budget-links", "glob_search **/*.toml in big/ (2025-06-18): "
                       "tokens of the paths as text, and with resource_link blocks", unit="tokens")
        count = tokens_counter()
        if not count:
            g.na("replay", "n/a (node is not installed)")
            return
        with im.start_replay() as c:
            res = c.result("glob_search", {"directory": self.big, "globs": ["**/*.toml"]})
        content = res.get("content", [])
        text = "".join(i.get("text", "") for i in content if i.get("type") == "text")
        links = [i for i in content if i.get("type") == "resource_link"]
        paths = "\n".join(res.get("structuredContent", {}).get("matches", []))
        texts = [paths, text, json.dumps(links)]
        node = shutil.which("node")
        env = dict(os.environ, NODE_PATH=os.path.join(TOKENS_DIR, "node_modules"))
        p = subprocess.run([node, os.path.join(HERE, "tokens.cjs"), "--texts"],
                           input=json.dumps(texts).encode(), stdout=subprocess.PIPE, env=env,
                           check=True, timeout=120)
        t_paths, t_text, t_links = json.loads(p.stdout)
        g.add("replay", median_v=t_paths, peer=False, label="path list (2024-11-05 text)",
              result=f"{len(links):,} paths")
        g.add("replay", median_v=t_text, peer=False, label="text item (paths and count)")
        g.add("replay", median_v=t_links, peer=False, label="resource_link blocks (JSON)",
              result=f"{t_links / max(t_paths, 1):.2f}x the path list")
        for r in g.rows:
            r["p95"] = None
        g.set_check(len(links) > 0, f"{len(links)} links")
        summarize(g)

    def bench_scale(self):
        """Each call on a fresh replay server over the million tree (../shared/bench/make-million.sh):
        its round trip, its reply line's bytes and the server's peak RSS (VmHWM) after it, side
        by side with find, rg and `ls -1` (wall time and peak RSS from wait4), alternating
        repetitions. The issue's bars (#16) are the check column."""
        im = self.im
        root = os.path.abspath(self.a.million)
        tree, flat = os.path.join(root, "tree"), os.path.join(root, "flat")
        n = 2 if self.quick else 5
        MB = 1e6
        wanted = {r.strip() for r in self.a.scale_rows.split(",") if r.strip()}
        first_group = len(self.groups)

        def replay_once(tool, args):
            """A fresh server, one call: (seconds, reply line bytes, peak RSS in bytes, reply)."""
            with McpClient(im.replay_argv(f"{root}:ro"), "replay") as c:
                c.initialize()
                rid = c.new_id()
                t0 = now()
                c.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                        "params": {"name": tool, "arguments": args}})
                t1, reply = c.wait_for(rid)
                hwm = c.vm_hwm_mb()
                size = c.line_bytes.get(rid, 0)
            if "error" in reply:
                raise McpError(f"replay {tool}: error {reply['error']}")
            return t1 - t0, size, hwm * 1024 * 1024 if hwm is not None else None, reply

        # The peers' peak RSS comes from GNU time's %M: a child spawned from this (large)
        # Python process would inherit its high-water mark through vfork and exec.
        gnu_time = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
        rss_file = os.path.join(tempfile.mkdtemp(prefix="replay-bench-scale-"), "rss")
        atexit.register(shutil.rmtree, os.path.dirname(rss_file), True)

        def tool_once(argv, env=None):
            """A subprocess, its output drained: (seconds, stdout bytes, peak RSS in bytes, stdout)."""
            wrapped = [gnu_time, "-f", "%M", "-o", rss_file] + argv if gnu_time else argv
            t0 = now()
            p = subprocess.run(wrapped, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
            dt = now() - t0
            rss = None
            if gnu_time:
                with open(rss_file) as f:
                    rss = int(f.read().split()[-1]) * 1024
            return dt, len(p.stdout), rss, p.stdout

        def text_of(reply):
            res = reply.get("result", {})
            return "".join(c.get("text", "") for c in res.get("content", []) if c.get("type") == "text")

        def depth_first(paths):
            # walk::path_order: byte order with `/` before every other byte.
            return sorted(paths, key=lambda p: p.encode("utf-8", "surrogateescape").replace(b"/", b"\0"))

        def row(key, title, tool, args, peer=None, peer_label=None, peer_env=None):
            """Alternates n timed runs of replay and the peer (after one untimed run of each)."""
            g = self.group(key, title)
            runs = {"replay": []}
            if peer:
                runs[peer_label] = []
            replay_once(tool, args)
            if peer:
                tool_once(peer, peer_env)
            last = {}
            for _ in range(n):
                dt, size, rss, reply = replay_once(tool, args)
                runs["replay"].append((dt, size, rss))
                last["replay"] = reply
                if peer:
                    dt, size, rss, out = tool_once(peer, peer_env)
                    runs[peer_label].append((dt, size, rss))
                    last[peer_label] = out
            for label, samples in runs.items():
                times = ms([s[0] for s in samples])
                size = median([s[1] for s in samples])
                rss = max((s[2] for s in samples if s[2] is not None), default=None)
                r = g.add(label, times, peer=label != "replay",
                          result=f"{size / MB:.3g} MB out, peak RSS "
                                 + (f"{rss / MB:.1f} MB" if rss is not None else "n/a"))
                r["reply_bytes"] = size
                r["peak_rss_bytes"] = rss
                r["rss_samples"] = [s[2] for s in samples]
            return g, last

        def bars(g, checks, detail):
            failed = [what for what, ok in checks if not ok]
            g.set_check(not failed, (("bar missed: " + "; ".join(failed) + "; ") if failed else "bars met; ")
                        + detail)
            summarize(g)

        def rows(g):
            return {r["label"]: r for r in g.rows}

        def check_names(g, last, peer, kind):
            """search_files and glob_search: the paths equal find's, in depth-first order."""
            got = [ln for ln in text_of(last["replay"]).split("\n") if ln.startswith("/")]
            ref = [ln for ln in last[peer].decode("utf-8", "surrogateescape").split("\n") if ln]
            r = rows(g)
            rss = r["replay"]["peak_rss_bytes"]
            ratio = r["replay"]["median"] / r[peer]["median"]
            bars(g, [(f"RSS {rss / MB:.1f} MB > 30 MB", rss <= 30 * MB),
                     (f"time {ratio:.2f}x find > 1.5x", ratio <= 1.5),
                     (f"{kind} differ from find's ({len(got)} vs {len(ref)})", set(got) == set(ref)),
                     ("not in depth-first order", got == depth_first(got))],
                 f"{len(got)} {kind} = find's, depth-first; {ratio:.2f}x find; RSS ≤ 30 MB")

        def search():
            g, last = row("scale-search", "million: search_files `f0999`", "search_files",
                          {"directory": tree, "nameContains": "f0999"},
                          [im.find, tree, "-iname", "*f0999*"], "find")
            check_names(g, last, "find", "paths")

        def glob():
            g, last = row("scale-glob", "million: glob_search `**/f0999.txt`", "glob_search",
                          {"directory": tree, "globs": ["**/f0999.txt"], "max": 0},
                          [im.find, tree, "-type", "f", "-name", "f0999.txt"], "find")
            check_names(g, last, "find", "files")

        def grep():
            if not im.rg:
                self.group("scale-grep", "million: grep_files `needle`").na("rg", "n/a (not installed)")
                return
            g, last = row("scale-grep", "million: grep_files `needle`", "grep_files",
                          {"directory": tree, "regex": "needle"},
                          [im.rg, "--no-ignore", "--hidden", "-n", "needle", tree], "rg")
            got = {ln for ln in text_of(last["replay"]).split("\n") if ln.startswith("/")}
            ref = {ln for ln in last["rg"].decode("utf-8", "surrogateescape").split("\n") if ln}
            r = rows(g)
            rss = r["replay"]["peak_rss_bytes"]
            ratio = r["replay"]["median"] / r["rg"]["median"]
            bars(g, [(f"RSS {rss / MB:.1f} MB > 30 MB", rss <= 30 * MB),
                     (f"time {ratio:.2f}x rg > 1.2x", ratio <= 1.2),
                     (f"lines differ from rg's ({len(got)} vs {len(ref)})", got == ref)],
                 f"{len(got)} lines = rg -n's; {ratio:.2f}x rg; RSS ≤ 30 MB")

        def tree_capped():
            g, last = row("scale-tree-capped", "million: directory_tree maxEntries 1000", "directory_tree",
                          {"path": tree, "maxEntries": 1000})
            content = last["replay"]["result"]["content"]
            nodes = tree_nodes(json.loads(content[0]["text"]))
            note = content[1]["text"] if len(content) > 1 else ""
            r = rows(g)
            rss = r["replay"]["peak_rss_bytes"]
            bars(g, [(f"time {r['replay']['median']:.0f} ms > 100 ms", r["replay"]["median"] <= 100),
                     (f"RSS {rss / MB:.1f} MB > 30 MB", rss <= 30 * MB),
                     (f"{nodes} nodes, not the root and 1,000", nodes == 1001)],
                 f"{nodes} nodes (the root and 1,000); note: {note[:60]}…")

        def tree_whole(fmt):
            args = {"path": tree} if fmt == "json" else {"path": tree, "format": "text"}
            g, last = row(f"scale-tree-{fmt}", f"million: directory_tree, whole ({fmt})", "directory_tree",
                          args, [im.find, tree], "find")
            content = last["replay"]["result"]["content"]
            if fmt == "json":
                shown = tree_nodes(json.loads(content[0]["text"]))
            else:
                shown = sum(1 for ln in content[0]["text"].split("\n") if not ln.startswith("["))
            notes = "".join(c.get("text", "") for c in content[1:]) if fmt == "json" else content[0]["text"]
            m = re.search(r"\[truncated: (\d+) (?:of \d+ )?entries shown", notes)
            r = rows(g)
            size, rss = r["replay"]["reply_bytes"], r["replay"]["peak_rss_bytes"]
            bar = 1.5 * size + 30 * MB
            bars(g, [(f"RSS {rss / MB:.1f} MB > 1.5 x {size / MB:.1f} MB + 30 MB = {bar / MB:.1f} MB", rss <= bar),
                     (f"the note says {m and m.group(1)} entries, {shown - 1} are shown",
                      m is None or int(m.group(1)) == shown - 1)],
                 f"{shown} nodes shown" + (" (cut to the reply's bound)" if m else "")
                 + f" of find's {count_lines(last['find'])}; RSS ≤ 1.5 x reply + 30 MB = {bar / MB:.1f} MB")

        def listing():
            ls = shutil.which("ls")
            env = dict(os.environ, LC_ALL="C")
            g, last = row("scale-list", "million: list_directory of 100,000 entries", "list_directory",
                          {"path": flat}, [ls, "-1", flat], "ls -1", peer_env=env)
            names = [ln[7:] for ln in text_of(last["replay"]).split("\n") if ln.startswith("[FILE] ")]
            ref = [ln for ln in last["ls -1"].decode("utf-8", "surrogateescape").split("\n") if ln]
            r = rows(g)
            size, rss = r["replay"]["reply_bytes"], r["replay"]["peak_rss_bytes"]
            bar = 1.5 * size + 30 * MB
            ratio = r["replay"]["median"] / r["ls -1"]["median"]
            bars(g, [(f"RSS {rss / MB:.1f} MB > {bar / MB:.1f} MB", rss <= bar),
                     (f"time {ratio:.2f}x ls -1 > 2x", ratio <= 2.0),
                     (f"names differ from ls -1's ({len(names)} vs {len(ref)})", names == ref)],
                 f"{len(names)} names = ls -1's, same order; {ratio:.2f}x ls; "
                 f"RSS ≤ 1.5 x reply + 30 MB = {bar / MB:.1f} MB")
            g.notes.append("ls -1 runs with LC_ALL=C: byte order, as replay sorts")

        def long_names():
            """`<million>/long`: 300,000 symlinks named with 250 bytes each, made on first use. A
            listing or a tree of it is cut by the reply's bound (75 MB of names, 24 MiB of
            reply): what the server holds must follow the reply, not the directory."""
            long_dir = os.path.join(root, "long")
            stem = "n" * 240
            count = 300_000
            if not os.path.isdir(long_dir) or len(os.listdir(long_dir)) != count:
                log(f"making {long_dir} (300,000 symlinks with 250-byte names, once)")
                shutil.rmtree(long_dir, ignore_errors=True)
                os.mkdir(long_dir)
                for i in range(count):
                    os.symlink("t", os.path.join(long_dir, f"{stem}{i:010d}"))
            return long_dir, count

        def listing_long():
            long_dir, count = long_names()
            env = dict(os.environ, LC_ALL="C")
            g, last = row("scale-list-long", "long names: list_directory of 300,000 names of 250 bytes",
                          "list_directory", {"path": long_dir}, [shutil.which("ls"), "-1", long_dir],
                          "ls -1", peer_env=env)
            text = text_of(last["replay"])
            names = [ln[7:] for ln in text.split("\n") if ln.startswith("[LINK] ")]
            ref = [ln for ln in last["ls -1"].decode("utf-8", "surrogateescape").split("\n") if ln]
            m = re.search(r"\[(\d+) more entries not shown", text)
            r = rows(g)
            size, rss = r["replay"]["reply_bytes"], r["replay"]["peak_rss_bytes"]
            bar = 1.5 * size + 30 * MB
            ratio = r["replay"]["median"] / r["ls -1"]["median"]
            bars(g, [(f"RSS {rss / MB:.1f} MB > {bar / MB:.1f} MB", rss <= bar),
                     (f"names shown are not ls -1's first {len(names)}", names == ref[:len(names)]),
                     (f"the note says {m and m.group(1)} more, not {count - len(names)}",
                      m is not None and int(m.group(1)) == count - len(names))],
                 f"ls -1's first {len(names)} names, the note counts the other {count - len(names)}; "
                 f"{ratio:.2f}x ls; RSS ≤ 1.5 x reply + 30 MB = {bar / MB:.1f} MB")
            g.notes.append("ls -1 runs with LC_ALL=C: byte order, as replay sorts")

        def tree_long():
            long_dir, count = long_names()
            g, last = row("scale-tree-long", "long names: directory_tree of 300,000 names of 250 bytes",
                          "directory_tree", {"path": long_dir}, [im.find, long_dir], "find")
            content = last["replay"]["result"]["content"]
            shown = tree_nodes(json.loads(content[0]["text"]))
            notes = "".join(c.get("text", "") for c in content[1:])
            m = re.search(r"\[truncated: (\d+) (?:of (\d+) )?entries shown", notes)
            r = rows(g)
            size, rss = r["replay"]["reply_bytes"], r["replay"]["peak_rss_bytes"]
            bar = 1.5 * size + 30 * MB
            bars(g, [(f"RSS {rss / MB:.1f} MB > {bar / MB:.1f} MB", rss <= bar),
                     (f"the note says {m and m.group(1)} entries, {shown - 1} are shown",
                      m is not None and int(m.group(1)) == shown - 1)],
                 f"{shown - 1} of {count} entries shown (cut to the reply's bound); "
                 f"RSS ≤ 1.5 x reply + 30 MB = {bar / MB:.1f} MB")

        for name, fn in [("search", search), ("glob", glob), ("grep", grep), ("tree-capped", tree_capped),
                         ("tree-json", lambda: tree_whole("json")), ("tree-text", lambda: tree_whole("text")),
                         ("list", listing), ("list-long", listing_long), ("tree-long", tree_long)]:
            if not wanted or name in wanted:
                fn()

        if len(self.groups) > first_group:
            self.groups[first_group].notes.append(
                f"each replay sample is a fresh server and one call ({n} timed after 1 untimed, alternating "
                "with the peer's runs); the result column gives the reply line's bytes (the peer's output's) "
                "and the highest peak RSS (VmHWM; the peer's from GNU time's %M); MB = 10^6 bytes; load "
                f"average at the end {' '.join(open('/proc/loadavg').read().split()[:3])}")

def machine_info(impls):
    info = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds")}
    try:
        info["nproc"] = int(subprocess.run(["nproc"], stdout=subprocess.PIPE, text=True).stdout.strip())
    except (OSError, ValueError):
        info["nproc"] = os.cpu_count()
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info["cpu_model"] = model or platform.processor() or "unknown"
    info["kernel"] = f"{platform.system()} {platform.release()}"
    try:
        info["loadavg_at_start"] = open("/proc/loadavg").read().split()[:3]
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            info["mem_total"] = f.readline().split(":", 1)[1].strip()
    except OSError:
        pass
    try:
        info["replay_version"] = subprocess.run([impls.replay, "--version"], stdout=subprocess.PIPE,
                                                text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        info["replay_version"] = "unknown"
    vfile = os.path.join(impls.peers, "VERSIONS.txt")
    if os.path.isfile(vfile):
        info["peer_versions"] = [ln.strip() for ln in open(vfile) if ln.strip()]
    return info


def markdown(groups, info):
    out = []
    out.append(f"Machine: {info.get('nproc')} CPUs ({info.get('cpu_model')}), {info.get('kernel')}, "
               f"load {' '.join(info.get('loadavg_at_start', []))} at start; {info.get('date')}; "
               f"{info.get('replay_version')}")
    out.append("")
    out.append("| benchmark | implementation | median | p95 | n | result | replay / best peer | check |")
    out.append("|---|---|---|---|---|---|---|---|")
    notes = []
    for g in groups:
        ratio, best = g.ratio()
        first = True
        for r in g.rows:
            unit = g.unit
            if r["error"]:
                med = p = "–"
            else:
                med = f"{fmt_num(r['median'])} {unit}"
                p = f"{fmt_num(r['p95'])} {unit}" if r["p95"] is not None else "–"
            ratio_cell = check_cell = ""
            if r["impl"] == "replay" and first:
                ratio_cell = f"{fmt_ratio(ratio)}" + (f" (vs {best})" if best else "")
                check_cell = g.check + (f": {g.check_detail}" if g.check_detail else "")
                first = False
            res = str(r["result"]).replace("|", "\\|")
            out.append(f"| {g.title if r is g.rows[0] else ''} | {r['label']} | {med} | {p} | "
                       f"{r['n'] or '–'} | {res} | {ratio_cell} | {check_cell.replace('|', '/')} |")
        for nt in g.notes:
            notes.append(f"- {g.key}: {nt}")
    out.append("")
    out.append("Ratios are replay's median time ÷ the fastest peer's median time (for RSS, MB ÷ MB): "
               "< 1 means replay is faster (smaller).")
    if notes:
        out.append("")
        out.extend(notes)
    return "\n".join(out)


def tokens_counter():
    """A function from a tools list to bench/tokens.cjs's counts, or None without node. Installs
    npm tiktoken into TOKENS_DIR on first use, as count-tokens does."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node:
        return None
    marker = os.path.join(TOKENS_DIR, "node_modules", "tiktoken", "encoders", "o200k_base.json")
    if not os.path.isfile(marker):
        if not npm:
            return None
        os.makedirs(TOKENS_DIR, exist_ok=True)
        log(f"[tokens] installing npm {TIKTOKEN} into {TOKENS_DIR}")
        if not os.path.isfile(os.path.join(TOKENS_DIR, "package.json")):
            subprocess.run([npm, "init", "-y"], cwd=TOKENS_DIR, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True)
        subprocess.run([npm, "install", "--silent", TIKTOKEN], cwd=TOKENS_DIR,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    env = dict(os.environ, NODE_PATH=os.path.join(TOKENS_DIR, "node_modules"))

    def count(tools):
        p = subprocess.run([node, os.path.join(HERE, "tokens.cjs")], input=json.dumps(tools).encode(),
                           stdout=subprocess.PIPE, env=env, check=True, timeout=60)
        return json.loads(p.stdout)
    return count


# --------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description="replay benchmark suite (see bench/README.md)")
    ap.add_argument("--corpus", default="/tmp/replay-corpus")
    ap.add_argument("--peers", default="/tmp/replay-peers")
    ap.add_argument("--replay", default=os.path.join(REPO, "target", "release", "replay"))
    ap.add_argument("--only", default="", help="comma-separated subset of: "
                    + ",".join(BENCHMARKS + OPTIONAL_BENCHMARKS))
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (under a minute)")
    ap.add_argument("--scale-rows", default="",
                    help="with --only scale, a comma-separated subset of its rows: search, glob, grep, "
                         "tree-capped, tree-json, tree-text, list, list-long, tree-long")
    ap.add_argument("--million", default="/tmp/replay-million",
                    help="the million tree of ../shared/bench/make-million.sh (for --only scale)")
    args = ap.parse_args()

    only = [s.strip() for s in args.only.split(",") if s.strip()] or BENCHMARKS
    unknown = [s for s in only if s not in BENCHMARKS + OPTIONAL_BENCHMARKS]
    if unknown:
        ap.error(f"unknown benchmark(s) {unknown}; choose from {','.join(BENCHMARKS + OPTIONAL_BENCHMARKS)}")

    impls = Impls(args)
    missing = False
    if not os.access(impls.replay, os.X_OK):
        log(f"replay binary not found at {impls.replay}: run `cargo build --release` first")
        missing = True
    for sub in ("big", "fixtures/small.txt", "fixtures/big-5mb.txt", "fixtures/dir1000"):
        if all(o in OPTIONAL_BENCHMARKS for o in only):  # they bring their own data
            break
        if not os.path.exists(os.path.join(impls.corpus, sub)):
            log(f"corpus incomplete ({os.path.join(impls.corpus, sub)} missing). Build it with:\n"
                f"    bash ../shared/bench/make-corpus.sh {impls.corpus}")
            missing = True
            break
    if "scale" in only and not all(os.path.isdir(os.path.join(args.million, d)) for d in ("tree", "flat")):
        log(f"the million tree is missing ({args.million}). Make it with:\n"
            f"    bash ../shared/bench/make-million.sh {args.million}")
        missing = True
    if missing:
        sys.exit(2)
    absent = [n for n, e in [("rg", impls.rg)] + impls.mcp_peers if not e]
    if absent:
        log(f"peers not installed in {impls.peers}/bin: {', '.join(absent)} (shown as n/a). "
            f"Install them with:\n    bash ../shared/bench/peers.sh {impls.peers}")

    info = machine_info(impls)
    log(f"machine: {info['nproc']} CPUs, {info['cpu_model']}, {info['kernel']}, "
        f"load {' '.join(info.get('loadavg_at_start', []))}")
    bench = Bench(args, impls)
    t0 = now()
    for name in BENCHMARKS + OPTIONAL_BENCHMARKS:
        if name not in only:
            continue
        fn = getattr(bench, "bench_" + name.replace("-", "_"))
        t = now()
        try:
            fn()
        except Exception as e:  # keep going: one broken benchmark must not hide the others
            g = bench.group(name, f"{name} (crashed)")
            g.na("replay", f"benchmark error: {type(e).__name__}: {e}")
            g.set_check(False, f"{type(e).__name__}: {e}")
            log(f"[{name}] crashed: {type(e).__name__}: {e}")
        log(f"[{name}] done in {now() - t:.1f} s")
    info["total_seconds"] = round(now() - t0, 1)
    info["quick"] = args.quick
    if _MCPCLIENT:
        info["latency_client"] = (f"C: {_MCPCLIENT['cmd']}" if _MCPCLIENT.get("path")
                                  else f"Python ({_MCPCLIENT.get('why')})")

    table = markdown(bench.groups, info)
    print(table)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    res_path = os.path.join(HERE, "results", "latest.json")
    with open(res_path, "w") as f:
        json.dump({"machine": info, "corpus": impls.corpus, "peers": impls.peers,
                   "benchmarks": [g.to_json() for g in bench.groups], "markdown": table}, f, indent=1)
    mism = [g for g in bench.groups if g.check == "MISMATCH"]
    log(f"total {info['total_seconds']} s; results in {res_path}"
        + (f"; {len(mism)} MISMATCH: " + ", ".join(g.key for g in mism) if mism else ""))


if __name__ == "__main__":
    main()
