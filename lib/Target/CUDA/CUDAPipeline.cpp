//===- CUDAPipeline.cpp - the CUDA target's lowering pipeline -------------===//
//
// Stage by stage (docs/cuda-target.md has the reasons):
//   1. collectives -> runtime calls (shared with the CPU target)
//   2. residual adds into matmul epilogues, elementwise fusion on tensors,
//      transposes folded into matmuls, column reductions split
//   3. One-Shot Bufferize
//   4. matmuls -> dtensor_rt_matmul_<T> (cuBLASLt)
//   5. buffers -> device memory (gpu.alloc / gpu.dealloc)
//   6. remaining linalg -> flat parallel loops -> gpu.launch -> kernels
//   7. every GPU op asynchronous on the rank's stream
//   8. NVVM, LLVM; kernels serialized into a gpu.binary
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/CUDA/CUDAPipeline.h"
#include "dtensor/Target/Target.h"

#include "dtensor/Target/CUDA/Passes.h"
#include "dtensor/Target/Passes.h"
#include "dtensor/Conversion/DTensorToRuntime/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

#include <mutex>

using namespace mlir;
using namespace mlir::dtensor;

/// Whether `toolkit` has the tools `format` needs (ptxas; fatbinary too for
/// fatbins).
static bool toolkitCanBuild(StringRef toolkit, StringRef format) {
  auto has = [&](StringRef tool) {
    SmallString<128> path(toolkit);
    llvm::sys::path::append(path, "bin", tool);
    return llvm::sys::fs::can_execute(path);
  };
  if (format == "isa")
    return true;
  if (!has("ptxas"))
    return false;
  return format != "fatbin" || has("fatbinary");
}

void mlir::dtensor::buildCUDALoweringPipeline(
    OpPassManager &pm, const CUDALoweringOptions &options) {
  // 0. Attention chains -> the runtime's fused kernel, while softmax is
  //    still one op.
  pm.addPass(createCUDAFuseAttentionPass());
  // 1. Collectives -> dtensor_rt_* calls on buffers (the runtime ABI is
  //    target-neutral; on CUDA every buffer passed is device memory).
  pm.addPass(createLowerToRuntimePass());
  // arith/math on tensors have no bufferization: make them linalg.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // 2. Residual adds into the matmul's epilogue, then one kernel per chain
  //    of elementwise ops; one zero fill per matmul.
  pm.addNestedPass<func::FuncOp>(createCUDAFuseMatmulEpiloguePass());
  //    No CSE after it: it would merge the fills again.
  pm.addNestedPass<func::FuncOp>(createCUDAFuseElementwisePass());
  //    Fusion folds constant operands into contractions (a backward seeded
  //    with ones): reduce once where the result repeats along a dim.
  pm.addNestedPass<func::FuncOp>(createHoistBroadcastDimsPass());
  //    Column reductions with few outputs over more threads.
  pm.addNestedPass<func::FuncOp>(createCUDASplitReductionPass());
  pm.addPass(createCanonicalizerPass());

  // 3. Buffers (as on the CPU target), collectives in place where they may.
  addBufferizationPasses(pm);
  pm.addNestedPass<func::FuncOp>(createReuseCollectiveBuffersPass());

  // 4. Matmuls -> cuBLASLt through the runtime, zero fills folded in.
  //    Before any canonicalization could move the fill away.
  pm.addPass(createCUDAMatmulToRuntimePass({options.matmulContext}));

  // 5. Device memory, frees after the last use.
  pm.addNestedPass<func::FuncOp>(createCUDADeviceMemoryPass());

  // 6. Kernels. No canonicalization between the mapping and
  //    convert-parallel-loops-to-gpu: it would merge the tiled nest back.
  pm.addNestedPass<func::FuncOp>(
      createCUDAMapToGPUPass({options.blockSize, options.vectorBytes}));
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  pm.addPass(createGpuKernelOutliningPass());

  // 7. Stream order instead of host waits.
  pm.addNestedPass<func::FuncOp>(createCUDAStreamOrderPass());

  // 8. Device code to NVVM, host code to LLVM, kernels to a binary.
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(createConvertGpuOpsToNVVMOps());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());

  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = options.toolkit;
  binary.compilationTarget = options.format;
  if (!toolkitCanBuild(options.toolkit, options.format)) {
    llvm::WithColor::warning()
        << "dtensor-cuda-lowering: no ptxas/fatbinary under '"
        << options.toolkit << "/bin'; embedding PTX (format=isa) instead of "
        << options.format << ": the driver JIT-compiles it at load\n";
    binary.compilationTarget = "isa";
  }
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::dtensor::registerCUDADialects(DialectRegistry &registry) {
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect, index::IndexDialect,
                  ub::UBDialect, vector::VectorDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  // gpu.binary's offloading handler (#gpu.select_object) embeds the
  // kernels' binary when the host module is translated to LLVM IR.
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  // The LLVM conversions of gpu-to-nvvm and gpu-to-llvm go through these.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
  NVVM::registerConvertGpuToNVVMInterface(registry);
}

