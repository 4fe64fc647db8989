// RUN: split-file %s %t
// RUN: dtensor-opt %t/report.mlir --dtensor-comm-report -o /dev/null | FileCheck %s
// RUN: dtensor-opt %t/report.mlir --dtensor-comm-report=format=json -o /dev/null | FileCheck %s --check-prefix=JSON
// RUN: dtensor-opt %t/report.mlir --target=cpu:cpu --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=CPU

// The report goes to the file given by `output`; the IR is unchanged.
// RUN: dtensor-opt %t/report.mlir -o %t/before.mlir
// RUN: dtensor-opt %t/report.mlir --dtensor-comm-report="format=json output=%t/report.json" -o %t/after.mlir
// RUN: diff %t/before.mlir %t/after.mlir
// RUN: FileCheck %s --check-prefix=JSON < %t/report.json

// Errors: bad options, an output that cannot be opened, collectives whose
// mesh cannot be resolved (unverified IR; the verifier rejects it as COLL1).
// RUN: not dtensor-opt %t/report.mlir --dtensor-comm-report=format=xml -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-FORMAT
// RUN: not dtensor-opt %t/report.mlir --dtensor-comm-report=output=%t/missing-dir/report.txt -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-OUTPUT
// RUN: dtensor-opt %t/bad-mesh.mlir --mlir-very-unsafe-disable-verifier-on-parsing --dtensor-comm-report -verify-diagnostics -o /dev/null

// ERR-FORMAT: error: comm report: unknown format 'xml' (expected table or json)
// ERR-OUTPUT: error: comm report: cannot open output file '{{.*}}missing-dir/report.txt'

// Numbers worked by hand from the h200 preset: NCCL's ring/tree model with
// its latency tables (base 6.6 / 14 / 8.4 us and 0.6 / 1.9 / 3.4 us per
// NVLink step for LL / LL128 / Simple rings), 300 GB/s Simple bus bandwidth
// in a node of 8 ranks (LL: min(141, 300/2), LL128: 0.92 * 300), 45 GB/s
// across nodes, and the calibration to measured NCCL calls: Simple pays
// 11 us more than its base, all_gather and reduce_scatter in a node reach
// 0.69 (pair) or 0.92 (3+ ranks) of the link; the fastest protocol counts
// (docs/cost-model.md):
// - all_gather of 1024x1024xf32 over 4 ranks, 16 MiB gathered: LL128,
//   14 + 3 * 1.9 + 16777216 B / (0.92 * 0.92 * 300 GB/s * 4/3) = 19.7 +
//   49.55 = 69.25 us (Simple: 11 + 8.4 + 3 * 3.4 + 16777216 / (0.92 * 300e3
//   * 4/3) = 29.6 + 45.59 = 75.19 us);
// - all_reduce of 1024x1024xf32 over 4 ranks: LL128,
//   14 + 6 * 1.9 + 4194304 B / (276 GB/s * 4/6) = 25.4 + 22.80 = 48.20 us;
//   over 2 ranks LL128, 14 + 2 * 1.9 + 4194304 / 276e3 = 33.00 us (Simple
//   11 + 8.4 + 2 * 3.4 + 4194304 / 300e3 = 40.18 us); over 8 ranks LL,
//   6.6 + 14 * 0.6 + 4194304 / (141e3 * 8/14) = 67.06 us;
// - all_gather of 64x16xf32 over 16 ranks (2 nodes), 65536 B gathered: LL at
//   min(45, 45/2) GB/s, 14 intra steps paying the 1 us network overhead and
//   one 2.7 us network step: 6.6 + 14 + 2.7 + 65536 / (22.5e3 * 16/15) =
//   23.3 + 2.73 = 26.03 us;
// - every small collective below is latency-bound and takes LL: 6.6 us plus
//   0.6 us per step (4 ranks: 3 steps, 8.40 us; all_reduce: 6 steps, 10.20
//   us; permute: one step, 7.20 us) plus well under 0.01 us of transfer.

//--- report.mlir

dtensor.mesh @tp shape = [4]
dtensor.mesh @m2 shape = [2, 4] names = ["dp", "tp"]
dtensor.mesh @big shape = [4, 4]
dtensor.mesh @single shape = [1]
dtensor.mesh @nodes shape = [2, 8] names = ["dp", "tp"]

// Every plain collective once, on a 1-D mesh of 4.

