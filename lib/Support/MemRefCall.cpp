//===- MemRefCall.cpp - calling compiled functions on host tensors --------===//

#include "dtensor/Support/MemRefCall.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"

#include <cstdlib>
#include <cstring>

using namespace mlir::dtensor;

BufferSpace BufferSpace::host() {
  BufferSpace space;
  space.allocate = [](int64_t bytes) {
    return std::malloc(static_cast<size_t>(bytes > 0 ? bytes : 1));
  };
  space.release = [](void *buffer) { std::free(buffer); };
  space.write = [](void *buffer, const void *host, int64_t bytes) {
    if (bytes > 0)
      std::memcpy(buffer, host, static_cast<size_t>(bytes));
  };
  space.read = [](void *host, const void *buffer, int64_t bytes) {
    if (bytes > 0)
      std::memcpy(host, buffer, static_cast<size_t>(bytes));
  };
  return space;
}

namespace {

/// A ranked memref descriptor of any rank, as the C interface lays it out.
struct Descriptor {
  explicit Descriptor(int64_t rank) : rank(rank), words(3 + 2 * rank, 0) {}
  int64_t rank;
  std::vector<int64_t> words;
  void *data() { return words.data(); }
};

/// Releases the argument buffers of a call however it ends.
struct ArgumentBuffers {
  explicit ArgumentBuffers(const BufferSpace &space) : space(space) {}
  ~ArgumentBuffers() {
    for (void *buffer : buffers)
      space.release(buffer);
  }
  const BufferSpace &space;
  std::vector<void *> buffers;
};

/// Copies the result a descriptor (at `words`) describes into a HostTensor,
/// honouring its offset and strides.
HostTensor readResult(ElementType type, int64_t rank, const int64_t *words,
                      const BufferSpace &space) {
  llvm::SmallVector<int64_t> shape(words + 3, words + 3 + rank);
  HostTensor result(type, shape);
  int64_t count = result.getNumElements();
  if (count == 0)
    return result;
  int64_t width = getByteWidth(type);
  // The span of elements the view touches, from its first one.
  int64_t span = 1;
  bool dense = true;
  for (int64_t d = rank - 1, expected = 1; d >= 0; --d) {
    span += (shape[d] - 1) * words[3 + rank + d];
    dense &= shape[d] == 1 || words[3 + rank + d] == expected;
    expected *= shape[d];
  }
  auto *base = reinterpret_cast<const char *>(words[1]) + words[2] * width;
  if (dense) {
    space.read(result.data.data(), base, count * width);
    return result;
  }
  std::vector<char> staged(static_cast<size_t>(span * width));
  space.read(staged.data(), base, span * width);
  llvm::SmallVector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d)
      offset += index[d] * words[3 + rank + d];
    std::memcpy(result.data.data() + i * width, staged.data() + offset * width,
                width);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return result;
}

} // namespace

llvm::Expected<std::vector<HostTensor>>
mlir::dtensor::callPacked(llvm::StringRef name, const CallSignature &signature,
                          llvm::ArrayRef<const HostTensor *> args,
                          const BufferSpace &space,
                          llvm::function_ref<llvm::Error(void **)> call) {
  auto fail = [&](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "calling '" + name + "': " + message);
  };
  if (args.size() != signature.args.size())
    return fail("expected " + llvm::Twine(signature.args.size()) +
                " arguments, got " + llvm::Twine(args.size()));
  ArgumentBuffers buffers(space);
  std::vector<Descriptor> inputs;
  for (auto [i, arg] : llvm::enumerate(args)) {
    auto [type, rank] = signature.args[i];
    if (arg->type != type || static_cast<int64_t>(arg->shape.size()) != rank)
      return fail("argument #" + llvm::Twine(i) + " must be a rank-" +
                  llvm::Twine(rank) + " " + getElementTypeName(type) +
                  " tensor, got rank " + llvm::Twine(arg->shape.size()) + " " +
                  getElementTypeName(arg->type));
    // A fresh copy: compiled code may write into its arguments
    // (bufferization treats them as writable), and the caller's tensors
    // stay unchanged for repeated calls.
    auto bytes = static_cast<int64_t>(arg->data.size());
    void *buffer = space.allocate(bytes);
    if (!buffer)
      return fail("cannot allocate " + llvm::Twine(bytes) +
                  " bytes for argument #" + llvm::Twine(i));
    buffers.buffers.push_back(buffer);
    space.write(buffer, arg->data.data(), bytes);
    Descriptor d(rank);
    auto data = reinterpret_cast<intptr_t>(buffer);
    d.words[0] = data;
    d.words[1] = data;
    int64_t stride = 1;
    for (int64_t dim = rank - 1; dim >= 0; --dim) {
      d.words[3 + dim] = arg->shape[dim];
      d.words[3 + rank + dim] = stride;
      stride *= arg->shape[dim];
    }
    inputs.push_back(std::move(d));
  }
  // Results: one descriptor, or a struct of descriptors (all 8-byte words).
  size_t resultWords = 0;
  for (auto [type, rank] : signature.results)
    resultWords += 3 + 2 * rank;
  std::vector<int64_t> resultStorage(std::max<size_t>(resultWords, 1), 0);
  void *resultPointer = resultStorage.data();
  llvm::SmallVector<void *> inputPointers;
  for (Descriptor &d : inputs)
    inputPointers.push_back(d.data());
  llvm::SmallVector<void *> packed;
  if (!signature.results.empty())
    packed.push_back(&resultPointer);
  for (void *&p : inputPointers)
    packed.push_back(&p);
  if (llvm::Error error = call(packed.data()))
    return std::move(error);

  std::vector<HostTensor> results;
  size_t at = 0;
  for (auto [type, rank] : signature.results) {
    results.push_back(readResult(type, rank, resultStorage.data() + at, space));
    at += 3 + 2 * rank;
  }
  // Release the buffers the call allocated, once each and after every
  // result is copied: results may share one (a tensor returned twice, views
  // of one allocation).
  constexpr uintptr_t kGlobalAllocated = 0xdeadbeef;
  llvm::SmallPtrSet<void *, 4> released;
  at = 0;
  for (auto [type, rank] : signature.results) {
    void *allocated = reinterpret_cast<void *>(resultStorage[at]);
    at += 3 + 2 * rank;
    bool isArgument = llvm::is_contained(buffers.buffers, allocated);
    if (!allocated || isArgument ||
        reinterpret_cast<uintptr_t>(allocated) == kGlobalAllocated)
      continue;
    if (released.insert(allocated).second)
      space.release(allocated);
  }
  return results;
}
