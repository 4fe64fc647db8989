// RUN: split-file %s %t
// With a cost table the times are exact: matmul 10 us, all_reduce 30 us,
// all_gather 20 us, everything else 0.
// RUN: dtensor-opt %t/prog.mlir -o %t/after.mlir --dtensor-set-target="cost-table=%t/table.json" --dtensor-export-timeline="trace=%t/trace.json svg=%t/timeline.svg" | FileCheck %s --check-prefix=SUMMARY
// RUN: FileCheck %s --check-prefix=TRACE < %t/trace.json
// RUN: FileCheck %s --check-prefix=SVG < %t/timeline.svg
// RUN: dtensor-opt %t/prog.mlir --dtensor-set-target="cost-table=%t/table.json" --dtensor-export-timeline="comm-streams=single" -o /dev/null | FileCheck %s --check-prefix=SINGLE
// `-` writes to standard output.
// RUN: dtensor-opt %t/prog.mlir --dtensor-set-target="cost-table=%t/table.json" --dtensor-export-timeline="trace=-" -o /dev/null | FileCheck %s --check-prefix=STDOUT

// The IR is unchanged.
// RUN: dtensor-opt %t/prog.mlir --dtensor-set-target="cost-table=%t/table.json" -o %t/before.mlir
// RUN: diff %t/before.mlir %t/after.mlir

// Without a table, the cost model (see the MODEL lines for the numbers), a
// preset, or a hardware description.
// RUN: dtensor-opt %t/prog.mlir --dtensor-export-timeline -o /dev/null | FileCheck %s --check-prefix=MODEL
// RUN: dtensor-opt %t/prog.mlir --target=cpu:cpu --dtensor-export-timeline -o /dev/null | FileCheck %s --check-prefix=CPU
// RUN: dtensor-opt %t/prog.mlir --dtensor-set-target="hardware-file=%t/hw.json" --dtensor-export-timeline -o /dev/null | FileCheck %s --check-prefix=HWFILE
// A table that lacks an op and has no default falls back to the model.
// RUN: dtensor-opt %t/prog.mlir --dtensor-set-target="cost-table=%t/partial.json" --dtensor-export-timeline -o /dev/null | FileCheck %s --check-prefix=PARTIAL

// The pictures of docs/timeline.md: test/docs/timelines.test.

// Errors.
// RUN: not dtensor-opt %t/prog.mlir --dtensor-set-target="hardware-file=%t/bad-hw.json" --dtensor-export-timeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-HWFILE
// RUN: not dtensor-opt %t/prog.mlir --dtensor-set-target="hardware-file=%t/missing.json" --dtensor-export-timeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-HWMISSING
// RUN: not dtensor-opt %t/prog.mlir --dtensor-set-target="cost-table=%t/bad-table.json" --dtensor-export-timeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-TABLE
// RUN: not dtensor-opt %t/prog.mlir --dtensor-export-timeline="trace=%t/missing-dir/trace.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-TRACE
// RUN: not dtensor-opt %t/prog.mlir --dtensor-export-timeline="svg=%t/missing-dir/timeline.svg" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-SVG
// RUN: not dtensor-opt %t/prog.mlir --dtensor-export-timeline=comm-streams=many -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-STREAMS
// RUN: dtensor-opt %t/bad-wait.mlir --mlir-very-unsafe-disable-verifier-on-parsing --dtensor-export-timeline -verify-diagnostics -o /dev/null

// Synchronous: the all_reduce blocks compute for its 30 us. Asynchronous:
// two matmuls (20 us) run under it, 10 us stay exposed. Two async
// collectives on different groups of @m2 run side by side on two streams;
// the loop body is visited once.
// SUMMARY: timeline @sync (hardware h200, table {{.*}}table.json): total 70.000 us, compute 40.000 us, communication 30.000 us, exposed communication 30.000 us
// SUMMARY-NEXT: timeline @async (hardware h200, table {{.*}}table.json): total 50.000 us, compute 40.000 us, communication 30.000 us, exposed communication 10.000 us
// SUMMARY-NEXT: timeline @streams (hardware h200, table {{.*}}table.json): total 30.000 us, compute 0.000 us, communication 50.000 us, exposed communication 30.000 us
// SUMMARY-NEXT: timeline @loop (hardware h200, table {{.*}}table.json): total 40.000 us, compute 10.000 us, communication 30.000 us, exposed communication 30.000 us
// SUMMARY-NOT: declaration

