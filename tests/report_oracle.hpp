// The cost report against the interpreter's measurement of the same launch (docs/report.md): every
// number the report calls exact must be what the launch did, request by request, as the interpreter
// counts it when it runs (InterpreterOptions::measure). Accesses and branches are matched by their
// builder line, memory and kind; several at one line are compared by their sums.
#pragma once

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <tuple>

#include "vantage/vantage.hpp"

namespace vantage::test_support {

struct ReportTotals {
  double requests = 0, lanes = 0, metric = 0, ideal = 0;
  int ways = 1;
  bool exact = true;
};
using AccessKey =
    std::tuple<std::string, int, std::string, bool, bool, int>;  // file, line, memory, shared, write, bytes

inline std::map<AccessKey, ReportTotals> access_totals(const CostReport& r) {
  std::map<AccessKey, ReportTotals> out;
  for (const auto& a : r.accesses) {
    ReportTotals& t =
        out[{a.loc.file ? a.loc.file : "", a.loc.line, a.memory, a.space == MemSpace::Shared, a.write, a.bytes}];
    const double n = static_cast<double>(a.requests);
    t.requests += n;
    t.lanes += a.lanes * n;
    t.metric += (a.space == MemSpace::Global ? a.sectors : a.wavefronts) * n;
    t.ideal += (a.space == MemSpace::Global ? a.ideal_sectors : a.ideal_wavefronts) * n;
    t.ways = std::max(t.ways, a.conflict_ways);
    t.exact = t.exact && a.exact;
  }
  return out;
}

/// What differs between `predicted` (kernel.report) and `measured` (the same launch measured on the
/// interpreter) where the prediction says it is exact; empty when nothing does.
inline std::string report_mismatches(const CostReport& predicted, const CostReport& measured) {
  std::ostringstream o;
  auto near = [](double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b)); };
  const auto p = access_totals(predicted), m = access_totals(measured);
  for (const auto& [key, pt] : p) {
    if (!pt.exact) continue;
    const std::string where = std::get<0>(key) + ":" + std::to_string(std::get<1>(key)) + " " + std::get<2>(key) +
                              (std::get<4>(key) ? " store" : " load");
    auto it = m.find(key);
    if (it == m.end()) {
      if (pt.requests > 0) o << where << ": predicted exactly " << pt.requests << " requests, none made\n";
      continue;
    }
    const ReportTotals& mt = it->second;
    if (!near(pt.requests, mt.requests)) o << where << ": requests " << pt.requests << " vs " << mt.requests << "\n";
    if (!near(pt.lanes, mt.lanes)) o << where << ": lanes " << pt.lanes << " vs " << mt.lanes << "\n";
    if (!near(pt.metric, mt.metric))
      o << where << ": sectors or wavefronts " << pt.metric << " vs " << mt.metric << "\n";
    if (!near(pt.ideal, mt.ideal)) o << where << ": ideal " << pt.ideal << " vs " << mt.ideal << "\n";
    if (std::get<3>(key) && pt.ways != mt.ways)
      o << where << ": conflict ways " << pt.ways << " vs " << mt.ways << "\n";
  }
  if (predicted.exact)
    for (const auto& [key, mt] : m)
      if (!p.count(key))
        o << std::get<0>(key) << ":" << std::get<1>(key) << " " << std::get<2>(key) << ": " << mt.requests
          << " requests made, none predicted\n";
  using BranchKey = std::tuple<std::string, int, std::string>;  // file, line, what
  struct BranchTotals {
    double exec = 0, div = 0;
    bool exact = true;
  };
  std::map<BranchKey, BranchTotals> pb, mb;
  for (const auto* side : {&predicted, &measured})
    for (const auto& b : side->branches) {
      BranchTotals& t = (side == &predicted ? pb : mb)[{b.loc.file ? b.loc.file : "", b.loc.line, b.what}];
      t.exec += static_cast<double>(b.executions);
      t.div += static_cast<double>(b.divergent);
      t.exact = t.exact && b.exact;
    }
  for (const auto& [key, pt] : pb) {
    if (!pt.exact) continue;
    const std::string where = std::get<0>(key) + ":" + std::to_string(std::get<1>(key)) + " " + std::get<2>(key);
    auto it = mb.find(key);
    const BranchTotals mt = it == mb.end() ? BranchTotals{} : it->second;
    if (!near(pt.exec, mt.exec)) o << where << ": evaluated " << pt.exec << " times vs " << mt.exec << "\n";
    if (!near(pt.div, mt.div)) o << where << ": split a warp " << pt.div << " times vs " << mt.div << "\n";
  }
  if (predicted.exact)
    for (const auto& [key, mt] : mb)
      if (!pb.count(key) && mt.exec > 0)
        o << std::get<0>(key) << ":" << std::get<1>(key) << " " << std::get<2>(key) << ": evaluated " << mt.exec
          << " times, never predicted\n";
  return o.str();
}

}  // namespace vantage::test_support
