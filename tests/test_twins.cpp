// Vantage's kernels beside their hand-written twins (bench/twins), without a GPU. Each twin computes
// what its example computes: the twins that are plain CUDA run on host threads (tests/host_cuda)
// at sizes their tiles do not divide and give the example's result on the interpreter to the bit.
// And each example compiled at its benchmark sizes keeps to the two rules of issue 34 against its
// twin: no spill where the twin has none, and, where every access of the example is proven (none
// checked as it runs), a hottest loop with at most 1.10 times the twin's instructions per unit of
// work. The table the comparison makes is printed (docs/performance.md keeps it).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "../bench/twins/twins.hpp"
#include "host_cuda.hpp"
#include "jit/nvrtc/nvrtc.h"
#include "kernels/paper_kernels.hpp"
#include "kernels/runs.hpp"
#include "kernels/stages.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

const std::string kTwinsDir = VANTAGE_SOURCE_DIR "/bench/twins";

std::string twin_source(const std::string& file, const std::map<std::string, std::int64_t>& sizes = {}) {
  std::ifstream in(kTwinsDir + "/" + file);
  std::stringstream s;
  for (const auto& [name, value] : sizes) s << "#define TWIN_" << name << " " << value << "\n";
  s << in.rdbuf();
  return s.str();
}

// ---------------------------------------------------------------- the parser
TEST(Twins, TheDisassemblyIsReadByKindWithItsHottestLoop) {
  // A loop of two FFMAs and a shared load, a guarded exit, a path for diverged warps with a loop of
  // its own (not hot), and the trap after the last exit.
  const std::string dump = R"(
Resource usage:
 Function k:
  REG:40 STACK:0 SHARED:4096 LOCAL:8 CONSTANT[0]:552 TEXTURE:0 SURFACE:0 SAMPLER:0

		Function : k
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0020*/                   LDS.64 R8, [R0] ;
        /*0030*/                   FFMA R1, R8, R9, R1 ;
        /*0040*/                   FFMA R2, R8, R9, R2 ;
        /*0050*/                   ISETP.NE.AND P0, PT, R0, 0x4, PT ;
        /*0060*/               @P0 BRA 0x20 ;
        /*0070*/                   BRA.DIV UR4, 0xc0 ;
        /*0080*/                   STL [R1], R2 ;
        /*0090*/               @P1 EXIT ;
        /*00a0*/                   STG.E desc[UR4][R2.64], R1 ;
        /*00b0*/                   EXIT ;
        /*00c0*/                   FADD R3, R3, R3 ;
        /*00d0*/                   BRA 0xc0 ;
        /*00e0*/                   BRA 0xe0 ;
)";
  twins::Code c = twins::analyse_text(dump, "k");
  EXPECT_EQ(c.registers, 40);
  EXPECT_EQ(c.shared, 4096);
  EXPECT_EQ(c.local, 8);
  EXPECT_EQ(c.instructions, 15);
  EXPECT_EQ(c.kinds["FFMA"], 2);
  EXPECT_EQ(c.kinds["LDG.128"], 1);
  EXPECT_EQ(c.kinds["LDS.64"], 1);
  EXPECT_EQ(c.kinds["STG.32"], 1);
  EXPECT_EQ(c.kinds["PRED"], 1);
  EXPECT_EQ(c.kinds["BRANCH"], 6);
  EXPECT_EQ(c.spills(), 1);
  ASSERT_TRUE(c.has_loop);
  EXPECT_EQ(c.loop_instructions, 5);  // 0x20 .. 0x60, not the diverged warps' loop at 0xc0
  EXPECT_EQ(c.loop_work(), 2);
  EXPECT_EQ(twins::kind_of("HMMA.1688.F32.TF32"), "HMMA");
  EXPECT_EQ(twins::kind_of("MUFU.RCP"), "CONV");
  EXPECT_THROW(twins::analyse_text(dump, "other"), std::runtime_error);
}

// ---------------------------------------------------------------- the twins compute the examples' results
/// The example's result on the interpreter and its twin's on host threads, at one size.
struct Case {
  std::string example;
  std::string file;
  std::map<std::string, std::int64_t> size;
  std::map<std::string, std::int64_t> twin_sizes;  ///< the twin's compile-time sizes (and the example's Spec)
};

std::vector<float> ints_as_floats(std::size_t n, int seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>((i * 7 + seed * 13) % 9) - 4);
  return v;
}