// On one stream the all_gather waits for the all_reduce.
// SINGLE: timeline @streams ({{.*}}): total 50.000 us, compute 0.000 us, communication 50.000 us, exposed communication 50.000 us

// TRACE:      {"traceEvents": [
// TRACE-NEXT:   {"name":"process_name","ph":"M","pid":0,"args":{"name":"rank 0"}},
// TRACE-NEXT:   {"name":"thread_name","ph":"M","pid":0,"tid":1,"args":{"name":"@sync compute"}},
// TRACE-NEXT:   {"name":"thread_sort_index","ph":"M","pid":0,"tid":1,"args":{"sort_index":1}},
// TRACE-NEXT:   {"name":"thread_name","ph":"M","pid":0,"tid":2,"args":{"name":"@sync comm @tp [0]"}},
// TRACE-NEXT:   {"name":"thread_sort_index","ph":"M","pid":0,"tid":2,"args":{"sort_index":2}},
// TRACE-NEXT:   {"name":"linalg.matmul","cat":"compute","ph":"X","ts":0.000,"dur":10.000,"pid":0,"tid":1,"args":{"function":"sync","op":"linalg.matmul","loc":"loc(\"{{.*}}prog.mlir\":{{[0-9]+}}:8)"}},
// TRACE-NEXT:   {"name":"dtensor.all_reduce","cat":"collective","ph":"X","ts":10.000,"dur":30.000,"pid":0,"tid":2,"args":{"function":"sync","op":"dtensor.all_reduce",{{.*}}}},
// TRACE-NEXT:   {"name":"wait for dtensor.all_reduce","cat":"exposed_comm","ph":"X","ts":10.000,"dur":30.000,"pid":0,"tid":1,{{.*}}},
// TRACE-NEXT:   {"name":"linalg.matmul","cat":"compute","ph":"X","ts":40.000,"dur":10.000,"pid":0,"tid":1,{{.*}}},
// TRACE-NEXT:   {"name":"linalg.matmul","cat":"compute","ph":"X","ts":50.000,"dur":10.000,"pid":0,"tid":1,{{.*}}},
// TRACE-NEXT:   {"name":"linalg.matmul","cat":"compute","ph":"X","ts":60.000,"dur":10.000,"pid":0,"tid":1,{{.*}}},
// Functions get their own tids.
// TRACE-NEXT:   {"name":"thread_name","ph":"M","pid":0,"tid":3,"args":{"name":"@async compute"}},
// TRACE-NEXT:   {"name":"thread_sort_index","ph":"M","pid":0,"tid":3,"args":{"sort_index":3}},
// TRACE-NEXT:   {"name":"thread_name","ph":"M","pid":0,"tid":4,"args":{"name":"@async comm @tp [0]"}},
// TRACE-NEXT:   {"name":"thread_sort_index","ph":"M","pid":0,"tid":4,"args":{"sort_index":4}},
// TRACE-NEXT:   {"name":"linalg.matmul","cat":"compute","ph":"X","ts":0.000,"dur":10.000,"pid":0,"tid":3,{{.*}}},
// TRACE-NEXT:   {"name":"dtensor.all_reduce","cat":"async_collective","ph":"X","ts":10.000,"dur":30.000,"pid":0,"tid":4,{{.*}}},
// TRACE-NEXT:   {"name":"linalg.matmul","cat":"compute","ph":"X","ts":10.000,"dur":10.000,"pid":0,"tid":3,{{.*}}},
// TRACE-NEXT:   {"name":"linalg.matmul","cat":"compute","ph":"X","ts":20.000,"dur":10.000,"pid":0,"tid":3,{{.*}}},
// TRACE-NEXT:   {"name":"wait for dtensor.all_reduce","cat":"exposed_comm","ph":"X","ts":30.000,"dur":10.000,"pid":0,"tid":3,"args":{"function":"async","op":"dtensor.wait",{{.*}}}},
// TRACE-NEXT:   {"name":"linalg.matmul","cat":"compute","ph":"X","ts":40.000,"dur":10.000,"pid":0,"tid":3,{{.*}}},
// TRACE:        {"name":"thread_name","ph":"M","pid":0,"tid":6,"args":{"name":"@streams comm @m2 [1]"}},
// TRACE:        {"name":"thread_name","ph":"M","pid":0,"tid":7,"args":{"name":"@streams comm @m2 [0]"}},
// TRACE:        {"name":"dtensor.all_reduce","cat":"async_collective","ph":"X","ts":0.000,"dur":30.000,"pid":0,"tid":6,{{.*}}},
// TRACE-NEXT:   {"name":"dtensor.all_gather","cat":"async_collective","ph":"X","ts":0.000,"dur":20.000,"pid":0,"tid":7,{{.*}}},
// TRACE-NEXT:   {"name":"wait for dtensor.all_reduce","cat":"exposed_comm","ph":"X","ts":0.000,"dur":30.000,"pid":0,"tid":5,{{.*}}},
// TRACE:        {"name":"thread_name","ph":"M","pid":0,"tid":8,"args":{"name":"@loop compute"}},
// TRACE:        {"name":"linalg.matmul","cat":"compute","ph":"X","ts":0.000,"dur":10.000,"pid":0,"tid":8,{{.*}}},
// TRACE-NEXT:   {"name":"dtensor.all_reduce","cat":"collective","ph":"X","ts":10.000,"dur":30.000,"pid":0,"tid":9,{{.*}}},
// TRACE-NEXT:   {"name":"wait for dtensor.all_reduce","cat":"exposed_comm","ph":"X","ts":10.000,"dur":30.000,"pid":0,"tid":8,{{.*}}}
// TRACE-NEXT: ],
// TRACE-NEXT: "displayTimeUnit": "ns",
// TRACE-NEXT: "otherData": {"hardware":"h200","estimator":"table {{.*}}table.json","functions":[{"name":"sync","total_us":70.000,"compute_us":40.000,"comm_us":30.000,"exposed_comm_us":30.000},{"name":"async","total_us":50.000,"compute_us":40.000,"comm_us":30.000,"exposed_comm_us":10.000},{"name":"streams","total_us":30.000,{{.*}}},{"name":"loop",{{.*}}}]}}

