"""Interop test: drive the real replay binary with the official Python MCP SDK.

Usage: py_client.py [--mode legacy|auto] /path/to/replay

Starts replay on a fresh temp tree through the SDK's stdio client, lists the
tools, calls each of the 19 tools once with valid arguments, and checks one
error case (a path outside the allowed directory must surface as an MCPError
with code -32001). From revision 2025-06-18 on, each of the 9 data tools that
tools/list gives an outputSchema must return a structuredContent object (the
SDK validates its shape against the schema). Prints one summary line; exits
non-zero on any failure.

--mode legacy (the default): `ClientSession` with the `initialize` handshake;
the SDK offers its newest handshake-era version (2025-11-25).
--mode auto: the high-level `Client` with its default mode="auto", which
probes `server/discover` (2026-07-28) first and falls back to `initialize`
only when the server does not speak it. replay does, so the connection must
end up on 2026-07-28 through server/discover.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import sys
import tempfile
import zlib
from importlib.metadata import version as dist_version

import anyio
import mcp_types as types
from mcp.client import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

EXPECTED_TOOLS = {
    "read_file",
    "read_multiple_files",
    "write_file",
    "create_directory",
    "list_directory",
    "directory_tree",
    "move_file",
    "copy_file",
    "delete_file",
    "get_file_info",
    "list_allowed_directories",
    "edit_file",
    "edit_files",
    "search_files",
    "glob_search",
    "grep_files",
    "execute_command",
    "command_session",
}
PATH_NOT_ALLOWED = -32001
VERSION = dist_version("mcp")
MODERN = "2026-07-28"
# The tools that return data a program would parse. From STRUCTURED_SINCE on, each of them that
# declares an outputSchema in tools/list must also return a structuredContent object.
DATA_TOOLS = (
    "get_file_info",
    "list_directory",
    "directory_tree",
    "list_allowed_directories",
    "search_files",
    "glob_search",
    "grep_files",
    "execute_command",
    "command_session",
)
STRUCTURED_SINCE = "2025-06-18"


class Failure(Exception):
    pass


def check(cond: bool, what: str) -> None:
    if not cond:
        raise Failure(what)


def tiny_png() -> bytes:
    """A valid 1x1 8-bit RGB PNG, built by hand (signature, IHDR, IDAT, IEND)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00\xff\x00\x00")  # filter byte 0, one red pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def make_tree() -> tuple[str, bytes]:
    root = os.path.realpath(tempfile.mkdtemp(prefix="replay-interop-py-"))
    with open(os.path.join(root, "hello.txt"), "w") as f:
        f.write("hello world\nsecond line\n")
    png = tiny_png()
    with open(os.path.join(root, "pixel.png"), "wb") as f:
        f.write(png)
    os.mkdir(os.path.join(root, "sub"))
    with open(os.path.join(root, "sub", "nested.txt"), "w") as f:
        f.write("a nested needle\n")
    return root, png


