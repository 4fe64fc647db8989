//===- CuDNNGraphTest.cpp - cuDNN loader and attention graph, no GPU ------===//
//
// dtensor-cuda-cudnn-test: the parts of the runtime's cuDNN attention that
// need no GPU (cudnn.test):
//   probe    loads cuDNN (CuDNN.h's search order); exit 0 and "cuDNN
//            <version> (<path>)" when it loads, exit 1 and the loader's
//            error else
//   symbols  the functions the loader resolves, one per line
//   build    builds and finalizes every tensor and operation of the
//            attention graphs (CuDNNGraph.h: the forward for inference and
//            for training, the backward with the mask before and after
//            the statistics) for a set of problems (no handle needed),
//            prints the operations of each; then the support checks, the
//            stride canonicalization, and an invalid problem whose error
//            names the refused step
//
//===----------------------------------------------------------------------===//

#include "CuDNN.h"
#include "CuDNNGraph.h"

#include <cstdio>
#include <cstring>
#include <string>

using namespace dtensor::rt::cuda;

namespace {

int failures = 0;

void expect(bool ok, const std::string &what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  failures += !ok;
}

/// A [B, S, H, D] problem whose Q, K, V are views of one fused
/// [B, S, 3, H, D] projection (fused) or dense tensors.
SdpaProblem problem(cudnnDataType_t type, int64_t b, int64_t s, int64_t h,
                    int64_t d, bool causal, bool fused) {
  SdpaProblem p;
  p.type = type;
  p.batch = b;
  p.heads = h;
  p.sq = s;
  p.skv = s;
  p.d = d;
  p.causal = causal;
  int64_t dense[3] = {s * h * d, h * d, d};
  int64_t qkv[3] = {s * 3 * h * d, 3 * h * d, d};
  for (int j = 0; j < 3; ++j) {
    p.q[j] = p.k[j] = p.v[j] = fused ? qkv[j] : dense[j];
    p.o[j] = p.dO[j] = p.dq[j] = p.dk[j] = p.dv[j] = dense[j];
  }
  canonicalizeSdpaStrides(p);
  return p;
}

int build(const CudnnTable &table) {
  SdpaProblem problems[] = {
      problem(CUDNN_DATA_BFLOAT16, 1, 4096, 8, 128, true, true),
      problem(CUDNN_DATA_HALF, 2, 200, 3, 64, false, true),
      problem(CUDNN_DATA_BFLOAT16, 2, 77, 2, 128, true, false),
  };
  for (const SdpaProblem &p : problems)
    for (SdpaIndexMath math : {SdpaIndexMath::F32, SdpaIndexMath::I32}) {
      SdpaGraph graph;
      std::string error;
      bool ok = buildSdpaOperations(table, p, math, graph, error);
      std::string names;
      for (const std::string &name : graph.operationNames)
        names += (names.empty() ? "" : " | ") + name;
      expect(ok, "operations of " + p.describe() + " (" +
                     describeIndexMath(math) + "): " +
                     std::to_string(graph.operations.size()) + ": " + names +
                     (ok ? "" : " ERROR " + error));
    }

  // Training: the forward writes the statistics; the backward, each
  // form.
  for (const SdpaProblem &base : problems) {
    SdpaProblem p = base;
    p.kind = SdpaKind::Training;
    SdpaGraph graph;
    std::string error;
    bool ok = buildSdpaOperations(table, p, SdpaIndexMath::F32, graph, error);
    expect(ok && graph.operations.size() == (p.causal ? 14 : 10),
           "operations of " + p.describe() + ": " +
               std::to_string(graph.operations.size()) +
               (ok ? "" : " ERROR " + error));
    p.kind = SdpaKind::Backward;
    canonicalizeSdpaStrides(p);
    for (SdpaMaskOrder order :
         {SdpaMaskOrder::AfterStats, SdpaMaskOrder::BeforeStats})
      for (SdpaIndexMath math : {SdpaIndexMath::F32, SdpaIndexMath::I32}) {
        SdpaGraph backward;
        std::string backwardError;
        bool built = buildSdpaOperations(table, p, math, backward,
                                         backwardError, order);
        std::string names;
        for (const std::string &name : backward.operationNames)
          names += (names.empty() ? "" : " | ") + name;
        expect(built, "operations of " + p.describe() + " (" +
                          describeIndexMath(math) + ", " +
                          describeMaskOrder(order) + "): " +
                          std::to_string(backward.operations.size()) + ": " +
                          names +
                          (built ? "" : " ERROR " + backwardError));
      }
  }
  SdpaProblem backwardKey = problems[0], trainingKey = problems[0];
  backwardKey.kind = SdpaKind::Backward;
  trainingKey.kind = SdpaKind::Training;
  expect(backwardKey.key() != trainingKey.key() &&
             trainingKey.key() != problems[0].key(),
         "inference, training and backward have their own keys");

  // Support checks (pointers: 16-byte aligned unless shifted).
  alignas(16) static char buffer[64];
  const void *aligned[4] = {buffer, buffer, buffer, buffer};
  const void *shifted[4] = {buffer, buffer + 2, buffer, buffer};
  SdpaProblem p = problems[0];
  expect(sdpaUnsupported(p, aligned).empty(), "aligned fused qkv supported");
  std::string why = sdpaUnsupported(p, shifted);
  expect(why == "K is not 16-byte aligned", "shifted K refused: " + why);
  SdpaProblem backwardOdd = p;
  backwardOdd.kind = SdpaKind::Backward;
  backwardOdd.dk[1] = 3 * 8 * 128 + 4;
  const void *eight[8] = {buffer, buffer, buffer, buffer,
                          buffer, buffer, buffer, buffer};
  why = sdpaUnsupported(backwardOdd, eight);
  expect(why.find("dK has stride") == 0,
         "odd dK stride refused in the backward: " + why);
  SdpaProblem odd = p;
  odd.v[1] = 3 * 8 * 128 + 4;
  why = sdpaUnsupported(odd, aligned);
  expect(why.find("V has stride") == 0, "odd V stride refused: " + why);

  // A rank-3 operand (batch stride 0) and a B = 1 view of the same data
  // share a key.
  SdpaProblem rank3 = problem(CUDNN_DATA_BFLOAT16, 1, 64, 2, 64, true, false);
  SdpaProblem withStride = rank3;
  rank3.q[0] = rank3.k[0] = rank3.v[0] = rank3.o[0] = 0;
  withStride.q[0] = 12345;
  canonicalizeSdpaStrides(rank3);
  canonicalizeSdpaStrides(withStride);
  expect(rank3.key() == withStride.key(),
         "batch stride of B = 1 canonical: " + rank3.key());

  // An invalid problem: the error names the descriptor and the step.
  SdpaProblem bad = problems[0];
  bad.sq = -5;
  SdpaGraph graph;
  std::string error;
  bool ok = buildSdpaOperations(table, bad, SdpaIndexMath::F32, graph, error);
  std::printf("invalid problem: %s\n", ok ? "built" : error.c_str());
  expect(!ok, "a negative sequence length is refused");
  std::printf("%d failed\n", failures);
  return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string command = argc > 1 ? argv[1] : "";
  if (command != "probe" && command != "symbols" && command != "build") {
    std::fprintf(stderr, "usage: dtensor-cuda-cudnn-test probe|symbols|build\n");
    return 2;
  }
  std::string error;
  const CudnnTable *table = loadCudnn(error);
  if (!table) {
    std::printf("no cuDNN: %s\n", error.c_str());
    return 1;
  }
  if (command == "probe") {
    std::printf("cuDNN %s (%s)\n", formatCudnnVersion(table->version).c_str(),
                table->path.c_str());
    return 0;
  }
  if (command == "symbols") {
    for (size_t i = 0; i < kCudnnFunctionCount; ++i)
      std::printf("%s\n", kCudnnFunctionNames[i]);
    return 0;
  }
  return build(*table);
}
