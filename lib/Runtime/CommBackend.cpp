//===- CommBackend.cpp - shared parts of the communication backends -------===//

#include "CommBackend.h"

#include "dtensor/Support/Float16.h"

#include <cstdlib>
#include <cstring>
#include <utility>

namespace dtensor::rt {

size_t elemSize(ElemType type) {
  switch (type) {
#define DTENSOR_ELEMENT_TYPE(NAME, ENUM, BYTES)                                \
  case ElemType::ENUM:                                                         \
    return BYTES;
#include "dtensor/Runtime/ElementTypes.def"
  }
  return 0;
}

const char *elemTypeName(ElemType type) {
  switch (type) {
#define DTENSOR_ELEMENT_TYPE(NAME, ENUM, BYTES)                                \
  case ElemType::ENUM:                                                         \
    return #NAME;
#include "dtensor/Runtime/ElementTypes.def"
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

void CommBackend::writeBuffer(void *buffer, const void *host, size_t bytes) {
  if (bytes)
    std::memcpy(buffer, host, bytes);
}

void CommBackend::readBuffer(void *host, const void *buffer, size_t bytes) {
  if (bytes)
    std::memcpy(host, buffer, bytes);
}

void CommBackend::copy(const StridedView &dst, const StridedView &src) {
  copyView(dst, src);
}

namespace {
template <typename T> void divideAs(void *data, size_t count, int64_t n) {
  T *values = static_cast<T *>(data);
  for (size_t i = 0; i < count; ++i)
    values[i] = static_cast<T>(values[i] / static_cast<T>(n));
}

/// Divides 16-bit floats through f32, rounding to nearest even.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void divideHalves(void *data, size_t count, int64_t n) {
  auto *values = static_cast<uint16_t *>(data);
  for (size_t i = 0; i < count; ++i)
    values[i] = FromFloat(ToFloat(values[i]) / static_cast<float>(n));
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
  case ElemType::BF16:
    return divideHalves<bf16ToFloat, floatToBF16>(data, count, n);
  case ElemType::F16:
    return divideHalves<f16ToFloat, floatToF16>(data, count, n);
  }
}

} // namespace dtensor::rt
