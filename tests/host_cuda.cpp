#include "host_cuda.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "test_support.hpp"

namespace vantage::test_support {
namespace {

/// CUDA's integer bit intrinsics as its documentation defines them, written with the compiler's
/// builtins rather than jit/ir/eval, so that a run compares the generated code with eval's definition.
constexpr const char* kBitsShim = R"(
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i, x >>= 1) r = (r << 1) | (x & 1u);
  return r;
}
inline unsigned long long __brevll(unsigned long long x) {
  unsigned long long r = 0;
  for (int i = 0; i < 64; ++i, x >>= 1) r = (r << 1) | (x & 1ull);
  return r;
}
)";

/// What the generated code of a one-thread integer kernel needs from CUDA, on the host: thread and
/// block 0, the device functions `min` and `max`, and what a checked access records with.
constexpr const char* kShim = R"(#include <algorithm>
#include <iostream>
#define __device__
#define __global__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
struct vt_host_dim3 { unsigned x = 0, y = 0, z = 0; };
static vt_host_dim3 threadIdx, blockIdx, blockDim, gridDim;
using std::max;
using std::min;
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long cmp, unsigned long long v) {
  unsigned long long old = *p;
  if (old == cmp) *p = v;
  return old;
}
inline void __threadfence_system() {}
)";

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The source with its entry point made an ordinary function, so that each kernel can live in a
/// namespace of its own (its helpers have the same names as the next kernel's).
std::string hosted(std::string source) {
  const std::string c_linkage = "extern \"C\" ";
  for (auto at = source.find(c_linkage); at != std::string::npos; at = source.find(c_linkage, at))
    source.erase(at, c_linkage.size());
  return source;
}

/// What generated code needs from CUDA to run a whole launch on host threads (run_launches_on_host).
constexpr const char* kThreadsShim = R"(#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>
#include <cstdio>
// A kernel's printf (Scope::print) goes to standard error, a call's text whole (the stream's own
// lock): standard output carries the launches' results.
#define printf(...) std::fprintf(stderr, __VA_ARGS__)
#define __device__
#define __global__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
struct vt_host_dim3 { unsigned x = 0, y = 0, z = 1; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) longlong2 { long long x, y; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
static thread_local vt_host_dim3 threadIdx, blockIdx;
static vt_host_dim3 blockDim, gridDim;
using std::max;
using std::min;
struct vt_host_warp {
  std::unique_ptr<std::barrier<>> bar;
  unsigned long long slot[32];
};
static std::barrier<>* vt_host_block;
static std::vector<vt_host_warp>* vt_host_warps;
static std::mutex vt_host_part_mutex;
static std::map<std::pair<unsigned, unsigned>, std::unique_ptr<std::barrier<>>>* vt_host_parts;
inline vt_host_warp& vt_host_my_warp() { return (*vt_host_warps)[threadIdx.x / 32]; }
inline void __syncthreads() { vt_host_block->arrive_and_wait(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  if (mask == 0xffffffffu) return vt_host_my_warp().bar->arrive_and_wait();
  std::barrier<>* b;
  {
    std::lock_guard<std::mutex> g(vt_host_part_mutex);
    auto& p = (*vt_host_parts)[{threadIdx.x / 32, mask}];
    if (!p) p = std::make_unique<std::barrier<>>(__builtin_popcount(mask));
    b = p.get();
  }
  b->arrive_and_wait();
}
/// Every lane offers `v`; the result of `pick` over the warp's offers, after all have offered.
template <class T, class F>
auto vt_host_exchange(T v, F pick) {
  vt_host_warp& w = vt_host_my_warp();
  unsigned long long bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  w.slot[threadIdx.x % 32] = bits;
  w.bar->arrive_and_wait();
  auto r = pick(w.slot);
  w.bar->arrive_and_wait();
  return r;
}
template <class T>
T vt_host_lane(const unsigned long long* slot, int lane) {
  T r;
  std::memcpy(&r, &slot[lane], sizeof(T));
  return r;
}
template <class T>
T __shfl_sync(unsigned, T v, int src, int width = 32) {
  int lane = threadIdx.x % 32, from = (lane & ~(width - 1)) + (src & (width - 1));
  return vt_host_exchange(v, [&](const unsigned long long* s) { return vt_host_lane<T>(s, from); });
}
template <class T>
T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
  int lane = threadIdx.x % 32, from = lane ^ mask;
  if ((from & ~(width - 1)) != (lane & ~(width - 1))) from = lane;
  return vt_host_exchange(v, [&](const unsigned long long* s) { return vt_host_lane<T>(s, from); });
}
template <class T>
T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  int lane = threadIdx.x % 32, from = (lane % width) + static_cast<int>(delta) < width ? lane + static_cast<int>(delta) : lane;
  return vt_host_exchange(v, [&](const unsigned long long* s) { return vt_host_lane<T>(s, from); });
}
template <class T>
T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  int lane = threadIdx.x % 32, from = (lane % width) - static_cast<int>(delta) >= 0 ? lane - static_cast<int>(delta) : lane;
  return vt_host_exchange(v, [&](const unsigned long long* s) { return vt_host_lane<T>(s, from); });
}
inline unsigned __ballot_sync(unsigned, int pred) {
  return vt_host_exchange(pred != 0, [](const unsigned long long* s) {
    unsigned m = 0;
    for (int l = 0; l < 32; ++l) m |= (s[l] & 1u) << l;
    return m;
  });
}
inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) == 0xffffffffu; }
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0u; }
template <class T> T atomicAdd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
template <class T> T atomicExch(T* p, T v) { return std::atomic_ref<T>(*p).exchange(v); }
template <class T> T atomicAnd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_and(v); }
template <class T> T atomicOr(T* p, T v) { return std::atomic_ref<T>(*p).fetch_or(v); }
template <class T> T atomicXor(T* p, T v) { return std::atomic_ref<T>(*p).fetch_xor(v); }
template <class T> T atomicMax(T* p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (old < v && !a.compare_exchange_weak(old, v)) {}
  return old;
}
template <class T> T atomicMin(T* p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (v < old && !a.compare_exchange_weak(old, v)) {}
  return old;
}
template <class T> T atomicCAS(T* p, T cmp, T v) {
  std::atomic_ref<T>(*p).compare_exchange_strong(cmp, v);
  return cmp;
}
// The scoped forms: host threads share one memory, so every scope is the same atomic.
#define VT_HOST_SCOPED(op)                                                   \
  template <class T> T op##_block(T* p, T v) { return op(p, v); }           \
  template <class T> T op##_system(T* p, T v) { return op(p, v); }
