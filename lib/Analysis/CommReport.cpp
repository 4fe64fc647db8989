//===- CommReport.cpp - prints the collectives of per-rank functions ------===//
//
// The `dtensor-comm-report` pass: a static equivalent of PyTorch's
// CommDebugMode. For each function it prints, per collective kind, the
// count, how many are asynchronous, the bytes each rank contributes and the
// modelled time, as a table or as JSON. The IR is left unchanged.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Analysis/CommAnalysis.h"
#include "dtensor/Target/Target.h"
#include "dtensor/Analysis/Passes.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_COMMREPORTPASS
#include "dtensor/Analysis/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

/// Times are printed with two decimals (10 ns resolution), in both formats.
static std::string formatTimeUs(double timeUs) {
  return llvm::formatv("{0:F2}", timeUs).str();
}

/// Bytes per rank, with a `*` where dynamic dims were left out.
static std::string formatBytes(const CollectiveStats &stats) {
  return std::to_string(stats.bytesPerRank) + (stats.hasDynamic ? "*" : " ");
}

static void printTableRow(raw_ostream &os, StringRef name,
                          const CollectiveStats &stats) {
  os << "  " << llvm::left_justify(name, 26)
     << llvm::right_justify(std::to_string(stats.count), 6)
     << llvm::right_justify(std::to_string(stats.asyncCount), 7)
     << llvm::right_justify(formatBytes(stats), 16)
     << llvm::right_justify(formatTimeUs(stats.timeUs), 13) << "\n";
}

static void printTable(raw_ostream &os, const HardwareModel &hw,
                       ArrayRef<FunctionCommReport> reports) {
  for (const FunctionCommReport &report : reports) {
    os << "comm report for @" << report.name << " (hardware " << hw.name
       << ")\n";
    os << "  " << llvm::left_justify("collective", 26)
       << llvm::right_justify("count", 6) << llvm::right_justify("async", 7)
       << llvm::right_justify("bytes/rank ", 16)
       << llvm::right_justify("modelled us", 13) << "\n";
    for (const auto &[kind, stats] : report.collectives)
      printTableRow(os, kind, stats);
    printTableRow(os, "total", report.total);
    if (!report.phases.empty()) {
      for (StringRef phaseName : {"forward", "backward"}) {
        const CommCounts *phase = &report.phases.at(phaseName.str());
        os << "  " << phaseName << ":\n";
        for (const auto &[kind, stats] : phase->collectives)
          printTableRow(os, ("  " + kind), stats);
        printTableRow(os, "  total", phase->total);
      }
    }
    if (report.total.hasDynamic)
      os << "  * has dynamic dims: only the static dims are counted\n";
    os << "\n";
  }
}

/// Writes the fields shared by a kind's entry and the total.
static void writeJsonStats(llvm::json::OStream &json,
                           const CollectiveStats &stats) {
  json.attribute("count", stats.count);
  json.attribute("async", stats.asyncCount);
  json.attribute("bytes_per_rank", stats.bytesPerRank);
  json.attributeBegin("time_us");
  json.rawValue(formatTimeUs(stats.timeUs));
  json.attributeEnd();
  json.attribute("has_dynamic", stats.hasDynamic);
}

static void printJson(raw_ostream &os, const HardwareModel &hw,
                      ArrayRef<FunctionCommReport> reports) {
  llvm::json::OStream json(os, /*IndentSize=*/2);
  json.object([&] {
    json.attribute("hardware", hw.name);
    json.attributeArray("functions", [&] {
      for (const FunctionCommReport &report : reports) {
        json.object([&] {
          json.attribute("name", report.name);
          json.attributeObject("collectives", [&] {
            for (const auto &[kind, stats] : report.collectives)
              json.attributeObject(kind, [&] { writeJsonStats(json, stats); });
          });
          json.attributeObject("total",
                               [&] { writeJsonStats(json, report.total); });
          if (!report.phases.empty())
            json.attributeObject("phases", [&] {
              for (StringRef phaseName : {"forward", "backward"}) {
                const CommCounts *phase = &report.phases.at(phaseName.str());
                json.attributeObject(phaseName, [&] {
                  json.attributeObject("collectives", [&] {
                    for (const auto &[kind, stats] : phase->collectives)
                      json.attributeObject(
                          kind, [&] { writeJsonStats(json, stats); });
                  });
                  json.attributeObject(
                      "total", [&] { writeJsonStats(json, phase->total); });
                });
              }
            });
        });
      }
    });
  });
  os << "\n";
}

namespace {
struct CommReportPass : dtensor::impl::CommReportPassBase<CommReportPass> {
  using Base::Base;

  void runOnOperation() override {
    markAllAnalysesPreserved();
    ModuleOp module = getOperation();
    if (format != "table" && format != "json") {
      emitError(module.getLoc(), "comm report: unknown format '")
          << format << "' (expected table or json)";
      return signalPassFailure();
    }
    FailureOr<HardwareModel> hw = getTargetHardware(module, "comm report: ");
    if (failed(hw))
      return signalPassFailure();

    FailureOr<SmallVector<FunctionCommReport>> reports =
        computeCommReport(module, *hw);
    if (failed(reports))
      return signalPassFailure();

    std::string errorMessage;
    std::unique_ptr<llvm::ToolOutputFile> file =
        openOutputFile(output, &errorMessage);
    if (!file) {
      emitError(module.getLoc(), "comm report: ") << errorMessage;
      return signalPassFailure();
    }
    if (format == "json")
      printJson(file->os(), *hw, *reports);
    else
      printTable(file->os(), *hw, *reports);
    file->keep();
  }
};
} // namespace
