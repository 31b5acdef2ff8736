#!/usr/bin/env bash
# The MCP bundle end to end: builds replay.mcpb from BINARY (scripts/package-mcpb.sh), checks its
# manifest with the official CLI (`mcpb validate`, then `mcpb pack` of the unpacked bundle), checks
# the tool list against schemas/, serves through the bundle's entry point as Claude Desktop starts
# it (read-write and read-only lists), and checks the server.json written beside it.
#   bash tests/install/mcpb.sh [BINARY]     (default $REPLAY_BIN, then target/release/replay)
# The CLI: $MCPB (a path to `mcpb`, as .ci/run installs it), else npx @anthropic-ai/mcpb.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
fail() { echo "mcpb.sh: FAIL: $*" >&2; exit 1; }
BIN="$(realpath "${1:-${REPLAY_BIN:-$ROOT/target/release/replay}}")" || fail "no binary"
MCPB_VERSION=2.1.2
if [ -n "${MCPB:-}" ]; then mcpb=("$MCPB"); else mcpb=(npx -y "@anthropic-ai/mcpb@$MCPB_VERSION"); fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

REPLAY_BIN="$BIN" bash "$ROOT/scripts/package-mcpb.sh" "$work/out"
mkdir "$work/bundle" "$work/rw" "$work/ro"
python3 -m zipfile -e "$work/out/replay.mcpb" "$work/bundle"
"${mcpb[@]}" validate "$work/bundle/manifest.json" || fail "mcpb validate"
"${mcpb[@]}" pack "$work/bundle" "$work/repacked.mcpb" || fail "mcpb pack"

# The tools: every schema's name and description, nothing else.
python3 - "$ROOT" "$work/bundle/manifest.json" <<'PY' || fail "the manifest's tools are not schemas/'s"
import glob, json, sys
root, manifest = sys.argv[1], json.load(open(sys.argv[2]))
want = sorted((s["name"], s["description"]) for s in map(lambda p: json.load(open(p)), glob.glob(f"{root}/schemas/*.json")))
got = sorted((t["name"], t["description"]) for t in manifest["tools"])
sys.exit(0 if got == want and len(got) > 0 else f"manifest tools {got} != schemas {want}")
PY

# As Claude Desktop starts it: the manifest's args with both lists expanded (one directory each).
# zipfile -e keeps no modes; a host unpacking a bundle does, so give them back here.
chmod +x "$work/bundle/server/replay-mcpb" "$work/bundle/server/"*/replay
entry="$work/bundle/server/replay-mcpb"
timeout 60 python3 "$ROOT/tests/install/mcp_smoke.py" "$work/rw" -- \
  "$entry" --read-write "$work/rw" --read-only "$work/ro" || fail "serving through the bundle"
# A read-only directory refuses the write; a list the host left unexpanded names nothing.
status=0
out="$(timeout 60 python3 "$ROOT/tests/install/mcp_smoke.py" "$work/ro" -- \
  "$entry" --read-write "$work/rw" --read-only "$work/ro" '${user_config.extra}' 2>&1)" || status=$?
[ "$status" -ne 0 ] && grep -q 'write_file:' <<< "$out" && ! grep -q 'initialize:' <<< "$out" \
  || fail "the write into the read-only directory: $out"
[ ! -e "$work/ro/smoke.txt" ] || fail "the read-only directory was written"

# server.json beside the bundle: this version's URL and the bundle's sum.
python3 - "$work/out" <<'PY' || fail "server.json does not name the bundle built"
import hashlib, json, sys
out = sys.argv[1]
server = json.load(open(f"{out}/server.json"))
sha = hashlib.sha256(open(f"{out}/replay.mcpb", "rb").read()).hexdigest()
bundle = [p for p in server["packages"] if p["registryType"] == "mcpb"][0]
assert bundle["fileSha256"] == sha, (bundle, sha)
assert bundle["identifier"].endswith(f"/v{server['version']}/replay.mcpb"), bundle
PY
echo "mcpb.sh: ok: validated and packed by mcpb $MCPB_VERSION, served read-write and read-only, server.json has the sum"
