// Interop test: drive the real replay binary with the MCP Inspector's CLI
// (npm @modelcontextprotocol/inspector, run as `inspector --cli`).
//
// Usage: node inspector.mjs /path/to/replay
//
// The Inspector needs Node >= 22.19, so it runs on the pinned Node 22 from npm (the `node`
// package: node_modules/node/bin/node), whatever `node` this script itself runs on. Each check
// is one Inspector process in JSON mode:
//
//   node22 .../inspector --cli --format json -q --method M [--tool-name T --tool-arg k=v ...]
//          -- REPLAY --mcp-server --allow DIR:rw
//
// which connects over stdio (the initialize handshake; the ad-hoc default era is `legacy`),
// runs one method and prints `{"result": ...}` on stdout, or `{"error": ...}` on stderr with a
// non-zero exit. The checks: tools/list has exactly the 16 tools (in the default era and again
// with --protocol-era auto, which probes server/discover first); tools/call of read_file,
// list_directory, get_file_info, grep_files and write_file succeed with the expected text (and
// write_file's file is on disk); read_file /etc/passwd fails with replay's "path not allowed".
// The checks run a few at a time. Prints one summary line; exits non-zero on any failure.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  EXPECTED_TOOLS, HERE, Failure, check, main, makeTempDir, makeTree, ownChild, packageVersion, removeTempDir, serverArgs, texts,
} from './scenario.mjs';

const PKG = '@modelcontextprotocol/inspector';
const NODE22 = path.join(HERE, 'node_modules', 'node', 'bin', 'node');
const INSPECTOR = path.join(
  HERE, 'node_modules', PKG,
  JSON.parse(fs.readFileSync(path.join(HERE, 'node_modules', PKG, 'package.json'), 'utf8')).bin.inspector,
);
const PARALLEL = 4;

/** One Inspector CLI run: resolves to { code, result, error, stderr }. */
function inspect(env, binary, root, method, extra = []) {
  const argv = [INSPECTOR, '--cli', '--format', 'json', '-q', '--method', method, ...extra, '--', binary, ...serverArgs(root)];
  return new Promise((resolve, reject) => {
    const child = ownChild(spawn(NODE22, argv, { env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 }));
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const parse = (s) => {
        try {
          return JSON.parse(s.trim());
        } catch {
          return undefined;
        }
      };
      const out = parse(stdout);
      const err = parse(stderr);
      resolve({ code: signal ? `signal ${signal}` : code, result: out?.result, error: err?.error, stdout, stderr: stderr.trim() });
    });
  });
}

/** What went wrong in one run, for a failure line. */
const why = (r) => `exit ${r.code}: ${r.error ? JSON.stringify(r.error) : r.stderr || r.stdout || '(no output)'}`;

async function run(binary) {
  check(fs.existsSync(NODE22), `no Node 22 at ${NODE22} (npm package "node")`);
  const { root } = makeTree('inspector');
  // The Inspector keeps a catalog, a client config and OAuth state under $HOME/.mcp-inspector:
  // point all of it at a throwaway directory.
  const home = makeTempDir('inspector-home');
  const env = {
    ...process.env,
    HOME: home,
    MCP_CATALOG_PATH: path.join(home, 'mcp.json'),
    MCP_CLIENT_CONFIG_PATH: path.join(home, 'client.json'),
  };
  const p = (...parts) => path.join(root, ...parts);
  const call = (tool, ...kv) => ['tools/call', ['--tool-name', tool, ...kv.flatMap((a) => ['--tool-arg', a])]];

  // [label, [method, extra args], check(run)]
  const toolsListed = (r) => {
    check(r.code === 0 && r.result, why(r));
    const names = r.result.tools?.map((t) => t.name) ?? [];
    check(names.length === EXPECTED_TOOLS.length, `${names.length} tools listed, want ${EXPECTED_TOOLS.length}: ${names.join(', ')}`);
    const missing = EXPECTED_TOOLS.filter((n) => !names.includes(n));
    check(missing.length === 0, `lacks ${missing.join(', ')}`);
  };
  const textHas = (...expect) => (r) => {
    check(r.code === 0 && r.result, why(r));
    check(!r.result.isError, `isError=true: ${JSON.stringify(r.result.content)}`);
    const out = texts(r.result);
    for (const e of expect) check(out.includes(e), `expected ${JSON.stringify(e)} in ${JSON.stringify(out)}`);
  };
  const checks = [
    ['tools/list', ['tools/list', []], toolsListed],
    ['tools/list --protocol-era auto', ['tools/list', ['--protocol-era', 'auto']], toolsListed],
    ['read_file', call('read_file', `path=${p('hello.txt')}`), textHas('hello world\nsecond line')],
    ['list_directory', call('list_directory', `path=${root}`), textHas('[FILE] hello.txt', '[FILE] pixel.png', '[DIR]  sub')],
    ['get_file_info', call('get_file_info', `path=${p('hello.txt')}`), textHas('type: file', 'size:', 'modified:', 'permissions:')],
    ['grep_files', call('grep_files', 'regex=needle', `directory=${root}`), textHas(`${p('sub', 'nested.txt')}:1:a nested needle`)],
    [
      'write_file',
      call('write_file', `path=${p('new.txt')}`, 'content=alpha beta'),
      (r) => {
        textHas('Successfully wrote')(r);
        check(fs.readFileSync(p('new.txt'), 'utf8') === 'alpha beta', 'write_file: new.txt on disk differs');
      },
    ],
    [
      'read_file /etc/passwd',
      call('read_file', 'path=/etc/passwd'),
      (r) => {
        check(r.code !== 0 && r.result === undefined, `succeeded, want an error: ${JSON.stringify(r.result)}`);
        check(r.error?.message?.includes('path not allowed'), `want replay's "path not allowed" error, got ${why(r)}`);
      },
    ],
  ];

  try {
    const failures = []; // by check index, so the line's order does not depend on timing
    const queue = checks.map((c, i) => [i, c]);
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const [i, [label, [method, extra], verify]] = next;
        try {
          verify(await inspect(env, binary, root, method, extra));
        } catch (e) {
          if (!(e instanceof Failure)) throw e;
          failures[i] = `${label}: ${e.message}`;
        }
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    check(failures.length === 0, failures.filter(Boolean).join('; '));
    return `ok (${checks.length}/${checks.length} checks: tools/list x2 = ${EXPECTED_TOOLS.length} tools, 5 tools/call, 1 error)`;
  } finally {
    removeTempDir(root);
    removeTempDir(home);
  }
}

const binary = process.argv[2];
if (!binary) {
  console.error('usage: node inspector.mjs /path/to/replay');
  process.exit(2);
}
await main(`mcp-inspector ${packageVersion(PKG)} --cli`, 90, () => run(binary));
