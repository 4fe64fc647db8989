// XFAIL: *
// Found by scripts/fuzz.sh --mode cuda (seed 2602, a mutant of a collapse
// test); not fixed yet. Upstream MLIR 22: one-shot-bufferize turns
// `tensor.collapse_shape %x [[0, 1]] : tensor<0x?xf32> into tensor<?xf32>`
// (valid: the group has a dynamic dim) into a memref.collapse_shape whose
// result is memref<0xf32> (0 * ? folded to 0), which the memref verifier
// rejects ("collapsed dim (0) must be dynamic if and only if reassociation
// group is dynamic"). Every lowering (CPU and CUDA) bufferizes; the screen
// (include/dtensor/Frontend/Screen.h) should refuse a collapse group that
// mixes a static 0 with a dynamic dim, or the result should be static 0.
// RUN: dtensor-opt %s --pass-pipeline="builtin.module(dtensor-pipeline{to=llvm})" -o /dev/null

dtensor.mesh @tp shape = [4]

func.func @collapse_into_dynamic(%x: tensor<0x?xf32>) -> tensor<?xf32> {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<0x?xf32>
  %c = tensor.collapse_shape %a [[0, 1]] : tensor<0x?xf32> into tensor<?xf32>
  return %c : tensor<?xf32>
}
