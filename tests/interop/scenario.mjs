// The scenario shared by the JavaScript interop clients (ts_client.mjs, ts2_client.mjs,
// inspector.mjs): the temp tree, the 19 tool names, the structuredContent rule, and `exercise`,
// which lists the tools and calls each one once through whichever client API it is handed.
//
// Every check is the same as py_client.py's, so the clients stay comparable line by line.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';

export const HERE = path.dirname(new URL(import.meta.url).pathname);

export const EXPECTED_TOOLS = [
  'read_file', 'read_multiple_files', 'write_file', 'create_directory', 'list_directory',
  'directory_tree', 'move_file', 'copy_file', 'delete_file', 'get_file_info', 'list_allowed_directories',
  'edit_file', 'edit_files', 'apply_patch', 'search_files', 'glob_search', 'grep_files',
  'execute_command', 'command_session',
];
export const PATH_NOT_ALLOWED = -32001;

// The tools that return data a program would parse. From revision 2025-06-18 on, each of them that
// declares an `outputSchema` in tools/list must also return a `structuredContent` object.
export const DATA_TOOLS = [
  'get_file_info', 'list_directory', 'directory_tree', 'list_allowed_directories',
  'search_files', 'glob_search', 'grep_files', 'execute_command', 'command_session',
];
export const STRUCTURED_SINCE = '2025-06-18';
export const MODERN = '2026-07-28';

/** Whether `revision` (YYYY-MM-DD) carries outputSchema/structuredContent. */
export const hasStructured = (revision) => typeof revision === 'string' && revision >= STRUCTURED_SINCE;

/**
 * Tracks the structuredContent rule for one connection: `declare(tools)` takes the tools/list
 * result, `see(name, result)` checks one tools/call result, `summary()` is the line's fragment.
 */
export function structuredRule(revision) {
  const declared = new Set();
  const returned = new Set();
  return {
    declare(tools) {
      for (const t of tools) if (DATA_TOOLS.includes(t.name) && t.outputSchema) declared.add(t.name);
    },
    see(name, result) {
      if (!hasStructured(revision) || !declared.has(name)) return;
      const sc = result?.structuredContent;
      check(
        sc !== null && typeof sc === 'object' && !Array.isArray(sc),
        `${name}: tools/list declares an outputSchema and the revision is ${revision}, but the result has no structuredContent object: ${JSON.stringify(result).slice(0, 300)}`,
      );
      returned.add(name);
    },
    summary() {
      if (!hasStructured(revision)) return `structuredContent n/a before ${STRUCTURED_SINCE}`;
      const missed = [...declared].filter((n) => !returned.has(n));
      check(missed.length === 0, `declared an outputSchema but never checked: ${missed.join(', ')}`);
      return `structuredContent ${returned.size}/${DATA_TOOLS.length}`;
    },
  };
}

/** A check that failed: its message is the client's whole failure line. */
export class Failure extends Error {}

export function check(cond, what) {
  if (!cond) throw new Failure(what);
}

/** The version of an installed npm package, read from node_modules. */
export function packageVersion(name) {
  return JSON.parse(fs.readFileSync(path.join(HERE, 'node_modules', name, 'package.json'), 'utf8')).version;
}

// A valid 1x1 8-bit RGB PNG, built by hand (signature, IHDR, IDAT, IEND).
export function tinyPng() {
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

// Temp dirs and child processes that must not outlive this process, even when a watchdog, an
// uncaught error or a signal ends it before the `finally` blocks run.
const tempDirs = new Set();
const children = new Set();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => process.exit(130));

/** A fresh temp dir, removed at exit at the latest (removeTempDir removes it sooner). */
export function makeTempDir(tag) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `replay-interop-${tag}-`)));
  tempDirs.add(dir);
  return dir;
}

