// Example: build and check saxpy, compile it with NVRTC, report what happened.
// `--emit=ir|lowered|cuda|ptx|sass` prints that stage instead. Exits non-zero on any failure.
#include <cstdio>

#include "kernels/paper_kernels.hpp"
#include "kernels/stages.hpp"

int main(int argc, char** argv) {
  using namespace vantage;
  try {
    Kernel k = examples::saxpy();
    if (int rc = examples::emit_stage(argc, argv, k); rc >= 0) return rc;
    std::printf("%s", k.ir_text().c_str());
    std::printf("saxpy: checked, structural hash %016llx, %zu obligation(s)\n",
                static_cast<unsigned long long>(k.structural_hash()), k.obligations().size());
    if (!nvrtc_available()) {
      std::printf("saxpy: NVRTC not available here, so not compiled\n");
      return 0;
    }
    Compiled c = compile(k, Spec{});
    std::printf("saxpy: compiled %s for %s in %.1f ms: %zu-byte cubin, %d barrier(s)\n", c.spec.entry.c_str(),
                arch_name(c.spec.arch), c.compile_ms, c.cubin.size(), c.spec.barriers);
    return c.cubin.empty() ? 1 : 0;
  } catch (const CheckError& e) {
    std::fprintf(stderr, "%s", render_all(e.diagnostics()).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "saxpy: %s\n", e.what());
  }
  return 1;
}
