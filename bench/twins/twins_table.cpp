// Prints the table of Vantage's kernels beside their hand-written twins (twins.hpp) in Markdown, as
// docs/performance.md keeps it. Needs NVRTC and cuobjdump (scripts/setup), no GPU.
//   vantage_twins_table [--arch sm_90] [EXAMPLE...]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>

#include "twins.hpp"

int main(int argc, char** argv) {
  using namespace vantage;
  Arch arch = Arch::SM_90;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::puts(
          "usage: vantage_twins_table [--arch sm_XX] [EXAMPLE...]\n"
          "Compiles each example at its benchmark sizes and its hand-written twin (bench/twins) with NVRTC,\n"
          "disassembles both with cuobjdump and prints what their machine code spends, in Markdown.");
      return 0;
    }
    if (std::strcmp(argv[i], "--arch") == 0 && i + 1 < argc) {
      auto a = parse_arch(argv[++i]);
      if (!a) {
        std::fprintf(stderr, "vantage_twins_table: unknown architecture '%s'\n", argv[i]);
        return 2;
      }
      arch = *a;
      continue;
    }
    only.emplace_back(argv[i]);
  }
  std::vector<twins::Row> rows;
  try {
    for (const auto& t : twins::all()) {
      if (!only.empty() && std::find(only.begin(), only.end(), t.example) == only.end()) continue;
      rows.push_back(twins::compare(t, VANTAGE_TWINS_DIR, arch));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vantage_twins_table: %s\n", e.what());
    return 1;
  }
  std::fputs(twins::markdown(rows).c_str(), stdout);
  return 0;
}
