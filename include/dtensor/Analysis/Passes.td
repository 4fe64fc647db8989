//===- Passes.td - report passes ---------------------------*- tablegen -*-===//
//
// The passes of this stage (docs/design.md, "Stages"); their reference page
// is generated into docs/generated/AnalysisPasses.md.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_ANALYSIS_PASSES_TD
#define DTENSOR_ANALYSIS_PASSES_TD

include "mlir/Pass/PassBase.td"

def CommReportPass : Pass<"dtensor-comm-report", "::mlir::ModuleOp"> {
  let summary = "reports the collectives of each per-rank function";
  let description = [{
    A static equivalent of PyTorch's CommDebugMode: for each function, the
    number of collectives of each kind (fused ones included), the bytes each
    rank sends into them and their modelled time. Prints a table or JSON;
    the IR is left unchanged. A joint forward + backward function of
    dtensor-autodiff (`dtensor.forward_results = N`) also gets its
    collectives split into forward (those its first N results depend on)
    and backward.
  }];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"table\"",
           "output format: table or json">,
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "file to write the report to ('-': standard output)">,
  ];
}

def ExportTimelinePass
    : Pass<"dtensor-export-timeline", "::mlir::ModuleOp"> {
  let summary = "draws the modelled schedule of each per-rank function";
  let description = [{
    Simulates how one rank runs each function with a body, in program
    order: one compute lane, and one communication stream per
    (mesh, mesh_axes) group (or one for all, `comm-streams=single`). An
    async collective runs on its stream from its `dtensor.async_start`
    until it is done and its `dtensor.wait` blocks compute until then; a
    synchronous collective blocks compute until it is done; collectives of
    one stream run in issue order. Op times come from the module's target
    (`#dtensor.target`: the cost model of its hardware, or its per-op cost
    table).
    Writes a Chrome-trace JSON file (`trace`, for Perfetto) and an SVG
    picture (`svg`), and prints one line per function with the total
    modelled time and the exposed communication time (the time compute
    waits for collectives). The IR is left unchanged. See docs/timeline.md.
  }];
  let options = [
    Option<"tracePath", "trace", "std::string", /*default=*/"\"\"",
           "file to write the Chrome-trace JSON to ('-': standard output)">,
    Option<"svgPath", "svg", "std::string", /*default=*/"\"\"",
           "file to write the SVG picture to ('-': standard output)">,
    Option<"commStreams", "comm-streams", "std::string",
           /*default=*/"\"per-group\"",
           "communication streams: per-group or single">,
  ];
}

#endif // DTENSOR_ANALYSIS_PASSES_TD
