// Test helper for the cache's multi-process tests.
//   cache_worker stress DIR SEED OPS LOG   random operations over 20 keys on one directory, through
//                                         the same disk path KernelCache uses; entries are synthetic
//                                         and their bytes follow from the key, so any corrupted read
//                                         is caught (exit 3). Logs "S key pid t" / "E key pid t"
//                                         around each compile to LOG (one write per line).
//   cache_worker examples                 gets every example kernel through KernelCache (configured
//                                         from the environment) and prints name, bytes, origin.
//   cache_worker arch ARCH                gets saxpy for ARCH through KernelCache configured from the
//                                         environment; prints its origin and the target of the entry.
//   cache_worker fleet N START            gets N small kernels (fleet_0 ..), starting at START and
//                                         wrapping around, through KernelCache configured from the
//                                         environment (a remote tier, an empty directory); prints
//                                         "index origin xxh64-of-cubin steady-clock-ns" per kernel.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include <xxhash.h>

#include "cache/cache.h"
#include "kernels/paper_kernels.hpp"
#include "scaled_kernel.hpp"

namespace {

using namespace vantage;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::vector<char> content(int key) {
  std::vector<char> bytes(4096 + key * 97);
  std::mt19937 rng(static_cast<unsigned>(key) * 7919u + 1u);
  for (auto& b : bytes) b = static_cast<char>(rng());
  return bytes;
}

int stress(const char* dir, unsigned seed, int ops, const char* log_path) {
  cache::DiskStore store(dir, true);
  if (!store.usable()) {
    std::fprintf(stderr, "store unusable: %s\n", store.problem().c_str());
    return 2;
  }
  int log = ::open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  auto note = [&](char what, int key) {
    char line[96];
    int n = std::snprintf(line, sizeof line, "%c %d %d %lld\n", what, key, static_cast<int>(::getpid()),
                          static_cast<long long>(now_ns()));
    if (::write(log, line, static_cast<std::size_t>(n)) != n) std::perror("log");
  };
  std::mt19937 rng(seed);
  for (int i = 0; i < ops; ++i) {
    // About a millisecond per operation keeps every worker alive for a few hundred milliseconds,
    // so the test's kills land in the middle of the work.
    std::this_thread::sleep_for(std::chrono::microseconds(500 + rng() % 1000));
    int key = static_cast<int>(rng() % 20);
    int what = static_cast<int>(rng() % 10);
    if (what == 9) {
      store.sweep(std::chrono::seconds(3600));
      continue;
    }
    std::string name = "k" + std::to_string(1000 + key) + "0000";
    cache::Key k = cache::make_key({name});
    auto r = cache::get_or_produce(
        store, name, k,
        [&] {
          note('S', key);
          std::this_thread::sleep_for(std::chrono::milliseconds(2 + rng() % 6));
          cache::Entry e;
          e.key = k;
          e.cubin = content(key);
          e.meta["key"] = std::to_string(key);
          note('E', key);
          return e;
        },
        std::chrono::seconds(60), std::int64_t{1} << 40);
    if (!r.entry || r.entry->cubin != content(key) || r.entry->meta["key"] != std::to_string(key)) {
      std::fprintf(stderr, "corrupted read of key %d\n", key);
      return 3;
    }
    if (!r.read_problem.empty()) {
      std::fprintf(stderr, "bad entry seen: %s\n", r.read_problem.c_str());
      return 4;
    }
  }
  return 0;
}

int examples_mode() {
  KernelCache cache;
  int failed = 0;
  for (const auto& ex : examples::all()) {
    try {
      auto k = cache.get(ex.build(), ex.spec());
      std::printf("%s %zu %s\n", ex.name.c_str(), k->cubin.size(), k->origin.c_str());
    } catch (const std::exception& e) {
      std::printf("%s FAILED %s\n", ex.name.c_str(), e.what());
      ++failed;
    }
  }
  return failed == 0 ? 0 : 1;
}

/// Kernel `i` of the fleet test: its own name and scale, so its own source.
Kernel fleet_kernel(int i) {
  return test_support::scaled_saxpy("fleet_" + std::to_string(i), 1.0f + static_cast<float>(i), 128);
}

int arch_mode(const char* name) {
  auto arch = parse_arch(name);
  if (!arch) return 2;
  try {
    auto k = KernelCache().get(examples::saxpy(), Spec{}.with_arch(*arch));
    std::printf("%s %s %s\n", k->origin.c_str(), arch_name(k->spec.arch), k->ptx.empty() ? "no-ptx" : "ptx");
    return 0;
  } catch (const std::exception& e) {
    std::printf("FAILED %s\n", e.what());
    return 1;
  }
}

int fleet_mode(int n, int start) {
  KernelCache cache;
  int failed = 0;
  for (int j = 0; j < n; ++j) {
    const int i = (start + j) % n;
    try {
      auto k = cache.get(fleet_kernel(i), Spec{});
      std::printf("%d %s %016llx %lld\n", i, k->origin.c_str(),
                  static_cast<unsigned long long>(XXH3_64bits(k->cubin.data(), k->cubin.size())),
                  static_cast<long long>(now_ns()));
    } catch (const std::exception& e) {
      std::printf("%d FAILED %s\n", i, e.what());
      ++failed;
    }
    std::fflush(stdout);
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 6 && std::strcmp(argv[1], "stress") == 0)
    return stress(argv[2], static_cast<unsigned>(std::atoi(argv[3])), std::atoi(argv[4]), argv[5]);
  if (argc == 2 && std::strcmp(argv[1], "examples") == 0) return examples_mode();
  if (argc == 3 && std::strcmp(argv[1], "arch") == 0) return arch_mode(argv[2]);
  if (argc == 4 && std::strcmp(argv[1], "fleet") == 0) return fleet_mode(std::atoi(argv[2]), std::atoi(argv[3]));
  std::fprintf(stderr, "usage: cache_worker stress DIR SEED OPS LOG | examples | arch ARCH | fleet N START\n");
  return 2;
}
