#!/usr/bin/env bash
# Interop tests: drive the real replay binary with the official MCP clients.
#   bash tests/interop/run.sh
# Installs what it needs idempotently (a venv from requirements.txt, `npm ci` from
# package-lock.json), builds replay with `cargo build` unless REPLAY is set to a binary,
# then runs each client in each protocol era it supports, in turn: the Python SDK (ClientSession
# on the legacy initialize handshake, then Client in auto mode, which must reach 2026-07-28), the
# TypeScript SDK v1 (legacy) and v2 (legacy, then auto), the MCP Inspector CLI (legacy, then
# modern), the conformance suite through supergateway, and the client configuration snippets in
# docs/protocol.md. One line per client and era, each naming the protocol revision it ended up on;
# exits non-zero if any fails.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$HERE"

die() { echo "interop: $*" >&2; exit 1; }
start_ns=$(date +%s%N)

# Python client: a venv under .venv, reinstalled only when requirements.txt changes.
PY="${PYTHON:-python3}"
req_sum=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat .venv/.requirements.sha256 2>/dev/null)" != "$req_sum" ]; then
  echo "interop: installing the Python client (requirements.txt) into tests/interop/.venv"
  rm -rf .venv
  "$PY" -m venv .venv || die "cannot create a venv with $PY (Python >= 3.10 with venv is needed)"
  .venv/bin/pip install --disable-pip-version-check -q -r requirements.txt || die "pip install failed"
  echo "$req_sum" > .venv/.requirements.sha256
fi

# The JavaScript clients: node_modules from package.json + package-lock.json, reinstalled only
# when either changes. The lock pins Node 22 itself (npm package "node"), which the v2 SDK
# client, the Inspector, the conformance suite and supergateway run on.
command -v node >/dev/null || die "node is not installed"
command -v npm >/dev/null || die "npm is not installed"
NODE22="$HERE/node_modules/node/bin/node"
lock_sum=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)
if [ ! -x "$NODE22" ] || [ "$(cat node_modules/.lock.sha256 2>/dev/null)" != "$lock_sum" ]; then
  echo "interop: installing the JavaScript clients (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error >/dev/null || die "npm ci failed"
  [ -x "$NODE22" ] || die "npm ci did not install Node 22 at $NODE22 (the \"node\" package's preinstall script)"
  echo "$lock_sum" > node_modules/.lock.sha256
fi
# Node 22 keeps compiled code here between runs, which shortens each client's start-up.
export NODE_COMPILE_CACHE="$HERE/node_modules/.cache/node-compile-cache"

# The server under test.
if [ -n "${REPLAY:-}" ]; then
  BIN="$REPLAY"
else
  (cd "$ROOT" && cargo build --locked --quiet) || die "cargo build failed"
  BIN="$ROOT/target/debug/replay"
fi
[ -x "$BIN" ] || die "no replay binary at $BIN"

# Each client prints its own line; a timing for each is printed at the end.
passed=0
failed=0
timings=()
client() {
  local name=$1 t0=$(date +%s%N)
  shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  timings+=("$name $(printf "%d.%01d" $((ms / 1000)) $((ms % 1000 / 100)))s")
}
clients_ns=$(date +%s%N)
client py-legacy .venv/bin/python py_client.py --mode legacy "$BIN"
client py-auto .venv/bin/python py_client.py --mode auto "$BIN"
client ts-v1 node ts_client.mjs "$BIN"
client ts-v2-legacy "$NODE22" ts2_client.mjs --mode legacy "$BIN"
client ts-v2-auto "$NODE22" ts2_client.mjs --mode auto "$BIN"
client inspector-legacy "$NODE22" inspector.mjs --protocol-era legacy "$BIN"
client inspector-modern "$NODE22" inspector.mjs --protocol-era modern "$BIN"
client conformance bash conformance.sh "$BIN"
client config-snippets .venv/bin/python config_snippets.py "$BIN" "$ROOT/docs/protocol.md"

now=$(date +%s%N)
ms=$(( (now - clients_ns) / 1000000 ))
total=$(( (now - start_ns) / 1000000 ))
echo "interop: clients ran in $(printf "%d.%03d" $((ms / 1000)) $((ms % 1000)))s" \
  "($(IFS=,; echo "${timings[*]}" | sed 's/,/, /g')); whole run $(printf "%d.%03d" $((total / 1000)) $((total % 1000)))s"
# The plain closing line CI reads: N passed, N failed.
echo "interop: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || exit 1
