// Example: build and check every example kernel of the perspectives paper, print each IR and what
// the checker found. Exits non-zero if any kernel does not check.
#include <cstdio>
#include <cstring>

#include "kernels/paper_kernels.hpp"

int main(int argc, char** argv) {
  bool quiet = argc > 1 && std::strcmp(argv[1], "--quiet") == 0;
  int failed = 0;
  for (const auto& ex : vantage::examples::all()) {
    try {
      vantage::Kernel k = ex.build();
      if (!quiet) std::printf("%s\n", k.ir_text().c_str());
      std::printf("%-16s checked   shared %5lld B  obligations %zu  (%s)\n", ex.name.c_str(),
                  static_cast<long long>(k.shared_bytes()), k.obligations().size(), ex.what.c_str());
      for (const auto& o : k.obligations())
        std::printf("    obligation %s: %s\n", o.str().c_str(), o.description.c_str());
    } catch (const vantage::CheckError& e) {
      ++failed;
      std::printf("%-16s REJECTED\n%s", ex.name.c_str(), vantage::render_all(e.diagnostics()).c_str());
    }
  }
  std::printf("%zu kernels, %d rejected\n", vantage::examples::all().size(), failed);
  return failed == 0 ? 0 : 1;
}
