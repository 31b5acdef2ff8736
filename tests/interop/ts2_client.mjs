// Interop test: drive the real replay binary with the official MCP TypeScript SDK v2 client
// (npm @modelcontextprotocol/client).
//
// Usage: node ts2_client.mjs [--mode auto|legacy|modern] /path/to/replay
//
// Same scenario as ts_client.mjs (scenario.mjs): connect, list the tools, call each of the 18
// once (each data tool that declares an outputSchema must return structuredContent), and check
// that a path outside the allowed directory rejects with a ProtocolError whose code is -32001.
// Prints one summary line; exits non-zero on any failure.
//
// --mode picks ClientOptions.versionNegotiation.mode:
//   auto (the default): connect() first probes with `server/discover` (2026-07-28). On the SDK's
//     own StdioClientTransport the probe runs on a short-lived sibling replay process, which the
//     SDK reaps; the session then runs on a second process. replay speaks 2026-07-28, so the
//     connection must end up in the modern era on 2026-07-28, with exactly that one probe
//     process before the session's.
//   legacy: the plain 2025 `initialize` handshake: no probe, one process, a handshake-era
//     revision.
//   modern: { pin: '2026-07-28' }: server/discover must offer 2026-07-28; no fallback.
// run.sh runs legacy and auto.

import { Client, ProtocolError } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { MODERN, check, exercise, main, makeTree, packageVersion, removeTempDir, serverArgs } from './scenario.mjs';

const MODES = { auto: 'auto', legacy: 'legacy', modern: { pin: MODERN } };

// Every replay process a StdioClientTransport starts, in order: the probe sibling is a second
// instance of the same class (the SDK clones the session transport's constructor), so patching
// the base prototype's start() sees both. (A subclass would make the SDK probe in place instead.)
const spawned = [];
const start = StdioClientTransport.prototype.start;
StdioClientTransport.prototype.start = async function startAndRecord(...args) {
  await start.apply(this, args);
  const entry = { transport: this, pid: this.pid, exited: false };
  this._process?.once('exit', () => (entry.exited = true));
  spawned.push(entry);
};

async function run(binary, mode) {
  const { root, png } = makeTree('ts2');
  // stderr: 'pipe' keeps replay's log lines off the summary (the v1 client's transport inherits).
  const transport = new StdioClientTransport({ command: binary, args: serverArgs(root), stderr: 'pipe' });
  const client = new Client(
    { name: 'replay-interop-ts2', version: '0.0.0' },
    { versionNegotiation: { mode: MODES[mode] } },
  );
  const opts = { timeout: 30_000 };
  try {
    await client.connect(transport, opts);
    const era = client.getProtocolEra();
    const negotiated = client.getNegotiatedProtocolVersion();
    const session = spawned.filter((s) => s.transport === transport);
    const probes = spawned.filter((s) => s.transport !== transport);
    check(session.length === 1, `the session transport started ${session.length} times`);
    if (mode === 'legacy') {
      check(era === 'legacy', `legacy mode negotiated the ${era} era`);
      check(typeof negotiated === 'string' && negotiated < MODERN, `legacy mode negotiated ${negotiated}`);
      check(probes.length === 0, `legacy mode started ${probes.length} extra replay process(es)`);
    } else {
      check(era === 'modern', `${mode} mode: the connection's era is ${era}, want modern (${MODERN})`);
      check(negotiated === MODERN, `${mode} mode negotiated ${negotiated}, want ${MODERN}`);
      check(client.getDiscoverResult() !== undefined, 'modern era without a server/discover result');
      // The probe ran on its own process, started before the session's and gone by now.
      check(probes.length === 1, `${probes.length} probe processes, want 1 sibling`);
      check(spawned.indexOf(probes[0]) < spawned.indexOf(session[0]), 'the probe process started after the session');
      check(probes[0].pid !== session[0].pid, 'the probe ran on the session process');
      check(probes[0].exited, `the probe process ${probes[0].pid} is still running`);
    }
    // serverInfo is required on initialize; on the modern era it is a SHOULD in the discover
    // result's _meta, which replay is expected to fill in too.
    const info = client.getServerVersion();
    check(info?.name === 'replay', `serverInfo: ${JSON.stringify(info)}`);
    check(client.getServerCapabilities()?.tools, 'server did not advertise the tools capability');
    const summary = await exercise(
      {
        listTools: () => client.listTools(undefined, opts),
        callTool: (name, args) => client.callTool({ name, arguments: args }, opts),
        errorClass: ProtocolError,
      },
      root,
      png,
      negotiated,
    );
    const how = era === 'modern' ? 'via server/discover, probed on a separate process' : 'via initialize';
    return `${summary} (protocol ${negotiated} ${how})`;
  } finally {
    await client.close().catch(() => {});
    removeTempDir(root);
  }
}

const args = process.argv.slice(2);
let mode = 'auto';
if (args.length === 3 && args[0] === '--mode' && Object.hasOwn(MODES, args[1])) [, mode] = args.splice(0, 2);
if (args.length !== 1) {
  console.error('usage: node ts2_client.mjs [--mode auto|legacy|modern] /path/to/replay');
  process.exit(2);
}
await main(`ts-sdk-v2 ${packageVersion('@modelcontextprotocol/client')} Client ${mode}`, 60, () => run(args[0], mode));
