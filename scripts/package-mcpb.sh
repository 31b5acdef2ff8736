#!/usr/bin/env bash
# Builds the MCP bundle and the registry entry for it:
#   bash scripts/package-mcpb.sh OUTDIR
# writes OUTDIR/replay.mcpb (a zip: manifest.json, server/replay-mcpb, server/OS-ARCH/replay),
# OUTDIR/replay.mcpb.sha256 and OUTDIR/server.json (server.json with this version and the
# bundle's fileSha256). The manifest is packaging/mcpb/manifest.json with the version from
# Cargo.toml and the tool list (name, description) from schemas/*.json.
# The binaries: REPLAY_MCPB_BINARIES, space-separated OS-ARCH=PATH entries (OS darwin or linux,
# ARCH arm64 or x64), as the release workflow gives all four; by default the host's
# ${REPLAY_BIN:-target/release/replay}.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
die() { echo "package-mcpb: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: bash scripts/package-mcpb.sh OUTDIR"
mkdir -p "$1"
OUT="$(cd "$1" && pwd)"

host_platform() {
  local os arch
  case "$(uname -s)" in Darwin) os=darwin ;; Linux) os=linux ;; *) die "no bundle platform for $(uname -s)" ;; esac
  case "$(uname -m)" in arm64 | aarch64) arch=arm64 ;; x86_64 | amd64) arch=x64 ;; *) die "no bundle platform for $(uname -m)" ;; esac
  echo "$os-$arch"
}
binaries="${REPLAY_MCPB_BINARIES:-$(host_platform)=${REPLAY_BIN:-$ROOT/target/release/replay}}"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/server"
install -m 0755 "$ROOT/packaging/mcpb/replay-mcpb" "$stage/server/replay-mcpb"
for entry in $binaries; do
  platform="${entry%%=*}" bin="${entry#*=}"
  case "$platform" in darwin-arm64 | darwin-x64 | linux-arm64 | linux-x64) ;; *) die "unknown platform '$platform' in '$entry' (darwin-arm64, darwin-x64, linux-arm64, linux-x64)" ;; esac
  [ -x "$bin" ] || die "$bin: no executable binary for $platform (build it, or set REPLAY_BIN / REPLAY_MCPB_BINARIES)"
  install -D -m 0755 "$bin" "$stage/server/$platform/replay"
done

python3 - "$ROOT" "$stage/manifest.json" <<'PY'
import glob, json, sys, tomllib
root, out = sys.argv[1], sys.argv[2]
with open(f"{root}/Cargo.toml", "rb") as f:
    version = tomllib.load(f)["package"]["version"]
with open(f"{root}/packaging/mcpb/manifest.json") as f:
    manifest = json.load(f)
if "tools" in manifest:
    sys.exit("package-mcpb: packaging/mcpb/manifest.json must not list tools: they come from schemas/")
manifest["version"] = version
tools = []
for path in sorted(glob.glob(f"{root}/schemas/*.json")):
    with open(path) as f:
        schema = json.load(f)
    tools.append({"name": schema["name"], "description": schema["description"]})
manifest["tools"] = tools
with open(out, "w") as f:
    json.dump(manifest, f, indent=2)
    f.write("\n")
PY

rm -f "$OUT/replay.mcpb"
(cd "$stage" && python3 -m zipfile -c "$OUT/replay.mcpb" manifest.json server)
sum="$(sha256sum "$OUT/replay.mcpb" | cut -d' ' -f1)"
echo "$sum  replay.mcpb" > "$OUT/replay.mcpb.sha256"

python3 - "$ROOT" "$sum" "$OUT/server.json" <<'PY'
import json, sys, tomllib
root, sha, out = sys.argv[1], sys.argv[2], sys.argv[3]
with open(f"{root}/Cargo.toml", "rb") as f:
    version = tomllib.load(f)["package"]["version"]
with open(f"{root}/server.json") as f:
    server = json.load(f)
server["version"] = version
for package in server["packages"]:
    package["version"] = version
    if package["registryType"] == "mcpb":
        base = package["identifier"].rsplit("/releases/download/", 1)[0]
        package["identifier"] = f"{base}/releases/download/v{version}/replay.mcpb"
        package["fileSha256"] = sha
with open(out, "w") as f:
    json.dump(server, f, indent=2)
    f.write("\n")
PY
echo "package-mcpb: $OUT/replay.mcpb ($(wc -c < "$OUT/replay.mcpb") bytes, sha256 $sum), $OUT/server.json"
