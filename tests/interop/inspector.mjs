// Interop test: drive the real replay binary with the MCP Inspector's CLI
// (npm @modelcontextprotocol/inspector, run as `inspector --cli`).
//
// Usage: node inspector.mjs [--protocol-era legacy|modern] /path/to/replay
//
// The Inspector needs Node >= 22.19, so it runs on the pinned Node 22 from npm (the `node`
// package: node_modules/node/bin/node), whatever `node` this script itself runs on. Each run
// is one Inspector process in JSON mode:
//
//   node22 .../inspector --cli --format json -q --protocol-era ERA --method M
//          [--tool-name T --tool-args-json '{...}'] -- REPLAY --mcp-server --allow DIR:rw
//
// which connects over stdio in the era asked for (legacy: the initialize handshake; modern:
// 2026-07-28 through server/discover, no handshake), runs one method and prints
// `{"result": ...}` on stdout, or `{"error": ...}` on stderr with a non-zero exit. For the era
// given, the runs are: `initialize` (the Inspector reports the negotiated revision and
// serverInfo), tools/list (exactly the 19 tools), one tools/call of each of the 19 tools with the
// expected text (and, from 2025-06-18 on, structuredContent from each data tool that declares an
// outputSchema; a tools/call run lists the tools first, so the Inspector's SDK validates it), and
// read_file /etc/passwd, which must fail with replay's "path not allowed". The runs go 4 at a
// time on one temp tree: the tools that change files each work on their own files under work/,
// and nothing that reads walks into work/. Prints one summary line; exits non-zero on any failure.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  EXPECTED_TOOLS, HERE, Failure, MODERN, check, main, makeTempDir, makeTree, ownChild, packageVersion, removeTempDir,
  serverArgs, structuredRule, texts,
} from './scenario.mjs';

const PKG = '@modelcontextprotocol/inspector';
const NODE22 = path.join(HERE, 'node_modules', 'node', 'bin', 'node');
const INSPECTOR = path.join(
  HERE, 'node_modules', PKG,
  JSON.parse(fs.readFileSync(path.join(HERE, 'node_modules', PKG, 'package.json'), 'utf8')).bin.inspector,
);
const PARALLEL = 4;
const ERAS = ['legacy', 'modern'];

