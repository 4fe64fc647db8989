dtensor.mesh @tp shape = [2]

func.func @f(%a: tensor<2x8xf32>, %b: tensor<2x8xf32>) -> tensor<4x8xf32> {
  %c = tensor.concat dim(-1) %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}
