func.func @blocking() {
  // expected-error @below {{'gpu.wait' op a blocking gpu.wait synchronises the host inside a program; the CUDA target orders work by the rank's stream only}}
  gpu.wait
  return
}

// -----

// A parallel loop the conversion to kernels did not take would run on the
// host against device memory.
func.func @host_loop(%m: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cst = arith.constant 1.0 : f32
  // expected-error @below {{'scf.parallel' op a parallel loop is left on the host after the mapping to GPU kernels; on the CUDA target every buffer is device memory, so the host must not run it}}
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %cst, %m[%i] : memref<8xf32>
    scf.reduce
  }
  return
}