// One panel per function on a common scale (70 us over 900 px), a lane
// for compute and one per stream, labelled boxes with their times, an axis.
// SVG:      <svg xmlns="http://www.w3.org/2000/svg" width="1100.0" height="{{[0-9.]+}}"
// SVG:      <g class="function" data-name="sync">
// SVG-NEXT: <text {{.*}}class="title">@sync</text>
// SVG-NEXT: <text {{.*}}class="summary">total 70.000 us, compute 40.000 us, communication 30.000 us, exposed communication 30.000 us (hardware h200, table {{.*}}table.json)</text>
// SVG-NEXT: <rect class="lane" x="170.0" y="44.0" width="900.0" height="30.0"/>
// SVG-NEXT: <text class="lane-label" {{.*}}>compute</text>
// SVG-NEXT: <rect class="lane" x="170.0" y="82.0" width="900.0" height="30.0"/>
// SVG-NEXT: <text class="lane-label" {{.*}}>comm @tp [0]</text>
// SVG:      <text class="tick" x="170.0" {{.*}}>0</text>
// SVG:      <text class="tick" x="298.6" {{.*}}>10</text>
// SVG:      <text class="tick" x="1070.0" {{.*}}>70</text>
// SVG-NEXT: <text class="axis" {{.*}}>time (us)</text>
// SVG-NEXT: <g class="event compute" data-ts="0.000" data-dur="10.000"><title>linalg.matmul: 0.000 - 10.000 us (10.000 us)</title><rect x="170.0" y="46.0" width="128.6" height="26.0" fill="#4e79a7"/><text class="box-label" {{.*}}>matmul</text></g>
// The all_reduce on the comm lane and the stall on the compute lane span
// the same pixels.
// SVG-NEXT: <g class="event collective" data-ts="10.000" data-dur="30.000"><title>dtensor.all_reduce: 10.000 - 40.000 us (30.000 us)</title><rect x="298.6" y="84.0" width="385.7" {{.*}}>all_reduce</text></g>
// SVG-NEXT: <g class="event exposed_comm" data-ts="10.000" data-dur="30.000"><title>wait for dtensor.all_reduce: 10.000 - 40.000 us (30.000 us)</title><rect x="298.6" y="46.0" width="385.7" height="26.0" fill="url(#stall)"/><text class="box-label" {{.*}}>wait all_reduce</text></g>
// SVG:      <g class="function" data-name="async">
// SVG:      class="summary">total 50.000 us, compute 40.000 us, communication 30.000 us, exposed communication 10.000 us (hardware h200, table {{.*}}table.json)</text>
// The async all_reduce (10-40 us) overlaps two matmuls (10-30 us).
// SVG:      <g class="event async_collective" data-ts="10.000" data-dur="30.000"><title>dtensor.all_reduce: 10.000 - 40.000 us (30.000 us)</title><rect x="298.6" y="256.0" width="385.7" height="26.0" fill="#f28e2b"/>
// SVG-NEXT: <g class="event compute" data-ts="10.000" data-dur="10.000"><title>linalg.matmul: {{.*}}<rect x="298.6" y="218.0"
// SVG-NEXT: <g class="event compute" data-ts="20.000" data-dur="10.000"><title>linalg.matmul: {{.*}}<rect x="427.1" y="218.0"
// SVG-NEXT: <g class="event exposed_comm" data-ts="30.000" data-dur="10.000"><title>wait for dtensor.all_reduce: 30.000 - 40.000 us (10.000 us)</title><rect x="555.7" y="218.0" width="128.6"
// SVG:      <text class="lane-label" {{.*}}>comm @m2 [1]</text>
// SVG:      <text class="lane-label" {{.*}}>comm @m2 [0]</text>
// SVG:      <g class="legend">
// SVG-NEXT: <rect {{.*}}fill="#4e79a7"/><text {{.*}}>compute</text>
// SVG-NEXT: <rect {{.*}}fill="#e15759"/><text {{.*}}>synchronous collective</text>
// SVG-NEXT: <rect {{.*}}fill="#f28e2b"/><text {{.*}}>asynchronous collective</text>
// SVG-NEXT: <rect {{.*}}fill="url(#stall)"/><text {{.*}}>compute waits (exposed communication)</text>
// SVG-NEXT: </g>
// SVG-NEXT: </svg>