VT_HOST_SCOPED(atomicAdd) VT_HOST_SCOPED(atomicExch) VT_HOST_SCOPED(atomicMax) VT_HOST_SCOPED(atomicMin)
VT_HOST_SCOPED(atomicAnd) VT_HOST_SCOPED(atomicOr) VT_HOST_SCOPED(atomicXor)
template <class T> T atomicCAS_block(T* p, T cmp, T v) { return atomicCAS(p, cmp, v); }
template <class T> T atomicCAS_system(T* p, T cmp, T v) { return atomicCAS(p, cmp, v); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
// The wrapping counters (CUDA's atomicInc and atomicDec on unsigned) and the compiler's __nv_atomic
// builtins, with their orderings as the C++ memory orders of the same names.
inline unsigned vt_host_wrap(unsigned* p, unsigned v, bool inc) {
  std::atomic_ref<unsigned> a(*p);
  unsigned old = a.load();
  while (!a.compare_exchange_weak(old, inc ? (old >= v ? 0u : old + 1u) : (old == 0u || old > v ? v : old - 1u))) {}
  return old;
}
inline unsigned atomicInc(unsigned* p, unsigned v) { return vt_host_wrap(p, v, true); }
inline unsigned atomicDec(unsigned* p, unsigned v) { return vt_host_wrap(p, v, false); }
inline unsigned atomicInc_block(unsigned* p, unsigned v) { return atomicInc(p, v); }
inline unsigned atomicInc_system(unsigned* p, unsigned v) { return atomicInc(p, v); }
inline unsigned atomicDec_block(unsigned* p, unsigned v) { return atomicDec(p, v); }
inline unsigned atomicDec_system(unsigned* p, unsigned v) { return atomicDec(p, v); }
enum { __NV_ATOMIC_RELAXED, __NV_ATOMIC_CONSUME, __NV_ATOMIC_ACQUIRE, __NV_ATOMIC_RELEASE, __NV_ATOMIC_ACQ_REL };
enum { __NV_THREAD_SCOPE_THREAD, __NV_THREAD_SCOPE_BLOCK, __NV_THREAD_SCOPE_CLUSTER, __NV_THREAD_SCOPE_DEVICE,
       __NV_THREAD_SCOPE_SYSTEM };
inline std::memory_order vt_host_order(int o) {
  return o == __NV_ATOMIC_ACQUIRE   ? std::memory_order_acquire
         : o == __NV_ATOMIC_RELEASE ? std::memory_order_release
         : o == __NV_ATOMIC_ACQ_REL ? std::memory_order_acq_rel
                                    : std::memory_order_relaxed;
}
template <class T> void __nv_atomic_load(T* p, T* v, int o, int) { *v = std::atomic_ref<T>(*p).load(vt_host_order(o)); }
template <class T> void __nv_atomic_store(T* p, T* v, int o, int) { std::atomic_ref<T>(*p).store(*v, vt_host_order(o)); }
template <class T> void __nv_atomic_exchange(T* p, T* v, T* old, int o, int) {
  *old = std::atomic_ref<T>(*p).exchange(*v, vt_host_order(o));
}
template <class T> bool __nv_atomic_compare_exchange(T* p, T* c, T* v, bool, int o, int f, int) {
  return std::atomic_ref<T>(*p).compare_exchange_strong(*c, *v, vt_host_order(o), vt_host_order(f));
}
template <class T> T __nv_atomic_fetch_add(T* p, T v, int o, int) {
  return std::atomic_ref<T>(*p).fetch_add(v, vt_host_order(o));
}
template <class T> T __nv_atomic_fetch_and(T* p, T v, int o, int) {
  return std::atomic_ref<T>(*p).fetch_and(v, vt_host_order(o));
}
template <class T> T __nv_atomic_fetch_or(T* p, T v, int o, int) {
  return std::atomic_ref<T>(*p).fetch_or(v, vt_host_order(o));
}
template <class T> T __nv_atomic_fetch_xor(T* p, T v, int o, int) {
  return std::atomic_ref<T>(*p).fetch_xor(v, vt_host_order(o));
}
template <class T> T __nv_atomic_fetch_min(T* p, T v, int o, int) {
  std::atomic_ref<T> a(*p);
  T old = a.load(std::memory_order_relaxed);
  while (v < old && !a.compare_exchange_weak(old, v, vt_host_order(o), std::memory_order_relaxed)) {}
  return old;
}
template <class T> T __nv_atomic_fetch_max(T* p, T v, int o, int) {
  std::atomic_ref<T> a(*p);
  T old = a.load(std::memory_order_relaxed);
  while (old < v && !a.compare_exchange_weak(old, v, vt_host_order(o), std::memory_order_relaxed)) {}
  return old;
}
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
/// Runs `body` as a launch: the blocks in turn, every thread of a block on a host thread of its own.
/// A thread that returns leaves its block's and its warp's barriers, as an exited GPU thread does.
template <class F>
void vt_host_launch(int blocks, int threads, F body) {
  blockDim.x = static_cast<unsigned>(threads);
  gridDim.x = static_cast<unsigned>(blocks);
  for (int b = 0; b < blocks; ++b) {
    std::barrier<> block(threads);
    std::vector<vt_host_warp> warps(static_cast<std::size_t>((threads + 31) / 32));
    for (std::size_t w = 0; w < warps.size(); ++w)
      warps[w].bar = std::make_unique<std::barrier<>>(std::min(32, threads - 32 * static_cast<int>(w)));
    std::map<std::pair<unsigned, unsigned>, std::unique_ptr<std::barrier<>>> parts;
    vt_host_block = &block;
    vt_host_warps = &warps;
    vt_host_parts = &parts;
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        threadIdx.x = static_cast<unsigned>(t);
        blockIdx.x = static_cast<unsigned>(b);
        body();
        vt_host_block->arrive_and_drop();
        vt_host_my_warp().bar->arrive_and_drop();
      });
    for (auto& t : ts) t.join();
  }
}
template <class T>
std::vector<T> vt_host_read(std::istream& in) {
  std::size_t n = 0;
  in >> n;
  std::vector<T> v(n);
  for (T& x : v) {
    std::string word;  // strtod reads what %.17g writes of a NaN or an infinity; operator>> does not
    in >> word;
    char* end = nullptr;
    const double d = std::strtod(word.c_str(), &end);
    if (!in || word.empty() || *end != '\0') {
      std::fprintf(stderr, "the harness cannot read an element '%s'\n", word.c_str());
      std::exit(3);
    }
    x = static_cast<T>(d);
  }
  return v;
}
template <class T>
void vt_host_print(const std::vector<T>& v) {
  std::cout << " " << v.size();
  for (const T& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      int bits;
      std::memcpy(&bits, &x, 4);
      std::cout << " " << bits;
    } else {
      // As the reader takes them: 64-bit words past LLONG_MAX (a scan's status bits) as their
      // two's complement, which the reader parses (it stopped at the first such word before).
      std::cout << " " << static_cast<long long>(x);
    }
  }
  std::cout << "\n";
}
)";

