// Interop test: drive the real replay binary with the official MCP TypeScript SDK (v1).
//
// Usage: node ts_client.mjs /path/to/replay
//
// Starts replay on a fresh temp tree through StdioClientTransport, connects a
// Client (the SDK runs initialize and picks the protocol version; v1 knows only
// the handshake era, so this is the legacy era), lists the tools, calls each of
// the 18 tools once with valid arguments (each data tool that declares an
// outputSchema must return structuredContent), and checks one error case (a
// path outside the allowed directory must reject with an McpError whose code is
// -32001). The scenario is scenario.mjs's. Prints one summary line; exits
// non-zero on any failure.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { MODERN, check, exercise, main, makeTree, packageVersion, removeTempDir, serverArgs } from './scenario.mjs';

const LABEL = `ts-sdk ${packageVersion('@modelcontextprotocol/sdk')} Client+StdioClientTransport legacy`;

async function run(binary) {
  const { root, png } = makeTree('ts');
  const transport = new StdioClientTransport({ command: binary, args: serverArgs(root) });
  // Client.connect hands the negotiated version to transport.setProtocolVersion when the transport
  // has one (the HTTP transports do, stdio does not): record it there.
  let negotiated;
  transport.setProtocolVersion = (v) => {
    negotiated = v;
  };
  const client = new Client({ name: 'replay-interop-ts', version: '0.0.0' });
  const opts = { timeout: 30_000 };
  try {
    await client.connect(transport, opts);
    const info = client.getServerVersion();
    check(info?.name === 'replay', `serverInfo: ${JSON.stringify(info)}`);
    check(client.getServerCapabilities()?.tools, 'server did not advertise the tools capability');
    check(typeof negotiated === 'string', 'the SDK did not report the negotiated protocol version');
    check(negotiated < MODERN, `the handshake negotiated ${negotiated}`);
    const summary = await exercise(
      {
        listTools: () => client.listTools(undefined, opts),
        callTool: (name, args) => client.callTool({ name, arguments: args }, undefined, opts),
        errorClass: McpError,
      },
      root,
      png,
      negotiated,
    );
    return `${summary} (protocol ${negotiated} via initialize)`;
  } finally {
    await client.close().catch(() => {});
    removeTempDir(root);
  }
}

const binary = process.argv[2];
if (!binary) {
  console.error('usage: node ts_client.mjs /path/to/replay');
  process.exit(2);
}
await main(LABEL, 60, () => run(binary));
