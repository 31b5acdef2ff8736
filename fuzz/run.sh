#!/usr/bin/env bash
# Builds the fuzz targets and runs one (or all) of them for a bounded time.
#
#   bash fuzz/run.sh TARGET|all SECONDS
#
# Stable Rust is enough: cargo-fuzz builds with `--sanitizer none`, since AddressSanitizer needs
# nightly's -Zsanitizer (see fuzz/README.md). New inputs go to fuzz/target/corpus/TARGET; the
# checked-in seeds in fuzz/corpus/TARGET are only read. A crash is saved under
# fuzz/artifacts/TARGET/ and fails the run.
set -euo pipefail
cd "$(dirname "$0")"

TARGETS=(jsonrpc policy edit js_regex validate patch)
CARGO_FUZZ_VERSION=0.13.2

usage() {
    echo "usage: bash fuzz/run.sh TARGET|all SECONDS    (targets: ${TARGETS[*]})" >&2
    exit 2
}
[ $# -eq 2 ] || usage
[[ "$2" =~ ^[0-9]+$ ]] || usage
case " ${TARGETS[*]} all " in *" $1 "*) ;; *) usage ;; esac
if [ "$1" = all ]; then selected=("${TARGETS[@]}"); else selected=("$1"); fi
seconds=$2

if ! cargo fuzz --version 2>/dev/null | grep -q " $CARGO_FUZZ_VERSION\$"; then
    cargo install --locked --quiet cargo-fuzz --version "$CARGO_FUZZ_VERSION"
fi
# cargo-fuzz has no --locked: fetching with it first fails if Cargo.lock is out of date.
cargo fetch --locked --quiet --target "$(rustc -vV | sed -n 's/^host: //p')"
sanitizer=(--sanitizer "${FUZZ_SANITIZER:-none}")
cargo fuzz build "${sanitizer[@]}"

for target in "${selected[@]}"; do
    echo "== fuzz $target for ${seconds} s"
    mkdir -p "target/corpus/$target"
    dict=()
    [ -f "$target.dict" ] && dict=("-dict=$target.dict")
    # libFuzzer's progress lines (NEW, REDUCE, pulse, NEW_FUNC) and its dictionary advice are
    # left out; the start, the final statistics and any crash report are shown.
    cargo fuzz run "${sanitizer[@]}" "$target" "target/corpus/$target" "corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -print_final_stats=1 "${dict[@]}" 2>&1 \
        | grep --line-buffered -Ev '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)|^[[:space:]]+NEW_FUNC|^"|^###### (Recommended|End)'
done