/// A double as C++ source that reads back to the same value.
std::string exact(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

/// A host program built and run: its standard output, or why it did not build or finish.
struct Ran {
  bool built = false, finished = false;
  std::string out, err, problem;
};

/// Builds `program` with the host compiler that built the tests and `flags`, and runs it (at most
/// `seconds`, with `env` before the command) with the path of a file holding `input` as its argument.
Ran build_and_run(const std::string& program, const std::string& flags, const std::string& env, int seconds,
                  const std::string& input = "") {
  Ran r;
#ifndef VANTAGE_HOST_CXX
  (void)program, (void)flags, (void)env, (void)seconds, (void)input;
  r.problem = "no host compiler was configured (VANTAGE_HOST_CXX)";
#else
  TempDir dir("vantage_host_cuda");
  const auto src = dir.path / "program.cpp", exe = dir.path / "program", log = dir.path / "log", out = dir.path / "out",
             in = dir.path / "input";
  std::ofstream(src) << program;
  std::ofstream(in) << input;
  std::string build = std::string("'") + VANTAGE_HOST_CXX + "' -std=c++20 -O0 -w " + flags + " -o '" + exe.string() +
                      "' '" + src.string() + "' > '" + log.string() + "' 2>&1";
  if (std::system(build.c_str()) != 0) {
    r.problem = "the host compiler rejected the generated code:\n" + read(log);
    return r;
  }
  r.built = true;
  std::string go = env + " timeout " + std::to_string(seconds) + " '" + exe.string() + "' '" + in.string() + "' > '" +
                   out.string() + "' 2> '" + log.string() + "'";
  int rc = std::system(go.c_str());
  r.out = read(out);
  r.err = read(log);
  r.finished = rc == 0;
  if (rc != 0) {
    int status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.problem = "the run failed (exit status " + std::to_string(status) + (status == 124 ? ": the time limit" : "") +
                "):\n" + read(log);
  }
#endif
  return r;
}

}  // namespace

