#!/usr/bin/env bash
# Compiles the training programs of bench/gpu_train, here (no GPU needed),
# into OUT (default gpucarry/gpu-train) with the runtime, for gpu_train.py
# on the GPU machine:
#
#   bench/gpu_train/build.sh [OUT]
#   (GPU machine) python3 bench/gpu_train/gpu_train.py OUT [--json r.json]
#
# For each case (TOKENS:TP) and block, gen_rank.py's per-rank program
# (OUT/src/<block>_T<tokens>_TP<tp>.mlir) and from it:
#   <case>_grad.so   dtensor-autodiff's joint function @<block>_grad:
#                    forward and the gradient of every argument, one seed
#                    cotangent argument per result
#   <case>_train.so  (TRAIN_BLOCKS) one training step, @<block>_train:
#                    dtensor-autodiff with respect to the weights (not the
#                    activations x, xg, rs), then dtensor-train-steps
#                    (steps=1 optimizer=adamw weight-decay=$WD unroll=1:
#                    seeds of ones, AdamW from zero moments, f32 state)
# A program that fails to generate, differentiate or compile is recorded
# as failed (stage and error lines in OUT/build.json, the whole log in
# OUT/logs/) and the build goes on; gpu_train.py reports it as "not built"
# and still times PyTorch on it. Exit status 0 unless nothing was built.
#
# Environment: CASES (default "8192:2 4096:4"), BLOCKS (default "mlp
# sp_mlp attn layer"), TRAIN_BLOCKS (default "mlp layer": the issue asks
# for the layer's; the MLP's runs while the layer's backward does not
# compile for CUDA), TARGET (cuda; cpu
# for bench/gpu_train/check_cpu.py), DTYPE (bf16), GEN_FLAGS (more
# gen_rank.py flags, e.g. smaller sizes), LR (1e-2), BETA1 (0.9), BETA2
# (0.999), EPS (1e-8), WD (AdamW's weight decay, 0.01), COMPILE_FLAGS (more dtensor-compile flags), BIN_DIR,
# LIB_DIR.
#
# One step (steps=1): each call of a training function starts from fresh
# optimizer state, so one call is one first step (docs/autodiff.md).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${1:-gpucarry/gpu-train}
BIN=${BIN_DIR:-build/bin}
LIB=${LIB_DIR:-build/lib}
TARGET=${TARGET:-cuda}
DTYPE=${DTYPE:-bf16}
LR=${LR:-1e-2}
BETA1=${BETA1:-0.9}
BETA2=${BETA2:-0.999}
EPS=${EPS:-1e-8}
WD=${WD:-0.01}
SIG="python3 bench/gpu_train/signature.py"
for tool in dtensor-opt dtensor-compile; do
  if [ ! -x "$BIN/$tool" ]; then
    echo "gpu_train build: no $BIN/$tool (build the tree first)" >&2
    exit 1
  fi
done
case $TARGET in
  cuda*) RUNTIME=libdtensor_runtime_cuda.so ;;
  *) RUNTIME=libdtensor_runtime.so ;;
