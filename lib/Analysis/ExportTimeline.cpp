//===- ExportTimeline.cpp - the modelled schedule as a trace and a picture ===//
//
// The `dtensor-export-timeline` pass: simulates every per-rank function
// (Analysis/Timeline.h) under the cost model or a per-op cost table and
// writes the result as Chrome-trace JSON (for Perfetto / chrome://tracing)
// and as an SVG image, one lane for compute and one per communication
// stream. It prints one summary line per function to standard output. The
// IR is left unchanged.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Analysis/CostEstimator.h"
#include "dtensor/Analysis/Timeline.h"
#include "dtensor/Target/Target.h"
#include "dtensor/Analysis/Passes.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace mlir::dtensor {
#define GEN_PASS_DEF_EXPORTTIMELINEPASS
#include "dtensor/Analysis/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

/// Times in files and messages: microseconds with three decimals (ns).
static std::string formatUs(double us) {
  return llvm::formatv("{0:F3}", us).str();
}

static StringRef kindName(TimelineEvent::Kind kind) {
  switch (kind) {
  case TimelineEvent::Kind::Compute:
    return "compute";
  case TimelineEvent::Kind::Collective:
    return "collective";
  case TimelineEvent::Kind::AsyncCollective:
    return "async_collective";
  case TimelineEvent::Kind::Stall:
    return "exposed_comm";
  }
  return "unknown";
}

/// The name an event shows: the op name; "wait for <collective>" for a
/// stall.
static std::string eventTitle(const TimelineEvent &event) {
  if (event.kind == TimelineEvent::Kind::Stall)
    return "wait for " + event.name;
  return event.name;
}

static std::string locationString(Operation *op) {
  if (!op)
    return "";
  std::string text;
  llvm::raw_string_ostream os(text);
  op->getLoc().print(os);
  return text;
}

//===----------------------------------------------------------------------===//
// Chrome trace
//===----------------------------------------------------------------------===//

/// Writes one JSON object on one line.
static void writeLine(raw_ostream &os, bool &first,
                      llvm::function_ref<void(llvm::json::OStream &)> body) {
  os << (first ? "\n  " : ",\n  ");
  first = false;
  llvm::json::OStream json(os);
  json.object([&] { body(json); });
}

static void writeRawNumber(llvm::json::OStream &json, StringRef key,
                           double us) {
  json.attributeBegin(key);
  json.rawValue(formatUs(us));
  json.attributeEnd();
}

/// Chrome trace format: "X" (complete) events with ts/dur in microseconds,
/// pid 0 (rank 0), one tid per lane; "M" events name the process and lanes.
/// Functions get consecutive tids so that their lanes do not mix.
static void writeTrace(raw_ostream &os, const HardwareModel &hw,
                       StringRef estimatorName, ArrayRef<Timeline> timelines) {
  os << "{\"traceEvents\": [";
  bool first = true;
  writeLine(os, first, [&](llvm::json::OStream &json) {
    json.attribute("name", "process_name");
    json.attribute("ph", "M");
    json.attribute("pid", 0);
    json.attributeObject("args", [&] { json.attribute("name", "rank 0"); });
  });
  unsigned tidBase = 0;
  for (const Timeline &timeline : timelines) {
    for (auto [index, lane] : llvm::enumerate(timeline.lanes)) {
      unsigned tid = tidBase + index + 1;
      writeLine(os, first, [&](llvm::json::OStream &json) {
        json.attribute("name", "thread_name");
        json.attribute("ph", "M");
        json.attribute("pid", 0);
        json.attribute("tid", tid);
        json.attributeObject("args", [&] {
          json.attribute("name", "@" + timeline.function + " " + lane.name);
        });
      });
      writeLine(os, first, [&](llvm::json::OStream &json) {
        json.attribute("name", "thread_sort_index");
        json.attribute("ph", "M");
        json.attribute("pid", 0);
        json.attribute("tid", tid);
        json.attributeObject("args",
                             [&] { json.attribute("sort_index", tid); });
      });
    }
    for (const TimelineEvent &event : timeline.events) {
      writeLine(os, first, [&](llvm::json::OStream &json) {
        json.attribute("name", eventTitle(event));
        json.attribute("cat", kindName(event.kind));
        json.attribute("ph", "X");
        writeRawNumber(json, "ts", event.startUs);
        writeRawNumber(json, "dur", event.durationUs);
        json.attribute("pid", 0);
        json.attribute("tid", tidBase + event.lane + 1);
        json.attributeObject("args", [&] {
          json.attribute("function", timeline.function);
          json.attribute("op", event.op ? event.op->getName().getStringRef()
                                        : StringRef(event.name));
          json.attribute("loc", locationString(event.op));
        });
      });
    }
    tidBase += timeline.lanes.size();
  }
  os << "\n],\n\"displayTimeUnit\": \"ns\",\n\"otherData\": ";
  llvm::json::OStream json(os);
  json.object([&] {
    json.attribute("hardware", hw.name);
    json.attribute("estimator", estimatorName);
    json.attributeArray("functions", [&] {
      for (const Timeline &timeline : timelines)
        json.object([&] {
          json.attribute("name", timeline.function);
          writeRawNumber(json, "total_us", timeline.totalUs);
          writeRawNumber(json, "compute_us", timeline.computeUs);
          writeRawNumber(json, "comm_us", timeline.commUs);
          writeRawNumber(json, "exposed_comm_us", timeline.exposedCommUs);
        });
    });
  });
  os << "}\n";
}

