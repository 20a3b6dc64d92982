// Example: build and check every example kernel (the perspectives paper's figures and more), compile
// each with NVRTC when it is available, and print what happened. `--emit=ir|lowered|cuda|ptx|sass` prints
// that stage of every kernel instead; `--quiet` leaves out the IR. Exits non-zero on any failure.
#include <cstdio>
#include <cstring>

#include "kernels/paper_kernels.hpp"
#include "kernels/stages.hpp"

int main(int argc, char** argv) {
  using namespace vantage;
  bool quiet = false;
  std::vector<char*> args = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quiet") == 0)
      quiet = true;
    else
      args.push_back(argv[i]);
  }
  int failed = 0;
  bool nvrtc = nvrtc_available();
  for (const auto& ex : examples::all()) {
    try {
      Kernel k = ex.build();
      if (args.size() > 1) {
        std::printf("// ===== %s\n", ex.name.c_str());
        int rc = examples::emit_stage(static_cast<int>(args.size()), args.data(), k);
        if (rc != 0) failed++;
        continue;
      }
      if (!quiet) std::printf("%s\n", k.ir_text().c_str());
      std::printf("%-16s checked   shared %5lld B  obligations %zu  (%s)\n", ex.name.c_str(),
                  static_cast<long long>(k.shared_bytes()), k.obligations().size(), ex.what.c_str());
      if (nvrtc) {
        Compiled c = compile(k, ex.spec());
        std::printf("%-16s compiled  %s %6zu-byte cubin in %6.1f ms, %d barrier(s)%s\n", "", arch_name(c.spec.arch),
                    c.cubin.size(), c.compile_ms, c.spec.barriers, c.log.empty() ? "" : ", with NVRTC warnings");
        if (!c.log.empty()) ++failed;
      }
    } catch (const CheckError& e) {
      ++failed;
      std::printf("%-16s REJECTED\n%s", ex.name.c_str(), render_all(e.diagnostics()).c_str());
    } catch (const std::exception& e) {
      ++failed;
      std::printf("%-16s FAILED: %s\n", ex.name.c_str(), e.what());
    }
  }
  if (args.size() == 1)
    std::printf("%zu kernels, %d failed%s\n", examples::all().size(), failed,
                nvrtc ? "" : " (NVRTC not available: checked only)");
  return failed == 0 ? 0 : 1;
}