bool runs_on_host(const std::string& source) {
  for (const char* word : {"asm(", "asm volatile", "extern __shared__", "__half", "__nv_bfloat16", "double"})
    if (source.find(word) != std::string::npos) return false;
  return true;
}

HostLaunches run_launches_on_host(const std::vector<HostLaunch>& launches, HostSanitizer sanitizer) {
  HostLaunches run;
  std::ostringstream program;
  program << kThreadsShim << kBitsShim;
  std::vector<std::string> sources;
  std::vector<std::size_t> space;  // each launch's namespace
  for (const auto& l : launches) {
    auto it = std::find(sources.begin(), sources.end(), l.source);
    space.push_back(static_cast<std::size_t>(it - sources.begin()));
    if (it == sources.end()) {
      program << "namespace vt_case_" << sources.size() << " {\n" << hosted(l.source) << "\n}\n";
      sources.push_back(l.source);
    }
  }
  program << "int main(int, char** argv) {\n  std::ifstream input(argv[1]);\n";
  std::ostringstream input;
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const HostLaunch& l = launches[i];
    program << "  {\n    unsigned long long err[6] = {};\n";
    std::string call, lengths;
    for (std::size_t a = 0; a < l.args.size(); ++a) {
      const HostArg& arg = l.args[a];
      if (!call.empty()) call += ", ";
      if (!arg.buffer) {
        call += "static_cast<" + arg.type + ">(" + exact(arg.scalar) + ")";
        continue;
      }
      // The elements come from the input file, in order: a small program compiles quickly.
      program << "    auto b" << a << " = vt_host_read<" << arg.type << ">(input);\n";
      input << arg.values.size();
      for (double v : arg.values) input << " " << exact(v);
      input << "\n";
      call += "b" + std::to_string(a) + ".data()";
      lengths += ", static_cast<long long>(b" + std::to_string(a) + ".size())";
    }
    program << "    vt_host_launch(" << l.blocks << ", " << l.threads << ", [&] { vt_case_" << space[i]
            << "::" << l.entry << "(" << call << (l.hidden ? lengths + ", err" : "") << "); });\n";
    program << "    std::cout << \"launch " << i << " \" << (err[0] != 0) << \"\\n\";\n";
    for (std::size_t a = 0; a < l.args.size(); ++a)
      if (l.args[a].buffer) program << "    vt_host_print(b" << a << ");\n";
    program << "  }\n";
  }
  program << "}\n";
  const bool thread = sanitizer == HostSanitizer::Thread;
  // Two minutes, and a second more for each launch past a hundred: a sweep by hand batches hundreds
  // (VANTAGE_RANDOM_RUNS), which under the sanitizers on a loaded host ran past a flat limit.
  const int seconds = 120 + static_cast<int>(std::max<std::size_t>(launches.size(), 100) - 100);
  Ran ran =
      build_and_run(program.str(),
                    std::string("-pthread -ffp-contract=off -fno-sanitize-recover=all -fno-omit-frame-pointer ") +
                        (thread ? "-fsanitize=thread,undefined -fno-sanitize=vptr" : "-fsanitize=address,undefined"),
                    thread ? "TSAN_OPTIONS=halt_on_error=1" : "ASAN_OPTIONS=detect_leaks=0", seconds, input.str());
  if (!ran.built) {
    run.problem = ran.problem;
    return run;
  }
  std::istringstream lines(ran.out);
  for (std::string word; lines >> word;) {
    if (word != "launch") break;
    std::size_t index = 0;
    int failed = 0;
    lines >> index >> failed;
    HostLaunchResult r;
    r.check_failed = failed != 0;
    for (const auto& arg : launches[index].args) {
      if (!arg.buffer) continue;
      std::size_t count = 0;
      lines >> count;
      std::vector<long long> values(count);
      for (auto& v : values) lines >> v;
      r.buffers.push_back(std::move(values));
    }
    run.results.push_back(std::move(r));
  }
  if (!ran.finished) {
    run.problem = "after " + std::to_string(run.results.size()) + " launches, " + ran.problem;
    return run;
  }
  run.printed = ran.err;
  run.ok = run.results.size() == launches.size();
  if (!run.ok)
    run.problem =
        "the run printed " + std::to_string(run.results.size()) + " launches of " + std::to_string(launches.size());
  return run;
}