//===----------------------------------------------------------------------===//
// SVG
//===----------------------------------------------------------------------===//

static std::string escapeXml(StringRef text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// A tick label: up to three decimals, trailing zeros dropped.
static std::string formatTick(double value) {
  std::string text = llvm::formatv("{0:F3}", value).str();
  while (text.back() == '0')
    text.pop_back();
  if (text.back() == '.')
    text.pop_back();
  return text;
}

/// The 1-2-5 step that gives at most about `maxTicks` ticks over `span`.
static double tickStep(double span, int maxTicks) {
  double raw = span / maxTicks;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0})
    if (factor * magnitude >= raw)
      return factor * magnitude;
  return 10 * magnitude;
}

static std::string px(double value) {
  return llvm::formatv("{0:F1}", value).str();
}

namespace {
/// Layout of the picture, in pixels.
struct SvgLayout {
  static constexpr double width = 1100;
  static constexpr double labelWidth = 170;
  static constexpr double rightMargin = 30;
  static constexpr double titleHeight = 44;
  static constexpr double laneHeight = 30;
  static constexpr double laneGap = 8;
  static constexpr double axisHeight = 34;
  static constexpr double panelGap = 18;
  static constexpr double legendHeight = 30;
  /// Approximate width of one character of the 11px label font.
  static constexpr double charWidth = 6.2;
  static double plotWidth() { return width - labelWidth - rightMargin; }
};

struct EventStyle {
  const char *fill;
  const char *legend;
};
} // namespace

static EventStyle styleOf(TimelineEvent::Kind kind) {
  switch (kind) {
  case TimelineEvent::Kind::Compute:
    return {"#4e79a7", "compute"};
  case TimelineEvent::Kind::Collective:
    return {"#e15759", "synchronous collective"};
  case TimelineEvent::Kind::AsyncCollective:
    return {"#f28e2b", "asynchronous collective"};
  case TimelineEvent::Kind::Stall:
    return {"url(#stall)", "compute waits (exposed communication)"};
  }
  return {"#999999", ""};
}

/// A box label: the op name without its dialect, if it fits.
static std::string boxLabel(const TimelineEvent &event, double boxWidth) {
  StringRef name = event.name;
  size_t dot = name.find('.');
  std::string label =
      (dot == StringRef::npos ? name : name.drop_front(dot + 1)).str();
  if (event.kind == TimelineEvent::Kind::Stall)
    label = "wait " + label;
  if (label.size() * SvgLayout::charWidth + 6 <= boxWidth)
    return label;
  return "";
}

static double panelHeight(const Timeline &timeline) {
  return SvgLayout::titleHeight +
         timeline.lanes.size() * (SvgLayout::laneHeight + SvgLayout::laneGap) +
         SvgLayout::axisHeight;
}