void mlir::dtensor::registerCUDAPasses() {
  registerDTensorCUDAPasses();
  // The upstream stages of the pipeline, to run or debug it piece by piece.
  registerConvertParallelLoopToGpuPass();
  registerGpuKernelOutliningPass();
  registerGpuNVVMAttachTarget();
  registerConvertGpuOpsToNVVMOps();
  registerGpuToLLVMConversionPass();
  registerGpuModuleToBinaryPass();
}

namespace {
struct CUDALoweringCLOptions
    : public PassPipelineOptions<CUDALoweringCLOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("GPU architecture of the kernels"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> features{*this, "features",
                                            llvm::cl::desc("PTX ISA features"),
                                            llvm::cl::init("+ptx80")};
  PassOptions::Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit root with bin/ptxas and bin/fatbinary"),
      llvm::cl::init("/usr/local/cuda")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("kernel binary: fatbin (SASS + PTX), bin (cubin) or "
                     "isa (PTX)"),
      llvm::cl::init("fatbin")};
  PassOptions::Option<unsigned> optLevel{
      *this, "O", llvm::cl::desc("device code optimization level"),
      llvm::cl::init(3)};
  PassOptions::Option<int64_t> blockSize{
      *this, "block-size",
      llvm::cl::desc("threads per block of generated kernels"),
      llvm::cl::init(256)};
  PassOptions::Option<int64_t> vectorBytes{
      *this, "vector-bytes",
      llvm::cl::desc("bytes per access of vectorized elementwise kernels "
                     "(0: scalar accesses)"),
      llvm::cl::init(16)};
  PassOptions::Option<bool> matmulContext{
      *this, "matmul-context",
      llvm::cl::desc("pass dtensor_rt_context() to matmul calls"),
      llvm::cl::init(true)};
};
} // namespace

void mlir::dtensor::registerCUDAPipeline() {
  registerPassPipeline(
      "dtensor-cuda-lowering",
      "per-rank program -> LLVM dialect host code with embedded sm_90 "
      "kernels for CUDA ranks (cuBLASLt matmuls, runtime collectives, "
      "one stream per rank)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        CUDALoweringCLOptions cl;
        if (failed(cl.parseFromString(text)))
          return failure();
        if (cl.format != "fatbin" && cl.format != "bin" && cl.format != "isa")
          return errorHandler("dtensor-cuda-lowering: format must be fatbin, "
                              "bin or isa, got '" +
                              cl.format + "'");
        if (cl.optLevel > 3)
          return errorHandler("dtensor-cuda-lowering: O must be 0 to 3");
        if (cl.blockSize < 1 || cl.blockSize > 1024)
          return errorHandler(
              "dtensor-cuda-lowering: block-size must be in [1, 1024]");
        CUDALoweringOptions options;
        options.chip = cl.chip;
        options.features = cl.features;
        options.toolkit = cl.toolkit;
        options.format = cl.format;
        options.optLevel = cl.optLevel;
        options.blockSize = cl.blockSize;
        if (cl.vectorBytes < 0 || cl.vectorBytes > 16 ||
            (cl.vectorBytes & (cl.vectorBytes - 1)))
          return errorHandler("dtensor-cuda-lowering: vector-bytes must be 0 "
                              "or a power of two up to 16");
        options.vectorBytes = cl.vectorBytes;
        options.matmulContext = cl.matmulContext;
        buildCUDALoweringPipeline(pm, options);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(CUDALoweringCLOptions());
      });
}

namespace {
/// The `cuda` backend of the target registry: the lowering above, for the
/// target's chip.
class CUDATargetBackend : public TargetBackend {
public:
  StringRef getName() const override { return "cuda"; }
  void buildLoweringPipeline(OpPassManager &pm,
                             TargetAttr target) const override {
    CUDALoweringOptions options;
    options.chip = target.getChipOrDefault().str();
    buildCUDALoweringPipeline(pm, options);
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registerCUDADialects(registry);
    OpPassManager pm(ModuleOp::getOperationName());
    buildCUDALoweringPipeline(pm, CUDALoweringOptions());
    pm.getDependentDialects(registry);
  }
  StringRef getRuntimeLibrary() const override {
    return "dtensor_runtime_cuda";
  }
};
} // namespace

void mlir::dtensor::registerCUDATarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerTargetBackend(std::make_unique<CUDATargetBackend>());
    registerCUDAPasses();
    registerCUDAPipeline();
  });
}
