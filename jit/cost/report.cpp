// Vantage cost report rendering: the table and the JSON form of a CostReport (docs/report.md).
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "vantage/report.hpp"

namespace vantage {
namespace {

std::string num(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", x);
  return b;
}

std::string where(const SourceLoc& l) {
  if (!l.file) return "?";
  return std::filesystem::path(l.file).filename().string() + ":" + std::to_string(l.line);
}

std::string kind(const AccessCost& a) {
  return std::string(a.space == MemSpace::Global ? "global " : "shared ") + (a.write ? "store" : "load") + " " +
         std::to_string(a.bytes) + "B";
}

}  // namespace

std::string CostReport::text() const {
  std::ostringstream o;
  o << "cost of kernel " << kernel << ": " << blocks << " blocks of " << threads_per_block << " threads ("
    << sampled_blocks << " followed)" << (exact ? "" : "; numbers marked ~ are estimates") << "\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-26s %-10s %-18s %12s %6s %-22s %s\n", "line", "memory", "access", "requests",
                "lanes", "per request (ideal)", "hint");
  o << line;
  for (const auto& a : accesses) {
    std::string metric = a.space == MemSpace::Global
                             ? num(a.sectors) + " sectors (" + num(a.ideal_sectors) + ")"
                             : num(a.wavefronts) + " wavefronts (" + num(a.ideal_wavefronts) + ")";
    if (!a.exact) metric = "~" + metric;
    std::snprintf(line, sizeof line, "  %-26s %-10s %-18s %12lld %6s %-22s %s\n", where(a.loc).c_str(),
                  a.memory.c_str(), kind(a).c_str(), static_cast<long long>(a.requests), num(a.lanes).c_str(),
                  metric.c_str(), a.hint.c_str());
    o << line;
  }
  for (const auto& b : branches) {
    if (b.divergent == 0 && b.exact) continue;
    std::snprintf(line, sizeof line, "  %-26s %-10s %-18s %12lld %6s %s%lld of them split a warp\n",
                  where(b.loc).c_str(), "", b.what.c_str(), static_cast<long long>(b.executions), "",
                  b.exact ? "" : "~", static_cast<long long>(b.divergent));
    o << line;
  }
  o << "  global memory " << num(global_bytes / 1e6) << " MB, " << num(flops / 1e6) << " MFLOP (" << num(intensity())
    << " FLOP/byte); work " << num(work) << " warp steps, span " << num(span) << " per block; analysed in "
    << num(analysis_ms) << " ms\n";
  return o.str();
}

std::string CostReport::json() const {
  nlohmann::json j;
  j["kernel"] = kernel;
  j["blocks"] = blocks;
  j["threads_per_block"] = threads_per_block;
  j["sampled_blocks"] = sampled_blocks;
  j["exact"] = exact;
  j["global_bytes"] = global_bytes;
  j["flops"] = flops;
  j["intensity"] = intensity();
  j["work"] = work;
  j["span"] = span;
  j["analysis_ms"] = analysis_ms;
  j["accesses"] = nlohmann::json::array();
  for (const auto& a : accesses) {
    nlohmann::json x;
    x["file"] = a.loc.file ? a.loc.file : "";
    x["line"] = a.loc.line;
    x["memory"] = a.memory;
    x["space"] = a.space == MemSpace::Global ? "global" : "shared";
    x["write"] = a.write;
    x["bytes"] = a.bytes;
    x["requests"] = a.requests;
    x["lanes"] = a.lanes;
    if (a.space == MemSpace::Global) {
      x["sectors_per_request"] = a.sectors;
      x["ideal_sectors_per_request"] = a.ideal_sectors;
    } else {
      x["wavefronts_per_request"] = a.wavefronts;
      x["ideal_wavefronts_per_request"] = a.ideal_wavefronts;
      x["conflict_ways"] = a.conflict_ways;
    }
    x["exact"] = a.exact;
    x["hint"] = a.hint;
    j["accesses"].push_back(std::move(x));
  }
  j["branches"] = nlohmann::json::array();
  for (const auto& b : branches) {
    nlohmann::json x;
    x["file"] = b.loc.file ? b.loc.file : "";
    x["line"] = b.loc.line;
    x["what"] = b.what;
    x["executions"] = b.executions;
    x["divergent"] = b.divergent;
    x["exact"] = b.exact;
    j["branches"].push_back(std::move(x));
  }
  return j.dump(2);
}

}  // namespace vantage
