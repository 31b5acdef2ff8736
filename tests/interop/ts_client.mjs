// Interop test: drive the real replay binary with the official MCP TypeScript SDK (v1).
//
// Usage: node ts_client.mjs /path/to/replay
//
// Starts replay on a fresh temp tree through StdioClientTransport, connects a
// Client (the SDK runs initialize and picks the protocol version), lists the
// tools, calls each of the 16 tools once with valid arguments, and checks one
// error case (a path outside the allowed directory must reject with an
// McpError whose code is -32001). Prints one summary line; exits non-zero on
// any failure.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';

const HERE = path.dirname(new URL(import.meta.url).pathname);
const SDK_VERSION = JSON.parse(
  fs.readFileSync(path.join(HERE, 'node_modules', '@modelcontextprotocol', 'sdk', 'package.json'), 'utf8'),
).version;
const LABEL = `ts-sdk ${SDK_VERSION} Client+StdioClientTransport`;

const EXPECTED_TOOLS = [
  'read_file', 'read_multiple_files', 'write_file', 'create_directory', 'list_directory',
  'directory_tree', 'move_file', 'delete_file', 'get_file_info', 'list_allowed_directories',
  'edit_file', 'edit_files', 'search_files', 'glob_search', 'grep_files', 'execute_command',
];
const PATH_NOT_ALLOWED = -32001;

class Failure extends Error {}

function check(cond, what) {
  if (!cond) throw new Failure(what);
}

// A valid 1x1 8-bit RGB PNG, built by hand (signature, IHDR, IDAT, IEND).
function tinyPng() {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc32 = (buf) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (kind, data) => {
    const body = Buffer.concat([Buffer.from(kind, 'ascii'), data]);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(1, 0); // width
  ihdr.writeUInt32BE(1, 4); // height
  ihdr.set([8, 2, 0, 0, 0], 8); // bit depth 8, colour type RGB, deflate, no filter, no interlace
  const idat = zlib.deflateSync(Buffer.from([0x00, 0xff, 0x00, 0x00])); // filter byte 0, one red pixel
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', idat),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

function makeTree() {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'replay-interop-ts-')));
  fs.writeFileSync(path.join(root, 'hello.txt'), 'hello world\nsecond line\n');
  const png = tinyPng();
  fs.writeFileSync(path.join(root, 'pixel.png'), png);
  fs.mkdirSync(path.join(root, 'sub'));
  fs.writeFileSync(path.join(root, 'sub', 'nested.txt'), 'a nested needle\n');
  return { root, png };
}

const texts = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');

