#!/usr/bin/env bash
# Builds the npm packages from a built binary:
#   bash scripts/package-npm.sh OUTDIR [BINARY]
# writes OUTDIR/replay-mcp-VERSION.tgz (the launcher, packaging/npm/replay-mcp) and
# OUTDIR/replay-mcp-OS-CPU-VERSION.tgz (the platform package holding BINARY), VERSION being
# Cargo.toml's. BINARY defaults to $REPLAY_BIN, then target/release/replay; OS-CPU to the host's,
# or $REPLAY_NPM_PLATFORM (darwin-arm64, darwin-x64, linux-arm64, linux-x64) when the release
# workflow packs a binary built for another platform.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
die() { echo "package-npm: $*" >&2; exit 1; }
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: bash scripts/package-npm.sh OUTDIR [BINARY]"
command -v npm >/dev/null || die "npm is not installed"
mkdir -p "$1"
OUT="$(cd "$1" && pwd)"
BINARY="${2:-${REPLAY_BIN:-$ROOT/target/release/replay}}"
[ -x "$BINARY" ] || die "$BINARY: no executable binary (build it: cargo build --release --locked)"
VERSION="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -n 1)"
[ -n "$VERSION" ] || die "no version in Cargo.toml"

host_platform() {
  local os cpu
  case "$(uname -s)" in Darwin) os=darwin ;; Linux) os=linux ;; *) die "no npm platform for $(uname -s)" ;; esac
  case "$(uname -m)" in arm64 | aarch64) cpu=arm64 ;; x86_64 | amd64) cpu=x64 ;; *) die "no npm platform for $(uname -m)" ;; esac
  echo "$os-$cpu"
}
PLATFORM="${REPLAY_NPM_PLATFORM:-$(host_platform)}"
case "$PLATFORM" in darwin-arm64 | darwin-x64 | linux-arm64 | linux-x64) ;; *) die "unknown platform '$PLATFORM'" ;; esac

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

# The launcher: its version, and the platform packages' it depends on, are Cargo.toml's.
cp -R "$ROOT/packaging/npm/replay-mcp" "$stage/launcher"
cp "$ROOT/LICENSE" "$stage/launcher/"
VERSION="$VERSION" node -e '
  const fs = require("fs");
  const file = process.argv[1];
  const pkg = JSON.parse(fs.readFileSync(file, "utf8"));
  pkg.version = process.env.VERSION;
  for (const dep of Object.keys(pkg.optionalDependencies)) pkg.optionalDependencies[dep] = process.env.VERSION;
  fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + "\n");
' "$stage/launcher/package.json"
cat > "$stage/launcher/README.md" <<MD
# replay-mcp

[replay](https://github.com/replay-mcp/replay) is a Model Context Protocol filesystem server:
seventeen tools fenced by the directories you allow, and on Linux a kernel sandbox. This package
starts its binary, which comes in the package for your platform (replay-mcp-OS-CPU).

\`\`\`sh
npx -y replay-mcp --mcp-server --allow DIR
\`\`\`

\`--allow DIR:ro\` makes a directory read-only. \`npx -y replay-mcp --help\` lists every flag.
MD

# The platform package: the binary, and the os and cpu npm installs it on.
platform_dir="$stage/platform"
install -D -m 0755 "$BINARY" "$platform_dir/bin/replay"
cp "$ROOT/LICENSE" "$platform_dir/"
VERSION="$VERSION" PLATFORM="$PLATFORM" node -e '
  const fs = require("fs");
  const launcher = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
  const [os, cpu] = process.env.PLATFORM.split("-");
  const pkg = {
    name: `replay-mcp-${process.env.PLATFORM}`,
    version: process.env.VERSION,
    description: `The replay binary for ${os} on ${cpu} (started by the replay-mcp package)`,
    license: launcher.license,
    repository: launcher.repository,
    os: [os],
    cpu: [cpu],
    preferUnplugged: true,
    files: ["bin/replay"],
  };
  fs.writeFileSync(process.argv[2], JSON.stringify(pkg, null, 2) + "\n");
' "$stage/launcher/package.json" "$platform_dir/package.json"
printf '# replay-mcp-%s\n\nThe replay binary for %s, started by the `replay-mcp` package: use that one.\n' \
  "$PLATFORM" "$PLATFORM" > "$platform_dir/README.md"

for dir in "$stage/launcher" "$platform_dir"; do
  (cd "$dir" && npm pack --silent --pack-destination "$OUT" >/dev/null)
done
echo "package-npm: $OUT/replay-mcp-$VERSION.tgz, $OUT/replay-mcp-$PLATFORM-$VERSION.tgz"
