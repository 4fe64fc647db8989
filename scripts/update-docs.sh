#!/usr/bin/env bash
# Regenerates the checked-in reference docs under docs/generated/ from ODS.
# test/docs/drift.test fails while they differ from what the build generates.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake --build "$BUILD_DIR" --target dtensor-doc
mkdir -p docs/generated
rm -f docs/generated/*.md
cp "$BUILD_DIR"/docs/*.md docs/generated/
echo "docs/generated updated: $(ls docs/generated | tr '\n' ' ')"
