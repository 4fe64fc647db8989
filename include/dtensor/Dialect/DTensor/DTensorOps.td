//===- DTensorOps.td - dtensor operations ------------------*- tablegen -*-===//

#ifndef DTENSOR_OPS_TD
#define DTENSOR_OPS_TD

include "dtensor/Dialect/DTensor/DTensorBase.td"
include "dtensor/Dialect/DTensor/DTensorAttrs.td"
include "dtensor/Dialect/DTensor/DTensorTypes.td"
include "dtensor/Dialect/DTensor/DTensorInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

class DTensor_Op<string mnemonic, list<Trait> traits = []>
    : Op<DTensor_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Mesh
//===----------------------------------------------------------------------===//

def DTensor_MeshOp : DTensor_Op<"mesh", [Symbol]> {
  let summary = "declares a device mesh";
  let description = [{
    Declares an n-D mesh of processes:

    ```mlir
    dtensor.mesh @tp shape = [4]
    dtensor.mesh @mesh2d shape = [2, 4] names = ["dp", "tp"]
    dtensor.mesh @pair shape = [2] devices = [3, 1]
    ```

    Without `devices`, the process with linear rank `r` sits at the row-major
    coordinate `r` of the mesh. With `devices`, the entry at row-major
    position `i` is the rank placed at coordinate `i`.

    Constraints:
    1. `MESH1`: the shape has at least one dimension, every size is
       positive, and the mesh has at most 2^20 processes (a resource limit,
       `include/dtensor/Support/SafeMath.h`).
    2. `MESH2`: `names`, if given, has one unique, non-empty name per mesh
       dimension.
    3. `MESH3`: `devices`, if given, lists one unique non-negative rank per
       mesh position (the product of the sizes).
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, DenseI64ArrayAttr:$shape,
                       OptionalAttr<StrArrayAttr>:$names,
                       OptionalAttr<DenseI64ArrayAttr>:$devices);
  let assemblyFormat = [{
    $sym_name `shape` `=` $shape (`names` `=` $names^)?
    (`devices` `=` $devices^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getRank() { return getShape().size(); }
    /// Number of processes in the mesh.
    int64_t getNumProcesses();
    /// Product of the sizes of the given mesh axes.
    int64_t getGroupSize(::llvm::ArrayRef<int64_t> axes);
  }];
}

def DTensor_CoordOp : DTensor_Op<"coord",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "index of the current process in a group of the mesh";
  let description = [{
    Returns the row-major index of the calling process among the processes
    that share its coordinates on every mesh axis except `axes`. With a single
    axis this is the process's coordinate on that mesh axis; with all axes it
    is the process's position in the mesh.

    ```mlir
    %c = dtensor.coord @mesh2d axes = [1] : index
    ```

    Constraints:
    1. `COLL1`: `@mesh` names a `dtensor.mesh` op.
    2. `COLL2`: `axes` is non-empty, strictly increasing and within the mesh
       rank.
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, DenseI64ArrayAttr:$axes);
  let results = (outs Index:$result);
  let assemblyFormat = "$mesh `axes` `=` $axes attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Global-view layout ops
//===----------------------------------------------------------------------===//

class DTensor_LayoutOp<string mnemonic, list<Trait> traits = []>
    : DTensor_Op<mnemonic, traits # [
        DeclareOpInterfaceMethods<SymbolUserOpInterface>]>;

def DTensor_AnnotateOp : DTensor_LayoutOp<"annotate", [Pure]> {
  let summary = "requests a layout for a global-view value";
  let description = [{
    The user's placement request: the result is the operand, laid out as
    `layout`. Propagation treats the request as fixed and inserts
    redistributions around it where producers or consumers want another
    layout.

    ```mlir
    %y = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x16xf32>
    ```

    Constraints:
    1. `ANN1`: the result type equals the operand type.
    2. `LAYOUT1`-`LAYOUT3`, `LAYOUT5` and `LAYOUT6` hold for `layout` on the operand type.
  }];
  let arguments = (ins AnyRankedTensor:$input, DTensor_LayoutAttr:$layout);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `layout` $layout attr-dict `:` type($input)
    `` custom<OptionalResultType>(type($result), ref(type($input)))
  }];
  let hasVerifier = 1;
}

