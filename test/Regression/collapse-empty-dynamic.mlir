// Found by scripts/fuzz.sh --mode cuda (seed 2602, a mutant of a collapse
// test). Upstream MLIR 22: one-shot-bufferize turns
// `tensor.collapse_shape %x [[0, 1]] : tensor<0x?xf32> into tensor<?xf32>`
// (valid: the group has a dynamic dim) into a memref.collapse_shape whose
// result is memref<0xf32> (0 * ? folded to 0), which the memref verifier
// rejects ("collapsed dim (0) must be dynamic if and only if reassociation
// group is dynamic"). Fixed by dtensor-fold-empty-tensors before
// bufferization, on every target (issue 26).
// RUN: dtensor-opt %s --pass-pipeline="builtin.module(dtensor-pipeline{to=llvm})" --verify-each -o /dev/null

dtensor.mesh @tp shape = [4]

func.func @collapse_into_dynamic(%x: tensor<0x?xf32>) -> tensor<?xf32> {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<0x?xf32>
  %c = tensor.collapse_shape %a [[0, 1]] : tensor<0x?xf32> into tensor<?xf32>
  return %c : tensor<?xf32>
}
