#!/usr/bin/env node
// Starts replay from this platform's package, replay-mcp-OS-CPU: an optional dependency that npm
// installs only on the os and cpu its package.json names, so nothing is downloaded at install
// time. The binary inherits stdin, stdout and stderr (the launcher writes nothing to stdout, which
// carries JSON-RPC); its arguments, exit code and terminating signal pass straight through.
"use strict";

const { spawn } = require("node:child_process");
const { constants } = require("node:os");
const path = require("node:path");

const SUPPORTED = ["darwin-arm64", "darwin-x64", "linux-arm64", "linux-x64"];
const platform = `${process.platform}-${process.arch}`;
const { version } = require("../package.json");

function fail(message) {
  process.stderr.write(`replay-mcp: ${message}\n`);
  process.exit(1);
}

let binary;
try {
  const manifest = require.resolve(`replay-mcp-${platform}/package.json`);
  binary = path.join(path.dirname(manifest), "bin", "replay");
} catch {
  if (!SUPPORTED.includes(platform)) {
    fail(
      `no replay binary for ${platform} (there are: ${SUPPORTED.join(", ")}); ` +
        "build it from source instead: cargo install --locked replay-mcp",
    );
  }
  fail(
    `the package replay-mcp-${platform} is not installed; npm leaves optional dependencies ` +
      `out with --omit=optional or --no-optional: install again without it (npx -y replay-mcp@${version})`,
  );
}

const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });
child.on("error", (error) => fail(`cannot start ${binary}: ${error.message}`));

// A signal sent to the launcher alone (a client stopping the server it started) goes on to
// replay; the launcher stays until replay exits, then exits as it did.
const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"];
for (const signal of FORWARDED) {
  process.on(signal, () => child.kill(signal));
}

child.on("exit", (code, signal) => {
  if (signal === null) {
    process.exit(code);
  }
  // Die of the same signal, so the caller sees what it would have seen from replay itself.
  for (const forwarded of FORWARDED) {
    process.removeAllListeners(forwarded);
  }
  process.kill(process.pid, signal);
  // A signal that does not end a process by default: report it as a shell would.
  process.exit(128 + (constants.signals[signal] || 0));
});
