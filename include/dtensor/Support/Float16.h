//===- Float16.h - bf16 and f16 bits to and from float ---------*- C++ -*-===//
//
// Header-only, plain C++: shared by the runtime libraries (which link no
// LLVM) and the host tensors of the launcher. Rounding to nearest even;
// NaNs stay NaNs, infinities stay infinities, f16 subnormals are exact.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_SUPPORT_FLOAT16_H
#define DTENSOR_SUPPORT_FLOAT16_H

#include <cstdint>
#include <cstring>

namespace dtensor {

inline float bf16ToFloat(uint16_t bits) {
  uint32_t word = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}

inline uint16_t floatToBF16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, 4);
  if ((word & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet
    return static_cast<uint16_t>((word >> 16) | 0x40);
  word += 0x7fffu + ((word >> 16) & 1);
  return static_cast<uint16_t>(word >> 16);
}

inline float f16ToFloat(uint16_t bits) {
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

inline uint16_t floatToF16(float value) {
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

} // namespace dtensor

#endif // DTENSOR_SUPPORT_FLOAT16_H
