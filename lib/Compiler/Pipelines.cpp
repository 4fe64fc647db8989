//===- Pipelines.cpp - the compiler's pass pipeline -----------------------===//

#include "dtensor/Compiler/Pipelines.h"

#include "dtensor/Frontend/Passes.h"
#include "dtensor/Overlap/Passes.h"
#include "dtensor/Partitioning/Passes.h"
#include "dtensor/Target/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::dtensor;

static constexpr llvm::StringLiteral kStageNames[] = {
    "global", "propagated", "planned", "per-rank", "scheduled", "llvm"};

std::optional<Stage> mlir::dtensor::parseStage(llvm::StringRef name) {
  for (auto [index, stageName] : llvm::enumerate(kStageNames))
    if (stageName == name)
      return static_cast<Stage>(index);
  return std::nullopt;
}

llvm::StringRef mlir::dtensor::getStageName(Stage stage) {
  return kStageNames[static_cast<unsigned>(stage)];
}

/// Whether the range (from, to] includes the step into `stage`.
static bool reaches(Stage from, Stage to, Stage stage) {
  return from < stage && stage <= to;
}

LogicalResult mlir::dtensor::buildPipeline(OpPassManager &pm, Stage from,
                                           Stage to,
                                           const PipelineOptions &options,
                                           std::string *error) {
  auto fail = [&](const Twine &message) {
    if (error)
      *error = message.str();
    return failure();
  };
  if (to < from)
    return fail("cannot compile from stage '" + getStageName(from) +
                "' back to '" + getStageName(to) + "'");
  if (options.splitAllReduce == 1 || options.splitAllReduce < 0)
    return fail("split-all-reduce must be 0 (no split) or at least 2, got " +
                Twine(options.splitAllReduce));

  // Resource limits before any work proportional to the sizes (the input
  // was verified when it was parsed; include/dtensor/Frontend/Screen.h).
  pm.addPass(createScreenInputPass({/*verify=*/false}));
  if (!options.target.empty() || !options.hardwareFile.empty() ||
      !options.costTable.empty())
    pm.addPass(createSetTargetPass(
        {options.target, options.hardwareFile, options.costTable}));
  addPartitioningStagePasses(pm, {reaches(from, to, Stage::Propagated),
                                  reaches(from, to, Stage::Planned),
                                  reaches(from, to, Stage::PerRank)});
  if (reaches(from, to, Stage::Scheduled) &&
      failed(addOverlapStagePasses(pm, options.fuse, options.splitAllReduce,
                                   options.overlap, error)))
    return failure();
  if (reaches(from, to, Stage::LLVM))
    pm.addPass(createLowerToTargetPass());
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

namespace {
/// The textual options of the registered pipelines, declared once. Options
/// of stages outside a pipeline's range have no effect.
template <typename Derived>
struct CommonCLOptions : public PassPipelineOptions<Derived> {
  using Base = PassPipelineOptions<Derived>;
  typename Base::template Option<std::string> target{
      *this, "target",
      llvm::cl::desc("<backend>[:<hardware>] set on the module first, e.g. "
                     "cuda:h200 (default: the module's dtensor.target)"),
      llvm::cl::init("")};
  typename Base::template Option<std::string> hardwareFile{
      *this, "hardware-file",
      llvm::cl::desc("JSON hardware description set on the module's target"),
      llvm::cl::init("")};
  typename Base::template Option<std::string> costTable{
      *this, "cost-table",
      llvm::cl::desc("JSON per-op cost table (op name -> microseconds) set "
                     "on the module's target"),
      llvm::cl::init("")};
  typename Base::template Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("fuse all_gather + matmul and matmul + reduce_scatter "
                     "where the cost model says it pays"),
      llvm::cl::init(false)};
  typename Base::template Option<bool> fuseForce{
      *this, "fuse-force",
      llvm::cl::desc("with fuse: fuse every legal candidate"),
      llvm::cl::init(false)};
  typename Base::template Option<int64_t> splitAllReduce{
      *this, "split-all-reduce",
      llvm::cl::desc("split every matmul + all_reduce into this many row "
                     "chunks (0: only where the scheduling passes decide)"),
      llvm::cl::init(0)};
  typename Base::template ListOption<std::string> passes{
      *this, "passes",
      llvm::cl::desc("scheduling passes in order: split-matmul-all-reduce, "
                     "async-collectives, bucket-collectives, "
                     "reorder-compute-for-overlap, sink-waits, raise-comms, "
                     "default (default: default = split-matmul-all-reduce, "
                     "async-collectives, reorder-compute-for-overlap, "
                     "sink-waits, raise-comms)")};
  typename Base::template Option<double> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("allowed growth of the peak live memory over the "
                     "unscheduled program (0.2: 20%; negative: no limit)"),
      llvm::cl::init(0.2)};
  typename Base::template Option<bool> reportMemory{
      *this, "report-memory",
      llvm::cl::desc("emit a remark per function and pass with the peak "
                     "live memory before and after"),
      llvm::cl::init(false)};
  typename Base::template Option<int64_t> bucketCapBytes{
      *this, "bucket-cap-bytes",
      llvm::cl::desc("largest bucket of bucket-collectives, in bytes"),
      llvm::cl::init(25 * 1024 * 1024)};

  PipelineOptions toPipelineOptions() const {
    PipelineOptions options;
    options.target = target;
    options.hardwareFile = hardwareFile;
    options.costTable = costTable;
    options.fuse.enabled = fuse;
    options.fuse.force = fuseForce;
    options.splitAllReduce = splitAllReduce;
    if (passes.hasValue())
      options.overlap.passes.assign(passes.begin(), passes.end());
    options.overlap.memoryBudget = memoryBudget;
    options.overlap.reportMemory = reportMemory;
    options.overlap.bucketCapBytes = bucketCapBytes;
    return options;
  }
};

