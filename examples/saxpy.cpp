// Example: saxpy end to end, as the README shows it: build and check the kernel, compile it through
// the kernel cache (NVRTC on a miss, the disk on a hit), run it on the best device of this host (a
// GPU if there is one, else the interpreter), check the result against plain C++ and say what
// happened. `--emit=ir|lowered|cuda|ptx|sass` prints that stage instead. Exits non-zero on any
// failure.
#include <chrono>
#include <cstdio>

#include "kernels/paper_kernels.hpp"
#include "kernels/stages.hpp"

int main(int argc, char** argv) {
  using namespace vantage;
  using clock = std::chrono::steady_clock;
  auto ms = [](clock::time_point a) { return std::chrono::duration<double, std::milli>(clock::now() - a).count(); };
  try {
    auto t0 = clock::now();
    Kernel kernel = examples::saxpy();
    if (int rc = examples::emit_stage(argc, argv, kernel); rc >= 0) return rc;
    std::printf("saxpy: built and checked in %.2f ms (structural hash %016llx)\n", ms(t0),
                static_cast<unsigned long long>(kernel.structural_hash()));

    Device dev = Device::best();  // a GPU if there is one, else the interpreter
    std::printf("saxpy: device %s%s\n", dev.name().c_str(),
                dev.is_gpu() ? "" : (" (no GPU: " + Device::gpu_problem() + ")").c_str());
    if (nvrtc_available()) {
      auto t1 = clock::now();
      auto c = KernelCache::global().get(kernel, Spec{}.with_arch(dev.properties().arch));
      std::printf("saxpy: cubin for %s from the kernel cache (%s, %zu bytes, %d registers) in %.1f ms; cache at %s\n",
                  arch_name(c->spec.arch), c->origin.c_str(), c->cubin.size(), c->registers, ms(t1),
                  KernelCache::global().directory().c_str());
    } else {
      std::printf("saxpy: NVRTC not available here, so no cubin\n");
    }

    const int n = 1000;
    std::vector<float> hx(n), hy(n);
    for (int i = 0; i < n; ++i) {
      hx[static_cast<std::size_t>(i)] = static_cast<float>(i);
      hy[static_cast<std::size_t>(i)] = 2.0f;
    }
    auto x = dev.alloc<float>(n), y = dev.alloc<float>(n);
    x.copy_from(hx);
    y.copy_from(hy);
    const auto& cx = x;  // read-only: x is GlobalPtr<const float>
    auto t2 = clock::now();
    LaunchReport rep = kernel.launch(dev, Grid{(n + 255) / 256, 256}, n, 3.0f, cx, y);
    std::vector<float> got = y.to_vector();  // waits for the device
    double run_ms = ms(t2);
    int wrong = 0;
    for (int i = 0; i < n; ++i)
      if (got[static_cast<std::size_t>(i)] != 3.0f * static_cast<float>(i) + 2.0f) ++wrong;
    std::printf("saxpy: ran %lld threads on %s in %.2f ms: %s\n", static_cast<long long>(rep.threads),
                dev.name().c_str(), run_ms,
                wrong ? (std::to_string(wrong) + " WRONG elements").c_str() : "every element right");
    LaunchStats s = launch_stats(kernel);
    std::printf("saxpy: %lld specialization(s) made in %.1f ms\n", static_cast<long long>(s.compiles), s.compile_ms);
    return wrong ? 1 : 0;
  } catch (const CheckError& e) {
    std::fprintf(stderr, "%s", render_all(e.diagnostics()).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "saxpy: %s\n", e.what());
  }
  return 1;
}