TEST(Twins, PlainTwinsComputeTheirExamplesResultsOnHostThreads) {
  if (!nvrtc::available()) GTEST_SKIP() << "no NVRTC: the examples' sizes need it only for sgemm_vec's Spec";
  const std::vector<Case> cases = {
      {"sgemm_smem", "sgemm.cu", {{"M", 40}, {"N", 33}, {"K", 37}}, {}},
      {"sgemm_reg1d", "sgemm.cu", {{"M", 70}, {"N", 65}, {"K", 19}}, {}},
      {"sgemm_reg2d", "sgemm.cu", {{"M", 70}, {"N", 65}, {"K", 19}}, {}},
      {"sgemm_warptile", "sgemm.cu", {{"M", 70}, {"N", 65}, {"K", 19}}, {}},
      {"sgemm_vec", "sgemm.cu", {{"M", 70}, {"N", 68}, {"K", 36}}, {{"N", 68}, {"K", 36}}},
      {"vec_copy", "copy.cu", {{"n", 1030}}, {}},
      {"saxpy_vec", "copy.cu", {{"n", 1031}}, {}},
      {"transpose", "copy.cu", {{"M", 70}, {"N", 45}}, {}},
      {"transpose_padded", "copy.cu", {{"M", 70}, {"N", 45}}, {}},
      {"stencil", "copy.cu", {{"M", 70}, {"N", 45}}, {}},
      {"block_reduce", "reduce_scan.cu", {{"n", 1000}}, {}},
      {"scan_lookback", "reduce_scan.cu", {{"n", 1000}}, {}},
      {"scan_tiled", "reduce_scan.cu", {{"n", 20000}}, {}},
      {"compact", "device.cu", {{"n", 5000}}, {}},
      {"byte_histogram", "device.cu", {{"n", 9000}}, {}},
  };
  using A = test_support::HostArg;
  std::vector<test_support::HostLaunch> launches;
  std::vector<std::vector<long long>> wants;  // the interpreter's output, as the host run prints it
  for (const auto& c : cases) {
    const examples::Example* ex = nullptr;
    for (const auto& e : examples::all())
      if (e.name == c.example) ex = &e;
    ASSERT_NE(ex, nullptr) << c.example;
    Kernel k = ex->build();
    Spec spec = ex->spec();
    for (const auto& [n, v] : c.twin_sizes) spec.sizes[n] = v;
    const int threads = static_cast<int>(specialize_for(k, spec).threads);
    const int blocks = static_cast<int>(examples::default_blocks(c.example, c.size));
    test_support::HostLaunch l;
    l.source = twin_source(c.file, c.twin_sizes);
    ASSERT_TRUE(test_support::runs_on_host(l.source)) << c.file;
    l.entry = "twin_" + c.example;
    l.blocks = blocks;
    l.threads = threads;
    l.hidden = false;
    const Device interp = Device::interpreter();
    auto bits = [](const std::vector<float>& v) {
      std::vector<long long> b(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) {
        int x;
        std::memcpy(&x, &v[i], 4);
        b[i] = x;
      }
      return b;
    };
    if (c.example.rfind("sgemm", 0) == 0) {
      const int M = static_cast<int>(c.size.at("M")), N = static_cast<int>(c.size.at("N")),
                K = static_cast<int>(c.size.at("K"));
      auto a = ints_as_floats(static_cast<std::size_t>(M * K), 1),
           b = ints_as_floats(static_cast<std::size_t>(K * N), 2);
      auto cm = ints_as_floats(static_cast<std::size_t>(M * N), 3);
      l.args = {A::of("int", M),     A::of("int", N),   A::of("int", K),   A::of("float", 1.5),
                A::of("float", 0.5), A::of("float", a), A::of("float", b), A::of("float", cm)};
      k.launch(interp, Grid{blocks, threads}, M, N, K, 1.5f, 0.5f, std::as_const(a), std::as_const(b), cm);
      wants.push_back(bits(cm));
    } else if (c.example == "vec_copy") {
      const int n = static_cast<int>(c.size.at("n"));
      auto in = ints_as_floats(static_cast<std::size_t>(n), 4);
      std::vector<float> out(static_cast<std::size_t>(n), -9.0f);
      l.args = {A::of("int", n), A::of("float", in), A::of("float", out)};
      k.launch(interp, Grid{blocks, threads}, n, std::as_const(in), out);
      wants.push_back(bits(out));
    } else if (c.example == "saxpy_vec") {
      const int n = static_cast<int>(c.size.at("n"));
      auto x = ints_as_floats(static_cast<std::size_t>(n), 4), y = ints_as_floats(static_cast<std::size_t>(n), 8);
      l.args = {A::of("int", n), A::of("float", 1.5), A::of("float", x), A::of("float", y)};
      k.launch(interp, Grid{blocks, threads}, n, 1.5f, std::as_const(x), y);
      wants.push_back(bits(y));
    } else if (c.example.rfind("transpose", 0) == 0 || c.example == "stencil") {
      const int M = static_cast<int>(c.size.at("M")), N = static_cast<int>(c.size.at("N"));
      auto in = ints_as_floats(static_cast<std::size_t>(M * N), 5);
      std::vector<float> out(static_cast<std::size_t>(M * N), -9.0f);
      l.args = {A::of("int", M), A::of("int", N), A::of("float", in), A::of("float", out)};
      k.launch(interp, Grid{blocks, threads}, M, N, std::as_const(in), out);
      wants.push_back(bits(out));
    } else if (c.example == "block_reduce") {
      const int n = static_cast<int>(c.size.at("n"));
      auto x = ints_as_floats(static_cast<std::size_t>(n), 6);
      std::vector<float> out(static_cast<std::size_t>(blocks), -9.0f);
      l.args = {A::of("int", n), A::of("float", x), A::of("float", out)};
      k.launch(interp, Grid{blocks, threads}, n, std::as_const(x), out);
      wants.push_back(bits(out));
    } else if (c.example == "compact") {
      const int n = static_cast<int>(c.size.at("n"));
      auto x = ints_as_floats(static_cast<std::size_t>(n), 7);
      std::vector<float> out(static_cast<std::size_t>(n), -9.0f);
      std::vector<int> count{-1};
      std::vector<std::uint64_t> temp(static_cast<std::size_t>(blocks + 1), 0);
      l.args = {A::of("int", n),     A::of("float", 0.5), A::of("float", x),
                A::of("float", out), A::of("int", count), A::of("unsigned long long", temp)};
      k.launch(interp, Grid{blocks, threads}, n, 0.5f, std::as_const(x), out, count, temp);
      wants.push_back(bits(out));
    } else if (c.example == "byte_histogram") {
      const int n = static_cast<int>(c.size.at("n"));
      std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i * 37 % 251);
      std::vector<std::uint32_t> hist(256, 2);
      l.args = {A::of("int", n), A::of("unsigned char", bytes), A::of("unsigned", hist)};
      k.launch(interp, Grid{blocks, threads}, n, std::as_const(bytes), hist);
      wants.push_back(std::vector<long long>(hist.begin(), hist.end()));
    } else {
      const int n = static_cast<int>(c.size.at("n"));
      std::vector<int> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n), -9);
      for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = i % 11 - 5;
      std::vector<std::uint64_t> desc(static_cast<std::size_t>(blocks), 0);
      l.args = {A::of("int", n), A::of("int", x), A::of("int", y), A::of("unsigned long long", desc)};
      k.launch(interp, Grid{blocks, threads}, n, std::as_const(x), y, desc);
      wants.push_back(std::vector<long long>(y.begin(), y.end()));
    }
    launches.push_back(std::move(l));
  }
  auto run = test_support::run_launches_on_host(launches, test_support::HostSanitizer::Address);
  ASSERT_TRUE(run.ok) << run.problem;
  ASSERT_EQ(run.results.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    // The output is the last buffer but the scans' (y, before desc) and the compaction's (out, before
    // count and temp).
    const auto& buffers = run.results[i].buffers;
    const std::string& ex = cases[i].example;
    const auto& got = ex.rfind("scan_", 0) == 0 ? buffers[buffers.size() - 2]
                      : ex == "compact"         ? buffers[buffers.size() - 3]
                                                : buffers.back();
    EXPECT_EQ(got, wants[i]) << cases[i].example << "'s twin and the example differ";
  }
}

// ---------------------------------------------------------------- the static comparison
TEST(Twins, NoKernelSpillsWhereItsTwinDoesNotNorSpendsMoreWhereItsAccessesAreProven) {
  if (!nvrtc::available()) GTEST_SKIP() << "no NVRTC";
  if (examples::find_cuobjdump().empty()) GTEST_SKIP() << "cuobjdump not found (scripts/setup installs it)";
  std::vector<twins::Row> rows;
  for (const auto& t : twins::all()) {
    twins::Row r = twins::compare(t, kTwinsDir);
    EXPECT_FALSE(r.vantage.spills() > 0 && r.hand.spills() == 0)
        << t.example << " spills (" << r.vantage.spills() << " local-memory instructions) and its twin does not";
    if (r.proven) {
      EXPECT_LE(r.loop_ratio(), 1.10) << t.example << ": every access is proven, and its hottest loop spends "
                                      << r.loop_ratio() << " times its twin's instructions per unit of work";
    }
    EXPECT_GT(r.hand.instructions, 0) << t.example;
    rows.push_back(std::move(r));
  }
  std::printf("%s", twins::markdown(rows).c_str());
}

}  // namespace
}  // namespace vantage
