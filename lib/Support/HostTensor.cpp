//===- HostTensor.cpp - dense host arrays and .npy files ------------------===//

#include "dtensor/Support/HostTensor.h"

#include "dtensor/Support/Float16.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir::dtensor;
using llvm::Error;
using llvm::Expected;

int64_t mlir::dtensor::getByteWidth(ElementType type) {
  switch (type) {
#define DTENSOR_ELEMENT_TYPE(NAME, ENUM, BYTES)                                \
  case ElementType::ENUM:                                                      \
    return BYTES;
#include "dtensor/Runtime/ElementTypes.def"
  }
  return 0;
}

llvm::StringRef mlir::dtensor::getElementTypeName(ElementType type) {
  switch (type) {
#define DTENSOR_ELEMENT_TYPE(NAME, ENUM, BYTES)                                \
  case ElementType::ENUM:                                                      \
    return #NAME;
#include "dtensor/Runtime/ElementTypes.def"
  }
  return "";
}

std::optional<ElementType> mlir::dtensor::parseElementType(llvm::StringRef name) {
#define DTENSOR_ELEMENT_TYPE(NAME, ENUM, BYTES)                                \
  if (name == #NAME)                                                           \
    return ElementType::ENUM;
#include "dtensor/Runtime/ElementTypes.def"
  return std::nullopt;
}

llvm::StringRef mlir::dtensor::getNpyDescr(ElementType type) {
  switch (type) {
  case ElementType::F32:
  case ElementType::BF16:
    return "<f4";
  case ElementType::F64:
    return "<f8";
  case ElementType::I32:
    return "<i4";
  case ElementType::I64:
    return "<i8";
  case ElementType::F16:
    return "<f2";
  }
  return "";
}

HostTensor::HostTensor(ElementType type, llvm::ArrayRef<int64_t> shape)
    : type(type), shape(shape) {
  data.assign(getNumElements() * getByteWidth(type), 0);
}

int64_t HostTensor::getNumElements() const {
  int64_t n = 1;
  for (int64_t size : shape)
    n *= size;
  return n;
}

template <typename T> static T load(const char *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T> static void store(char *p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

double HostTensor::get(int64_t i) const {
  const char *p = data.data() + i * getByteWidth(type);
  switch (type) {
  case ElementType::F32:
    return load<float>(p);
  case ElementType::F64:
    return load<double>(p);
  case ElementType::I32:
    return load<int32_t>(p);
  case ElementType::I64:
    return static_cast<double>(load<int64_t>(p));
  case ElementType::BF16:
    return ::dtensor::bf16ToFloat(load<uint16_t>(p));
  case ElementType::F16:
    return ::dtensor::f16ToFloat(load<uint16_t>(p));
  }
  return 0;
}

void HostTensor::set(int64_t i, double value) {
  char *p = data.data() + i * getByteWidth(type);
  switch (type) {
  case ElementType::F32:
    return store(p, static_cast<float>(value));
  case ElementType::F64:
    return store(p, value);
  case ElementType::I32:
    return store(p, static_cast<int32_t>(value));
  case ElementType::I64:
    return store(p, static_cast<int64_t>(value));
  case ElementType::BF16:
    return store(p, ::dtensor::floatToBF16(static_cast<float>(value)));
  case ElementType::F16:
    return store(p, ::dtensor::floatToF16(static_cast<float>(value)));
  }
}

static Error npyError(llvm::StringRef path, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + message);
}

Expected<HostTensor> mlir::dtensor::readNpy(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return npyError(path, "cannot read: " + buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() < 10 || !bytes.starts_with("\x93NUMPY"))
    return npyError(path, "not a .npy file");
  uint8_t major = bytes[6];
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength = uint8_t(bytes[8]) | (uint8_t(bytes[9]) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return npyError(path, "truncated header");
    headerLength = uint32_t(uint8_t(bytes[8])) |
                   (uint32_t(uint8_t(bytes[9])) << 8) |
                   (uint32_t(uint8_t(bytes[10])) << 16) |
                   (uint32_t(uint8_t(bytes[11])) << 24);
    headerStart = 12;
  } else {
    return npyError(path, "unsupported .npy version");
  }
  if (bytes.size() < headerStart + headerLength)
    return npyError(path, "truncated header");
  llvm::StringRef header = bytes.substr(headerStart, headerLength);
  auto field = [&](llvm::StringRef key) -> llvm::StringRef {
    size_t at = header.find(("'" + key + "'").str());
    if (at == llvm::StringRef::npos)
      return "";
    return header.substr(at + key.size() + 2).ltrim(": ");
  };
  llvm::StringRef descr = field("descr");
  HostTensor tensor;
  bool known = false;
  for (ElementType type : {ElementType::F32, ElementType::F64,
                           ElementType::I32, ElementType::I64,
                           ElementType::F16}) {
    if (descr.starts_with(("'" + getNpyDescr(type) + "'").str())) {
      tensor.type = type;
      known = true;
    }
  }
  if (!known)
    return npyError(path, "unsupported dtype " + descr.split(',').first +
                              " (supported: <f2, <f4, <f8, <i4, <i8)");
  if (!field("fortran_order").starts_with("False"))
    return npyError(path, "Fortran-order arrays are not supported");
  llvm::StringRef shape = field("shape");
  if (!shape.consume_front("("))
    return npyError(path, "malformed shape");
  shape = shape.take_until([](char c) { return c == ')'; });
  llvm::SmallVector<llvm::StringRef> parts;
  shape.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef part : parts) {
    part = part.trim();
    if (part.empty())
      continue;
    int64_t size;
    if (part.getAsInteger(10, size) || size < 0)
      return npyError(path, "malformed shape");
    tensor.shape.push_back(size);
  }
  size_t dataStart = headerStart + headerLength;
  size_t expected = tensor.getNumElements() * getByteWidth(tensor.type);
  if (bytes.size() - dataStart != expected)
    return npyError(path, "holds " + llvm::Twine(bytes.size() - dataStart) +
                              " data bytes, its header says " +
                              llvm::Twine(expected));
  tensor.data.assign(bytes.begin() + dataStart, bytes.end());
  return tensor;
}

HostTensor mlir::dtensor::castHostTensor(const HostTensor &tensor,
                                         ElementType type) {
  if (tensor.type == type)
    return tensor;
  HostTensor result(type, tensor.shape);
  for (int64_t i = 0, e = tensor.getNumElements(); i < e; ++i)
    result.set(i, tensor.get(i));
  return result;
}

Error mlir::dtensor::writeNpy(llvm::StringRef path, const HostTensor &tensor) {
  if (tensor.type == ElementType::BF16)
    return writeNpy(path, castHostTensor(tensor, ElementType::F32));
  std::string shape;
  for (int64_t size : tensor.shape)
    shape += (shape.empty() ? "" : ", ") + std::to_string(size);
  if (tensor.shape.size() == 1)
    shape += ",";
  std::string header = "{'descr': '" + getNpyDescr(tensor.type).str() +
                       "', 'fortran_order': False, 'shape': (" + shape +
                       "), }";
  // Pad so that the data starts at a multiple of 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return npyError(path, "cannot write: " + ec.message());
  os << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff)
     << char(header.size() >> 8) << header;
  os.write(tensor.data.data(), tensor.data.size());
  return Error::success();
}