/** One Inspector CLI run: resolves to { code, result, error, stdout, stderr }. */
function inspect(env, binary, root, era, method, extra = []) {
  const argv = [
    INSPECTOR, '--cli', '--format', 'json', '-q', '--protocol-era', era, '--method', method, ...extra,
    '--', binary, ...serverArgs(root),
  ];
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

/** The shared tree plus one set of files under work/ for each tool that changes files. */
function makeFixture() {
  const { root } = makeTree('inspector');
  const w = (...parts) => path.join(root, 'work', ...parts);
  fs.mkdirSync(w('multi'), { recursive: true });
  fs.writeFileSync(w('edit.txt'), 'alpha beta\n');
  fs.writeFileSync(w('multi', 'a.txt'), 'old line\n');
  fs.writeFileSync(w('multi', 'b.txt'), 'old line\n');
  fs.writeFileSync(w('mv-src.txt'), 'to move\n');
  fs.writeFileSync(w('cp-src.txt'), 'to copy\n');
  fs.writeFileSync(w('del.txt'), 'to delete\n');
  return { root, w };
}

async function run(binary, era) {
  check(fs.existsSync(NODE22), `no Node 22 at ${NODE22} (npm package "node")`);
  const { root, w } = makeFixture();
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
  const disk = (file) => fs.readFileSync(file, 'utf8');
  // Arguments go in as one JSON object (--tool-args-json), verbatim: no key=value coercion.
  const call = (tool, args) => ['tools/call', ['--tool-name', tool, '--tool-args-json', JSON.stringify(args)]];
  const outside = { path: '/etc/passwd' };

  // The text checks: [tool, arguments, expected substrings, extra check after the run].
  const calls = [
    ['read_file', { path: p('hello.txt') }, ['hello world\nsecond line']],
    ['read_multiple_files', { paths: [p('hello.txt'), p('sub', 'nested.txt')] }, ['hello world', 'a nested needle']],
    ['write_file', { path: w('new.txt'), content: 'alpha beta' }, ['Successfully wrote'],
      () => check(disk(w('new.txt')) === 'alpha beta', 'write_file: work/new.txt on disk differs')],
    ['create_directory', { path: w('made', 'deep') }, ['Created directory'],
      () => check(fs.statSync(w('made', 'deep')).isDirectory(), 'create_directory: work/made/deep is not a directory')],
    ['list_directory', { path: root }, ['[FILE] hello.txt', '[FILE] pixel.png', '[DIR]  sub', '[DIR]  work']],
    // depth 1: the root's own entries, which nothing changes while the runs go on.
    ['directory_tree', { path: root, depth: 1 }, ['"type":"directory"'], (r) => {
      const kids = new Set((JSON.parse(texts(r.result)).children ?? []).map((c) => c.name));
      for (const k of ['hello.txt', 'pixel.png', 'sub', 'work']) check(kids.has(k), `directory_tree lacks ${k}`);
    }],
    ['move_file', { source: w('mv-src.txt'), destination: w('mv-dst.txt') }, ['Moved'],
      () => check(!fs.existsSync(w('mv-src.txt')) && disk(w('mv-dst.txt')) === 'to move\n', 'move_file: not moved on disk')],
    ['copy_file', { source: w('cp-src.txt'), destination: w('cp-dst.txt') }, ['Copied'],
      () => check(disk(w('cp-src.txt')) === 'to copy\n' && disk(w('cp-dst.txt')) === 'to copy\n', 'copy_file: not copied on disk')],
    ['delete_file', { path: w('del.txt') }, ['Deleted'], () => check(!fs.existsSync(w('del.txt')), 'delete_file: still on disk')],
    ['get_file_info', { path: p('hello.txt') }, ['type: file', 'size:', 'modified:', 'permissions:']],
    ['list_allowed_directories', {}, [root, '(read-write)']],
    ['edit_file', { path: w('edit.txt'), edits: [{ oldText: 'alpha', newText: 'gamma' }] }, ['Successfully edited'],
      () => check(disk(w('edit.txt')) === 'gamma beta\n', 'edit_file: work/edit.txt on disk differs')],
    ['edit_files', { paths: [w('multi', '*.txt')], edits: [{ oldText: 'old', newText: 'new' }] },
      ['Successfully edited', w('multi', 'a.txt'), w('multi', 'b.txt')],
      () => check(disk(w('multi', 'a.txt')) === 'new line\n' && disk(w('multi', 'b.txt')) === 'new line\n',
        'edit_files: work/multi/*.txt on disk differ')],
    ['apply_patch', { patch: '*** Begin Patch\n*** Add File: patched.txt\n+patched\n*** End Patch\n', workingDirectory: w() },
      [`A ${w('patched.txt')}`], () => check(disk(w('patched.txt')) === 'patched\n', 'apply_patch: work/patched.txt on disk differs')],
    // The searches leave out work/, whose files the other runs change meanwhile.
    ['search_files', { directory: root, nameContains: 'NESTED', excludeGlobs: ['work'] }, [p('sub', 'nested.txt')]],
    ['glob_search', { directory: root, globs: ['**/*.txt'], excludeGlobs: ['work'] }, [p('hello.txt'), p('sub', 'nested.txt')]],
    ['grep_files', { regex: 'needle', directory: root, excludeGlobs: ['work'] }, [`${p('sub', 'nested.txt')}:1:a nested needle`]],
    ['execute_command', { command: 'echo interop-ok', workingDirectory: root }, ['interop-ok', '[exit code: 0]']],
    ['command_session', {}, ['(no sessions)']],
  ];
  const called = new Set(calls.map(([tool]) => tool));
  const uncalled = EXPECTED_TOOLS.filter((t) => !called.has(t));
  check(uncalled.length === 0 && calls.length === EXPECTED_TOOLS.length, `the test does not call ${uncalled.join(', ')}`);

  const runs = [
    ['initialize', ['initialize', []]],
    ['tools/list', ['tools/list', []]],
    ...calls.map(([tool, args]) => [tool, call(tool, args)]),
    ['read_file /etc/passwd', call('read_file', outside)],
  ];

  try {
    // Run everything first, 4 at a time; judge afterwards, since the structuredContent rule for a
    // call depends on the revision (initialize) and the outputSchemas (tools/list).
    const results = new Array(runs.length);
    let next = 0;
    const worker = async () => {
      while (next < runs.length) {
        const i = next++;
        const [, [method, extra]] = runs[i];
        results[i] = await inspect(env, binary, root, era, method, extra);
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));

    const failures = []; // [label, message], in the order of `runs`, whatever order they finished in
    const judge = (label, f) => {
      try {
        f();
      } catch (e) {
        if (!(e instanceof Failure)) throw e;
        failures.push([label, e.message]);
      }
    };
    // One entry per distinct message, so a server that fails every run gives one short line.
    const failureLine = () => {
      const byMessage = new Map();
      for (const [label, message] of failures) byMessage.set(message, [...(byMessage.get(message) ?? []), label]);
      return [...byMessage].map(([message, labels]) =>
        `${labels.length > 3 ? `${labels.length} runs (${labels.slice(0, 3).join(', ')}, ...)` : labels.join(', ')}: ${message}`).join('; ');
    };
    const [init, listed] = results;
    let revision;
    judge('initialize', () => {
      check(init.code === 0 && init.result, why(init));
      revision = init.result.protocolVersion;
      check(init.result.serverInfo?.name === 'replay', `serverInfo: ${JSON.stringify(init.result.serverInfo)}`);
      check(init.result.capabilities?.tools, 'no tools capability');
      if (era === 'modern') check(revision === MODERN, `--protocol-era modern negotiated ${revision}, want ${MODERN}`);
      else check(typeof revision === 'string' && revision < MODERN, `--protocol-era legacy negotiated ${revision}`);
    });
    const structured = structuredRule(revision);
    judge('tools/list', () => {
      check(listed.code === 0 && listed.result, why(listed));
      const names = listed.result.tools?.map((t) => t.name) ?? [];
      check(names.length === EXPECTED_TOOLS.length, `${names.length} tools listed, want ${EXPECTED_TOOLS.length}: ${names.join(', ')}`);
      const missing = EXPECTED_TOOLS.filter((n) => !names.includes(n));
      check(missing.length === 0, `lacks ${missing.join(', ')}`);
      structured.declare(listed.result.tools);
    });
    calls.forEach(([tool, , expect, after], k) => {
      const r = results[2 + k];
      judge(tool, () => {
        check(r.code === 0 && r.result, why(r));
        check(!r.result.isError, `isError=true: ${JSON.stringify(r.result.content)}`);
        const out = texts(r.result);
        for (const e of expect) check(out.includes(e), `expected ${JSON.stringify(e)} in ${JSON.stringify(out)}`);
        structured.see(tool, r.result);
        after?.(r);
      });
    });
    const denied = results[runs.length - 1];
    judge('read_file /etc/passwd', () => {
      check(denied.code !== 0 && denied.result === undefined, `succeeded, want an error: ${JSON.stringify(denied.result)}`);
      check(denied.error?.message?.includes('path not allowed'), `want replay's "path not allowed" error, got ${why(denied)}`);
    });
    let structuredSummary = '';
    if (failures.length === 0) judge('structuredContent', () => (structuredSummary = structured.summary()));
    check(failures.length === 0, failureLine());
    const how = era === 'modern' ? 'via server/discover' : 'via initialize';
    return `${calls.length}/${EXPECTED_TOOLS.length} tools OK, ${structuredSummary} ` +
      `(${runs.length} runs: initialize, tools/list = ${EXPECTED_TOOLS.length} tools, ${calls.length} tools/call, 1 error) ` +
      `(protocol ${revision} ${how})`;
  } finally {
    removeTempDir(root);
    removeTempDir(home);
  }
}

const args = process.argv.slice(2);
let era = 'legacy';
if (args.length === 3 && args[0] === '--protocol-era' && ERAS.includes(args[1])) [, era] = args.splice(0, 2);
if (args.length !== 1) {
  console.error('usage: node inspector.mjs [--protocol-era legacy|modern] /path/to/replay');
  process.exit(2);
}
await main(`mcp-inspector ${packageVersion(PKG)} --cli --protocol-era ${era}`, 90, () => run(args[0], era));