// STDOUT: {"traceEvents": [
// STDOUT: "otherData": {"hardware":"h200"
// STDOUT: timeline @sync

// The h200 model: the all_reduce of 8x16xf32 (512 B) over 4 ranks of a
// node takes NCCL's ring with LL: 6.6 + 6 * 0.6 us + 512 B / (141 GB/s *
// 4/6) = 10.205 us; the matmuls are sub-microsecond rooflines. In @streams
// the all_gather over 2 ranks of @m2 axis 0 (ranks 0 and 4, one node)
// gathers 256 B with LL at half the calibrated pair link (0.69 * 300 / 2 =
// 103.5 GB/s): 6.6 + 0.6 + 256 B / (103.5 GB/s * 2) = 7.201 us.
// MODEL: timeline @sync (hardware h200, model): total {{10\.2[0-9]+}} us, compute {{0\.[0-9]+}} us, communication 10.205 us, exposed communication 10.205 us
// MODEL: timeline @streams (hardware h200, model): total 10.205 us, compute 0.000 us, communication 17.407 us, exposed communication 10.205 us
// cpu: 5 us + 6 steps of 1 us + 512 B / (5 GB/s * 4/6) = 11.154 us.
// CPU: timeline @sync (hardware cpu, model): {{.*}} communication 11.154 us
// The description raises ring LL's base latency to 100 us: the tree with
// LL wins instead, 6.8 + 2 * 3 * 0.6 = 10.4 us + 512 B / (0.92 * 300 / 3.8
// / 2 GB/s) = 10.414 us (ring LL128 would take 25.403 us).
// HWFILE: timeline @sync (hardware slow-ll, model): {{.*}} communication 10.414 us
// PARTIAL: timeline @sync (hardware h200, table {{.*}}partial.json): total {{.*}} us, compute 40.000 us, communication 10.205 us, exposed communication 10.205 us


