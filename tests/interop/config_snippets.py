"""Interop test: the client configuration snippets in docs/protocol.md start replay as written.

Usage: config_snippets.py /path/to/replay [docs/protocol.md]

Finds every client configuration in docs/protocol.md:
  - each ```json block (every one must parse). Those with a "mcpServers" object (Claude Desktop,
    Claude Code's .mcp.json, Cursor) or a "servers" object (VS Code's .vscode/mcp.json) are
    configurations: each of their entries is one server to start;
  - each `claude mcp add [options] NAME -- COMMAND ARGS...` command in a ```sh block.
Each server entry must be a stdio server ("type", when present, is "stdio"; VS Code's "servers"
entries must say so) whose "command" is the placeholder /path/to/replay. The real binary goes in
its place. Every directory the args allow (--allow, --allow-read, --allow-write, bare
directories), whatever placeholder it is (/path/to/project, ${workspaceFolder}, $PWD, ...),
becomes a fresh temp directory, with its :ro or :rw suffix kept. Then the server is started
exactly as "command" + "args" (+ "env") say, through the Python SDK's stdio client, and must
complete initialize (serverInfo.name "replay") and tools/list (the 19 tools, 16 with
--no-exec), and list_allowed_directories must name each temp directory with the mode the
snippet gave it.

The "## Configuring clients" section must hold a tested snippet for each of Claude Desktop,
Claude Code (the command and .mcp.json), VS Code and Cursor, under headings that name them.
Prints one summary line; exits non-zero on any failure.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from importlib.metadata import version as dist_version

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from py_client import leaf_exceptions

HERE = os.path.dirname(os.path.abspath(__file__))
BINARY_PLACEHOLDER = "/path/to/replay"
SECTION = "## Configuring clients"
# Each client the section must cover: (name, what its snippet must be).
REQUIRED = [
    ("Claude Desktop", "json:mcpServers"),
    ("Claude Code", "claude mcp add"),
    ("Claude Code", "json:mcpServers"),
    ("VS Code", "json:servers"),
    ("Cursor", "json:mcpServers"),
]
CLIENTS = ["Claude Desktop", "Claude Code", "VS Code", "Cursor"]
TOOL_COUNT = 19
ALLOW_FLAGS = {"--allow": None, "--allow-read": "ro", "--allow-write": "rw"}
VALUE_FLAGS = {"--deny-command", "--sandbox-read", "--log-level", "--tool-errors"}


class Failure(Exception):
    pass


def check(cond: bool, what: str) -> None:
    if not cond:
        raise Failure(what)


@dataclass
class Snippet:
    line: int  # 1-based line of the opening fence in docs/protocol.md
    section: str  # the enclosing "## " heading
    client: str  # the client named by the nearest "###" heading or the paragraph above the block
    kind: str  # "json:mcpServers", "json:servers" or "claude mcp add"
    name: str  # the server's name in the snippet
    command: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"docs/protocol.md:{self.line} ({self.client}, {self.kind} {self.name!r})"


def find_client(text: str) -> str:
    """The client a heading or paragraph names, by its capitalised name ("Cursor", not ".cursor/")."""
    for c in CLIENTS:
        if c in text:
            return c
    return "?"


def parse_readme(path: str) -> list[Snippet]:
    lines = open(path, encoding="utf-8").read().split("\n")
    snippets: list[Snippet] = []
    section = subsection = ""
    last_text = ""  # the last non-blank line outside a fence
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^```(\w*)\s*$", line)
        if not fence:
            if line.startswith("## "):
                section, subsection = line.strip(), ""
            elif line.startswith("### "):
                subsection = line.strip()
            if line.strip():
                last_text = line.strip()
            i += 1
            continue
        lang, start = fence.group(1), i
        end = start + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        body = "\n".join(lines[start + 1 : end])
        client = find_client(subsection) if subsection else find_client(last_text)
        if client == "?":
            client = find_client(last_text)
        if lang == "json":
            try:
                doc = json.loads(body)
            except json.JSONDecodeError as e:
                raise Failure(f"docs/protocol.md:{start + 1}: a json block does not parse: {e}") from None
            for key in ("mcpServers", "servers"):
                servers = doc.get(key) if isinstance(doc, dict) else None
                if servers is None:
                    continue
                check(isinstance(servers, dict) and servers, f"docs/protocol.md:{start + 1}: {key!r} is not a non-empty object")
                for name, entry in servers.items():
                    where = f"docs/protocol.md:{start + 1} ({key}.{name})"
                    check(isinstance(entry, dict), f"{where}: not an object")
                    kind = f"json:{key}"
                    if key == "servers":
                        check(entry.get("type") == "stdio", f"{where}: VS Code needs \"type\": \"stdio\", got {entry.get('type')!r}")
                    else:
                        check(entry.get("type", "stdio") == "stdio", f"{where}: \"type\" is {entry.get('type')!r}, want \"stdio\"")
                    command, args, env = entry.get("command"), entry.get("args", []), entry.get("env", {})
                    check(isinstance(command, str), f"{where}: no \"command\" string")
                    check(isinstance(args, list) and all(isinstance(a, str) for a in args), f"{where}: \"args\" is not a list of strings")
                    check(isinstance(env, dict), f"{where}: \"env\" is not an object")
                    snippets.append(Snippet(start + 1, section, client, kind, name, command, args, dict(env)))
        elif lang in ("sh", "bash", "shell", "console"):
            # Join backslash-continued lines, then look for `claude mcp add`.
            logical = re.sub(r"\\\n\s*", " ", body).split("\n")
            for cmd in logical:
                cmd = cmd.strip().removeprefix("$ ").strip()
                if not cmd.startswith("claude mcp add ") or cmd.startswith("claude mcp add-json"):
                    continue
                snippets.append(parse_claude_add(cmd, start + 1, section, client))
        i = end + 1
    return snippets


def parse_claude_add(cmd: str, line: int, section: str, client: str) -> Snippet:
    where = f"docs/protocol.md:{line} ({cmd!r})"
    tokens = shlex.split(cmd)
    check("--" in tokens, f"{where}: no `--` before the server command")
    sep = tokens.index("--")
    head, tail = tokens[3:sep], tokens[sep + 1 :]
    check(tail, f"{where}: nothing after `--`")
    env: dict[str, str] = {}
    positional: list[str] = []
    j = 0
    while j < len(head):
        t = head[j]
        if t in ("-t", "--transport"):
            check(head[j + 1 : j + 2] == ["stdio"], f"{where}: --transport {head[j + 1 : j + 2]}, want stdio")
            j += 2
        elif t in ("-s", "--scope"):
            check(head[j + 1 : j + 2] and head[j + 1] in ("local", "project", "user"), f"{where}: bad --scope")
            j += 2
        elif t in ("-e", "--env"):
            k, _, v = head[j + 1].partition("=")
            env[k] = v
            j += 2
        elif t.startswith("-"):
            raise Failure(f"{where}: option {t} is not one this check knows")
        else:
            positional.append(t)
            j += 1
    check(len(positional) == 1, f"{where}: want exactly one server name before `--`, got {positional}")
    return Snippet(line, section, client, "claude mcp add", positional[0], tail[0], tail[1:], env)


def substitute(sn: Snippet, binary: str, tmp: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The snippet's args with every allowed directory replaced by a fresh temp dir.

    Returns (args, [(temp dir, "rw" | "ro"), ...]) in the order the snippet allows them.
    """
    check(sn.command == BINARY_PLACEHOLDER, f"{sn.where}: command is {sn.command!r}, want the placeholder {BINARY_PLACEHOLDER}")
    mapped: dict[str, str] = {}
    allowed: list[tuple[str, str]] = []

    def place(spec: str, forced: str | None) -> str:
        m = re.match(r"^(.*?)(?::(rw|ro))?$", spec)
        path, suffix = m.group(1), m.group(2)
        if path not in mapped:
            mapped[path] = tempfile.mkdtemp(prefix="dir-", dir=tmp)
        allowed.append((mapped[path], forced or suffix or "rw"))
        return mapped[path] + (f":{suffix}" if suffix else "")

    out: list[str] = []
    args = list(sn.args)
    check("--mcp-server" in args, f"{sn.where}: args lack --mcp-server")
    j = 0
    while j < len(args):
        a = args[j]
        if a in ALLOW_FLAGS:
            check(j + 1 < len(args), f"{sn.where}: {a} without a value")
            out += [a, place(args[j + 1], ALLOW_FLAGS[a])]
            j += 2
        elif "=" in a and a.split("=", 1)[0] in ALLOW_FLAGS:
            flag, value = a.split("=", 1)
            out.append(f"{flag}={place(value, ALLOW_FLAGS[flag])}")
            j += 1
        elif a in VALUE_FLAGS:
            out += args[j : j + 2]
            j += 2
        elif a.startswith("-"):
            out.append(a)
            j += 1
        else:  # a bare directory: allowed read-write
            out.append(place(a, "rw"))
            j += 1
    check(allowed, f"{sn.where}: the args allow no directory")
    return out, allowed