esac
rm -rf "$OUT/src" "$OUT/logs" "$OUT/build.json"
rm -f "$OUT"/*_grad.so "$OUT"/*_train.so
mkdir -p "$OUT/src" "$OUT/logs"
cp "$LIB/$RUNTIME" "$OUT/" || exit 1
BUILD="$OUT/build.json"
COMMIT=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
DIRTY=false
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  DIRTY=true
fi
$SIG header "$BUILD" "commit=$COMMIT" "dirty=$DIRTY" \
  "subject=$(git log -1 --format=%s 2>/dev/null | cut -c1-120)" \
  "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" "target=$TARGET" "dtype=$DTYPE" \
  "runtime=$RUNTIME" "gen_flags=${GEN_FLAGS:-}" \
  "optimizer={\"name\": \"adamw\", \"lr\": $LR, \"beta1\": $BETA1, \"beta2\": $BETA2, \"eps\": $EPS, \"weight_decay\": $WD, \"steps\": 1}" \
  || exit 1

built=0
failed=0
# build KIND CASE BLOCK T TP SRC: differentiates SRC (and for train adds the
# training step), compiles, records the result in build.json.
build() {
  local kind=$1 c=$2 B=$3 T=$4 TP=$5 src=$6
  local name=${c}_${kind} entry=${B}_${kind} prog="$OUT/src/${c}_${kind}.mlir"
  local log="$OUT/logs/$name.log" wrt="" stage="" passes
  : > "$log"
  if [ "$kind" = train ]; then
    if ! wrt=$($SIG params "$src" "$B" 2>>"$log"); then
      stage=signature
    fi
    passes=("--dtensor-autodiff=wrt=$wrt"
            "--dtensor-train-steps=steps=1 optimizer=adamw weight-decay=$WD learning-rate=$LR beta1=$BETA1 beta2=$BETA2 epsilon=$EPS unroll=1")
  else
    passes=(--dtensor-autodiff)
  fi
  if [ -z "$stage" ]; then
    echo "\$ dtensor-opt $src ${passes[*]}" >> "$log"
    "$BIN/dtensor-opt" "$src" "${passes[@]}" -o "$prog" >> "$log" 2>&1 ||
      stage=autodiff
  fi
  if [ -z "$stage" ]; then
    echo "\$ dtensor-compile $prog --target $TARGET --entry $entry" >> "$log"
    # shellcheck disable=SC2086
    "$BIN/dtensor-compile" "$prog" --target "$TARGET" --entry "$entry" \
      -o "$OUT/$name.so" ${COMPILE_FLAGS:-} >> "$log" 2>&1 || stage=compile
  fi
  local status=ok
  if [ -n "$stage" ]; then
    status=failed
    rm -f "$OUT/$name.so"
    failed=$((failed + 1))
    local msg
    msg=$(grep -m1 -i error "$log" || tail -1 "$log")
    echo "gpu_train build: $name: FAILED at $stage: $(echo "$msg" | sed -E 's/loc\([^)]*\): //' | cut -c1-200)"
  else
    built=$((built + 1))
    echo "gpu_train build: $name: ok"
  fi
  local program_args=()
  if [ -f "$prog" ]; then
    program_args=(--program "$prog" --entry "$entry")
  fi
  $SIG record "$BUILD" "$name" --kind "$kind" --block "$B" --tokens "$T" \
    --tp "$TP" --source "$src" "${program_args[@]}" ${wrt:+--wrt "$wrt"} \
    --status "$status" ${stage:+--stage "$stage"} --log "$log"
}

for case_ in ${CASES:-8192:2 4096:4}; do
  T=${case_%%:*}
  TP=${case_##*:}
  for B in ${BLOCKS:-mlp sp_mlp attn layer}; do
    c=${B}_T${T}_TP${TP}
    src="$OUT/src/$c.mlir"
    # shellcheck disable=SC2086
    if ! python3 bench/gpu_rank/gen_rank.py --block "$B" --tokens "$T" \
        --tp "$TP" --dtype "$DTYPE" ${GEN_FLAGS:-} -o "$src" \
        > "$OUT/logs/$c.gen.log" 2>&1; then
      echo "gpu_train build: $c: gen_rank.py failed: $(tail -1 "$OUT/logs/$c.gen.log")"
      failed=$((failed + 1))
      continue
    fi
    build grad "$c" "$B" "$T" "$TP" "$src"
    for TB in ${TRAIN_BLOCKS-mlp layer}; do
      if [ "$TB" = "$B" ]; then
        build train "$c" "$B" "$T" "$TP" "$src"
      fi
    done
  done
done
echo "gpu_train build: $built built, $failed failed, in $OUT (build.json)"
[ "$built" -gt 0 ]