// ERR-HWFILE: error: export timeline: {{.*}}bad-hw.json: matmul_tflops: expected a number > 0, got -5
// ERR-HWMISSING: error: export timeline: {{.*}}missing.json: cannot read hardware description:
// ERR-TABLE: error: export timeline: {{.*}}bad-table.json: 'linalg.matmul': expected microseconds (a number >= 0), got "fast"
// ERR-TRACE: error: export timeline: cannot open output file '{{.*}}missing-dir/trace.json'
// ERR-SVG: error: export timeline: cannot open output file '{{.*}}missing-dir/timeline.svg'
// ERR-STREAMS: error: export timeline: unknown comm-streams 'many' (expected per-group or single)

//--- table.json
{"linalg.matmul": 10, "dtensor.all_reduce": 30, "dtensor.all_gather": 20,
 "default": 0}

//--- partial.json
{"linalg.matmul": 10}

//--- hw.json
{"base": "h200", "name": "slow-ll",
 "nccl": {"base_latency_us": {"ring": {"ll": 100}}}}

//--- bad-hw.json
{"base": "h200", "matmul_tflops": -5}

//--- bad-table.json
{"linalg.matmul": "fast"}

//--- bad-wait.mlir
// A wait on a function argument (rejected by the verifier as WAIT1).
func.func @f(%fut: !dtensor.future<tensor<4xf32>>) -> tensor<4xf32> {
  // expected-error @+1 {{timeline: the future of dtensor.wait does not come from a dtensor.async_start before it}}
  %w = dtensor.wait %fut : !dtensor.future<tensor<4xf32>>
  return %w : tensor<4xf32>
}

//--- prog.mlir
dtensor.mesh @tp shape = [4] names = ["tp"]
dtensor.mesh @m2 shape = [2, 4] names = ["dp", "tp"]

// Four matmuls and an all_reduce of the first one's result, synchronous:
// compute stops while the all_reduce runs.
func.func @sync(%a: tensor<8x16xf32>, %b: tensor<16x16xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %r = dtensor.all_reduce %m on @tp axes = [0] reduce = sum : tensor<8x16xf32>
  %x = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %z = linalg.matmul ins(%r, %b : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %x, %y, %z : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}

// The same with the all_reduce started early and waited for late: two
// matmuls hide 20 of its 30 us.
func.func @async(%a: tensor<8x16xf32>, %b: tensor<16x16xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %fut = dtensor.async_start {
    %r = dtensor.all_reduce %m on @tp axes = [0] reduce = sum : tensor<8x16xf32>
    dtensor.yield %r : tensor<8x16xf32>
  } : !dtensor.future<tensor<8x16xf32>>
  %x = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %r = dtensor.wait %fut : !dtensor.future<tensor<8x16xf32>>
  %z = linalg.matmul ins(%r, %b : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %x, %y, %z : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}

// Two async collectives on different groups of @m2.
func.func @streams(%a: tensor<8x16xf32>, %g: tensor<2x16xf32>)
    -> (tensor<8x16xf32>, tensor<4x16xf32>) {
  %f0 = dtensor.async_start {
    %r = dtensor.all_reduce %a on @m2 axes = [1] reduce = sum : tensor<8x16xf32>
    dtensor.yield %r : tensor<8x16xf32>
  } : !dtensor.future<tensor<8x16xf32>>
  %f1 = dtensor.async_start {
    %r = dtensor.all_gather %g on @m2 axes = [0] gather_dim = 0 : tensor<2x16xf32> -> tensor<4x16xf32>
    dtensor.yield %r : tensor<4x16xf32>
  } : !dtensor.future<tensor<4x16xf32>>
  %w0 = dtensor.wait %f0 : !dtensor.future<tensor<8x16xf32>>
  %w1 = dtensor.wait %f1 : !dtensor.future<tensor<4x16xf32>>
  return %w0, %w1 : tensor<8x16xf32>, tensor<4x16xf32>
}

// Loop bodies are visited once.
func.func @loop(%a: tensor<8x16xf32>, %b: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %res = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %a) -> tensor<8x16xf32> {
    %m = linalg.matmul ins(%acc, %b : tensor<8x16xf32>, tensor<16x16xf32>) outs(%acc : tensor<8x16xf32>) -> tensor<8x16xf32>
    %r = dtensor.all_reduce %m on @tp axes = [0] reduce = sum : tensor<8x16xf32>
    scf.yield %r : tensor<8x16xf32>
  }
  return %res : tensor<8x16xf32>
}

func.func private @declaration(tensor<4xf32>)