// CHECK-LABEL: comm report for @plain (hardware h200)
// CHECK-NEXT:    collective               count  async   bytes/rank  modelled us{{$}}
// CHECK-NEXT:    all_gather                   1      0      4194304        69.25{{$}}
// CHECK-NEXT:    all_reduce                   1      0      4194304        48.20{{$}}
// CHECK-NEXT:    all_to_all                   1      0          128         8.40{{$}}
// CHECK-NEXT:    broadcast                    1      0          256         8.40{{$}}
// CHECK-NEXT:    permute                      1      0          256         7.20{{$}}
// CHECK-NEXT:    reduce_scatter               1      0          512         8.40{{$}}
// CHECK-NEXT:    total                        6      0      8389760       149.86{{$}}
// CHECK-EMPTY:

// JSON:      "hardware": "h200",
// JSON-NEXT: "functions": [
// JSON-NEXT:   {
// JSON-NEXT:     "name": "plain",
// JSON-NEXT:     "collectives": {
// JSON-NEXT:       "all_gather": {
// JSON-NEXT:         "count": 1,
// JSON-NEXT:         "async": 0,
// JSON-NEXT:         "bytes_per_rank": 4194304,
// JSON-NEXT:         "time_us": 69.25,
// JSON-NEXT:         "has_dynamic": false
// JSON-NEXT:       },
// JSON-NEXT:       "all_reduce": {
// JSON-NEXT:         "count": 1,
// JSON-NEXT:         "async": 0,
// JSON-NEXT:         "bytes_per_rank": 4194304,
// JSON-NEXT:         "time_us": 48.20,
// JSON-NEXT:         "has_dynamic": false
// JSON-NEXT:       },
// JSON:            "reduce_scatter": {
// JSON-NEXT:         "count": 1,
// JSON-NEXT:         "async": 0,
// JSON-NEXT:         "bytes_per_rank": 512,
// JSON-NEXT:         "time_us": 8.40,
// JSON-NEXT:         "has_dynamic": false
// JSON-NEXT:       }
// JSON-NEXT:     },
// JSON-NEXT:     "total": {
// JSON-NEXT:       "count": 6,
// JSON-NEXT:       "async": 0,
// JSON-NEXT:       "bytes_per_rank": 8389760,
// JSON-NEXT:       "time_us": 149.86,
// JSON-NEXT:       "has_dynamic": false
// JSON-NEXT:     }
// JSON-NEXT:   },

// The cpu preset: ring and Simple only, 5 us per launch, 1 us per step,
// 5 GB/s: 5 + 3 + 3/4 * 16777216 B / 5 GB/s = 2524.58 us; the all_reduce
// 5 + 6 + 6/4 * 4194304 B / 5 GB/s = 1269.29 us.
// CPU-LABEL: comm report for @plain (hardware cpu)
// CPU:         all_gather                   1      0      4194304      2524.58{{$}}
// CPU-NEXT:    all_reduce                   1      0      4194304      1269.29{{$}}