def DTensor_RedistributeOp : DTensor_LayoutOp<"redistribute", [Pure]> {
  let summary = "changes the layout of a global-view value";
  let description = [{
    The result holds the same global value as the operand, laid out as `to`.
    `from`, when present, is the operand's layout; propagation fills it in.
    The redistribution planner lowers the op to collectives.

    ```mlir
    %y = dtensor.redistribute %x from <@tp, [P(sum)]> to <@tp, [S(0)]>
        : tensor<8x16xf32>
    ```

    Constraints:
    1. `RD1`: the result type equals the operand type.
    2. `RD2`: `from` and `to` use the same mesh.
    3. `RD3`: no mesh dimension goes from `S(d)` to `P(op)` (a shard cannot
       become a pending reduction).
    4. `RD4`: no mesh dimension goes from `R` to `P(product)` (a replicated
       value has no exact product decomposition).
    5. `RD5`: no mesh dimension goes from `P(a)` to `P(b)` with `a != b`,
       except `P(sum)` to `P(avg)` (each process multiplies its part by the
       group size) and, on floating-point tensors, `P(avg)` to `P(sum)`
       (each divides it).
    6. `LAYOUT1`-`LAYOUT3`, `LAYOUT5` and `LAYOUT6` hold for both layouts on the operand type.
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       OptionalAttr<DTensor_LayoutAttr>:$from,
                       DTensor_LayoutAttr:$to);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input (`from` $from^)? `to` $to attr-dict `:` type($input)
    `` custom<OptionalResultType>(type($result), ref(type($input)))
  }];
  let hasVerifier = 1;
}