async function run(binary) {
  const { root, png } = makeTree();
  const p = (...parts) => path.join(root, ...parts);
  const transport = new StdioClientTransport({ command: binary, args: ['--mcp-server', '--allow', `${root}:rw`] });
  // Client.connect hands the negotiated version to transport.setProtocolVersion when the transport
  // has one (the HTTP transports do, stdio does not): record it there.
  let negotiated = '(unknown)';
  transport.setProtocolVersion = (v) => {
    negotiated = v;
  };
  const client = new Client({ name: 'replay-interop-ts', version: '0.0.0' });
  const ok = new Set();
  const opts = { timeout: 30_000 };
  try {
    await client.connect(transport, opts);
    const info = client.getServerVersion();
    check(info?.name === 'replay', `serverInfo: ${JSON.stringify(info)}`);
    check(client.getServerCapabilities()?.tools, 'server did not advertise the tools capability');

    const listed = await client.listTools(undefined, opts);
    const names = new Set(listed.tools.map((t) => t.name));
    const missing = EXPECTED_TOOLS.filter((n) => !names.has(n));
    check(missing.length === 0, `tools/list lacks ${missing.join(', ')}`);

    const call = async (name, args, ...expect) => {
      const res = await client.callTool({ name, arguments: args }, undefined, opts);
      check(!res.isError, `${name}: isError=true: ${JSON.stringify(res.content)}`);
      const out = texts(res);
      for (const e of expect) check(out.includes(e), `${name}: expected ${JSON.stringify(e)} in ${JSON.stringify(out)}`);
      ok.add(name);
      return res;
    };

    await call('list_allowed_directories', {}, root, '(read-write)');
    await call('list_directory', { path: root }, '[FILE] hello.txt', '[FILE] pixel.png', '[DIR]  sub');
    await call('read_file', { path: p('hello.txt') }, 'hello world\nsecond line');

    // read_file of a PNG: an image content item the SDK's schema accepted, with the exact bytes.
    const img = await client.callTool({ name: 'read_file', arguments: { path: p('pixel.png') } }, undefined, opts);
    check(!img.isError, `read_file png: isError=true: ${JSON.stringify(img)}`);
    const images = img.content.filter((c) => c.type === 'image');
    check(images.length === 1, `read_file png: expected one image item, got ${JSON.stringify(img.content)}`);
    check(images[0].mimeType === 'image/png', `read_file png: mimeType ${images[0].mimeType}`);
    check(Buffer.from(images[0].data, 'base64').equals(png), 'read_file png: decoded bytes differ');

    await call('read_multiple_files', { paths: [p('hello.txt'), p('sub', 'nested.txt')] }, 'hello world', 'a nested needle');
    await call('write_file', { path: p('new.txt'), content: 'alpha beta\n' }, 'Successfully wrote');
    await call('create_directory', { path: p('made', 'deep') }, 'Created directory');
    const tree = JSON.parse(texts(await call('directory_tree', { path: root })));
    check(tree.type === 'directory', `directory_tree: ${JSON.stringify(tree)}`);
    const kids = new Set((tree.children ?? []).map((c) => c.name));
    for (const k of ['hello.txt', 'pixel.png', 'sub', 'made', 'new.txt']) check(kids.has(k), `directory_tree lacks ${k}`);
    await call('edit_file', { path: p('new.txt'), edits: [{ oldText: 'alpha', newText: 'gamma' }] }, 'Successfully edited');
    await call(
      'edit_files',
      { paths: [p('*.txt')], edits: [{ oldText: 'second line', newText: '2nd line' }] },
      'Successfully edited',
      p('hello.txt'),
    );
    check(fs.readFileSync(p('hello.txt'), 'utf8') === 'hello world\n2nd line\n', 'edit_files did not change hello.txt on disk');
    await call('get_file_info', { path: p('hello.txt') }, 'type: file', 'size:', 'modified:', 'permissions:');
    await call('search_files', { directory: root, nameContains: 'NESTED' }, p('sub', 'nested.txt'));
    await call('glob_search', { directory: root, globs: ['**/*.txt'] }, p('new.txt'), p('sub', 'nested.txt'));
    await call('grep_files', { regex: 'needle', directory: root }, `${p('sub', 'nested.txt')}:1:a nested needle`);
    await call('execute_command', { command: 'echo interop-ok', workingDirectory: root }, 'interop-ok', '[exit code: 0]');
    await call('move_file', { source: p('new.txt'), destination: p('made', 'moved.txt') }, 'Moved');
    await call('delete_file', { path: p('made', 'moved.txt') }, 'Deleted');
    check(!fs.existsSync(p('made', 'moved.txt')), 'delete_file left the file on disk');

    // Error case: a path outside the allowed directory -> JSON-RPC error -32001.
    let rejected = null;
    try {
      await client.callTool({ name: 'read_file', arguments: { path: '/etc/passwd' } }, undefined, opts);
    } catch (e) {
      rejected = e;
    }
    check(rejected !== null, 'read_file /etc/passwd: the SDK returned a result, want McpError -32001');
    check(rejected instanceof McpError, `read_file /etc/passwd: not an McpError: ${rejected}`);
    check(rejected.code === PATH_NOT_ALLOWED, `read_file /etc/passwd: code ${rejected.code}, want -32001 (${rejected.message})`);

    const notRun = EXPECTED_TOOLS.filter((n) => !ok.has(n));
    check(notRun.length === 0, `tools not exercised: ${notRun.join(', ')}`);
    return { n: ok.size, negotiated };
  } finally {
    await client.close().catch(() => {});
    fs.rmSync(root, { recursive: true, force: true });
  }
}

const binary = process.argv[2];
if (!binary) {
  console.error('usage: node ts_client.mjs /path/to/replay');
  process.exit(2);
}
const watchdog = setTimeout(() => {
  console.log(`${LABEL}: FAILED: timed out after 60 s`);
  process.exit(1);
}, 60_000);
try {
  const { n, negotiated } = await run(binary);
  console.log(`${LABEL}: ${n}/${EXPECTED_TOOLS.length} tools OK (protocol ${negotiated})`);
  process.exitCode = 0;
} catch (e) {
  console.log(`${LABEL}: FAILED: ${e instanceof Failure ? e.message : e?.stack ?? e}`);
  process.exitCode = 1;
} finally {
  clearTimeout(watchdog);
}