struct RangeCLOptions : public CommonCLOptions<RangeCLOptions> {
  Option<std::string> from{*this, "from",
                           llvm::cl::desc("stage of the input: global, "
                                          "propagated, planned, per-rank, "
                                          "scheduled"),
                           llvm::cl::init("global")};
  Option<std::string> to{*this, "to",
                         llvm::cl::desc("stage to stop at: propagated, "
                                        "planned, per-rank, scheduled, llvm"),
                         llvm::cl::init("llvm")};
};
struct FixedCLOptions : public CommonCLOptions<FixedCLOptions> {};

/// Registers pipeline `name` over the stages [from, to] (the range options
/// when not given).
template <typename CLOptions>
void registerRange(llvm::StringRef name, llvm::StringRef description,
                   std::optional<Stage> fixedFrom,
                   std::optional<Stage> fixedTo) {
  registerPassPipeline(
      name, description,
      [=](OpPassManager &pm, StringRef text,
          function_ref<LogicalResult(const Twine &)> errorHandler) {
        CLOptions cl;
        if (failed(cl.parseFromString(text)))
          return failure();
        Stage from = fixedFrom.value_or(Stage::Global);
        Stage to = fixedTo.value_or(Stage::LLVM);
        if constexpr (std::is_same_v<CLOptions, RangeCLOptions>) {
          std::optional<Stage> parsedFrom = parseStage(cl.from);
          std::optional<Stage> parsedTo = parseStage(cl.to);
          if (!parsedFrom || !parsedTo)
            return errorHandler("unknown stage '" +
                                (parsedFrom ? cl.to : cl.from) +
                                "' (expected global, propagated, planned, "
                                "per-rank, scheduled or llvm)");
          from = *parsedFrom;
          to = *parsedTo;
        }
        std::string error;
        if (failed(buildPipeline(pm, from, to, cl.toPipelineOptions(), &error)))
          return errorHandler(error);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(CLOptions());
      });
}
} // namespace

void mlir::dtensor::registerPipelines() {
  registerRange<RangeCLOptions>(
      "dtensor-pipeline",
      "the compiler's pipeline over a range of stages (from, to), from the "
      "global view to the target's LLVM dialect",
      std::nullopt, std::nullopt);
  registerRange<FixedCLOptions>(
      "dtensor-spmd",
      "global view with placement requests -> per-rank program "
      "(propagate, plan, partition, canonicalize, cse)",
      Stage::Global, Stage::PerRank);
  registerRange<FixedCLOptions>(
      "dtensor-overlap",
      "per-rank program -> fused and scheduled for communication/compute "
      "overlap (the passes named by `passes`, in order, under one memory "
      "budget)",
      Stage::PerRank, Stage::Scheduled);
}
