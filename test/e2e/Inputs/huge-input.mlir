dtensor.mesh @tp shape = [2]

// 10^13 f32 elements (40 TB) per argument: passes screening (at most 2^48
// elements), cannot be held by the host.
func.func @huge(%x: tensor<100000x100000x1000xf32>) -> tensor<100000x100000x1000xf32> {
  %y = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<100000x100000x1000xf32>
  return %y : tensor<100000x100000x1000xf32>
}
