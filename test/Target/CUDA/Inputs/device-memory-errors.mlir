// What would make the host touch device memory, or device code host memory.

func.func @stack(%x: memref<4xf32>) {
  // expected-error @below {{'memref.alloca' op cannot lower a stack allocation for the CUDA target: host memory that device code would access}}
  %a = memref.alloca() : memref<4xf32>
  linalg.copy ins(%x : memref<4xf32>) outs(%a : memref<4xf32>)
  return
}

// -----

memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func @constant_in_kernel(%y: memref<4xf32>) {
  // expected-error @below {{'memref.get_global' op cannot lower a constant tensor for the CUDA target: its buffer is host memory and device code uses it (make it a splat or compute it)}}
  %t = memref.get_global @table : memref<4xf32>
  linalg.copy ins(%t : memref<4xf32>) outs(%y : memref<4xf32>)
  return
}

// -----

func.func @realloc(%x: memref<4xf32>) -> memref<8xf32> {
  // expected-error @below {{'memref.realloc' op cannot lower a reallocation for the CUDA target}}
  %r = memref.realloc %x : memref<4xf32> to memref<8xf32>
  return %r : memref<8xf32>
}
