// Vantage cost report rendering: the table and the JSON form of a CostReport (docs/report.md).
#include <algorithm>
#include <cmath>
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
  if (measured)
    o << "measured cost of kernel " << kernel << ": " << blocks << " blocks of " << threads_per_block
      << " threads (every request counted as it ran on the interpreter)\n";
  else
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
  if (measured) {
    o << "  global memory " << num(global_bytes / 1e6) << " MB\n";
    return o.str();
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
  j["measured"] = measured;
  j["global_bytes"] = global_bytes;
  j["flops"] = flops;
  j["intensity"] = intensity();
  j["work"] = work;
  j["span"] = span;
  j["looped"] = looped;
  j["exchanges"] = exchanges;
  j["barriers"] = barriers;
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
    x["compiler_may_merge"] = a.compiler_may_merge;
    x["async_copy"] = a.async_copy;
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

double CostReport::cpu_bytes() const {
  double bytes = global_bytes;
  for (const auto& b : buffers) {
    if (!b.written || b.read) continue;
    for (const auto& a : accesses)
      if (a.space == MemSpace::Global && a.write && a.memory == b.name)
        bytes += static_cast<double>(a.requests) * a.sectors * 32.0;
  }
  return bytes;
}

Placement CostReport::placement(const PlacementModel& m) const {
  Placement p;
  const double threads = std::max(1.0, std::min<double>(m.cpu_threads, static_cast<double>(blocks)));
  double footprint = 0;
  for (const auto& b : buffers) footprint += b.bytes;
  const double per_byte = footprint <= m.cpu_cache_bytes ? m.cpu_ns_per_byte_cached : m.cpu_ns_per_byte;
  const double cpu_ns = work * m.cpu_ns_per_step + looped * m.cpu_ns_per_loop_step + exchanges * m.cpu_ns_per_exchange +
                        barriers * m.cpu_ns_per_barrier + cpu_bytes() * per_byte;
  p.cpu_ms = cpu_ns / threads * 1e-6 + m.cpu_launch_us * 1e-3;
  // Brent's bound in warp steps: the work spread over the issue rate, plus the span of a block once
  // per wave of blocks the GPU holds at a time.
  const double resident = std::max(1.0, std::floor(static_cast<double>(m.gpu_threads_per_sm) /
                                                   std::max<double>(1, static_cast<double>(threads_per_block))));
  const double waves = std::ceil(static_cast<double>(blocks) / (m.gpu_sms * resident));
  const double memory_s = global_bytes / m.gpu_bytes_per_s, compute_s = flops / m.gpu_flops,
               issue_s = work / m.gpu_steps_per_s + span * waves * m.gpu_step_s;
  p.gpu_kernel_ms = std::max({memory_s, compute_s, issue_s}) * 1e3 + m.gpu_launch_us * 1e-3;
  double in = 0, out = 0;
  int copies = 0;
  for (const auto& b : buffers) {
    if (b.read) in += b.bytes, ++copies;
    if (b.written) out += b.bytes, ++copies;
  }
  p.transfer_ms = ((in + out) / m.pcie_bytes_per_s) * 1e3 + copies * m.transfer_us * 1e-3;
  p.gpu_ms = p.gpu_kernel_ms + p.transfer_ms;
  p.gpu_faster = p.gpu_ms < p.cpu_ms;
  p.cpu_figures = m.cpu_figures;
  p.gpu_figures = m.gpu_figures;
  return p;
}

std::string Placement::text() const {
  const std::string how = cpu_figures == "measured" ? " (its figures measured on this host)" : "";
  const std::string gpu_how = gpu_figures == "measured" ? "; copies and launch measured on this GPU" : "";
  return "placement: the CPU backend " + num(cpu_ms) + " ms" + how + "; the GPU " + num(gpu_ms) + " ms (kernel " +
         num(gpu_kernel_ms) + " ms, copies " + num(transfer_ms) + " ms" + gpu_how + "): run it on the " +
         (gpu_faster ? "GPU" : "CPU backend");
}

std::string CostReport::roofline_svg(const PlacementModel& m) const {
  // Log-log axes: intensity 1/64 .. 1024 FLOP/byte, 1e9 .. 1e15 FLOP/s.
  const double x0 = std::log10(1.0 / 64), x1 = std::log10(1024.0), y0 = 9, y1 = 15;
  const double W = 640, H = 420, L = 70, B = 50, R = 20, T = 30;
  auto X = [&](double ai) { return L + (std::log10(ai) - x0) / (x1 - x0) * (W - L - R); };
  auto Y = [&](double f) { return H - B - (std::log10(f) - y0) / (y1 - y0) * (H - B - T); };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << W / 2 << "\" y=\"18\" text-anchor=\"middle\">roofline of " << m.gpu << ": " << kernel
    << "</text>\n";
  for (int e = -1; e <= 3; ++e) {
    const double ai = std::pow(10.0, e);
    o << "<line x1=\"" << X(ai) << "\" y1=\"" << T << "\" x2=\"" << X(ai) << "\" y2=\"" << H - B
      << "\" stroke=\"#ddd\"/><text x=\"" << X(ai) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">" << num(ai)
      << "</text>\n";
  }
  for (int e = 9; e <= 15; ++e)
    o << "<line x1=\"" << L << "\" y1=\"" << Y(std::pow(10.0, e)) << "\" x2=\"" << W - R << "\" y2=\""
      << Y(std::pow(10.0, e)) << "\" stroke=\"#ddd\"/><text x=\"" << L - 6 << "\" y=\"" << Y(std::pow(10.0, e)) + 4
      << "\" text-anchor=\"end\">1e" << e << "</text>\n";
  o << "<text x=\"" << W / 2 << "\" y=\"" << H - 12 << "\" text-anchor=\"middle\">FLOP per byte of global "
    << "memory</text>\n<text x=\"16\" y=\"" << H / 2 << "\" transform=\"rotate(-90 16 " << H / 2
    << ")\" text-anchor=\"middle\">FLOP/s</text>\n";
  // The roof: bandwidth x intensity up to the ridge, then the compute peak.
  const double ridge = m.gpu_flops / m.gpu_bytes_per_s, lo = std::pow(10.0, x0), hi = std::pow(10.0, x1);
  o << "<polyline fill=\"none\" stroke=\"#c33\" stroke-width=\"2\" points=\"" << X(lo) << ","
    << Y(std::max(1e9, lo * m.gpu_bytes_per_s)) << " " << X(ridge) << "," << Y(m.gpu_flops) << " " << X(hi) << ","
    << Y(m.gpu_flops) << "\"/>\n";
  const Placement p = placement(m);
  const double ai = intensity(), achieved = p.gpu_kernel_ms > 0 ? flops / (p.gpu_kernel_ms * 1e-3) : 0;
  if (ai > 0 && achieved > 0) {
    const double cx = X(std::clamp(ai, lo, hi)), cy = Y(std::clamp(achieved, 1e9, 1e15));
    o << "<circle cx=\"" << cx << "\" cy=\"" << cy << "\" r=\"5\" fill=\"#36c\"/><text x=\"" << cx + 8 << "\" y=\""
      << cy - 6 << "\">" << kernel << " (" << num(ai) << " FLOP/B, " << num(achieved / 1e12)
      << " TFLOP/s estimated)</text>\n";
  } else {
    o << "<text x=\"" << L + 10 << "\" y=\"" << T + 20 << "\">no floating-point work: not on the roofline</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace vantage
