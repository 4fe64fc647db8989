// An i32 output placed P(min): the ranks' parts reduce to the row minima.
dtensor.mesh @m shape = [2]
func.func @rowmin(%x: tensor<4x8xi32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>})
    -> (tensor<4xi32> {dtensor.layout = #dtensor.layout<@m, [P(min)]>}) {
  %init = arith.constant dense<2147483647> : tensor<4xi32>
  %r = linalg.reduce ins(%x : tensor<4x8xi32>) outs(%init : tensor<4xi32>) dimensions = [1]
    (%a: i32, %b: i32) {
      %m = arith.minsi %a, %b : i32
      linalg.yield %m : i32
    }
  return %r : tensor<4xi32>
}