def texts(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def exercise(session, root: str, png: bytes, revision: str) -> str:
    """List the tools and call each once. `session` is a ClientSession or a Client (same call shapes).

    Returns the line's fragment: "19/19 tools OK, structuredContent K/9".
    """
    p = lambda *parts: os.path.join(root, *parts)  # noqa: E731
    ok: set[str] = set()
    structured = revision >= STRUCTURED_SINCE

    # tools/list first: the SDK keeps each tool's outputSchema from it and validates
    # structuredContent against that schema on every tools/call after.
    listed = await session.list_tools()
    names = {t.name for t in listed.tools}
    missing = EXPECTED_TOOLS - names
    check(not missing, f"tools/list lacks {sorted(missing)}")
    declared = {t.name for t in listed.tools if t.name in DATA_TOOLS and t.output_schema}
    returned: set[str] = set()

    async def call(name: str, args: dict, *expect: str) -> types.CallToolResult:
        res = await session.call_tool(name, args)
        check(not res.is_error, f"{name}: isError=true: {texts(res)!r}")
        out = texts(res)
        for e in expect:
            check(e in out, f"{name}: expected {e!r} in {out!r}")
        if structured and name in declared:
            check(
                isinstance(res.structured_content, dict),
                f"{name}: tools/list declares an outputSchema and the revision is {revision}, but the result"
                f" has no structuredContent object: {res.structured_content!r}",
            )
            returned.add(name)
        ok.add(name)
        return res

    await call("list_allowed_directories", {}, root, "(read-write)")
    await call("list_directory", {"path": root}, "[FILE] hello.txt", "[FILE] pixel.png", "[DIR]  sub")
    await call("read_file", {"path": p("hello.txt")}, "hello world\nsecond line")

    # read_file of a PNG: an ImageContent item the SDK parsed, with the exact bytes.
    res = await session.call_tool("read_file", {"path": p("pixel.png")})
    check(not res.is_error, f"read_file png: isError=true: {res!r}")
    images = [c for c in res.content if isinstance(c, types.ImageContent)]
    check(len(images) == 1, f"read_file png: expected one ImageContent, got {res.content!r}")
    check(images[0].mime_type == "image/png", f"read_file png: mimeType {images[0].mime_type!r}")
    check(base64.b64decode(images[0].data) == png, "read_file png: decoded bytes differ")

    await call(
        "read_multiple_files",
        {"paths": [p("hello.txt"), p("sub", "nested.txt")]},
        "hello world",
        "a nested needle",
    )
    await call("write_file", {"path": p("new.txt"), "content": "alpha beta\n"}, "Successfully wrote")
    await call("create_directory", {"path": p("made", "deep")}, "Created directory")
    tree = await call("directory_tree", {"path": root})
    doc = json.loads(texts(tree))
    check(doc.get("type") == "directory", f"directory_tree: {doc!r}")
    kids = {c["name"] for c in doc.get("children", [])}
    check({"hello.txt", "pixel.png", "sub", "made", "new.txt"} <= kids, f"directory_tree: {kids!r}")
    await call(
        "edit_file",
        {"path": p("new.txt"), "edits": [{"oldText": "alpha", "newText": "gamma"}]},
        "Successfully edited",
    )
    await call(
        "edit_files",
        {"paths": [p("*.txt")], "edits": [{"oldText": "second line", "newText": "2nd line"}]},
        "Successfully edited",
        p("hello.txt"),
    )
    with open(p("hello.txt")) as f:
        check(f.read() == "hello world\n2nd line\n", "edit_files did not change hello.txt on disk")
    await call("get_file_info", {"path": p("hello.txt")}, "type: file", "size:", "modified:", "permissions:")
    await call("search_files", {"directory": root, "nameContains": "NESTED"}, p("sub", "nested.txt"))
    await call("glob_search", {"directory": root, "globs": ["**/*.txt"]}, p("new.txt"), p("sub", "nested.txt"))
    await call("grep_files", {"regex": "needle", "directory": root}, p("sub", "nested.txt") + ":1:a nested needle")
    await call("execute_command", {"command": "echo interop-ok", "workingDirectory": root}, "interop-ok", "[exit code: 0]")
    await call("command_session", {}, "(no sessions)")
    await call("copy_file", {"source": p("new.txt"), "destination": p("made", "copied.txt")}, "Copied")
    with open(p("made", "copied.txt"), "rb") as copied, open(p("new.txt"), "rb") as original:
        check(copied.read() == original.read(), "copy_file: the copy on disk differs")
    await call("move_file", {"source": p("new.txt"), "destination": p("made", "moved.txt")}, "Moved")
    await call("delete_file", {"path": p("made", "moved.txt")}, "Deleted")
    check(not os.path.exists(p("made", "moved.txt")), "delete_file left the file on disk")

    # Error case: a path outside the allowed directory -> JSON-RPC error -32001.
    try:
        await session.call_tool("read_file", {"path": "/etc/passwd"})
    except MCPError as e:
        check(e.code == PATH_NOT_ALLOWED, f"read_file /etc/passwd: code {e.code}, want -32001 ({e.message})")
    else:
        raise Failure("read_file /etc/passwd: the SDK returned a result, want MCPError -32001")

    check(ok == EXPECTED_TOOLS, f"tools not exercised: {sorted(EXPECTED_TOOLS - ok)}")
    if not structured:
        return f"{len(ok)}/{len(EXPECTED_TOOLS)} tools OK, structuredContent n/a before {STRUCTURED_SINCE}"
    check(returned == declared, f"declared an outputSchema but never checked: {sorted(declared - returned)}")
    return f"{len(ok)}/{len(EXPECTED_TOOLS)} tools OK, structuredContent {len(returned)}/{len(DATA_TOOLS)}"


async def run(binary: str, mode: str) -> str:
    root, png = make_tree()
    params = StdioServerParameters(command=binary, args=["--mcp-server", "--allow", f"{root}:rw"])
    try:
        with anyio.fail_after(60):
            if mode == "legacy":
                # ClientSession over the stdio client, with the initialize handshake.
                async with stdio_client(params) as (read, write):
                    async with ClientSession(read, write, read_timeout_seconds=30) as session:
                        init = await session.initialize()
                        check(init.server_info.name == "replay", f"serverInfo: {init.server_info!r}")
                        check(init.capabilities.tools is not None, "server did not advertise the tools capability")
                        check(init.protocol_version < MODERN, f"the handshake negotiated {init.protocol_version}")
                        summary = await exercise(session, root, png, init.protocol_version)
                        how = f"protocol {init.protocol_version} via initialize"
            else:
                # The high-level Client with its default mode="auto": it probes server/discover
                # (2026-07-28) first and would fall back to initialize on a handshake-era server.
                # replay speaks 2026-07-28, so there must be no fallback.
                async with Client(params, read_timeout_seconds=30) as client:
                    check(client.server_info is not None and client.server_info.name == "replay",
                          f"serverInfo: {client.server_info!r}")
                    check(client.server_capabilities.tools is not None, "server did not advertise the tools capability")
                    era = "initialize" if client.session.initialize_result is not None else "server/discover"
                    check(
                        client.protocol_version == MODERN and era == "server/discover",
                        f"auto mode ended up on {client.protocol_version} via {era}, want {MODERN} via server/discover",
                    )
                    summary = await exercise(client, root, png, client.protocol_version)
                    how = f"protocol {client.protocol_version} via {era}"
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return f"{summary} ({how})"


def one_line(text: str, limit: int = 1000) -> str:
    """A failure reason fit for the client's one line: no newlines (a jsonschema error spans many), at most `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def leaf_exceptions(e: BaseException):
    """The exceptions inside (nested) exception groups, which anyio task groups raise."""
    if isinstance(e, BaseExceptionGroup):
        for sub in e.exceptions:
            yield from leaf_exceptions(sub)
    else:
        yield e


def main() -> int:
    args = sys.argv[1:]
    mode = "legacy"
    if len(args) == 3 and args[0] == "--mode" and args[1] in ("legacy", "auto"):
        mode, args = args[1], args[2:]
    if len(args) != 1:
        print("usage: py_client.py [--mode legacy|auto] /path/to/replay", file=sys.stderr)
        return 2
    label = f"python-mcp {VERSION} {mode}"
    try:
        line = anyio.run(run, args[0], mode)
    except BaseException as e:  # noqa: BLE001 - report anything, including ExceptionGroup and timeouts
        leaves = list(leaf_exceptions(e))
        if all(isinstance(x, Failure) for x in leaves):
            print(f"{label}: FAILED: " + one_line("; ".join(str(x) for x in leaves)))
        else:
            import traceback

            traceback.print_exception(e)
            print(f"{label}: FAILED: " + one_line("; ".join(f"{type(x).__name__}: {x}" for x in leaves)))
        return 1
    print(f"{label}: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
