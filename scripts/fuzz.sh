#!/usr/bin/env bash
# Long fuzzing run of the dtensor compiler at low priority (issue 11).
#   scripts/fuzz.sh --minutes N --seed S [--out DIR] [--differential]
# Mutates the test corpus and the examples, runs every mutant through
# parse, screen, verify and every dtensor pipeline (verifier after each
# pass) and, with --differential, accepted mutants on 2 or 4 ranks under
# dtensor-run against the unsharded program. Crashers (mutant + JSON with
# the pipeline and the message) go to DIR (default fuzz-out/); exits 1 if
# any bug was found. See scripts/fuzz/dtensor_fuzz.py.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=10 seed=1 out=fuzz-out extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --differential) extra+=(--differential); shift ;;
    *) echo "usage: $0 --minutes N --seed S [--out DIR] [--differential]" >&2
       exit 2 ;;
  esac
done
BUILD_DIR=${BUILD_DIR:-build}
cmake --build "$BUILD_DIR" --target dtensor-fuzz-check dtensor-run >/dev/null
# A private copy of the checker: a rebuild during the run must not swap it.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
cp "$BUILD_DIR/bin/dtensor-fuzz-check" "$bin/"
nice -n 19 python3 scripts/fuzz/dtensor_fuzz.py --seed "$seed" \
  --seconds "$((minutes * 60))" --out "$out" \
  --checker "$bin/dtensor-fuzz-check" \
  --runner "$BUILD_DIR/bin/dtensor-run" "${extra[@]}"
