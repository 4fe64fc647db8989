#!/usr/bin/env bash
# Compiles every program of scripts/gpu-programs.txt for the CUDA target,
# here (no GPU needed): for each rank count a sharded artifact and its
# unsharded reference, plus dtensor-launch and the runtime, into one folder
# that the GPU machine gets (git-excluded gpucarry/ by default):
#
#   scripts/gpu-build.sh [OUT]      (default gpucarry/gpu-test)
#
# OUT/cases.txt lists "name ranks dtype" per case for scripts/gpu-test.sh.
# A program that does not compile is listed as "name ranks COMPILE-FAILED"
# with its error in OUT/<case>.compile.log: gpu-test.sh reports it failed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-gpucarry/gpu-test}
BIN=${BIN_DIR:-build/bin}
LIB=${LIB_DIR:-build/lib}
for tool in dtensor-compile dtensor-launch dtensor-opt; do
  [ -x "$BIN/$tool" ] || { echo "gpu-build: $BIN/$tool not built" >&2; exit 2; }
done
[ -f "$LIB/libdtensor_runtime_cuda.so" ] ||
  { echo "gpu-build: $LIB/libdtensor_runtime_cuda.so not built (DTENSOR_ENABLE_CUDA)" >&2; exit 2; }
rm -rf "$OUT" && mkdir -p "$OUT/src"
cp "$BIN/dtensor-launch" "$LIB/libdtensor_runtime_cuda.so" "$OUT/"
: > "$OUT/cases.txt"

# source NAME SRC N -> prints the program for N ranks (plan applied).
source_for() {
  local name=$1 src=$2 n=$3 file plan dtype=f32 passes=()
  if [[ "$src" == grad:block:* ]]; then passes=(--dtensor-autodiff); src=${src#grad:}; fi
  if [[ "$src" == block:* ]]; then
    # A block of bench/gpu_rank/gen_rank.py as its global program on n ranks.
    local args=${src#block:}
    python3 bench/gpu_rank/gen_rank.py --mesh "$n" ${args//,/ } \
      -o "$OUT/src/$name.n$n.block.mlir" || return 1
    file="$OUT/src/$name.n$n.block.mlir"; plan=/nonexistent
  elif [[ "$src" == trans:* ]]; then
    # The layout-transition matrix of one mesh (test/e2e/gen-transitions.py).
    file="$OUT/src/trans-${src#trans:}.mlir"
    [ -f "$file" ] ||
      python3 test/e2e/gen-transitions.py --mesh "${src#trans:}" > "$file" || return 1
    plan=/nonexistent
  elif [[ "$src" == gen:* ]]; then
    local args=${src#gen:}
    python3 bench/compile_time/gen_transformer.py ${args//,/ } \
      -o "$OUT/src/$name.gen.mlir" --plan "$OUT/src/$name.plan.json" >/dev/null || return 1
    file="$OUT/src/$name.gen.mlir"; plan="$OUT/src/$name.plan.json"
  else
    if [[ "$src" == bf16:* ]]; then dtype=bf16; src=${src#bf16:}; fi
    if [[ "$src" == grad:* ]]; then passes=(--dtensor-autodiff); src=${src#grad:}; fi
    if [[ "$src" == train:* ]]; then
      passes=(--dtensor-autodiff "--dtensor-train-steps=steps=3 learning-rate=0.1"); src=${src#train:}
    fi
    file=$src; plan=${src%.mlir}.plan.json
  fi
  local text
  if [ -f "$plan" ]; then
    text=$("$BIN/dtensor-opt" "$file" --dtensor-apply-tp-plan=plan="$plan") || return 1
  else
    text=$(cat "$file")
  fi
  if [ ${#passes[@]} -gt 0 ]; then
    text=$(printf '%s\n' "$text" | "$BIN/dtensor-opt" "${passes[@]}") || return 1
  fi
  text=$(printf '%s\n' "$text" | sed "s/NRANKS/$n/g; s/shape = \[4\]/shape = [$n]/g")
  [ "$dtype" = bf16 ] && text=$(printf '%s\n' "$text" | sed 's/f32/bf16/g')
  printf '%s\n' "$text"
}

built=0 failed=0
while read -r name src entry ranks dtype flags; do
  [[ -z "${name:-}" || "$name" == \#* ]] && continue
  entryArg=()
  [ "$entry" != "-" ] && entryArg=(--entry "$entry")
  for n in ${ranks//,/ }; do
    c="$name.n$n"
    if source_for "$name" "$src" "$n" > "$OUT/src/$c.mlir" 2> "$OUT/$c.compile.log" &&
       "$BIN/dtensor-compile" "$OUT/src/$c.mlir" --target cuda "${entryArg[@]}" $flags \
         -o "$OUT/$c.so" 2>> "$OUT/$c.compile.log" &&
       "$BIN/dtensor-compile" "$OUT/src/$c.mlir" --target cuda "${entryArg[@]}" --unsharded \
         -o "$OUT/$c.ref.so" 2>> "$OUT/$c.compile.log"; then
      echo "$c $n $dtype" >> "$OUT/cases.txt"; built=$((built + 1))
    else
      echo "$c $n COMPILE-FAILED" >> "$OUT/cases.txt"; failed=$((failed + 1))
      echo "gpu-build: $c does not compile: $(grep -m1 error "$OUT/$c.compile.log")" >&2
    fi
  done
done < "${PROGRAMS:-scripts/gpu-programs.txt}"
echo "gpu-build: $built cases built, $failed failed to compile, in $OUT"
