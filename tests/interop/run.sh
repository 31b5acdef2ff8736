#!/usr/bin/env bash
# Interop tests: drive the real replay binary with the official MCP client SDKs.
#   bash tests/interop/run.sh
# Installs what it needs idempotently (a venv from requirements.txt, `npm ci` from
# package-lock.json), builds replay with `cargo build` unless REPLAY is set to a binary,
# then runs the Python client (ClientSession, then Client in auto mode) and the TypeScript
# client. One line per client; exits non-zero if any client fails.
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

# TypeScript client: node_modules from package-lock.json, reinstalled only when the lockfile changes.
command -v node >/dev/null || die "node is not installed"
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -d node_modules ] || [ "$(cat node_modules/.lock.sha256 2>/dev/null)" != "$lock_sum" ]; then
  echo "interop: installing the TypeScript client (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error >/dev/null || die "npm ci failed"
  echo "$lock_sum" > node_modules/.lock.sha256
fi

# The server under test.
if [ -n "${REPLAY:-}" ]; then
  BIN="$REPLAY"
else
  (cd "$ROOT" && cargo build --locked --quiet) || die "cargo build failed"
  BIN="$ROOT/target/debug/replay"
fi
[ -x "$BIN" ] || die "no replay binary at $BIN"

failed=0
.venv/bin/python py_client.py --mode legacy "$BIN" || failed=$((failed + 1))
.venv/bin/python py_client.py --mode auto "$BIN" || failed=$((failed + 1))
node ts_client.mjs "$BIN" || failed=$((failed + 1))

ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
elapsed=$(printf "%d.%03d" $((ms / 1000)) $((ms % 1000)))
echo "interop: clients ran in ${elapsed}s"
# The plain closing line CI reads: N passed, N failed.
echo "interop: $((3 - failed)) passed, $failed failed"
[ "$failed" -eq 0 ] || exit 1
