#!/usr/bin/env bash
# Sets up, builds and runs every test: the lit/FileCheck suite (which also
# checks the generated docs for drift) and the GoogleTest unit tests.
# Ends with one line `N passed, N failed`; exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

bash scripts/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
if ! cmake --build "$BUILD_DIR" -- -j"${JOBS:-2}"; then
  echo "build failed"
  echo "0 passed, 1 failed"
  exit 1
fi

results="$BUILD_DIR/test-results"
rm -rf "$results" && mkdir -p "$results"

/usr/lib/llvm-22/bin/lit -sv --xunit-xml-output "$results/lit.xml" \
  "$BUILD_DIR/test"
"$BUILD_DIR/bin/dtensor-unittests" --gtest_brief=1 \
  --gtest_output="xml:$results/unit.xml"

python3 scripts/summarize-tests.py "$results"/*.xml