export function removeTempDir(dir) {
  fs.rmSync(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}

/** Kill `child` at exit if it is still running then. */
export function ownChild(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** A fresh temp tree: hello.txt, pixel.png, sub/nested.txt (remove it with removeTempDir). */
export function makeTree(tag) {
  const root = makeTempDir(tag);
  fs.writeFileSync(path.join(root, 'hello.txt'), 'hello world\nsecond line\n');
  const png = tinyPng();
  fs.writeFileSync(path.join(root, 'pixel.png'), png);
  fs.mkdirSync(path.join(root, 'sub'));
  fs.writeFileSync(path.join(root, 'sub', 'nested.txt'), 'a nested needle\n');
  return { root, png };
}

/** The arguments that start replay as an MCP server on `root`, read-write. */
export const serverArgs = (root) => ['--mcp-server', '--allow', `${root}:rw`];

export const texts = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');

/**
 * List the tools and call each once, then check the one error case.
 *
 * `api` adapts one client library:
 *   listTools()            -> the tools/list result ({ tools: [...] })
 *   callTool(name, args)   -> the tools/call result; a JSON-RPC error must reject
 *   errorClass             -> the class a JSON-RPC error rejects with (it carries `.code`)
 * `revision` is the negotiated protocol revision: from 2025-06-18 on, each data tool that tools/list
 * gives an outputSchema must return a structuredContent object (the SDKs validate its shape).
 * Returns the line's fragment: `19/19 tools OK, structuredContent K/9`.
 */
export async function exercise(api, root, png, revision) {
  const p = (...parts) => path.join(root, ...parts);
  const ok = new Set();
  const structured = structuredRule(revision);

  // tools/list first: the SDKs cache each tool's outputSchema here and validate
  // structuredContent against it on every tools/call after.
  const listed = await api.listTools();
  const names = new Set(listed.tools.map((t) => t.name));
  const missing = EXPECTED_TOOLS.filter((n) => !names.has(n));
  check(missing.length === 0, `tools/list lacks ${missing.join(', ')}`);
  structured.declare(listed.tools);

  const call = async (name, args, ...expect) => {
    const res = await api.callTool(name, args);
    check(!res.isError, `${name}: isError=true: ${JSON.stringify(res.content)}`);
    const out = texts(res);
    for (const e of expect) check(out.includes(e), `${name}: expected ${JSON.stringify(e)} in ${JSON.stringify(out)}`);
    structured.see(name, res);
    ok.add(name);
    return res;
  };

  await call('list_allowed_directories', {}, root, '(read-write)');
  await call('list_directory', { path: root }, '[FILE] hello.txt', '[FILE] pixel.png', '[DIR]  sub');
  await call('read_file', { path: p('hello.txt') }, 'hello world\nsecond line');

  // read_file of a PNG: an image content item the SDK's schema accepted, with the exact bytes.
  const img = await api.callTool('read_file', { path: p('pixel.png') });
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
  const patch = '*** Begin Patch\n*** Add File: made/patched.txt\n+patched\n*** End Patch\n';
  await call('apply_patch', { patch, workingDirectory: root }, `A ${p('made', 'patched.txt')}`);
  check(fs.readFileSync(p('made', 'patched.txt'), 'utf8') === 'patched\n', 'apply_patch: the added file on disk differs');
  await call('get_file_info', { path: p('hello.txt') }, 'type: file', 'size:', 'modified:', 'permissions:');
  await call('search_files', { directory: root, nameContains: 'NESTED' }, p('sub', 'nested.txt'));
  await call('glob_search', { directory: root, globs: ['**/*.txt'] }, p('new.txt'), p('sub', 'nested.txt'));
  await call('grep_files', { regex: 'needle', directory: root }, `${p('sub', 'nested.txt')}:1:a nested needle`);
  await call('execute_command', { command: 'echo interop-ok', workingDirectory: root }, 'interop-ok', '[exit code: 0]');
  await call('command_session', {}, '(no sessions)');
  await call('copy_file', { source: p('new.txt'), destination: p('made', 'copied.txt') }, 'Copied');
  check(fs.readFileSync(p('made', 'copied.txt'), 'utf8') === fs.readFileSync(p('new.txt'), 'utf8'),
    'copy_file: the copy on disk differs');
  await call('move_file', { source: p('new.txt'), destination: p('made', 'moved.txt') }, 'Moved');
  await call('delete_file', { path: p('made', 'moved.txt') }, 'Deleted');
  check(!fs.existsSync(p('made', 'moved.txt')), 'delete_file left the file on disk');

  // Error case: a path outside the allowed directory -> JSON-RPC error -32001.
  const errName = api.errorClass.name;
  let rejected = null;
  try {
    await api.callTool('read_file', { path: '/etc/passwd' });
  } catch (e) {
    rejected = e;
  }
  check(rejected !== null, `read_file /etc/passwd: the SDK returned a result, want ${errName} -32001`);
  check(rejected instanceof api.errorClass, `read_file /etc/passwd: not a ${errName}: ${rejected}`);
  check(rejected.code === PATH_NOT_ALLOWED, `read_file /etc/passwd: code ${rejected.code}, want -32001 (${rejected.message})`);

  const notRun = EXPECTED_TOOLS.filter((n) => !ok.has(n));
  check(notRun.length === 0, `tools not exercised: ${notRun.join(', ')}`);
  return `${ok.size}/${EXPECTED_TOOLS.length} tools OK, ${structured.summary()}`;
}

/**
 * Run `body` under a watchdog and print the client's one line: `${label}: ${summary}` when it
 * resolves to `summary`, `${label}: FAILED: reason` otherwise. Sets the exit code.
 */
export async function main(label, seconds, body) {
  const watchdog = setTimeout(() => {
    console.log(`${label}: FAILED: timed out after ${seconds} s`);
    process.exit(1);
  }, seconds * 1000);
  try {
    console.log(`${label}: ${await body()}`);
    process.exitCode = 0;
  } catch (e) {
    // A check's message is the whole reason. Anything else (an SDK error, a crash) gets its
    // name and message on the line and its stack on stderr.
    if (!(e instanceof Failure) && e?.stack) console.error(e.stack);
    const reason = e instanceof Failure ? e.message : `${e?.name ?? 'Error'}: ${e?.message ?? e}`;
    console.log(`${label}: FAILED: ${reason.replace(/\s*\n\s*/g, ' ')}`);
    process.exitCode = 1;
  } finally {
    clearTimeout(watchdog);
  }
}
