// What would make the host touch device memory, or device code host memory.

func.func @stack(%x: memref<4xf32>) {
  // expected-error @below {{'memref.alloca' op cannot lower a stack allocation for the CUDA target: host memory that device code would access}}
  %a = memref.alloca() : memref<4xf32>
  linalg.copy ins(%x : memref<4xf32>) outs(%a : memref<4xf32>)
  return
}

// -----

func.func @realloc(%x: memref<4xf32>) -> memref<8xf32> {
  // expected-error @below {{'memref.realloc' op cannot lower a reallocation for the CUDA target}}
  %r = memref.realloc %x : memref<4xf32> to memref<8xf32>
  return %r : memref<8xf32>
}
