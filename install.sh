#!/bin/sh
# Installs replay's static release binary for this machine, checked against its SHA-256 sum:
#   curl -fsSL https://github.com/replay-mcp/replay/releases/latest/download/install.sh | sh
# No sudo: it goes to ~/.local/bin, or to $REPLAY_INSTALL_DIR. Other settings:
#   REPLAY_VERSION        a release tag such as v0.1.0 (default: the latest release)
#   REPLAY_DOWNLOAD_URL   where the binaries and their .sha256 files are: an https:// or
#                         file:// URL, or a directory (default: the release's download URL)
set -eu

REPO_URL="https://github.com/replay-mcp/replay"

say() { printf 'install.sh: %s\n' "$*"; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64 | Linux-amd64) target=x86_64-unknown-linux-musl ;;
  Linux-aarch64 | Linux-arm64) target=aarch64-unknown-linux-musl ;;
  Darwin-arm64 | Darwin-aarch64) target=aarch64-apple-darwin ;;
  Darwin-x86_64) target=x86_64-apple-darwin ;;
  *) die "no release binary for $(uname -s) $(uname -m); build from source: cargo install --locked replay-mcp" ;;
esac
asset="replay-$target"

if [ -n "${REPLAY_DOWNLOAD_URL:-}" ]; then
  base="$REPLAY_DOWNLOAD_URL"
elif [ -n "${REPLAY_VERSION:-}" ]; then
  base="$REPO_URL/releases/download/$REPLAY_VERSION"
else
  base="$REPO_URL/releases/latest/download"
fi
dir="${REPLAY_INSTALL_DIR:-${HOME:?HOME is not set: set REPLAY_INSTALL_DIR}/.local/bin}"

# fetch NAME DEST: one file of the release, from a URL or a directory.
fetch() {
  case "$base" in
    http://* | https://*)
      if command -v curl >/dev/null 2>&1; then
        curl -fsSL --retry 3 -o "$2" "$base/$1"
      elif command -v wget >/dev/null 2>&1; then
        wget -q -O "$2" "$base/$1"
      else
        die "neither curl nor wget is installed: install one, or download $base/$1 by hand"
      fi
      ;;
    file://*) cp "${base#file://}/$1" "$2" ;;
    *) cp "$base/$1" "$2" ;;
  esac || die "cannot download $base/$1 (is there a release with a $target binary?)"
}

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d' ' -f1
  else
    die "neither sha256sum nor shasum is installed: cannot check the download"
  fi
}

mkdir -p "$dir" || die "cannot create $dir: set REPLAY_INSTALL_DIR to a directory you can write"
# The download lands beside its destination, so the final rename is atomic.
tmp="$dir/.replay.download.$$"
trap 'rm -f "$tmp" "$tmp.sha256"' EXIT INT TERM
say "downloading $asset from $base"
fetch "$asset" "$tmp"
fetch "$asset.sha256" "$tmp.sha256"
want="$(cut -d' ' -f1 < "$tmp.sha256")"
got="$(sha256 "$tmp")"
[ "$got" = "$want" ] || die "checksum mismatch for $asset: got $got, the release says $want; nothing was installed (try again; if it persists, report it at $REPO_URL/issues)"
chmod 0755 "$tmp"
"$tmp" --version >/dev/null 2>&1 || die "the downloaded $asset does not run on this machine; nothing was installed"
mv -f "$tmp" "$dir/replay"
say "installed $("$dir/replay" --version) to $dir/replay"

case ":${PATH:-}:" in
  *":$dir:"*) ;;
  *)
    say "$dir is not on your PATH. Add it, e.g. for bash or zsh:"
    say "  echo 'export PATH=\"$dir:\$PATH\"' >> ~/.profile   (then open a new shell)"
    ;;
esac
