# -*- Python -*-
# lit configuration of the dtensor test suite.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "dtensor"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit",
                   "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dtensor_obj_root, "test")

config.environment["FILECHECK_OPTS"] = "-enable-var-scope"
config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%dtensor_src_root", config.dtensor_src_root))
config.substitutions.append(("%dtensor_obj_root", config.dtensor_obj_root))
config.substitutions.append(("%dtensor_tools_dir", config.dtensor_tools_dir))
# mlir-runner's support libraries (printMemrefF32), for tests that execute
# upstream-lowered IR to compare a rewrite's numerics.
config.substitutions.append(
    ("%mlir_lib_dir", os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
# mpirun (test/Runtime) reads its settings from the environment.
llvm_config.with_system_environment(
    ["TMPDIR", "USER"] + [k for k in os.environ
                          if k.startswith(("OMPI_", "PMIX_", "PRTE_",
                                           "OPAL_"))])
llvm_config.use_default_substitutions()

tool_dirs = [config.dtensor_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["dtensor-opt", "dtensor-run", "dtensor-compile", "dtensor-launch"], tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# The CUDA runtime (test/Target/CUDA): "cuda-runtime" when it is built,
# "cuda-driver" when libcuda.so.1 can be loaded (a GPU machine). CI has no
# driver and checks the library's exports and the no-device error.
# CPU ranks over MPI (DTENSOR_ENABLE_CPU_TARGET): dtensor-run, the CPU
# runtime and its tests.
if getattr(config, "dtensor_enable_cpu_target", False):
    config.available_features.add("cpu-target")
if getattr(config, "dtensor_enable_cuda", False):
    config.available_features.add("cuda-runtime")
    import ctypes
    try:
        ctypes.CDLL("libcuda.so.1")
        config.available_features.add("cuda-driver")
    except OSError:
        pass

# The PyTorch frontend (test/Python): "python-frontend" unless the build
# opted out (-DDTENSOR_ENABLE_PYTHON_FRONTEND=OFF). %dtpython is the
# environment's interpreter (scripts/setup.sh); a missing environment fails
# those tests instead of skipping them.
if getattr(config, "dtensor_enable_python_frontend", False):
    config.available_features.add("python-frontend")
    config.substitutions.append(("%dtpython", config.dtensor_python))
    config.environment["PYTHONDONTWRITEBYTECODE"] = "1"