HostRun run_on_host(const std::vector<HostKernel>& kernels) {
  HostRun run;
  std::ostringstream program;
  program << kShim << kBitsShim;
  for (std::size_t i = 0; i < kernels.size(); ++i)
    program << "namespace vt_case_" << i << " {\n" << hosted(kernels[i].source) << "\n}\n";
  program << "int main() {\n";
  for (std::size_t i = 0; i < kernels.size(); ++i)
    for (const auto& args : kernels[i].calls)
      // The kernel's arguments, its output, then the hidden ones: the output's length and the error
      // record (none: a failed check would leave out[0] unwritten).
      program << "  { " << kernels[i].out_type << " out[1] = {}; vt_case_" << i << "::" << kernels[i].entry << "("
              << args << (args.empty() ? "" : ", ") << "out, 1, nullptr); std::cout << +out[0] << '\\n'; }\n";
  program << "}\n";
  Ran ran = build_and_run(program.str(), "-fsanitize=undefined -fno-sanitize-recover=all", "", 60);
  if (!ran.finished) {
    run.problem = ran.problem;
    return run;
  }
  std::istringstream lines(ran.out);
  for (std::string l; std::getline(lines, l);) run.values.push_back(l);
  run.ok = true;
  return run;
}

}  // namespace vantage::test_support
