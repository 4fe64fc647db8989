//===- CommBackend.cpp - shared parts of the communication backends -------===//

#include "CommBackend.h"

#include <cstdlib>
#include <utility>

namespace dtensor::rt {

size_t elemSize(ElemType type) {
  switch (type) {
  case ElemType::F32:
  case ElemType::I32:
    return 4;
  case ElemType::F64:
  case ElemType::I64:
    return 8;
  }
  return 0;
}

const char *elemTypeName(ElemType type) {
  switch (type) {
  case ElemType::F32:
    return "f32";
  case ElemType::F64:
    return "f64";
  case ElemType::I32:
    return "i32";
  case ElemType::I64:
    return "i64";
  }
  return "?";
}

CommGroup::~CommGroup() = default;
CommRequest::~CommRequest() = default;
CommBackend::~CommBackend() = default;

//===----------------------------------------------------------------------===//
// StageBuffer
//===----------------------------------------------------------------------===//

StageBuffer::StageBuffer(CommBackend &owner, size_t bytes)
    : owner(&owner), bytes(bytes) {
  ptr = owner.allocateStage(bytes);
}

StageBuffer::~StageBuffer() { reset(); }

StageBuffer::StageBuffer(StageBuffer &&other) noexcept
    : owner(std::exchange(other.owner, nullptr)),
      ptr(std::exchange(other.ptr, nullptr)),
      bytes(std::exchange(other.bytes, 0)) {}

StageBuffer &StageBuffer::operator=(StageBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    owner = std::exchange(other.owner, nullptr);
    ptr = std::exchange(other.ptr, nullptr);
    bytes = std::exchange(other.bytes, 0);
  }
  return *this;
}

void StageBuffer::reset() {
  if (owner && ptr)
    owner->releaseStage(ptr);
  owner = nullptr;
  ptr = nullptr;
  bytes = 0;
}

//===----------------------------------------------------------------------===//
// Host-memory defaults of the memory hooks
//===----------------------------------------------------------------------===//

void *CommBackend::allocateStage(size_t bytes) {
  // 64-byte alignment suits every element type and vectorized copies;
  // aligned_alloc wants a multiple of the alignment.
  size_t rounded = (bytes + 63) / 64 * 64;
  void *ptr = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!ptr)
    fatal("stage", "cannot allocate " + std::to_string(bytes) +
                       " bytes of staging memory");
  return ptr;
}

void CommBackend::releaseStage(void *ptr) { std::free(ptr); }

void CommBackend::copy(const StridedView &dst, const StridedView &src) {
  copyView(dst, src);
}

namespace {
template <typename T> void divideAs(void *data, size_t count, int64_t n) {
  T *values = static_cast<T *>(data);
  for (size_t i = 0; i < count; ++i)
    values[i] = static_cast<T>(values[i] / static_cast<T>(n));
}
} // namespace

void CommBackend::divide(void *data, size_t count, ElemType type, int64_t n) {
  switch (type) {
  case ElemType::F32:
    return divideAs<float>(data, count, n);
  case ElemType::F64:
    return divideAs<double>(data, count, n);
  case ElemType::I32:
    return divideAs<int32_t>(data, count, n);
  case ElemType::I64:
    return divideAs<int64_t>(data, count, n);
  }
}

} // namespace dtensor::rt