def DTensor_FromLocalOp : DTensor_LayoutOp<"from_local", [Pure]> {
  let summary = "views per-rank local tensors as one global-view tensor";
  let description = [{
    Each process contributes its local tensor; together they form the global
    tensor of the result type laid out as `layout`. The result type is the
    global shape; this makes the global shape explicit also where shards are
    uneven.

    A local dimension must be static and equal to the chunk size if every
    process holds the same number of elements along it; where shards are
    uneven (torch.chunk leaves trailing ranks smaller), it must be dynamic.

    ```mlir
    %g = dtensor.from_local %l layout <@tp, [S(0)]>
        : tensor<2x16xf32> -> tensor<8x16xf32>
    %u = dtensor.from_local %k layout <@tp, [S(0)]>
        : tensor<?x16xf32> -> tensor<6x16xf32>
    ```

    Constraints:
    1. `LOCAL1`: the local and global types have the same element type and
       rank, and the global type is static.
    2. `LOCAL2`: each local dimension is dynamic or equals the size every
       process holds; it is dynamic where shards are uneven.
    3. `LAYOUT1`-`LAYOUT3`, `LAYOUT5` and `LAYOUT6` hold for `layout` on the global type.
  }];
  let arguments = (ins AnyRankedTensor:$input, DTensor_LayoutAttr:$layout);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `layout` $layout attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def DTensor_ToLocalOp : DTensor_LayoutOp<"to_local", [Pure]> {
  let summary = "the calling process's local part of a global-view tensor";
  let description = [{
    The inverse of `dtensor.from_local`.

    ```mlir
    %l = dtensor.to_local %g layout <@tp, [S(0)]>
        : tensor<8x16xf32> -> tensor<2x16xf32>
    ```

    Constraints:
    1. `LOCAL1`: the local and global types have the same element type and
       rank, and the global type is static.
    2. `LOCAL2`: each local dimension is dynamic or equals the size every
       process holds; it is dynamic where shards are uneven.
    3. `LAYOUT1`-`LAYOUT3`, `LAYOUT5` and `LAYOUT6` hold for `layout` on the global type.
  }];
  let arguments = (ins AnyRankedTensor:$input, DTensor_LayoutAttr:$layout);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `layout` $layout attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Global-view compute
//===----------------------------------------------------------------------===//

def DTensor_RoutedMatmulOp : DTensor_Op<"routed_matmul", [Pure]> {
  let summary = "multiplies each token by the expert matrix its router chose";
  let description = [{
    The expert layer of a mixture of experts (top-k routing), on the global
    view or on one rank's local tensors:

    ```
    y[t, k, f] = sum_h x[t, h] * w[ids[t, k] mod E, h, f]
    ```

    for tokens `x: T x H`, expert ids `ids: T x K` (the k-th expert chosen
    for token t; `mod` is the floor modulo, so every integer names one of
    the `E` experts), expert weights `w: E x H x F`. The result holds one
    row per (token, choice); the gating (weighting and summing over `k`) is
    ordinary elementwise code after it.

    ```mlir
    %y = dtensor.routed_matmul %x, %ids, %w
        : tensor<16x8xf32>, tensor<16x2xi64>, tensor<4x8x8xf32> -> tensor<16x2x8xf32>
    ```

    Placements (docs/design.md, "Routed matmul"): tokens and ids sharded by
    tokens (`S(0)`) with `w` replicated compute locally; with `w` sharded by
    experts (`S(0)`, expert parallelism) too, the partitioner sends each
    token to the rank that holds its expert and the results back
    (`dtensor.all_to_all_v` with split sizes computed at run time);
    everything replicated computes everywhere.

    Constraints:
    1. `RM1`: `x` has rank 2, `ids` rank 2 with a signless integer element
       type, `w` rank 3 and the result rank 3.
    2. `RM2`: `x`, `w` and the result have the same element type.
    3. `RM3`: the sizes agree: `T` (dim 0 of `x`, `ids` and the result),
       `H` (dim 1 of `x`, dim 1 of `w`), `K` (dim 1 of `ids` and the
       result) and `F` (dim 2 of `w` and the result).
    4. `RM4`: the number of experts `E` (dim 0 of `w`) is static and
       positive.
  }];
  let arguments = (ins AnyRankedTensor:$x, AnyRankedTensor:$ids,
                       AnyRankedTensor:$w);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $x `,` $ids `,` $w attr-dict `:` type($x) `,` type($ids) `,` type($w)
    `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The expert an id names, `id mod numExperts` (floor modulo), as an
    /// i64 in [0, numExperts): the one definition the lowering and the
    /// partitioner share.
    static ::mlir::Value buildExpertIndex(::mlir::OpBuilder &b,
                                          ::mlir::Location loc,
                                          ::mlir::Value id,
                                          int64_t numExperts);
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Per-rank collectives
//===----------------------------------------------------------------------===//

class DTensor_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : DTensor_Op<mnemonic, traits # [
        DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        DeclareOpInterfaceMethods<DTensor_CollectiveOpInterface>]> {
  code commonConstraints = [{
    1. `COLL1`: `@mesh` names a `dtensor.mesh` op.
    2. `COLL2`: `axes` is non-empty, strictly increasing and within the mesh
       rank.
  }];
  // Collectives have memory effects on the communicator: they must not be
  // reordered with each other, duplicated or dropped.
}

def DTensor_AllReduceOp : DTensor_CollectiveOp<"all_reduce"> {
  let summary = "reduces a tensor over a group; every rank gets the result";
  let description = [{
    ```mlir
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum
        : tensor<4x16xf32>
    ```

    Constraints:
  }] # commonConstraints # [{
    3. `AR1`: the result type equals the operand type.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$mesh_axes,
                       DTensor_ReduceKindAttr:$reduce);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $mesh_axes `reduce` `=` `` $reduce attr-dict
    `:` type($input) `` custom<OptionalResultType>(type($result), ref(type($input)))
  }];
}

def DTensor_AllGatherOp : DTensor_CollectiveOp<"all_gather"> {
  let summary = "concatenates the group's tensors along a dimension";
  let description = [{
    The result is the concatenation, in group order, of every rank's operand
    along `gather_dim`. Uneven shards are padded to equal size before and
    trimmed after (the partitioner emits those steps).

    ```mlir
    %g = dtensor.all_gather %x on @tp axes = [0] gather_dim = 1
        : tensor<4x4xf32> -> tensor<4x16xf32>
    ```

    Constraints:
  }] # commonConstraints # [{
    3. `AG1`: `gather_dim` is within the operand rank.
    4. `AG2`: operand and result have the same element type and rank, and
       equal sizes outside `gather_dim`.
    5. `AG3`: the result size along `gather_dim` is the group size times the
       operand size.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$mesh_axes, I64Attr:$gather_dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $mesh_axes `gather_dim` `=` $gather_dim
    attr-dict `:` type($input) `->` type($result)
  }];
}

def DTensor_ReduceScatterOp : DTensor_CollectiveOp<"reduce_scatter"> {
  let summary = "reduces over a group and scatters chunks of the result";
  let description = [{
    Reduces the group's operands with `reduce`, splits the result into
    group-size equal chunks along `scatter_dim`, and gives chunk `i` to the
    rank with group index `i`.

    ```mlir
    %s = dtensor.reduce_scatter %x on @tp axes = [0] scatter_dim = 0
        reduce = sum : tensor<16x8xf32> -> tensor<4x8xf32>
    ```

    Constraints:
  }] # commonConstraints # [{
    3. `RS1`: `scatter_dim` is within the operand rank.
    4. `RS2`: operand and result have the same element type and rank, and
       equal sizes outside `scatter_dim`.
    5. `RS3`: the operand size along `scatter_dim` is the group size times
       the result size.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$mesh_axes, I64Attr:$scatter_dim,
                       DTensor_ReduceKindAttr:$reduce);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $mesh_axes `scatter_dim` `=` $scatter_dim
    `reduce` `=` `` $reduce attr-dict `:` type($input) `->` type($result)
  }];
}

def DTensor_AllToAllOp : DTensor_CollectiveOp<"all_to_all"> {
  let summary = "splits along one dimension, exchanges, concatenates along another";
  let description = [{
    Each rank splits its operand into group-size chunks along `split_dim`,
    sends chunk `j` to the rank with group index `j`, and concatenates what it
    receives, in group order, along `concat_dim`. This is `Shard(concat_dim)`
    to `Shard(split_dim)`.

    ```mlir
    %t = dtensor.all_to_all %x on @tp axes = [0] split_dim = 1 concat_dim = 0
        : tensor<2x16xf32> -> tensor<8x4xf32>
    ```

    Constraints:
  }] # commonConstraints # [{
    3. `A2A1`: `split_dim` and `concat_dim` are within the operand rank.
    4. `A2A2`: operand and result have the same element type and rank, and
       equal sizes outside `split_dim` and `concat_dim`.
    5. `A2A3`: the result size along `split_dim` is the operand size divided
       by the group size, along `concat_dim` the operand size times the group
       size (both unchanged when the two dims are the same).
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$mesh_axes, I64Attr:$split_dim,
                       I64Attr:$concat_dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $mesh_axes `split_dim` `=` $split_dim
    `concat_dim` `=` $concat_dim attr-dict `:` type($input) `->` type($result)
  }];
}

def DTensor_AllToAllVOp : DTensor_CollectiveOp<"all_to_all_v"> {
  let summary = "all_to_all along dimension 0 with split sizes known at run time";
  let description = [{
    PyTorch's `all_to_all_single` with input and output split sizes. Each
    rank cuts its operand along dimension 0 into consecutive blocks of
    `send_sizes[0], send_sizes[1], ...` slices, sends block `j` to the rank
    with group index `j`, and concatenates the blocks it receives, in group
    order, along dimension 0; block `j` has `recv_sizes[j]` slices. The split
    sizes are tensors, values computed by the program (the token counts of
    a mixture-of-experts dispatch), so the result's size along dimension 0
    is dynamic: the sum of `recv_sizes`.

    ```mlir
    %r = dtensor.all_to_all_v %x, %send, %recv on @ep axes = [0]
        : tensor<?x8xf32>, tensor<4xi64>, tensor<4xi64> -> tensor<?x8xf32>
    ```

    Constraints:
  }] # commonConstraints # [{
    3. `A2AV1`: the operand has rank 1 or more; operand and result have the
       same element type and rank, and equal sizes outside dimension 0.
    4. `A2AV2`: the result's size along dimension 0 is dynamic.
    5. `A2AV3`: `send_sizes` and `recv_sizes` are `tensor<N x i64>` with `N`
       the group size.

    Run-time contract (checked by the runtime, which aborts the job with a
    message otherwise): the sizes are non-negative, `send_sizes` sums to the
    operand's size along dimension 0, and `recv_sizes[j]` is what group
    index `j` sends to this rank (its `send_sizes[i]` for this rank's index
    `i`).
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$send_sizes,
                       AnyRankedTensor:$recv_sizes, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$mesh_axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $send_sizes `,` $recv_sizes `on` $mesh `axes` `=` $mesh_axes
    attr-dict `:` type($input) `,` type($send_sizes) `,` type($recv_sizes)
    `->` type($result)
  }];
}

def DTensor_PermuteOp : DTensor_CollectiveOp<"permute"> {
  let summary = "point-to-point exchange along a permutation of the group";
  let description = [{
    The rank with group index `i` sends its operand to group index
    `perm[i]` and receives from the index `j` with `perm[j] = i`. A ring shift
    by `k` is `perm[i] = (i + k) mod n`.

    ```mlir
    %p = dtensor.permute %x on @tp axes = [0] perm = [1, 2, 3, 0]
        : tensor<4x16xf32>
    ```

    Constraints:
  }] # commonConstraints # [{
    3. `PERM1`: the result type equals the operand type.
    4. `PERM2`: `perm` is a permutation of `0 .. group size - 1`.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$mesh_axes, DenseI64ArrayAttr:$perm);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $mesh_axes `perm` `=` $perm attr-dict
    `:` type($input) `` custom<OptionalResultType>(type($result), ref(type($input)))
  }];
}

def DTensor_BroadcastOp : DTensor_CollectiveOp<"broadcast"> {
  let summary = "every rank of the group gets the root's tensor";
  let description = [{
    ```mlir
    %b = dtensor.broadcast %x on @tp axes = [0] root = 0 : tensor<4x16xf32>
    ```

    Constraints:
  }] # commonConstraints # [{
    3. `BC1`: the result type equals the operand type.
    4. `BC2`: `root` is a group index, in `0 .. group size - 1`.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$mesh_axes, I64Attr:$root);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $mesh_axes `root` `=` $root attr-dict
    `:` type($input) `` custom<OptionalResultType>(type($result), ref(type($input)))
  }];
}

def DTensor_AllReduceCoalescedOp
    : DTensor_CollectiveOp<"all_reduce_coalesced"> {
  let summary = "one all_reduce over several tensors";
  let description = [{
    Semantically one `dtensor.all_reduce` per operand, issued as a single
    communication.

    ```mlir
    %a, %b = dtensor.all_reduce_coalesced %x, %y on @tp axes = [0]
        reduce = sum : tensor<4xf32>, tensor<8x8xf32>
    ```

    Constraints:
  }] # commonConstraints # [{
    3. `COAL1`: there is at least one operand, and one result per operand.
    4. `AR1`: each result type equals its operand type.
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                       FlatSymbolRefAttr:$mesh, DenseI64ArrayAttr:$mesh_axes,
                       DTensor_ReduceKindAttr:$reduce);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $inputs `on` $mesh `axes` `=` $mesh_axes `reduce` `=` `` $reduce attr-dict
    `:` type($inputs) `` custom<OptionalResultTypes>(type($results), ref(type($inputs)))
  }];
}

def DTensor_AllGatherCoalescedOp
    : DTensor_CollectiveOp<"all_gather_coalesced"> {
  let summary = "one all_gather over several tensors";
  let description = [{
    Semantically one `dtensor.all_gather` per operand, operand `i` along
    `gather_dims[i]`, issued as a single communication.

    ```mlir
    %a, %b = dtensor.all_gather_coalesced %x, %y on @tp axes = [0]
        gather_dims = [0, 1]
        : tensor<2x4xf32>, tensor<4x2xf32> -> tensor<8x4xf32>, tensor<4x8xf32>
    ```

    Constraints:
  }] # commonConstraints # [{
    3. `COAL1`: there is at least one operand, one result and one
       `gather_dims` entry per operand.
    4. `AG1`-`AG3` hold for each operand, result and gather dim.
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                       FlatSymbolRefAttr:$mesh, DenseI64ArrayAttr:$mesh_axes,
                       DenseI64ArrayAttr:$gather_dims);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $inputs `on` $mesh `axes` `=` $mesh_axes `gather_dims` `=` $gather_dims
    attr-dict `:` type($inputs) `->` type($results)
  }];
}

def DTensor_ReduceScatterCoalescedOp
    : DTensor_CollectiveOp<"reduce_scatter_coalesced"> {
  let summary = "one reduce_scatter over several tensors";
  let description = [{
    Semantically one `dtensor.reduce_scatter` per operand, operand `i` along
    `scatter_dims[i]`, issued as a single communication.

    ```mlir
    %a, %b = dtensor.reduce_scatter_coalesced %x, %y on @tp axes = [0]
        scatter_dims = [0, 0] reduce = sum
        : tensor<8xf32>, tensor<4x2xf32> -> tensor<2xf32>, tensor<1x2xf32>
    ```

    Constraints:
  }] # commonConstraints # [{
    3. `COAL1`: there is at least one operand, one result and one
       `scatter_dims` entry per operand.
    4. `RS1`-`RS3` hold for each operand, result and scatter dim.
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                       FlatSymbolRefAttr:$mesh, DenseI64ArrayAttr:$mesh_axes,
                       DenseI64ArrayAttr:$scatter_dims,
                       DTensor_ReduceKindAttr:$reduce);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $inputs `on` $mesh `axes` `=` $mesh_axes `scatter_dims` `=` $scatter_dims
    `reduce` `=` `` $reduce attr-dict `:` type($inputs) `->` type($results)
  }];
}

//===----------------------------------------------------------------------===//
// Fused communication + compute
//===----------------------------------------------------------------------===//

def DTensor_AllGatherMatmulOp : DTensor_CollectiveOp<"all_gather_matmul"> {
  let summary = "all_gather of A fused with matmuls A @ B_i";
  let description = [{
    Semantically `%ag = all_gather(A, gather_dim)` followed by
    `%c_i = %ag @ B_i` for each `B_i` (a matmul contracting A's last dim with
    B's first dim; a rank-3 A is a batch of rows). The fusion pass produces
    it where the cost model says overlapping the gather with the matmuls
    pays; its lowering pipelines chunk transfers with chunk matmuls. The
    gathered A is returned too (it may be unused).

    ```mlir
    %ag, %c = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 0
        : tensor<2x16xf32>, tensor<16x32xf32> -> tensor<8x16xf32>, tensor<8x32xf32>
    ```

    Constraints:
  }] # commonConstraints # [{
    3. `AGMM1`: A has rank 2 or 3; there is at least one B, each of rank 2
       whose first size equals A's last size; element types all match.
    4. `AGMM2`: `gather_dim` is a dimension of A other than the last
       (contracted) one.
    5. `AGMM3`: the gathered result is A with `gather_dim` multiplied by the
       group size.
    6. `AGMM4`: there is one matmul result per B, shaped like the gathered
       A with the last size replaced by B's last size.
  }];
  let arguments = (ins AnyRankedTensor:$a, Variadic<AnyRankedTensor>:$bs,
                       FlatSymbolRefAttr:$mesh, DenseI64ArrayAttr:$mesh_axes,
                       I64Attr:$gather_dim);
  let results = (outs AnyRankedTensor:$gathered,
                      Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $a `,` $bs `on` $mesh `axes` `=` $mesh_axes `gather_dim` `=` $gather_dim
    attr-dict `:` type($a) `,` type($bs) `->` type($gathered) `,` type($results)
  }];
}

def DTensor_MatmulReduceScatterOp
    : DTensor_CollectiveOp<"matmul_reduce_scatter"> {
  let summary = "matmul A @ B fused with a reduce_scatter of the product";
  let description = [{
    Semantically `reduce_scatter(A @ B, scatter_dim, reduce)`, with the
    matmul contracting A's last dim with B's first dim. The lowering computes
    and reduces the product chunk by chunk so transfers overlap matmuls.

    ```mlir
    %c = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = 0
        reduce = sum : tensor<8x4xf32>, tensor<4x32xf32> -> tensor<2x32xf32>
    ```

    Constraints:
  }] # commonConstraints # [{
    3. `MMRS1`: A has rank 2 or 3, B has rank 2 and B's first size equals
       A's last size; element types all match.
    4. `MMRS2`: `scatter_dim` is within the rank of the product.
    5. `MMRS3`: the result is the product's shape with `scatter_dim` divided
       by the group size.
    6. `MMRS4`: `reduce` is `sum` or `avg`.
  }];
  let arguments = (ins AnyRankedTensor:$a, AnyRankedTensor:$b,
                       FlatSymbolRefAttr:$mesh, DenseI64ArrayAttr:$mesh_axes,
                       I64Attr:$scatter_dim, DTensor_ReduceKindAttr:$reduce);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $a `,` $b `on` $mesh `axes` `=` $mesh_axes `scatter_dim` `=` $scatter_dim
    `reduce` `=` `` $reduce attr-dict `:` type($a) `,` type($b) `->`
    type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Asynchronous collectives
//===----------------------------------------------------------------------===//

def DTensor_AsyncStartOp : DTensor_Op<"async_start", [SingleBlock]> {
  let summary = "starts a collective without waiting for it";
  let description = [{
    The body holds exactly one collective (any op of the collective
    interface, fused ones included) and a `dtensor.yield` of its results.
    The collective is started here; each result is a future that exactly one
    `dtensor.wait` turns into the collective's result. The scheduling passes
    move `async_start` early and `wait` late to overlap communication with
    compute.

    ```mlir
    %f = dtensor.async_start {
      %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
      dtensor.yield %r : tensor<4xf32>
    } : !dtensor.future<tensor<4xf32>>
    ...
    %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
    ```

    Constraints:
    1. `ASYNC1`: the body holds exactly one collective op followed by a
       `dtensor.yield`.
    2. `ASYNC2`: the yield returns exactly the collective's results, in
       order.
    3. `ASYNC3`: there is one result per yielded value, a future of its type.
    4. `ASYNC4`: every future is waited exactly once on every path. A
       future is used exactly once, in its own block, by a `dtensor.wait`
       or by structured control flow that hands it on: an `scf.for` or
       `scf.while` init operand, an `scf.yield` of a loop body or of an
       `scf.if` branch, an `scf.condition`. Every value it is handed on to
       (loop region arguments, loop and `scf.if` results) obeys the same
       rule. So a collective started in iteration i can be waited in
       iteration i + 1 (a loop-carried future, as FSDP prefetches the next
       layer's weights):

       ```mlir
       %f0 = dtensor.async_start { ... } : !dtensor.future<tensor<8x8xf32>>
       %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %x0, %f = %f0)
           -> (tensor<4x8xf32>, !dtensor.future<tensor<8x8xf32>>) {
         %w = dtensor.wait %f : !dtensor.future<tensor<8x8xf32>>
         %g = dtensor.async_start { ... } : !dtensor.future<tensor<8x8xf32>>
         ...
         scf.yield %y, %g : tensor<4x8xf32>, !dtensor.future<tensor<8x8xf32>>
       }
       %last = dtensor.wait %r#1 : !dtensor.future<tensor<8x8xf32>>
       ```
  }];
  let results = (outs Variadic<DTensor_FutureType>:$futures);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$body attr-dict `:` type($futures)";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The collective in the body, or null if the body is malformed.
    ::mlir::Operation *getCollective();
  }];
}

def DTensor_YieldOp : DTensor_Op<"yield", [
    Pure, Terminator, ReturnLike, HasParent<"AsyncStartOp">]> {
  let summary = "returns the collective's results from an async_start body";
  let description = [{
    Terminates the body of `dtensor.async_start`; see there.
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

def DTensor_WaitOp : DTensor_Op<"wait"> {
  let summary = "waits for an asynchronous collective and yields its result";
  let description = [{
    Blocks until the collective that produced `future` has completed on this
    rank, then returns its result.

    Constraints:
    1. `WAIT1`: the future is a result of a `dtensor.async_start`, directly
       or handed on through `scf.for`, `scf.while` or `scf.if` (every value
       that can reach it is one).
    2. `WAIT2`: the result type is the future's value type.
  }];
  let arguments = (ins DTensor_FutureType:$future);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $future attr-dict `:` custom<FutureValueType>(type($future), type($result))
  }];
  let hasVerifier = 1;
}

#endif // DTENSOR_OPS_TD
