//===- CommBackend.cpp - shared parts of the communication backends -------===//

#include "CommBackend.h"

#include <cstdlib>
#include <cstring>
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
  case ElemType::BF16:
  case ElemType::F16:
    return 2;
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
  case ElemType::BF16:
    return "bf16";
  case ElemType::F16:
    return "f16";
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

/// Divides 16-bit floats through f32, rounding to nearest even.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void divideHalves(void *data, size_t count, int64_t n) {
  auto *values = static_cast<uint16_t *>(data);
  for (size_t i = 0; i < count; ++i)
    values[i] = FromFloat(ToFloat(values[i]) / static_cast<float>(n));
}

float bf16ToFloat(uint16_t bits) {
  uint32_t word = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}

uint16_t floatToBF16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, 4);
  if ((word & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet
    return static_cast<uint16_t>((word >> 16) | 0x40);
  word += 0x7fffu + ((word >> 16) & 1);
  return static_cast<uint16_t>(word >> 16);
}

float f16ToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  int32_t exp = (bits >> 10) & 0x1f;
  uint32_t mant = bits & 0x3ff;
  uint32_t word;
  if (exp == 0x1f) {
    word = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      word = sign;
    } else { // subnormal: normalize
      exp = 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      word = sign | static_cast<uint32_t>(exp + 112) << 23 | (mant << 13);
    }
  } else {
    word = sign | static_cast<uint32_t>(exp + 112) << 23 | (mant << 13);
  }
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}

uint16_t floatToF16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, 4);
  uint16_t sign = static_cast<uint16_t>((word >> 16) & 0x8000);
  uint32_t absWord = word & 0x7fffffffu;
  if (absWord > 0x7f800000u)
    return sign | 0x7e00; // NaN
  if (absWord >= 0x477ff000u)
    return sign | 0x7c00; // overflows to infinity
  if (absWord < 0x38800000u) {
    // Subnormal or zero in f16: round value * 2^24 to an integer.
    float magnitude;
    std::memcpy(&magnitude, &absWord, 4);
    float scaled = magnitude * 16777216.0f;
    uint32_t units = static_cast<uint32_t>(scaled);
    float rest = scaled - static_cast<float>(units);
    if (rest > 0.5f || (rest == 0.5f && (units & 1)))
      ++units;
    return sign | static_cast<uint16_t>(units);
  }
  uint32_t rounded = absWord + 0xfffu + ((absWord >> 13) & 1);
  return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
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
