#include "host_cuda.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "test_support.hpp"

namespace vantage::test_support {
namespace {

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

}  // namespace

HostRun run_on_host(const std::vector<HostKernel>& kernels) {
  HostRun run;
#ifndef VANTAGE_HOST_CXX
  run.problem = "no host compiler was configured (VANTAGE_HOST_CXX)";
  return run;
#else
  TempDir dir("vantage_host_cuda");
  std::ostringstream program;
  program << kShim;
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
  const auto src = dir.path / "kernels.cpp", exe = dir.path / "kernels", log = dir.path / "log";
  std::ofstream(src) << program.str();
  std::string build = std::string("'") + VANTAGE_HOST_CXX + "' -std=c++20 -O0 -w -fsanitize=undefined " +
                      "-fno-sanitize-recover=all -o '" + exe.string() + "' '" + src.string() + "' > '" + log.string() +
                      "' 2>&1";
  if (std::system(build.c_str()) != 0) {
    run.problem = "the host compiler rejected the generated code:\n" + read(log);
    return run;
  }
  const auto out = dir.path / "out";
  std::string go = "timeout 60 '" + exe.string() + "' > '" + out.string() + "' 2> '" + log.string() + "'";
  if (int rc = std::system(go.c_str()); rc != 0) {
    int status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    run.problem = "the run failed (exit status " + std::to_string(status) + (status == 124 ? ": the time limit" : "") +
                  "):\n" + read(log);
    return run;
  }
  std::istringstream lines(read(out));
  for (std::string l; std::getline(lines, l);) run.values.push_back(l);
  run.ok = true;
  return run;
#endif
}

}  // namespace vantage::test_support