async def start(sn: Snippet, binary: str, tmp: str) -> str:
    args, allowed = substitute(sn, binary, tmp)
    env = {**os.environ, **sn.env} if sn.env else None
    params = StdioServerParameters(command=binary, args=args, env=env)
    expected_tools = TOOL_COUNT - 2 if "--no-exec" in args else TOOL_COUNT
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=30) as session:
            init = await session.initialize()
            check(init.server_info.name == "replay", f"{sn.where}: serverInfo {init.server_info!r}")
            check(init.capabilities.tools is not None, f"{sn.where}: no tools capability")
            listed = await session.list_tools()
            check(len(listed.tools) == expected_tools, f"{sn.where}: tools/list has {len(listed.tools)} tools, want {expected_tools}")
            res = await session.call_tool("list_allowed_directories", {})
            check(not res.is_error, f"{sn.where}: list_allowed_directories failed: {res.content!r}")
            out = "\n".join(getattr(c, "text", "") for c in res.content)
            for d, mode in allowed:
                want = f"{os.path.realpath(d)} ({'read-write' if mode == 'rw' else 'read-only'})"
                check(want in out, f"{sn.where}: list_allowed_directories lacks {want!r}: {out!r}")
            return init.protocol_version


async def run(binary: str, readme: str) -> str:
    snippets = parse_readme(readme)
    ours = [s for s in snippets if s.section == SECTION]
    check(ours, f"docs/protocol.md has no tested snippet under {SECTION!r}")
    for client, kind in REQUIRED:
        check(any(s.client == client and s.kind == kind for s in ours), f"{SECTION}: no {kind} snippet for {client}")
    tmp = os.path.realpath(tempfile.mkdtemp(prefix="replay-interop-config-"))
    revisions: dict[int, str] = {}
    failures: list[str] = []
    try:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for k, sn in enumerate(snippets):

                    async def one(k: int = k, sn: Snippet = sn) -> None:
                        try:
                            revisions[k] = await start(sn, binary, tmp)
                        except Failure as e:
                            failures.append(str(e))
                        except Exception as e:  # noqa: BLE001 - an SDK or spawn error fails this snippet only
                            why = " ".join("; ".join(f"{type(x).__name__}: {x}" for x in leaf_exceptions(e)).split())[:500]
                            failures.append(f"{sn.where}: {why} (replay's stderr is above)")

                    tg.start_soon(one)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    check(not failures, "; ".join(failures))
    others = len(snippets) - len(ours)
    counts: dict[str, int] = {}
    for s in ours:
        counts[s.client] = counts.get(s.client, 0) + 1
    names = ", ".join(c + (f" x{n}" if n > 1 else "") for c, n in counts.items())
    also = f"; {others} in other sections" if others else ""
    revs = ",".join(sorted(set(revisions.values())))
    return (
        f"ok ({len(snippets)}/{len(snippets)} snippets: initialize + tools/list = {TOOL_COUNT} tools + list_allowed_directories;"
        f" {len(ours)} in \"{SECTION[3:]}\": {names}{also}) (protocol {revs} via initialize)"
    )


def main() -> int:
    args = sys.argv[1:]
    if len(args) not in (1, 2):
        print("usage: config_snippets.py /path/to/replay [docs/protocol.md]", file=sys.stderr)
        return 2
    readme = args[1] if len(args) == 2 else os.path.join(HERE, "..", "..", "docs", "protocol.md")
    label = f"config-snippets via python-mcp {dist_version('mcp')}"
    try:
        line = anyio.run(run, args[0], readme)
    except BaseException as e:  # noqa: BLE001 - report anything, including ExceptionGroup and timeouts
        leaves = list(leaf_exceptions(e))
        if not all(isinstance(x, Failure) for x in leaves):
            import traceback

            traceback.print_exception(e)
        reason = "; ".join(str(x) if isinstance(x, Failure) else f"{type(x).__name__}: {x}" for x in leaves)
        print(f"{label}: FAILED: " + " ".join(reason.split()))
        return 1
    print(f"{label}: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
