#!/usr/bin/env bash
# Interop test: the official MCP conformance suite (npm @modelcontextprotocol/conformance) against
# replay, through supergateway as a stdio -> Streamable HTTP bridge.
#
#   bash conformance.sh /path/to/replay
#
# 1. Starts supergateway (stateful Streamable HTTP, one replay child per MCP session, spawned as
#    `replay --mcp-server --allow DIR:rw` on a fresh temp dir). supergateway has no listen-address
#    option, so it runs with the loopback.mjs preload: it listens on 127.0.0.1 only, on a port the
#    kernel picks (--port 0), and the preload reports the port it bound.
# 2. Runs the conformance scenarios server-initialize, ping and tools-list against
#    http://127.0.0.1:PORT/mcp, one `conformance server --scenario S` each. A scenario passes only
#    if the suite exits 0 and every check it recorded is SUCCESS (a WARNING, a SHOULD that was
#    missed, fails it too).
# 3. Checks in the bridge's log that the initialize result came from replay itself.
# The bridge and its replay children run in their own process group, which the EXIT trap kills;
# the temp dir goes with it. Both tools need Node >= 22 and run on the pinned Node 22 from npm.
# Prints one summary line; exits non-zero on any failure.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
SCENARIOS=(server-initialize ping tools-list)

BIN="${1:-}"
[ -n "$BIN" ] || { echo "usage: bash conformance.sh /path/to/replay" >&2; exit 2; }
NODE22="$HERE/node_modules/node/bin/node"
CONFORMANCE="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
SUPERGATEWAY="$HERE/node_modules/supergateway/dist/index.js"
version() { "$NODE22" -p "require('$HERE/node_modules/$1/package.json').version" 2>/dev/null || echo '?'; }
LABEL="conformance $(version @modelcontextprotocol/conformance) via supergateway $(version supergateway)"
fail() { echo "$LABEL: FAILED: $*"; exit 1; }
[ -x "$NODE22" ] || fail "no Node 22 at $NODE22 (npm package \"node\")"
[ -x "$BIN" ] || fail "no replay binary at $BIN"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/replay-interop-conformance-XXXXXX")"
sg_pid=""
declare -A scenario_pid=()
cleanup() {
  trap '' INT TERM # a second signal must not cut the cleanup short
  # Scenario runs still going (an interrupted run): `timeout` passes the TERM on to the suite.
  for pid in "${scenario_pid[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${scenario_pid[@]}"; do wait "$pid" 2>/dev/null; done
  if [ -n "$sg_pid" ]; then
    # The bridge leads its own process group (setsid): TERM it (it stops its replay children,
    # which it spawns in process groups of their own), give it up to 5 s, then KILL whatever is
    # left of its group. A replay child whose bridge is gone sees EOF on stdin and exits.
    # (bash reaps the bridge as soon as it exits, so `kill -0` fails from then on.)
    kill -TERM -- "-$sg_pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$sg_pid" 2>/dev/null || break; sleep 0.05; done
    kill -KILL -- "-$sg_pid" 2>/dev/null
    wait "$sg_pid" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

root="$tmp/root"
mkdir -p "$root/sub" "$tmp/results"
printf 'hello world\nsecond line\n' > "$root/hello.txt"
printf 'a nested needle\n' > "$root/sub/nested.txt"

# supergateway runs --stdio through a shell: quote the command.
server_cmd="$(printf '%q ' "$BIN" --mcp-server --allow "$root:rw")"
LOOPBACK_PORT_FILE="$tmp/port" setsid "$NODE22" --import "$HERE/loopback.mjs" "$SUPERGATEWAY" \
  --stdio "$server_cmd" --outputTransport streamableHttp --stateful --port 0 --logLevel debug \
  </dev/null >"$tmp/bridge.log" 2>&1 &
sg_pid=$!

for _ in $(seq 300); do
  [ -s "$tmp/port" ] && break
  kill -0 "$sg_pid" 2>/dev/null || fail "supergateway exited before listening: $(tail -5 "$tmp/bridge.log" | tr '\n' ' ')"
  sleep 0.1
done
[ -s "$tmp/port" ] || fail "supergateway did not listen within 30 s"
read -r addr port < "$tmp/port"
[ "$addr" = 127.0.0.1 ] || fail "supergateway listens on $addr, want 127.0.0.1"
url="http://127.0.0.1:$port/mcp"

# Every check of a scenario's checks.json must be SUCCESS (INFO entries are logs and don't count);
# prints the offending checks, or nothing.
verdict_js='
const fs = require("fs"), path = require("path");
const dir = process.argv[1];
const files = fs.readdirSync(dir, { recursive: true }).filter((f) => f.endsWith("checks.json"));
if (files.length === 0) { console.log("no checks.json written"); process.exit(0); }
const checks = files.flatMap((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")));
const judged = checks.filter((c) => c.status !== "INFO");
const bad = judged.filter((c) => c.status !== "SUCCESS");
if (judged.length === 0) console.log("no check was judged");
for (const c of bad) console.log(`${c.id} ${c.status}: ${c.errorMessage ?? c.description}${c.details ? " " + JSON.stringify(c.details) : ""}`);
'

# The scenarios are independent MCP sessions: run them side by side.
for s in "${SCENARIOS[@]}"; do
  mkdir -p "$tmp/results/$s"
  timeout 60 "$NODE22" "$CONFORMANCE" server --url "$url" --scenario "$s" -o "$tmp/results/$s" \
    >"$tmp/results/$s/stdout" 2>&1 &
  scenario_pid[$s]=$!
done
declare -A scenario_rc=()
for s in "${SCENARIOS[@]}"; do
  wait "${scenario_pid[$s]}"
  scenario_rc[$s]=$?
  unset "scenario_pid[$s]"
done

failures=()
for s in "${SCENARIOS[@]}"; do
  out="$tmp/results/$s"
  rc="${scenario_rc[$s]}"
  bad="$("$NODE22" -e "$verdict_js" "$out" 2>&1)"
  if [ "$rc" != 0 ] || [ -n "$bad" ]; then
    [ -n "$bad" ] || bad="$(tail -5 "$out/stdout")"
    failures+=("$s (exit $rc): $(echo "$bad" | tr '\n' ' ' | sed 's/ *$//')")
  fi
done

# The initialize result the suite saw is replay's own, relayed by the bridge.
grep -Eq 'Child → StreamableHttp: .*"serverInfo":\{[^}]*"name":"replay"' "$tmp/bridge.log" ||
  failures+=("bridge log: no initialize result with serverInfo.name \"replay\" from the child")
# The revisions replay agreed to in those initialize results (the suite's client picks them).
revisions="$(grep -E 'Child → StreamableHttp: .*"serverInfo":' "$tmp/bridge.log" |
  grep -Eo '"protocolVersion":"[^"]*"' | cut -d'"' -f4 | sort -u | paste -sd, -)"
[ -n "$revisions" ] || failures+=("bridge log: no protocolVersion in replay's initialize results")

[ "${#failures[@]}" -eq 0 ] || fail "$(printf '%s; ' "${failures[@]}" | sed 's/; $//')"
echo "$LABEL: ok (${#SCENARIOS[@]}/${#SCENARIOS[@]} scenarios: ${SCENARIOS[*]}; bridge on 127.0.0.1:$port) (protocol $revisions via initialize)"
