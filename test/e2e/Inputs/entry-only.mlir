// @other cannot be compiled (it calls a function nobody defines); running
// @main must not compile it.
dtensor.mesh @m shape = [2]

func.func private @missing(tensor<4xf32>) -> tensor<4xf32>

func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @missing(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @main(%x: tensor<4xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<4xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}) {
  %y = arith.addf %x, %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
