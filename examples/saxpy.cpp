// Example: build and check saxpy, print its IR. Exits non-zero if the kernel does not check.
#include <cstdio>

#include "kernels/paper_kernels.hpp"

int main() {
  try {
    vantage::Kernel k = vantage::examples::saxpy();
    std::printf("%s", k.ir_text().c_str());
    std::printf("saxpy: checked, structural hash %016llx, %zu obligation(s)\n",
                static_cast<unsigned long long>(k.structural_hash()), k.obligations().size());
    return 0;
  } catch (const vantage::CheckError& e) {
    std::fprintf(stderr, "%s", vantage::render_all(e.diagnostics()).c_str());
    return 1;
  }
}