/// Draws one function's panel at `top`, with `span` us across the plot.
static void writePanel(raw_ostream &os, const Timeline &timeline,
                       StringRef source, double top, double span) {
  const double left = SvgLayout::labelWidth;
  const double plot = SvgLayout::plotWidth();
  double scale = plot / span;
  os << "<g class=\"function\" data-name=\"" << escapeXml(timeline.function)
     << "\">\n";
  os << "<text x=\"10\" y=\"" << px(top + 18) << "\" class=\"title\">@"
     << escapeXml(timeline.function) << "</text>\n";
  os << "<text x=\"10\" y=\"" << px(top + 34) << "\" class=\"summary\">"
     << "total " << formatUs(timeline.totalUs) << " us, compute "
     << formatUs(timeline.computeUs) << " us, communication "
     << formatUs(timeline.commUs) << " us, exposed communication "
     << formatUs(timeline.exposedCommUs) << " us"
     << " (" << escapeXml(source) << ")</text>\n";

  double lanesTop = top + SvgLayout::titleHeight;
  auto laneY = [&](unsigned lane) {
    return lanesTop + lane * (SvgLayout::laneHeight + SvgLayout::laneGap);
  };
  double lanesBottom = laneY(timeline.lanes.size()) - SvgLayout::laneGap;

  // Lanes.
  for (auto [index, lane] : llvm::enumerate(timeline.lanes)) {
    double y = laneY(index);
    os << "<rect class=\"lane\" x=\"" << px(left) << "\" y=\"" << px(y)
       << "\" width=\"" << px(plot) << "\" height=\""
       << px(SvgLayout::laneHeight) << "\"/>\n";
    os << "<text class=\"lane-label\" x=\"" << px(left - 8) << "\" y=\""
       << px(y + SvgLayout::laneHeight / 2 + 4) << "\">" << escapeXml(lane.name)
       << "</text>\n";
  }

  // Grid and axis.
  double step = tickStep(span, 10);
  for (int i = 0; i * step <= span * (1 + 1e-9); ++i) {
    double x = left + i * step * scale;
    os << "<line class=\"grid\" x1=\"" << px(x) << "\" y1=\"" << px(lanesTop)
       << "\" x2=\"" << px(x) << "\" y2=\"" << px(lanesBottom + 4) << "\"/>\n";
    os << "<text class=\"tick\" x=\"" << px(x) << "\" y=\""
       << px(lanesBottom + 17) << "\">" << formatTick(i * step) << "</text>\n";
  }
  os << "<text class=\"axis\" x=\"" << px(left + plot) << "\" y=\""
     << px(lanesBottom + 30) << "\">time (us)</text>\n";

  // Events.
  for (const TimelineEvent &event : timeline.events) {
    EventStyle style = styleOf(event.kind);
    double x = left + event.startUs * scale;
    double w = std::max(event.durationUs * scale, 1.0);
    double y = laneY(event.lane) + 2;
    double h = SvgLayout::laneHeight - 4;
    os << "<g class=\"event " << kindName(event.kind) << "\" data-ts=\""
       << formatUs(event.startUs) << "\" data-dur=\""
       << formatUs(event.durationUs) << "\">";
    os << "<title>" << escapeXml(eventTitle(event)) << ": "
       << formatUs(event.startUs) << " - " << formatUs(event.endUs()) << " us ("
       << formatUs(event.durationUs) << " us)</title>";
    os << "<rect x=\"" << px(x) << "\" y=\"" << px(y) << "\" width=\"" << px(w)
       << "\" height=\"" << px(h) << "\" fill=\"" << style.fill << "\"/>";
    std::string label = boxLabel(event, w);
    if (!label.empty())
      os << "<text class=\"box-label\" x=\"" << px(x + w / 2) << "\" y=\""
         << px(y + h / 2 + 4) << "\">" << escapeXml(label) << "</text>";
    os << "</g>\n";
  }
  os << "</g>\n";
}

