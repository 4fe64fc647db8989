// Found by scripts/fuzz.sh --differential (seed 2026): output #0 is a
// tensor.empty, whose contents no program defines; it was compared and
// reported as a MISMATCH.
dtensor.mesh @tp shape = [4]

func.func @creation() -> (tensor<6x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, tensor<8x8xi32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}, tensor<6x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, tensor<6x8xf32> {dtensor.layout = #dtensor.layout<@tp, [P(max)]>}) {
  %e = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<6x8xf32>
  %c = arith.constant {dtensor.layouts = [#dtensor.layout<@tp, [R]>]} dense<7> : tensor<8x8xi32>
  %d = arith.constant {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} dense<3.0> : tensor<6x8xf32>
  %m = arith.constant {dtensor.layouts = [#dtensor.layout<@tp, [P(max)]>]} dense<-1.0> : tensor<6x8xf32>
  return %e, %c, %d, %m : tensor<6x8xf32>, tensor<8x8xi32>, tensor<6x8xf32>, tensor<6x8xf32>
}
