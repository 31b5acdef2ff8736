#!/usr/bin/env python3
"""Drives an installed replay as an MCP client would: initialize, then tools/call.

    python3 tests/install/mcp_smoke.py DIR -- COMMAND [ARG...]

COMMAND must serve MCP on stdio with DIR allowed read-write (e.g. `replay --mcp-server --allow
DIR`). The check writes DIR/smoke.txt with write_file, reads it back with read_file, ends the
session by closing stdin, and fails unless the server answered both and exited with status 0.
"""

import json
import os
import subprocess
import sys

TIMEOUT_S = 30


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    allowed, command = sys.argv[1], sys.argv[3:]
    target = os.path.join(os.path.realpath(allowed), "smoke.txt")
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "mcp_smoke", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "write_file", "arguments": {"path": target, "content": "installed\n"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "read_file", "arguments": {"path": target}}},
    ]
    # One request at a time: the server answers calls concurrently, so the read waits for the
    # write's reply. The callers bound the whole run with `timeout`.
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    replies = {}
    for request in requests:
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        while "id" in request and request["id"] not in replies:
            line = server.stdout.readline()
            if not line:
                break
            message = json.loads(line)  # stdout carries JSON-RPC only
            if "id" in message:
                replies[message["id"]] = message
    server.stdin.close()
    rest = server.stdout.read()
    for line in rest.splitlines():
        json.loads(line)
    stderr = server.stderr.read()
    returncode = server.wait(timeout=TIMEOUT_S)
    problems = []
    if replies.get(1, {}).get("result", {}).get("serverInfo", {}).get("name") != "replay":
        problems.append(f"initialize: {replies.get(1)}")
    if "result" not in replies.get(2, {}) or replies[2]["result"].get("isError", False):
        problems.append(f"write_file: {replies.get(2)}")
    texts = [c.get("text", "") for c in replies.get(3, {}).get("result", {}).get("content", [])]
    if "installed\n" not in texts:
        problems.append(f"read_file: {replies.get(3)}")
    if returncode != 0:
        problems.append(f"exit status {returncode}")
    if problems:
        sys.exit(f"mcp_smoke: {' '.join(command)}:\n  " + "\n  ".join(problems)
                 + f"\n  stderr: {stderr[-2000:]}")
    print(f"mcp_smoke: ok: {' '.join(command[:2])} ... answered initialize and tools/call")


if __name__ == "__main__":
    main()
