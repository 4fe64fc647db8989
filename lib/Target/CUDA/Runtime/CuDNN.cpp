//===- CuDNN.cpp - cuDNN's backend API, loaded at run time ----------------===//

#include "CuDNN.h"

#include <cstdlib>
#include <dlfcn.h>
#include <link.h>
#include <mutex>
#include <vector>

namespace dtensor::rt::cuda {

#define DTENSOR_CUDNN_NAME(name) #name,
const char *const kCudnnFunctionNames[] = {
    DTENSOR_CUDNN_FUNCTIONS(DTENSOR_CUDNN_NAME)};
#undef DTENSOR_CUDNN_NAME
const size_t kCudnnFunctionCount =
    sizeof(kCudnnFunctionNames) / sizeof(kCudnnFunctionNames[0]);

namespace {

constexpr size_t kMinimumVersion = 90000;
constexpr const char *kSoname = "libcudnn.so.9";

struct CudnnLoad {
  CudnnTable table;
  std::string error;
  bool ok = false;
};

std::string envString(const char *name) {
  const char *value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

/// The candidates of steps 2 and 3 of CuDNN.h's search order.
std::vector<std::string> defaultCandidates() {
  std::vector<std::string> files{kSoname};
  if (std::string dir = envString("CUDNN_PATH"); !dir.empty())
    files.push_back(dir + "/lib/" + kSoname);
  if (std::string dir = envString("CUDNN_HOME"); !dir.empty())
    files.push_back(dir + "/lib64/" + kSoname);
  if (std::string dir = envString("CUDA_HOME"); !dir.empty()) {
    files.push_back(dir + "/lib64/" + kSoname);
    files.push_back(dir + "/lib/" + kSoname);
  }
  files.push_back(std::string("/usr/local/cuda/lib64/") + kSoname);
  files.push_back(std::string("/usr/local/cuda/lib/") + kSoname);
  return files;
}

/// The path the dynamic loader resolved for `handle`, else `fallback`.
std::string loadedPath(void *handle, const std::string &fallback) {
  struct link_map *map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name &&
      *map->l_name)
    return map->l_name;
  return fallback;
}

CudnnLoad load() {
  CudnnLoad l;
  std::string override = envString("DTENSOR_CUDNN_LIBRARY");
  std::vector<std::string> candidates =
      override.empty() ? defaultCandidates()
                       : std::vector<std::string>{override};
  void *handle = nullptr;
  std::string tried;
  for (const std::string &file : candidates) {
    handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      l.table.path = loadedPath(handle, file);
      break;
    }
    // dlerror() names the file: "<file>: cannot open shared object ...".
    const char *why = ::dlerror();
    tried += (tried.empty() ? "" : "; ") +
             (why ? std::string(why) : file + ": unknown dlopen error");
  }
  if (!handle) {
    l.error = override.empty()
                  ? "cannot load cuDNN 9 (tried " + tried +
                        "); set DTENSOR_CUDNN_LIBRARY to its path"
                  : "cannot load cuDNN from DTENSOR_CUDNN_LIBRARY (" + tried +
                        ")";
    return l;
  }
#define DTENSOR_CUDNN_RESOLVE(name)                                            \
  l.table.name = reinterpret_cast<decltype(l.table.name)>(                     \
      ::dlsym(handle, #name));                                                 \
  if (!l.table.name) {                                                         \
    l.error = "the cuDNN library " + l.table.path + " lacks " #name            \
              " (cuDNN 9 needed)";                                             \
    return l;                                                                  \
  }
  DTENSOR_CUDNN_FUNCTIONS(DTENSOR_CUDNN_RESOLVE)
#undef DTENSOR_CUDNN_RESOLVE
  l.table.version = l.table.cudnnGetVersion();
  if (l.table.version < kMinimumVersion) {
    l.error = "the cuDNN library " + l.table.path + " is version " +
              formatCudnnVersion(l.table.version) + " (9.0.0 or newer needed)";
    return l;
  }
  l.ok = true;
  return l;
}

} // namespace

const CudnnTable *loadCudnn(std::string &error) {
  static std::once_flag once;
  static CudnnLoad loaded;
  std::call_once(once, [] { loaded = load(); });
  if (!loaded.ok) {
    error = loaded.error;
    return nullptr;
  }
  return &loaded.table;
}

std::string describeCudnn(const CudnnTable &table, cudnnStatus_t status) {
  const char *name = table.cudnnGetErrorString(status);
  std::string s = name ? name : "cudnnStatus_t " + std::to_string(status);
  char last[1024] = {0};
  table.cudnnGetLastErrorString(last, sizeof(last));
  if (*last)
    s += std::string(": ") + last;
  return s;
}

std::string formatCudnnVersion(size_t version) {
  // cuDNN 9: major * 10000 + minor * 100 + patch.
  return std::to_string(version / 10000) + "." +
         std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

} // namespace dtensor::rt::cuda
