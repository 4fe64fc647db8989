//===- TestTargets.h - target checks shared by the unit tests ---*- C++ -*-===//

#ifndef DTENSOR_TEST_UNIT_TESTTARGETS_H
#define DTENSOR_TEST_UNIT_TESTTARGETS_H

#include "dtensor/Compiler/Registration.h"
#include "dtensor/Target/Target.h"

#include <gtest/gtest.h>

/// Tests that JIT-compile programs need the CPU target's lowering, which a
/// build with DTENSOR_ENABLE_CPU_TARGET=OFF does not have.
#define DTENSOR_REQUIRE_CPU_TARGET()                                           \
  do {                                                                         \
    ::mlir::dtensor::registerTargets();                                        \
    if (!::mlir::dtensor::lookupTargetBackend("cpu"))                          \
      GTEST_SKIP() << "built without the CPU target";                          \
  } while (false)

#endif // DTENSOR_TEST_UNIT_TESTTARGETS_H
