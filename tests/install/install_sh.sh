#!/usr/bin/env bash
# install.sh against a local release directory holding BINARY and its sum, into a temporary
# HOME: it installs to ~/.local/bin, says how to put that on PATH, honours REPLAY_INSTALL_DIR,
# and refuses a download whose sum does not match, leaving nothing installed.
#   bash tests/install/install_sh.sh [BINARY]     (default $REPLAY_BIN, then target/release/replay)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
fail() { echo "install_sh.sh: FAIL: $*" >&2; exit 1; }
BIN="$(realpath "${1:-${REPLAY_BIN:-$ROOT/target/release/replay}}")" || fail "no binary"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) asset=replay-x86_64-unknown-linux-musl ;;
  Linux-aarch64) asset=replay-aarch64-unknown-linux-musl ;;
  Darwin-arm64) asset=replay-aarch64-apple-darwin ;;
  Darwin-x86_64) asset=replay-x86_64-apple-darwin ;;
  *) fail "no release asset name for $(uname -s) $(uname -m)" ;;
esac
release="$work/release"
mkdir -p "$release" "$work/home" "$work/allowed"
cp "$BIN" "$release/$asset"
(cd "$release" && sha256sum "$asset" > "$asset.sha256")

# The default: ~/.local/bin, not on PATH, so it says how to add it.
out="$(HOME="$work/home" PATH=/usr/bin:/bin REPLAY_DOWNLOAD_URL="file://$release" sh "$ROOT/install.sh" 2>&1)" \
  || fail "install.sh failed: $out"
installed="$work/home/.local/bin/replay"
[ -x "$installed" ] || fail "no executable $installed: $out"
cmp -s "$installed" "$BIN" || fail "$installed is not the release binary"
grep -q 'is not on your PATH' <<< "$out" || fail "no PATH advice in: $out"
timeout 60 python3 "$ROOT/tests/install/mcp_smoke.py" "$work/allowed" -- \
  "$installed" --mcp-server --allow "$work/allowed" || fail "the installed binary does not serve"

# On PATH already: no advice. REPLAY_INSTALL_DIR, and a plain directory as the download URL.
out="$(HOME="$work/home" PATH="$work/bin:/usr/bin:/bin" REPLAY_INSTALL_DIR="$work/bin" \
  REPLAY_DOWNLOAD_URL="$release" sh "$ROOT/install.sh" 2>&1)" || fail "install.sh into REPLAY_INSTALL_DIR: $out"
[ -x "$work/bin/replay" ] || fail "nothing in REPLAY_INSTALL_DIR: $out"
! grep -q 'is not on your PATH' <<< "$out" || fail "PATH advice although the directory is on PATH: $out"

# A bad sum is refused and installs nothing.
echo "0000000000000000000000000000000000000000000000000000000000000000  $asset" > "$release/$asset.sha256"
status=0
out="$(HOME="$work/home2" PATH=/usr/bin:/bin REPLAY_DOWNLOAD_URL="file://$release" sh "$ROOT/install.sh" 2>&1)" || status=$?
[ "$status" -ne 0 ] || fail "a bad sum was accepted: $out"
grep -q 'checksum mismatch' <<< "$out" || fail "the refusal does not say why: $out"
[ -z "$(ls -A "$work/home2/.local/bin" 2>/dev/null)" ] || fail "a refused download left files: $(ls -A "$work/home2/.local/bin")"
echo "install_sh.sh: ok: installed to ~/.local/bin and REPLAY_INSTALL_DIR, served, refused a bad sum"
