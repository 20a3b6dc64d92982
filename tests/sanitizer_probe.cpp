// The LeakSanitizer crash of issue 7, on purpose: a child process pads the allocator until libnvrtc's
// dynamic-TLS block lands 16 bytes past a 4096-byte boundary, compiles a kernel, and exits; leak
// checking then runs in the child. With the sanitizer defaults (support/sanitizer_defaults.cpp) it
// must exit cleanly. Built and run only in sanitizer builds; exits non-zero on failure.
//
// Why a search: where the block lands depends on how many allocations of its size class came
// before, so the probe learns the address for a padding of 0 and 1 blocks and steers to the one
// address that used to kill the tracer, checking the address it really got each time.
#include <dlfcn.h>
#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/paper_kernels.hpp"

namespace {

// Reachable from a global with no destructor (a vector's would run in exit, before the leak check).
constexpr int kMaxPadding = 1 << 14;
void* g_padding[kMaxPadding];

/// libnvrtc's TLS block on this thread (0 when NVRTC has not touched it).
std::uintptr_t nvrtc_tls() {
  std::uintptr_t found = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        if (info->dlpi_name && std::strstr(info->dlpi_name, "libnvrtc.so") && info->dlpi_tls_data)
          *static_cast<std::uintptr_t*>(out) = reinterpret_cast<std::uintptr_t>(info->dlpi_tls_data);
        return 0;
      },
      &found);
  return found;
}

struct Run {
  std::uintptr_t tls = 0;  ///< where the block landed
  int status = 0;          ///< the child's wait status
};

/// A child that allocates `pad` blocks of `size` bytes, compiles saxpy, reports the block's address
/// and exits normally (the leak check runs then).
Run child(int pad, std::size_t size) {
  int fds[2];
  if (::pipe(fds) != 0) std::exit(3);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    vantage::Kernel k = vantage::examples::saxpy();
    for (int i = 0; i < pad && i < kMaxPadding; ++i) g_padding[i] = std::malloc(size);
    try {
      vantage::compile(k, vantage::Spec{});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "probe: compile failed: %s\n", e.what());
      ::_exit(4);
    }
    std::uintptr_t tls = nvrtc_tls();
    if (::write(fds[1], &tls, sizeof tls) != sizeof tls) ::_exit(5);
    ::close(fds[1]);
    std::exit(0);  // not _exit: the leak check runs in exit
  }
  ::close(fds[1]);
  Run r;
  if (::read(fds[0], &r.tls, sizeof r.tls) != sizeof r.tls) r.tls = 0;
  ::close(fds[0]);
  ::waitpid(pid, &r.status, 0);
  return r;
}

bool clean(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

}  // namespace

int main() {
  if (!vantage::nvrtc_available()) {
    std::printf("probe: NVRTC is not available here; nothing to probe\n");
    return 0;
  }
  for (std::size_t size : {32, 16, 24, 40, 8}) {
    Run a = child(0, size), b = child(1, size);
    if (!clean(a.status) || !clean(b.status) || !a.tls) {
      std::printf("probe: a plain child failed (status %d, %d)\n", a.status, b.status);
      return 1;
    }
    auto step = static_cast<std::intptr_t>(b.tls - a.tls);
    if (step <= 0) continue;  // padding with this size does not move the block
    int pad = 0;
    Run r = a;
    for (int tries = 0; tries < 64 && r.tls % 4096 != 16 && pad < kMaxPadding; ++tries) {
      int k = 1;
      while (k < 4096 && (r.tls + static_cast<std::uintptr_t>(k * step)) % 4096 != 16) ++k;
      pad += k;
      r = child(pad, size);
      if (!r.tls) break;
    }
    if (r.tls % 4096 != 16) continue;
    std::printf("probe: libnvrtc's TLS block at %#zx (16 past a page) after %d blocks of %zu bytes: child %s\n",
                static_cast<std::size_t>(r.tls), pad, size, clean(r.status) ? "exited cleanly" : "FAILED");
    return clean(r.status) ? 0 : 1;
  }
  std::printf("probe: could not steer libnvrtc's TLS block to the address; the allocator changed?\n");
  return 1;
}
