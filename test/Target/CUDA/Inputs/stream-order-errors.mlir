func.func @blocking() {
  // expected-error @below {{'gpu.wait' op a blocking gpu.wait synchronises the host inside a program; the CUDA target orders work by the rank's stream only}}
  gpu.wait
  return
}
