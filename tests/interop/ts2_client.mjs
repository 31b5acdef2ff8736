// Interop test: drive the real replay binary with the official MCP TypeScript SDK v2 client
// (npm @modelcontextprotocol/client).
//
// Usage: node ts2_client.mjs [--mode auto|legacy|modern] /path/to/replay
//
// Same scenario as ts_client.mjs (scenario.mjs): connect, list the tools, call each of the 16
// once, and check that a path outside the allowed directory rejects with a ProtocolError whose
// code is -32001. Prints one summary line; exits non-zero on any failure.
//
// --mode picks ClientOptions.versionNegotiation.mode:
//   auto (the default, and what run.sh runs): connect() first probes with `server/discover`
//     (2026-07-28). On the SDK's own StdioClientTransport the probe runs on a short-lived
//     sibling replay process; a handshake-era answer (replay's -32601) falls back to the plain
//     `initialize` handshake on the real process.
//   legacy: the plain 2025 `initialize` handshake, no probe.
//   modern: { pin: '2026-07-28' }: server/discover must offer 2026-07-28; no fallback.

import { Client, ProtocolError } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { EXPECTED_TOOLS, check, exercise, main, makeTree, packageVersion, removeTempDir, serverArgs } from './scenario.mjs';

const MODERN = '2026-07-28';
const MODES = { auto: 'auto', legacy: 'legacy', modern: { pin: MODERN } };

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
    if (mode === 'modern') {
      check(era === 'modern', `pinned ${MODERN} but the connection's era is ${era}`);
      check(negotiated === MODERN, `pinned ${MODERN} but negotiated ${negotiated}`);
      check(client.getDiscoverResult() !== undefined, 'modern era without a server/discover result');
    } else {
      check(era === 'legacy' || era === 'modern', `no protocol era after connect: ${era}`);
      if (mode === 'legacy') check(era === 'legacy', `legacy mode negotiated the ${era} era`);
    }
    // serverInfo is required on initialize; on the modern era it is a SHOULD in the discover
    // result's _meta, which replay is expected to fill in too.
    const info = client.getServerVersion();
    check(info?.name === 'replay', `serverInfo: ${JSON.stringify(info)}`);
    check(client.getServerCapabilities()?.tools, 'server did not advertise the tools capability');
    const ok = await exercise(
      {
        listTools: () => client.listTools(undefined, opts),
        callTool: (name, args) => client.callTool({ name, arguments: args }, opts),
        errorClass: ProtocolError,
      },
      root,
      png,
    );
    const how = era === 'modern' ? 'via server/discover' : 'via initialize';
    return `${ok.size}/${EXPECTED_TOOLS.length} tools OK (protocol ${negotiated} ${how})`;
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