/// `source` says where the times come from ("hardware h200, model").
static void writeSvg(raw_ostream &os, StringRef source,
                     ArrayRef<Timeline> timelines) {
  double height = SvgLayout::legendHeight + 10;
  for (const Timeline &timeline : timelines)
    height += panelHeight(timeline) + SvgLayout::panelGap;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\""
     << px(SvgLayout::width) << "\" height=\"" << px(height)
     << "\" viewBox=\"0 0 " << px(SvgLayout::width) << " " << px(height)
     << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  os << "<defs><pattern id=\"stall\" width=\"6\" height=\"6\" "
        "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
        "<rect width=\"6\" height=\"6\" fill=\"#fbe9ea\"/>"
        "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#ec9a9c\" "
        "stroke-width=\"1.5\"/></pattern></defs>\n";
  os << "<style>.title{font-size:14px;font-weight:bold}"
        ".summary{fill:#333}.tick{text-anchor:middle;fill:#555}"
        ".axis{text-anchor:end;fill:#555}"
        ".grid{stroke:#ddd;stroke-width:1}"
        ".lane{fill:#f7f7f7;stroke:#ccc}"
        ".lane-label{text-anchor:end}"
        ".event rect{stroke:#333;stroke-width:0.5}"
        ".box-label{text-anchor:middle;fill:#fff;font-size:11px}"
        ".exposed_comm .box-label{fill:#7a1f22;font-weight:bold}"
        "</style>\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  // One time scale for all panels, so that functions compare at a glance.
  double span = 0;
  for (const Timeline &timeline : timelines)
    span = std::max(span, timeline.totalUs);
  if (!(span > 0))
    span = 1;
  double top = 0;
  for (const Timeline &timeline : timelines) {
    writePanel(os, timeline, source, top, span);
    top += panelHeight(timeline) + SvgLayout::panelGap;
  }
  // Legend.
  double x = SvgLayout::labelWidth;
  double y = top + 8;
  os << "<g class=\"legend\">\n";
  for (TimelineEvent::Kind kind :
       {TimelineEvent::Kind::Compute, TimelineEvent::Kind::Collective,
        TimelineEvent::Kind::AsyncCollective, TimelineEvent::Kind::Stall}) {
    EventStyle style = styleOf(kind);
    os << "<rect x=\"" << px(x) << "\" y=\"" << px(y)
       << "\" width=\"14\" height=\"14\" stroke=\"#333\" stroke-width=\"0.5\" "
          "fill=\""
       << style.fill << "\"/>";
    os << "<text x=\"" << px(x + 20) << "\" y=\"" << px(y + 11) << "\">"
       << style.legend << "</text>\n";
    x += 20 + std::strlen(style.legend) * SvgLayout::charWidth + 24;
  }
  os << "</g>\n</svg>\n";
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct ExportTimelinePass
    : dtensor::impl::ExportTimelinePassBase<ExportTimelinePass> {
  using Base::Base;

  LogicalResult writeFile(StringRef path,
                          llvm::function_ref<void(raw_ostream &)> write) {
    std::string errorMessage;
    std::unique_ptr<llvm::ToolOutputFile> file =
        openOutputFile(path, &errorMessage);
    if (!file)
      return emitError(getOperation().getLoc(), "export timeline: ")
             << errorMessage;
    write(file->os());
    file->keep();
    return success();
  }

  void runOnOperation() override {
    markAllAnalysesPreserved();
    ModuleOp module = getOperation();
    auto fail = [&](const Twine &message) {
      emitError(module.getLoc(), "export timeline: ") << message;
      signalPassFailure();
    };

    CommStreams streams;
    if (commStreams == "per-group")
      streams = CommStreams::PerGroup;
    else if (commStreams == "single")
      streams = CommStreams::Single;
    else
      return fail("unknown comm-streams '" + commStreams +
                  "' (expected per-group or single)");

    StringRef prefix = "export timeline: ";
    FailureOr<HardwareModel> hw = getTargetHardware(module, prefix);
    if (failed(hw))
      return signalPassFailure();
    FailureOr<std::unique_ptr<CostEstimator>> estimator =
        getTargetCostEstimator(module, prefix);
    if (failed(estimator))
      return signalPassFailure();
    StringRef costTable = getTarget(module).getCostTable();
    std::string estimatorName =
        costTable.empty() ? "model" : ("table " + costTable).str();

    SmallVector<Timeline> timelines;
    for (auto func : module.getOps<FunctionOpInterface>()) {
      if (func.isExternal())
        continue;
      FailureOr<Timeline> timeline =
          simulateTimeline(func, **estimator, streams);
      if (failed(timeline))
        return signalPassFailure();
      timelines.push_back(std::move(*timeline));
    }

    if (!tracePath.empty() && failed(writeFile(tracePath, [&](raw_ostream &os) {
          writeTrace(os, *hw, estimatorName, timelines);
        })))
      return signalPassFailure();
    std::string source = "hardware " + hw->name + ", " + estimatorName;
    if (!svgPath.empty() && failed(writeFile(svgPath, [&](raw_ostream &os) {
          writeSvg(os, source, timelines);
        })))
      return signalPassFailure();

    for (const Timeline &timeline : timelines)
      llvm::outs() << "timeline @" << timeline.function << " (" << source
                   << "): total " << formatUs(timeline.totalUs)
                   << " us, compute " << formatUs(timeline.computeUs)
                   << " us, communication " << formatUs(timeline.commUs)
                   << " us, exposed communication "
                   << formatUs(timeline.exposedCommUs) << " us\n";
    llvm::outs().flush();
  }
};
} // namespace
