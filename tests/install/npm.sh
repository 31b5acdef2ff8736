#!/usr/bin/env bash
# The npm channel end to end, with no registry: packs the launcher and this platform's package
# from BINARY (scripts/package-npm.sh), installs both tarballs into a fresh project offline, runs
# the server through `npx replay-mcp` with a real initialize and tools/call, and checks that the
# exit code and SIGTERM pass through the launcher.
#   bash tests/install/npm.sh [BINARY]     (default $REPLAY_BIN, then target/release/replay)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
fail() { echo "npm.sh: FAIL: $*" >&2; exit 1; }
BIN="$(realpath "${1:-${REPLAY_BIN:-$ROOT/target/release/replay}}")" || fail "no binary"
work="$(mktemp -d)"
trap 'exec 9>&- 2>/dev/null; rm -rf "$work"' EXIT

bash "$ROOT/scripts/package-npm.sh" "$work/tarballs" "$BIN"
mkdir "$work/app" "$work/allowed"
cd "$work/app"
echo '{"name": "npm-channel-test", "private": true}' > package.json
# No registry: an unreachable one and an empty cache. The launcher's other platform packages are
# optional dependencies, so npm skips them; this platform's comes from its tarball.
export npm_config_registry=http://127.0.0.1:9/ npm_config_cache="$work/cache"
npm install --offline --no-audit --no-fund --loglevel=error "$work"/tarballs/*.tgz \
  || fail "npm install --offline of the tarballs"

timeout 60 python3 "$ROOT/tests/install/mcp_smoke.py" "$work/allowed" -- \
  npx --offline replay-mcp --mcp-server --allow "$work/allowed" || fail "serving through npx"

# The exit code: a usage error's, as the binary gives it.
want=0 got=0
"$BIN" --no-such-flag >/dev/null 2>&1 || want=$?
npx --offline replay-mcp --no-such-flag >/dev/null 2>&1 || got=$?
[ "$want" -ne 0 ] && [ "$got" = "$want" ] || fail "exit status through npx: $got, the binary's: $want"

# SIGTERM to the launcher ends replay too, and the launcher dies of it as replay did (143).
mkfifo "$work/stdin"
node node_modules/replay-mcp/bin/replay-mcp.js --mcp-server --allow "$work/allowed" \
  < "$work/stdin" > /dev/null &
launcher=$!
exec 9> "$work/stdin"
child=""
for _ in $(seq 100); do
  child="$(pgrep -P "$launcher" || true)"
  [ -n "$child" ] && break
  sleep 0.1
done
[ -n "$child" ] || fail "the launcher started no child within 10 s"
kill -TERM "$launcher"
for _ in $(seq 100); do
  kill -0 "$launcher" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$launcher" 2>/dev/null; then
  kill -KILL "$launcher" "$child" 2>/dev/null
  fail "the launcher still runs 10 s after SIGTERM"
fi
status=0
wait "$launcher" || status=$?
[ "$status" = 143 ] || fail "launcher's status after SIGTERM: $status, want 143"
for _ in $(seq 100); do
  kill -0 "$child" 2>/dev/null || break
  sleep 0.1
done
! kill -0 "$child" 2>/dev/null || fail "replay ($child) still runs 10 s after the launcher got SIGTERM"
echo "npm.sh: ok: installed offline, served through npx, exit status $got and SIGTERM passed through"