func.func @plain(%a: tensor<1024x1024xf32>, %b: tensor<16x8xf32>,
                 %c: tensor<2x16xf32>, %d: tensor<4x16xf32>)
    -> (tensor<4096x1024xf32>, tensor<1024x1024xf32>, tensor<4x8xf32>,
        tensor<8x4xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %ag = dtensor.all_gather %a on @tp axes = [0] gather_dim = 0
      : tensor<1024x1024xf32> -> tensor<4096x1024xf32>
  %ar = dtensor.all_reduce %a on @tp axes = [0] reduce = sum
      : tensor<1024x1024xf32>
  %rs = dtensor.reduce_scatter %b on @tp axes = [0] scatter_dim = 0
      reduce = sum : tensor<16x8xf32> -> tensor<4x8xf32>
  %t = dtensor.all_to_all %c on @tp axes = [0] split_dim = 1 concat_dim = 0
      : tensor<2x16xf32> -> tensor<8x4xf32>
  %p = dtensor.permute %d on @tp axes = [0] perm = [1, 2, 3, 0]
      : tensor<4x16xf32>
  %bc = dtensor.broadcast %d on @tp axes = [0] root = 0 : tensor<4x16xf32>
  return %ag, %ar, %rs, %t, %p, %bc
      : tensor<4096x1024xf32>, tensor<1024x1024xf32>, tensor<4x8xf32>,
        tensor<8x4xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// Coalesced ops count each operand's bytes and are timed as one collective
// over all buffers (all_gather_coalesced: gathered 128 + 128 bytes). Fused
// ops count A (all_gather_matmul) and the 8x32xf32 product
// (matmul_reduce_scatter), timed as their collective part.

// CHECK-LABEL: comm report for @coalesced_fused (hardware h200)
// CHECK-NEXT:    collective               count  async   bytes/rank  modelled us{{$}}
// CHECK-NEXT:    all_gather_coalesced         1      0           64         8.40{{$}}
// CHECK-NEXT:    all_gather_matmul            1      0          128         8.40{{$}}
// CHECK-NEXT:    all_reduce_coalesced         1      0          272        10.20{{$}}
// CHECK-NEXT:    matmul_reduce_scatter        1      0         1024         8.41{{$}}
// CHECK-NEXT:    reduce_scatter_coalesced     1      0           64         8.40{{$}}
// CHECK-NEXT:    total                        5      0         1552        43.81{{$}}
// CHECK-EMPTY:

// JSON:          "name": "coalesced_fused",
// JSON:            "matmul_reduce_scatter": {
// JSON-NEXT:         "count": 1,
// JSON-NEXT:         "async": 0,
// JSON-NEXT:         "bytes_per_rank": 1024,

func.func @coalesced_fused(%x: tensor<4xf32>, %y: tensor<8x8xf32>,
                           %g0: tensor<2x4xf32>, %g1: tensor<4x2xf32>,
                           %s0: tensor<8xf32>, %s1: tensor<4x2xf32>,
                           %a: tensor<2x16xf32>, %b: tensor<16x32xf32>,
                           %c: tensor<8x4xf32>, %d: tensor<4x32xf32>) {
  %r0, %r1 = dtensor.all_reduce_coalesced %x, %y on @tp axes = [0]
      reduce = sum : tensor<4xf32>, tensor<8x8xf32>
  %a0, %a1 = dtensor.all_gather_coalesced %g0, %g1 on @tp axes = [0]
      gather_dims = [0, 1]
      : tensor<2x4xf32>, tensor<4x2xf32> -> tensor<8x4xf32>, tensor<4x8xf32>
  %q0, %q1 = dtensor.reduce_scatter_coalesced %s0, %s1 on @tp axes = [0]
      scatter_dims = [0, 0] reduce = sum
      : tensor<8xf32>, tensor<4x2xf32> -> tensor<2xf32>, tensor<1x2xf32>
  %ag, %mm = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 0
      : tensor<2x16xf32>, tensor<16x32xf32> -> tensor<8x16xf32>, tensor<8x32xf32>
  %rs = dtensor.matmul_reduce_scatter %c, %d on @tp axes = [0] scatter_dim = 0
      reduce = sum : tensor<8x4xf32>, tensor<4x32xf32> -> tensor<2x32xf32>
  return
}

// Groups of 2-D meshes: axes [0] of @m2 is 2 ranks, [1] is 4, [0, 1] is 8;
// [0, 1] of @big is 16 ranks, more than a node. A group of one rank costs
// nothing. Collectives in dtensor.async_start, fused ones included, count
// like synchronous ones and also in the async column.

// CHECK-LABEL: comm report for @async_2d (hardware h200)
// CHECK-NEXT:    collective               count  async   bytes/rank  modelled us{{$}}
// CHECK-NEXT:    all_gather                   1      1         4096        26.03{{$}}
// CHECK-NEXT:    all_gather_matmul            1      1          128         8.40{{$}}
// CHECK-NEXT:    all_reduce                   3      1     12582912       148.25{{$}}
// CHECK-NEXT:    broadcast                    1      0          256         0.00{{$}}
// CHECK-NEXT:    total                        6      3     12587392       182.68{{$}}
// CHECK-EMPTY:

// JSON:          "name": "async_2d",
// JSON-NEXT:     "collectives": {
// JSON-NEXT:       "all_gather": {
// JSON-NEXT:         "count": 1,
// JSON-NEXT:         "async": 1,
// JSON-NEXT:         "bytes_per_rank": 4096,
// JSON-NEXT:         "time_us": 26.03,
// JSON:            "all_reduce": {
// JSON-NEXT:         "count": 3,
// JSON-NEXT:         "async": 1,
// JSON-NEXT:         "bytes_per_rank": 12582912,
// JSON-NEXT:         "time_us": 148.25,

func.func @async_2d(%x: tensor<1024x1024xf32>, %s: tensor<64x16xf32>,
                    %a: tensor<2x16xf32>, %b: tensor<16x32xf32>,
                    %d: tensor<4x16xf32>) {
  %dp = dtensor.all_reduce %x on @m2 axes = [0] reduce = sum
      : tensor<1024x1024xf32>
  %f0 = dtensor.async_start {
    %tp = dtensor.all_reduce %x on @m2 axes = [1] reduce = sum
        : tensor<1024x1024xf32>
    dtensor.yield %tp : tensor<1024x1024xf32>
  } : !dtensor.future<tensor<1024x1024xf32>>
  %all = dtensor.all_reduce %x on @m2 axes = [0, 1] reduce = avg
      : tensor<1024x1024xf32>
  %f1 = dtensor.async_start {
    %g = dtensor.all_gather %s on @big axes = [0, 1] gather_dim = 0
        : tensor<64x16xf32> -> tensor<1024x16xf32>
    dtensor.yield %g : tensor<1024x16xf32>
  } : !dtensor.future<tensor<1024x16xf32>>
  %f2, %f3 = dtensor.async_start {
    %ag, %mm = dtensor.all_gather_matmul %a, %b on @tp axes = [0]
        gather_dim = 0 : tensor<2x16xf32>, tensor<16x32xf32>
        -> tensor<8x16xf32>, tensor<8x32xf32>
    dtensor.yield %ag, %mm : tensor<8x16xf32>, tensor<8x32xf32>
  } : !dtensor.future<tensor<8x16xf32>>, !dtensor.future<tensor<8x32xf32>>
  %bc = dtensor.broadcast %d on @single axes = [0] root = 0 : tensor<4x16xf32>
  %w0 = dtensor.wait %f0 : !dtensor.future<tensor<1024x1024xf32>>
  %w1 = dtensor.wait %f1 : !dtensor.future<tensor<1024x16xf32>>
  %w2 = dtensor.wait %f2 : !dtensor.future<tensor<8x16xf32>>
  %w3 = dtensor.wait %f3 : !dtensor.future<tensor<8x32xf32>>
  return
}

// Dynamic dims are left out of the sizes: 16xf32 of the ?x16xf32 operand,
// 64xf32 of the ?x64xf32 gathered result (8.40136 us); the kind and the
// total are flagged.

// CHECK-LABEL: comm report for @dynamic (hardware h200)
// CHECK-NEXT:    collective               count  async   bytes/rank  modelled us{{$}}
// CHECK-NEXT:    all_gather                   1      0          64*         8.40{{$}}
// CHECK-NEXT:    permute                      1      0          256         7.20{{$}}
// CHECK-NEXT:    total                        2      0          320*       15.60{{$}}
// CHECK-NEXT:    * has dynamic dims: only the static dims are counted
// CHECK-EMPTY:

// JSON:          "name": "dynamic",
// JSON-NEXT:     "collectives": {
// JSON-NEXT:       "all_gather": {
// JSON-NEXT:         "count": 1,
// JSON-NEXT:         "async": 0,
// JSON-NEXT:         "bytes_per_rank": 64,
// JSON-NEXT:         "time_us": 8.40,
// JSON-NEXT:         "has_dynamic": true
// JSON-NEXT:       },
// JSON-NEXT:       "permute": {
// JSON-NEXT:         "count": 1,
// JSON-NEXT:         "async": 0,
// JSON-NEXT:         "bytes_per_rank": 256,
// JSON-NEXT:         "time_us": 7.20,
// JSON-NEXT:         "has_dynamic": false
// JSON-NEXT:       }
// JSON-NEXT:     },
// JSON-NEXT:     "total": {
// JSON-NEXT:       "count": 2,
// JSON-NEXT:       "async": 0,
// JSON-NEXT:       "bytes_per_rank": 320,
// JSON-NEXT:       "time_us": 15.60,
// JSON-NEXT:       "has_dynamic": true
// JSON-NEXT:     }
// JSON-NEXT:   },

func.func @dynamic(%x: tensor<?x16xf32>, %d: tensor<4x16xf32>)
    -> (tensor<?x64xf32>, tensor<4x16xf32>) {
  %g = dtensor.all_gather %x on @tp axes = [0] gather_dim = 1
      : tensor<?x16xf32> -> tensor<?x64xf32>
  %p = dtensor.permute %d on @tp axes = [0] perm = [3, 0, 1, 2]
      : tensor<4x16xf32>
  return %g, %p : tensor<?x64xf32>, tensor<4x16xf32>
}

// all_to_all_v counts its operand only (the split sizes steer it): the
// static 6x16xf32 rows out (384 B) and the 16xf32 of the dynamic rows back
// (64 B), each timed as a point-to-point all_to_all of its static bytes;
// the kind and the total are flagged dynamic.

// CHECK-LABEL: comm report for @dynamic_split (hardware h200)
// CHECK-NEXT:    collective               count  async   bytes/rank  modelled us{{$}}
// CHECK-NEXT:    all_to_all_v                 2      0          448*        16.80{{$}}
// CHECK-NEXT:    total                        2      0          448*        16.80{{$}}
// CHECK-NEXT:    * has dynamic dims: only the static dims are counted

// JSON:          "name": "dynamic_split",
// JSON-NEXT:     "collectives": {
// JSON-NEXT:       "all_to_all_v": {
// JSON-NEXT:         "count": 2,
// JSON-NEXT:         "async": 0,
// JSON-NEXT:         "bytes_per_rank": 448,

func.func @dynamic_split(%x: tensor<6x16xf32>, %s: tensor<4xi64>, %r: tensor<4xi64>) -> tensor<?x16xf32> {
  %v = dtensor.all_to_all_v %x, %s, %r on @tp axes = [0]
      : tensor<6x16xf32>, tensor<4xi64>, tensor<4xi64> -> tensor<?x16xf32>
  %w = dtensor.all_to_all_v %v, %r, %s on @tp axes = [0]
      : tensor<?x16xf32>, tensor<4xi64>, tensor<4xi64> -> tensor<?x16xf32>
  return %w : tensor<?x16xf32>
}

// Groups sit on nodes as the mesh's ranks do (8 to a node): the dp pair of
// @nodes (ranks r and r + 8) crosses the network although it has 2 ranks,
// LL128 at 0.92 * 45 GB/s with both ring steps over the network at the
// tree's 8.5 us (one rank per node): 14 + 2 * 8.5 + 4194304 B / 41.4 GB/s =
// 31 + 101.31 = 132.31 us (Simple: 11 + 8.4 + 2 * 14 + 93.21 = 140.61 us);
// the tp group of 8 stays in a node: 67.06 us (see above).

// CHECK-LABEL: comm report for @across_nodes (hardware h200)
// CHECK-NEXT:    collective               count  async   bytes/rank  modelled us{{$}}
// CHECK-NEXT:    all_reduce                   2      0      8388608       199.37{{$}}

func.func @across_nodes(%x: tensor<1024x1024xf32>) {
  %dp = dtensor.all_reduce %x on @nodes axes = [0] reduce = sum
      : tensor<1024x1024xf32>
  %tp = dtensor.all_reduce %x on @nodes axes = [1] reduce = sum
      : tensor<1024x1024xf32>
  return
}

// A function without collectives has only a zero total; declarations are
// not reported.

// CHECK-LABEL: comm report for @no_comm (hardware h200)
// CHECK-NEXT:    collective               count  async   bytes/rank  modelled us{{$}}
// CHECK-NEXT:    total                        0      0            0         0.00{{$}}
// CHECK-EMPTY:
// CHECK-NOT:   comm report for

// JSON:          "name": "no_comm",
// JSON-NEXT:     "collectives": {},
// JSON-NEXT:     "total": {
// JSON-NEXT:       "count": 0,
// JSON-NEXT:       "async": 0,
// JSON-NEXT:       "bytes_per_rank": 0,
// JSON-NEXT:       "time_us": 0.00,
// JSON-NEXT:       "has_dynamic": false
// JSON-NEXT:     }
// JSON-NEXT:   }
// JSON-NEXT: ]
// JSON-NEXT: }

func.func @no_comm(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

func.func private @declared(tensor<4xf32>) -> tensor<4xf32>

//--- bad-mesh.mlir

dtensor.mesh @tp shape = [4]

func.func @bad(%x: tensor<4xf32>) {
  // expected-error @+1 {{comm report: @nowhere does not name a dtensor.mesh}}
  %a = dtensor.all_reduce %x on @nowhere axes = [0] reduce = sum
      : tensor<4xf32>
  // expected-error @+1 {{comm report: @bad does not name a dtensor.mesh}}
  %b = dtensor.all_gather %x on @bad axes = [0] gather_dim = 0
      : tensor<4xf32> -> tensor<16xf32>
  // expected-error @+1 {{comm report: mesh axis 1 is out of range for mesh @tp}}
  %c = dtensor.permute %x on @tp axes = [1] perm = [1, 2, 3, 0]
      : tensor<4xf32>
  return
}