void mlir::dtensor::forEachInBlock(
    llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> offsets,
    llvm::ArrayRef<int64_t> sizes,
    llvm::function_ref<void(int64_t, int64_t)> fn) {
  int64_t rank = shape.size();
  int64_t count = 1;
  for (int64_t size : sizes)
    count *= size;
  llvm::SmallVector<int64_t> index(rank, 0);
  for (int64_t local = 0; local < count; ++local) {
    int64_t global = 0;
    for (int64_t d = 0; d < rank; ++d)
      global = global * shape[d] + offsets[d] + index[d];
    fn(global, local);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < sizes[d])
        break;
      index[d] = 0;
    }
  }
}

HostTensor mlir::dtensor::sliceHostTensor(const HostTensor &tensor,
                                          llvm::ArrayRef<int64_t> offsets,
                                          llvm::ArrayRef<int64_t> sizes) {
  HostTensor result(tensor.type, sizes);
  int64_t width = getByteWidth(tensor.type);
  forEachInBlock(tensor.shape, offsets, sizes, [&](int64_t g, int64_t l) {
    std::memcpy(result.data.data() + l * width, tensor.data.data() + g * width,
                width);
  });
  return result;
}

HostTensor mlir::dtensor::makeRandomTensor(ElementType type,
                                           llvm::ArrayRef<int64_t> shape,
                                           std::mt19937_64 &rng,
                                           int64_t integerBound) {
  HostTensor tensor(type, shape);
  if (type != ElementType::I32 && type != ElementType::I64) {
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (int64_t k = 0, n = tensor.getNumElements(); k < n; ++k)
      tensor.set(k, dist(rng));
  } else {
    std::uniform_int_distribution<int64_t> dist(
        0, std::max<int64_t>(integerBound, 1) - 1);
    for (int64_t k = 0, n = tensor.getNumElements(); k < n; ++k)
      tensor.set(k, static_cast<double>(dist(rng)));
  }
  return tensor;
}

std::string mlir::dtensor::describeTensorType(ElementType type,
                                              llvm::ArrayRef<int64_t> shape) {
  std::string text = "tensor<";
  for (int64_t size : shape)
    text += std::to_string(size) + "x";
  return text + getElementTypeName(type).str() + ">";
}

llvm::Expected<HostTensor>
mlir::dtensor::readInputNpy(int64_t index, llvm::StringRef file,
                            ElementType type, llvm::ArrayRef<int64_t> shape) {
  llvm::Expected<HostTensor> loaded = readNpy(file);
  if (!loaded)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "input #" + llvm::Twine(index) + ": " +
                                       llvm::toString(loaded.takeError()));
  bool castable = loaded->type == type ||
                  (type == ElementType::BF16 && loaded->type == ElementType::F32);
  if (!castable || llvm::ArrayRef<int64_t>(loaded->shape) != shape)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "input #" + llvm::Twine(index) + " (" + file + ") holds " +
            describeTensorType(loaded->type, loaded->shape) +
            ", the argument is " + describeTensorType(type, shape));
  return castHostTensor(*loaded, type);
}

uint64_t mlir::dtensor::makeFreshSeed() {
  std::random_device device;
  return (uint64_t(device()) << 32) ^ device();
}
