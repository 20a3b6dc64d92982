// Vantage example runs: see runs.hpp.
#include "kernels/runs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <utility>

#include "kernels/paper_kernels.hpp"

namespace vantage::examples {
namespace {

using Size = std::map<std::string, std::int64_t>;

/// Small integers as floats: sums of products stay exact in f32, so the tolerance can be tight.
std::vector<float> floats(std::int64_t n, int seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<float>((i * 7 + seed * 13) % 11 - 5);
  return v;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// Compares floats within `tol` (relative to max(1, |want|)); the first mismatch in `why`.
bool close(const std::vector<float>& got, const std::vector<float>& want, double tol, std::string& why) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= tol * std::max(1.0, std::fabs(static_cast<double>(want[i]))))) {
      why = "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " + std::to_string(want[i]);
      return false;
    }
  return true;
}

std::string sizes_text(const Size& s) {
  std::string t;
  for (const auto& [k, v] : s) t += (t.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return t;
}

/// A host vector made available to a launch on `device`: passed as it is to a host device, copied
/// to a buffer on a GPU (and back by `fetch`).
template <class T>
class Staged {
 public:
  Staged(const Device& device, std::vector<T>& host) : device_(device), host_(host) {
    if (!device.is_gpu()) return;
    buf_.emplace(device.alloc<T>(static_cast<std::int64_t>(host.size())));
    buf_->copy_from(host);
  }
  LaunchArg arg() { return buf_ ? LaunchArg(*buf_) : LaunchArg(host_); }
  LaunchArg read_only() const { return buf_ ? LaunchArg(std::as_const(*buf_)) : LaunchArg(std::as_const(host_)); }
  /// The device's result in the host vector.
  void fetch() {
    if (!buf_) return;
    device_.synchronize();
    buf_->copy_to(host_);
  }

 private:
  Device device_;
  std::vector<T>& host_;
  std::optional<DeviceBuffer<T>> buf_;
};

template <class T>
std::vector<double> as_doubles(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

struct Case {
  std::function<RunResult(const Kernel&, const Size&, const Device&)> run;
  std::vector<Size> sizes;
};

RunResult finish(bool ok, const std::string& what, const std::string& why, LaunchReport rep,
                 std::vector<double> output) {
  RunResult r;
  r.ok = ok;
  r.summary = what + (ok ? ": result matches the reference" : ": WRONG RESULT, " + why);
  r.report = rep;
  r.output = std::move(output);
  return r;
}

RunResult run_saxpy(const Kernel& k, const Size& s, const Device& d, std::int64_t per_block = 256) {
  std::int64_t n = s.at("n");
  float a = 2.0f;
  auto x = floats(n, 1), y = floats(n, 2), want = y;
  for (std::int64_t i = 0; i < n; ++i)
    want[static_cast<std::size_t>(i)] = a * x[static_cast<std::size_t>(i)] + y[static_cast<std::size_t>(i)];
  Staged sx(d, x), sy(d, y);
  auto rep = k.launch(d, Grid{std::max<std::int64_t>(1, ceil_div(n, per_block)), 256}, static_cast<int>(n), a,
                      sx.read_only(), sy.arg());
  sy.fetch();
  std::string why;
  bool ok = close(y, want, 1e-6, why);
  return finish(ok, "saxpy n=" + std::to_string(n) + " (tolerance 1e-6)", why, rep, as_doubles(y));
}

RunResult run_gelu(const Kernel& k, const Size& s, const Device& d) {
  const std::int64_t n = s.at("n");
  // Values from -4 to 4 in steps of 0.08, where GELU bends; the reference in double.
  std::vector<float> x(static_cast<std::size_t>(n)), y(x.size(), -99.0f), want(x.size());
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>((i * 37) % 101 - 50) * 0.08f;
    x[static_cast<std::size_t>(i)] = v;
    want[static_cast<std::size_t>(i)] = static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
  }
  Staged sx(d, x), sy(d, y);
  auto rep = k.launch(d, Grid{std::max<std::int64_t>(1, ceil_div(n, 256)), 256}, static_cast<int>(n), sx.read_only(),
                      sy.arg());
  sy.fetch();
  std::string why;
  bool ok = close(y, want, 1e-5, why);
  return finish(ok, "gelu n=" + std::to_string(n) + " (tolerance 1e-5)", why, rep, as_doubles(y));
}

RunResult run_fp8_dequant(const Kernel& k, const Size& s, const Device& d) {
  const std::int64_t rows = s.at("rows"), cols = s.at("cols"), n = rows * cols;
  // Values of every kind: small integers, fractions, values past 448 (held at it), subnormals.
  std::vector<fp8_e4m3> q(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const auto code = static_cast<std::uint8_t>((i * 37 + 11) % 256);
    q[static_cast<std::size_t>(i)] = fp8_e4m3{(code & 0x7f) == 0x7f ? std::uint8_t{0x3c} : code};  // no NaN
  }
  std::vector<float> scale = floats(rows, 4), out(static_cast<std::size_t>(n), -99.0f), want(out.size());
  for (std::int64_t i = 0; i < n; ++i)
    want[static_cast<std::size_t>(i)] =
        static_cast<float>(value_of(q[static_cast<std::size_t>(i)])) * scale[static_cast<std::size_t>(i / cols)];
  Staged sq(d, q);
  Staged ss(d, scale), so(d, out);
  auto rep = k.launch(d, Grid{std::max<std::int64_t>(1, ceil_div(n, 256)), 256}, static_cast<int>(rows),
                      static_cast<int>(cols), sq.read_only(), ss.read_only(), so.arg());
  so.fetch();
  std::string why;
  bool ok = close(out, want, 0.0, why);
  return finish(ok, "fp8_dequant rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) + " (exact)", why, rep,
                as_doubles(out));
}

RunResult run_vec_copy(const Kernel& k, const Size& s, const Device& d) {
  std::int64_t n = s.at("n");
  auto in = floats(n, 3);
  std::vector<float> out(static_cast<std::size_t>(n), -99.0f);
  Staged sin(d, in), sout(d, out);
  auto rep = k.launch(d, Grid{std::max<std::int64_t>(1, ceil_div(n, 1024)), 256}, static_cast<int>(n), sin.read_only(),
                      sout.arg());
  sout.fetch();
  std::string why;
  bool ok = close(out, in, 0, why);
  return finish(ok, "vec_copy n=" + std::to_string(n) + " (exact)", why, rep, as_doubles(out));
}

/// The look-back scans: `per_block` items per block of 256 threads (1 or 8 per thread).
RunResult run_scan(const Kernel& k, const Size& s, const Device& d, std::int64_t per_block, std::int64_t threads) {
  std::int64_t n = s.at("n"), blocks = std::max<std::int64_t>(1, ceil_div(n, per_block));
  std::vector<int> x(static_cast<std::size_t>(n)), y(x.size(), -1), want(x.size());
  // Zero at launch, as they need; one word more than a block each for lib::device_inclusive_scan's
  // count of the tiles finished.
  std::vector<std::uint64_t> desc(static_cast<std::size_t>(blocks + 1), 0);
  std::uint32_t sum = 0;  // wrapping, as the kernel's i32 additions do
  for (std::int64_t i = 0; i < n; ++i) {
    x[static_cast<std::size_t>(i)] = static_cast<int>((i * 7919) % 201) - 100;
    sum += static_cast<std::uint32_t>(x[static_cast<std::size_t>(i)]);
    want[static_cast<std::size_t>(i)] = static_cast<int>(sum);
  }
  Staged sx(d, x), sy(d, y);
  Staged sdesc(d, desc);
  auto rep = k.launch(d, Grid{blocks, threads}, static_cast<int>(n), sx.read_only(), sy.arg(), sdesc.arg());
  sy.fetch();
  std::int64_t first_bad = -1;
  for (std::int64_t i = 0; i < n && first_bad < 0; ++i)
    if (y[static_cast<std::size_t>(i)] != want[static_cast<std::size_t>(i)]) first_bad = i;
  std::string why = first_bad < 0 ? ""
                                  : "y[" + std::to_string(first_bad) +
                                        "] = " + std::to_string(y[static_cast<std::size_t>(first_bad)]) + ", want " +
                                        std::to_string(want[static_cast<std::size_t>(first_bad)]);
  return finish(first_bad < 0, k.name() + " n=" + std::to_string(n) + " (exact)", why, rep, as_doubles(y));
}

RunResult run_device_sum(const Kernel& k, const Size& s, const Device& d) {
  const std::int64_t n = s.at("n");
  std::vector<int> x(static_cast<std::size_t>(n));
  std::uint32_t sum = 0;  // wrapping, as the kernel's i32 additions
  for (std::int64_t i = 0; i < n; ++i) {
    x[static_cast<std::size_t>(i)] = static_cast<int>((i * 7919) % 201) - 100;
    sum += static_cast<std::uint32_t>(x[static_cast<std::size_t>(i)]);
  }
  std::vector<int> out{-1};
  std::vector<std::uint64_t> temp(static_cast<std::size_t>(lib::device_temp_words(n, 1024)), 0);
  Staged sx(d, x);
  Staged sout(d, out);
  Staged stemp(d, temp);
  auto rep = k.launch(d, Grid{lib::reduce_blocks(n, 1024), 1024}, static_cast<int>(n), sx.read_only(), sout.arg(),
                      stemp.arg());
  sout.fetch();
  const bool ok = out[0] == static_cast<int>(sum);
  return finish(ok, "device_sum n=" + std::to_string(n) + " (exact)",
                "the sum is " + std::to_string(out[0]) + ", want " + std::to_string(static_cast<int>(sum)), rep,
                as_doubles(out));
}

/// The whole sort: four passes of radix_counts, radix_places and the example's scatter, from one
/// pair of buffers to the other and back, against std::stable_sort.
RunResult run_radix_sort(const Kernel& k, const Size& s, const Device& d) {
  static const Kernel counts = radix_counts(), places = radix_places();
  const std::int64_t n = s.at("n"), m = lib::radix_table_size(n, 256);
  std::vector<std::uint32_t> keys(static_cast<std::size_t>(n)), vals(keys.size()), keys2(keys.size()),
      vals2(keys.size());
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u;
    keys[static_cast<std::size_t>(i)] = i % 4 == 0 ? h : (h % 50) << 16;  // many equal keys: stability shows
    vals[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(i);
  }
  std::vector<std::pair<std::uint32_t, std::uint32_t>> want;
  for (std::int64_t i = 0; i < n; ++i)
    want.emplace_back(keys[static_cast<std::size_t>(i)], vals[static_cast<std::size_t>(i)]);
  std::vector<int> table(static_cast<std::size_t>(m)), place(table.size());
  std::vector<std::uint64_t> temp(static_cast<std::size_t>(lib::device_temp_words(m, 256)), 0);
  Staged sk(d, keys);
  Staged sv(d, vals);
  Staged sk2(d, keys2);
  Staged sv2(d, vals2);
  Staged st(d, table);
  Staged sp(d, place);
  Staged stemp(d, temp);
  const Grid tiles{lib::radix_blocks(n, 256), 256};
  const int passes = static_cast<int>(s.at("shift") / 8) + 1;  // shift 24: all four, a full sort
  if (s.at("shift") % 8 != 0 || passes < 1 || passes > 4)
    throw std::invalid_argument("radix_sort: shift is the last pass's, 0, 8, 16 or 24, not " +
                                std::to_string(s.at("shift")));
  LaunchReport rep;
  for (int pass = 0; pass < passes; ++pass) {
    auto& from_k = pass % 2 == 0 ? sk : sk2;
    auto& from_v = pass % 2 == 0 ? sv : sv2;
    auto& to_k = pass % 2 == 0 ? sk2 : sk;
    auto& to_v = pass % 2 == 0 ? sv2 : sv;
    counts.launch(d, tiles, static_cast<int>(n), 8 * pass, from_k.read_only(), st.arg());
    places.launch(d, Grid{lib::device_blocks(m, 256), 256}, static_cast<int>(m), st.read_only(), sp.arg(), stemp.arg());
    rep = k.launch(d, tiles, static_cast<int>(n), 8 * pass, from_k.read_only(), from_v.read_only(), sp.read_only(),
                   to_k.arg(), to_v.arg());
  }
  auto& last_k = passes % 2 == 0 ? sk : sk2;
  auto& last_v = passes % 2 == 0 ? sv : sv2;
  last_k.fetch();
  last_v.fetch();
  if (passes % 2 != 0) {
    keys.swap(keys2);
    vals.swap(vals2);
  }
  // The keys sorted by their low 8 * passes bits, stably.
  const std::uint64_t mask = passes == 4 ? 0xffffffffull : (1ull << (8 * passes)) - 1;
  std::stable_sort(want.begin(), want.end(),
                   [&](const auto& a, const auto& b) { return (a.first & mask) < (b.first & mask); });
  std::string why;
  for (std::int64_t i = 0; i < n && why.empty(); ++i)
    if (keys[static_cast<std::size_t>(i)] != want[static_cast<std::size_t>(i)].first ||
        vals[static_cast<std::size_t>(i)] != want[static_cast<std::size_t>(i)].second)
      why = "element " + std::to_string(i) + " is (" + std::to_string(keys[static_cast<std::size_t>(i)]) + ", " +
            std::to_string(vals[static_cast<std::size_t>(i)]) + "), want (" +
            std::to_string(want[static_cast<std::size_t>(i)].first) + ", " +
            std::to_string(want[static_cast<std::size_t>(i)].second) + ")";
  return finish(why.empty(),
                "radix_sort n=" + std::to_string(n) + " (exact, stable, " + std::to_string(passes) + " passes)", why,
                rep, as_doubles(keys));
}

/// The stream compaction: the floats above 0.5, launched twice on the same temporary storage (the
/// second launch finds it as the first left it: zero).
RunResult run_compact(const Kernel& k, const Size& s, const Device& d) {
  const std::int64_t n = s.at("n"), blocks = lib::device_blocks(n, 256);
  auto x = floats(n, 6);
  for (std::int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] += static_cast<float>(i % 3) * 0.25f;
  std::vector<float> want;
  for (float v : x)
    if (v > 0.5f) want.push_back(v);
  std::vector<std::uint64_t> temp(static_cast<std::size_t>(lib::device_temp_words(n, 256)), 0);
  Staged sx(d, x);
  Staged stemp(d, temp);
  LaunchReport rep;
  std::vector<float> out;
  std::string why;
  for (int launch = 0; launch < 2 && why.empty(); ++launch) {
    out.assign(static_cast<std::size_t>(n), -99.0f);
    std::vector<int> count{-1};
    Staged sout(d, out);
    Staged scount(d, count);
    rep = k.launch(d, Grid{blocks, 256}, static_cast<int>(n), 0.5f, sx.read_only(), sout.arg(), scount.arg(),
                   stemp.arg());
    sout.fetch();
    scount.fetch();
    if (count[0] != static_cast<int>(want.size()))
      why = "launch " + std::to_string(launch) + " counted " + std::to_string(count[0]) + ", want " +
            std::to_string(want.size());
    else if (!std::equal(want.begin(), want.end(), out.begin()))
      why = "launch " + std::to_string(launch) + " kept other elements";
  }
  stemp.fetch();
  if (why.empty() && std::any_of(temp.begin(), temp.end(), [](std::uint64_t w) { return w != 0; }))
    why = "the temporary storage is not zero after the launch";
  out.resize(want.size());
  return finish(why.empty(), "compact n=" + std::to_string(n) + " (exact, two launches)", why, rep, as_doubles(out));
}

RunResult run_byte_histogram(const Kernel& k, const Size& s, const Device& d) {
  const std::int64_t n = s.at("n");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n));
  std::vector<std::uint32_t> hist(256, 1), want(256, 1);  // counts are added to what is there
  for (std::int64_t i = 0; i < n; ++i) {
    bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>((i * i * 31 + i * 7) % 251);
    ++want[bytes[static_cast<std::size_t>(i)]];
  }
  Staged sb(d, bytes);
  Staged sh(d, hist);
  auto rep = k.launch(d, Grid{lib::device_blocks(n, 256, {16}), 256}, static_cast<int>(n), sb.read_only(), sh.arg());
  sh.fetch();
  std::string why;
  for (int b = 0; b < 256 && why.empty(); ++b)
    if (hist[static_cast<std::size_t>(b)] != want[static_cast<std::size_t>(b)])
      why = "bin " + std::to_string(b) + " is " + std::to_string(hist[static_cast<std::size_t>(b)]) + ", want " +
            std::to_string(want[static_cast<std::size_t>(b)]);
  return finish(why.empty(), "byte_histogram n=" + std::to_string(n) + " (exact)", why, rep, as_doubles(hist));
}

/// Launches `k` with (a, b, in, out), a and b the sizes of those names, and compares out with `want`:
/// exactly, or to `tol` of each value.
RunResult run_matrix(const Kernel& k, const Size& s, const Device& d, const std::string& a, const std::string& b,
                     std::vector<float> in, const std::vector<float>& want, double tol = 0) {
  const std::int64_t A = s.at(a), B = s.at(b);
  std::vector<float> out(want.size(), -99.0f);
  Staged sin(d, in), sout(d, out);
  auto rep =
      k.launch(d, default_grid(k.name(), s), static_cast<int>(A), static_cast<int>(B), sin.read_only(), sout.arg());
  sout.fetch();
  std::string why;
  bool ok = close(out, want, tol, why);
  char how[32];
  std::snprintf(how, sizeof how, tol == 0 ? " (exact)" : " (within %g)", tol);
  return finish(ok, k.name() + " " + a + "=" + std::to_string(A) + " " + b + "=" + std::to_string(B) + how, why, rep,
                as_doubles(out));
}

RunResult run_transpose(const Kernel& k, const Size& s, const Device& d) {
  std::int64_t M = s.at("M"), N = s.at("N");
  auto in = floats(M * N, 5);
  std::vector<float> want(static_cast<std::size_t>(M * N));
  for (std::int64_t r = 0; r < M; ++r)
    for (std::int64_t c = 0; c < N; ++c)
      want[static_cast<std::size_t>(c * M + r)] = in[static_cast<std::size_t>(r * N + c)];
  return run_matrix(k, s, d, "M", "N", std::move(in), want);
}

RunResult run_softmax(const Kernel& k, const Size& s, const Device& d) {
  std::int64_t rows = s.at("rows"), cols = s.at("cols");
  auto x = floats(rows * cols, 7);
  std::vector<float> want(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* in = x.data() + r * cols;
    double m = -HUGE_VAL, sum = 0;
    for (std::int64_t c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(in[c]));
    for (std::int64_t c = 0; c < cols; ++c) sum += std::exp(in[c] - m);
    for (std::int64_t c = 0; c < cols; ++c)
      want[static_cast<std::size_t>(r * cols + c)] = static_cast<float>(std::exp(in[c] - m) / sum);
  }
  return run_matrix(k, s, d, "rows", "cols", std::move(x), want, 1e-5);
}

RunResult run_stencil(const Kernel& k, const Size& s, const Device& d) {
  std::int64_t M = s.at("M"), N = s.at("N");
  auto in = floats(M * N, 6);
  std::vector<float> want(in.size());
  auto at = [&](std::int64_t r, std::int64_t c) {
    return r < 0 || r >= M || c < 0 || c >= N ? 0.0f : in[static_cast<std::size_t>(r * N + c)];
  };
  for (std::int64_t r = 0; r < M; ++r)
    for (std::int64_t c = 0; c < N; ++c)
      want[static_cast<std::size_t>(r * N + c)] =
          0.2f * ((((at(r, c) + at(r - 1, c)) + at(r + 1, c)) + at(r, c - 1)) + at(r, c + 1));
  return run_matrix(k, s, d, "M", "N", std::move(in), want);
}

RunResult run_block_load_copy(const Kernel& k, const Size& s, const Device& d) {
  std::int64_t n = s.at("n");
  std::vector<int> in(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n), -1);
  for (std::int64_t i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = static_cast<int>(i * 3 - 7);
  Staged sin(d, in), sout(d, out);
  auto rep = k.launch(d, Grid{std::max<std::int64_t>(1, ceil_div(n, 512)), 128}, static_cast<int>(n), sin.read_only(),
                      sout.arg());
  sout.fetch();
  bool ok = out == in;
  return finish(ok, "block_load_copy n=" + std::to_string(n) + " (bit-exact)", "the copy differs", rep,
                as_doubles(out));
}

RunResult run_block_reduce(const Kernel& k, const Size& s, const Device& d) {
  std::int64_t n = s.at("n");
  std::int64_t blocks = std::max<std::int64_t>(1, ceil_div(n, 256));
  auto x = floats(n, 4);
  std::vector<float> out(static_cast<std::size_t>(blocks), -1), want(static_cast<std::size_t>(blocks), 0);
  for (std::int64_t i = 0; i < n; ++i) want[static_cast<std::size_t>(i / 256)] += x[static_cast<std::size_t>(i)];
  Staged sx(d, x), sout(d, out);
  auto rep = k.launch(d, Grid{blocks, 256}, static_cast<int>(n), sx.read_only(), sout.arg());
  sout.fetch();
  std::string why;
  bool ok = close(out, want, 1e-6, why);
  return finish(ok, "block_reduce n=" + std::to_string(n) + " (tolerance 1e-6)", why, rep, as_doubles(out));
}

/// C = alpha * A * B + beta * C, row-major, in double.
std::vector<float> sgemm_reference(std::int64_t M, std::int64_t N, std::int64_t K, float alpha, float beta,
                                   const std::vector<float>& A, const std::vector<float>& B, std::vector<float> C) {
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (std::int64_t p = 0; p < K; ++p)
        acc += static_cast<double>(A[static_cast<std::size_t>(i * K + p)]) * B[static_cast<std::size_t>(p * N + j)];
      auto& c = C[static_cast<std::size_t>(i * N + j)];
      c = static_cast<float>(alpha * acc + beta * c);
    }
  return C;
}

RunResult run_sgemm(const Kernel& k, const Size& s, const Device& d, Grid g);

RunResult run_sgemm(const Kernel& k, const Size& s, const Device& d, bool tiled) {
  std::int64_t M = s.at("M"), N = s.at("N");
  Grid g = tiled ? Grid{std::max<std::int64_t>(1, ceil_div(M, 32) * ceil_div(N, 32)), 1024}
                 : Grid{std::max<std::int64_t>(1, ceil_div(M * N, 256)), 256};
  return run_sgemm(k, s, d, g);
}

RunResult run_sgemm(const Kernel& k, const Size& s, const Device& d, Grid g) {
  std::int64_t M = s.at("M"), N = s.at("N"), K = s.at("K");
  float alpha = 1.5f, beta = 0.5f;
  auto A = floats(M * K, 5), B = floats(K * N, 6), C = floats(M * N, 7);
  auto want = sgemm_reference(M, N, K, alpha, beta, A, B, C);
  Staged sA(d, A), sB(d, B), sC(d, C);
  auto rep = k.launch(d, g, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha, beta, sA.read_only(),
                      sB.read_only(), sC.arg());
  sC.fetch();
  std::string why;
  bool ok = close(C, want, 1e-5, why);
  return finish(ok,
                k.name() + " M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                    " (tolerance 1e-5)",
                why, rep, as_doubles(C));
}

/// The int8 GEMMs: C = A * B of bytes over their whole range, exact in i32 (K * 128 * 128 < 2^31).
/// `bt`: B given as Bt (N x K), as the wgmma GEMM takes it on its 128 x 256 tiles of 384 threads;
/// otherwise K x N, igemm_mma's 32 x 32 tiles of 128.
RunResult run_igemm(const Kernel& k, const Size& s, const Device& d, bool bt) {
  const std::int64_t M = s.at("M"), N = s.at("N"), K = s.at("K");
  std::vector<std::int8_t> A(static_cast<std::size_t>(M * K)), B(static_cast<std::size_t>(K * N));
  for (std::size_t i = 0; i < A.size(); ++i)
    A[i] = static_cast<std::int8_t>(static_cast<int>((i * 37 + i / 7) % 256) - 128);
  for (std::size_t i = 0; i < B.size(); ++i)
    B[i] = static_cast<std::int8_t>(static_cast<int>((i * 101 + 5) % 256) - 128);
  std::vector<int> C(static_cast<std::size_t>(M * N), -1), want(C.size());
  for (std::int64_t r = 0; r < M; ++r)
    for (std::int64_t c = 0; c < N; ++c) {
      std::int64_t acc = 0;
      for (std::int64_t p = 0; p < K; ++p)
        acc += A[static_cast<std::size_t>(r * K + p)] * B[static_cast<std::size_t>(bt ? c * K + p : p * N + c)];
      want[static_cast<std::size_t>(r * N + c)] = static_cast<int>(acc);
    }
  Staged sA(d, A), sB(d, B);
  Staged sC(d, C);
  const Grid grid =
      bt ? Grid{(M / 128) * (N / 256), 384} : Grid{std::max<std::int64_t>(1, ceil_div(M, 32) * ceil_div(N, 32)), 128};
  auto rep = k.launch(d, grid, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), sA.read_only(),
                      sB.read_only(), sC.arg());
  sC.fetch();
  std::int64_t bad = -1;
  for (std::size_t i = 0; i < C.size() && bad < 0; ++i)
    if (C[i] != want[i]) bad = static_cast<std::int64_t>(i);
  const std::string why = bad < 0 ? ""
                                  : "C[" + std::to_string(bad) + "] is " +
                                        std::to_string(C[static_cast<std::size_t>(bad)]) + ", not " +
                                        std::to_string(want[static_cast<std::size_t>(bad)]);
  return finish(
      bad < 0,
      k.name() + " M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) + " (exact)", why,
      rep, as_doubles(C));
}

/// The bf16 wgmma GEMM: C = A * Bt^T with A (M x K) and Bt (N x K) of quarters in [-1, 1], exact in
/// bf16; their products and sums are exact in f32 too, so the result is bit-exact in any order. Only a
/// GPU of sm_90 runs it; the interpreter and the CPU backend stop at its first Hopper instruction
/// (UnsupportedOnDevice), which this lets through to the caller.
RunResult run_wgmma_gemm(const Kernel& k, const Size& s, const Device& d, std::int64_t bn) {
  std::int64_t M = s.at("M"), N = s.at("N"), K = s.at("K");
  auto quarter = [](std::int64_t i, int seed) { return static_cast<float>((i * 7 + seed * 3) % 9 - 4) / 4.0f; };
  auto bf16 = [](float f) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return bfloat16{static_cast<std::uint16_t>(bits >> 16)};  // exact: the low half is zero
  };
  std::vector<bfloat16> A(static_cast<std::size_t>(M * K)), Bt(static_cast<std::size_t>(N * K));
  std::vector<float> fa(A.size()), fb(Bt.size());
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = bf16(fa[i] = quarter(static_cast<std::int64_t>(i), 1));
  for (std::size_t i = 0; i < Bt.size(); ++i) Bt[i] = bf16(fb[i] = quarter(static_cast<std::int64_t>(i), 2));
  std::vector<float> C(static_cast<std::size_t>(M * N), -1.0f), want(C.size());
  for (std::int64_t r = 0; r < M; ++r)
    for (std::int64_t c = 0; c < N; ++c) {
      double acc = 0;
      for (std::int64_t p = 0; p < K; ++p)
        acc += static_cast<double>(fa[static_cast<std::size_t>(r * K + p)]) * fb[static_cast<std::size_t>(c * K + p)];
      want[static_cast<std::size_t>(r * N + c)] = static_cast<float>(acc);
    }
  Staged sA(d, A), sB(d, Bt);
  Staged sC(d, C);
  auto rep = k.launch(d, Grid{(M / 128) * (N / bn), 384}, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K),
                      sA.read_only(), sB.read_only(), sC.arg());
  sC.fetch();
  std::string why;
  bool ok = close(C, want, 0.0, why);
  return finish(ok,
                k.name() + " M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                    " (bit-exact: quarters in bf16)",
                why, rep, as_doubles(C));
}

/// The tf32 m16n8k8 layout (PTX ISA): lane l, g = l / 4, q = l % 4 holds A[g][q], A[g+8][q],
/// A[g][q+4], A[g+8][q+4]; B[q][g], B[q+4][g]; C and D [g][2q], [g][2q+1], [g+8][2q], [g+8][2q+1].
RunResult run_warp_mma(const Kernel& k, const Size&, const Device& d) {
  std::vector<float> out(128, -1), want(128);
  double A[16][8], B[8][8];
  for (int l = 0; l < 32; ++l) {
    int g = l / 4, q = l % 4;
    double v = l * 4 + 1;
    A[g][q] = A[g + 8][q] = A[g][q + 4] = A[g + 8][q + 4] = v;
    B[q][g] = B[q + 4][g] = v;
  }
  for (int l = 0; l < 32; ++l) {
    int g = l / 4, q = l % 4;
    const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * q, 2 * q + 1, 2 * q, 2 * q + 1};
    for (int i = 0; i < 4; ++i) {
      double acc = 0;
      for (int p = 0; p < 8; ++p) acc += A[rows[i]][p] * B[p][cols[i]];
      want[static_cast<std::size_t>(l * 4 + i)] = static_cast<float>(acc);
    }
  }
  Staged sout(d, out);
  auto rep = k.launch(d, Grid{1, 32}, sout.arg());
  sout.fetch();
  std::string why;
  bool ok = close(out, want, 1e-6, why);
  return finish(ok, "warp_mma (one m16n8k8 tf32 mma, tolerance 1e-6)", why, rep, as_doubles(out));
}

RunResult run_mma_naive(const Kernel& k, const Size& s, const Device& d) {
  std::int64_t M = s.at("M"), N = s.at("N"), K = s.at("K");
  auto A = floats(M * K, 8), B = floats(K * N, 9);
  std::vector<float> C(static_cast<std::size_t>(M * N), -1);
  auto want = sgemm_reference(M, N, K, 1.0f, 0.0f, A, B, std::vector<float>(C.size(), 0));
  Staged sA(d, A), sB(d, B), sC(d, C);
  auto rep = k.launch(d, Grid{(M / 16) * (N / 8), 32}, sA.read_only(), sB.read_only(), sC.arg(), static_cast<int>(M),
                      static_cast<int>(N), static_cast<int>(K));
  sC.fetch();
  std::string why;
  bool ok = close(C, want, 1e-5, why);
  return finish(ok,
                "mma_tf32_naive M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                    " (tolerance 1e-5; inputs exact in tf32)",
                why, rep, as_doubles(C));
}

/// One block of `threads` per bm x bn tile of C.
Grid tiles_of(const Size& s, std::int64_t bm, std::int64_t bn, std::int64_t threads) {
  return Grid{std::max<std::int64_t>(1, ceil_div(s.at("M"), bm) * ceil_div(s.at("N"), bn)), threads};
}

const std::map<std::string, Case>& cases() {
  static const std::map<std::string, Case> kCases = {
      {"saxpy",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_saxpy(k, s, d); },
        {{{"n", 1000}}, {{"n", 256}}, {{"n", 1}}, {{"n", 777}}}}},
      // Whole vectors, a tail of 1 to 3 elements, one element, a tail in a block of its own.
      {"saxpy_vec",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_saxpy(k, s, d, 1024); },
        {{{"n", 4096}}, {{"n", 1001}}, {{"n", 1}}, {{"n", 1027}}, {{"n", 778}}}}},
      {"gelu", {run_gelu, {{{"n", 1000}}, {{"n", 256}}, {{"n", 1}}, {{"n", 777}}}}},
      {"fp8_dequant",
       {run_fp8_dequant,
        {{{"rows", 7}, {"cols", 33}},
         {{"rows", 16}, {"cols", 256}},
         {{"rows", 1}, {"cols", 1}},
         {{"rows", 3}, {"cols", 300}}}}},
      {"vec_copy", {run_vec_copy, {{{"n", 1030}}, {{"n", 1024}}, {{"n", 3}}, {{"n", 4099}}}}},
      {"block_load_copy", {run_block_load_copy, {{{"n", 1000}}, {{"n", 512}}, {{"n", 5}}}}},
      {"block_reduce", {run_block_reduce, {{{"n", 1000}}, {{"n", 256}}, {{"n", 7}}}}},
      {"sgemm_naive",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_sgemm(k, s, d, false); },
        {{{"M", 20}, {"N", 13}, {"K", 9}}, {{"M", 16}, {"N", 16}, {"K", 16}}, {{"M", 1}, {"N", 7}, {"K", 3}}}}},
      {"sgemm_coalesced",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_sgemm(k, s, d, false); },
        {{{"M", 20}, {"N", 13}, {"K", 9}}, {{"M", 16}, {"N", 16}, {"K", 16}}, {{"M", 1}, {"N", 7}, {"K", 3}}}}},
      {"sgemm_smem",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_sgemm(k, s, d, true); },
        {{{"M", 40}, {"N", 33}, {"K", 37}}, {{"M", 32}, {"N", 32}, {"K", 32}}, {{"M", 5}, {"N", 3}, {"K", 2}}}}},
      {"sgemm_reg1d",
       {[](const Kernel& k, const Size& s, const Device& d) {
          return run_sgemm(k, s, d,
                           Grid{std::max<std::int64_t>(1, ceil_div(s.at("M"), 64) * ceil_div(s.at("N"), 64)), 512});
        },
        {{{"M", 70}, {"N", 65}, {"K", 19}}, {{"M", 64}, {"N", 64}, {"K", 16}}, {{"M", 5}, {"N", 3}, {"K", 2}}}}},
      {"sgemm_reg2d",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_sgemm(k, s, d, tiles_of(s, 64, 64, 256)); },
        {{{"M", 70}, {"N", 65}, {"K", 19}}, {{"M", 64}, {"N", 64}, {"K", 16}}, {{"M", 5}, {"N", 3}, {"K", 2}}}}},
      // N and K multiples of 4 take the vector copies (but for the edge tiles); 65 and 19 do not.
      {"sgemm_vec",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_sgemm(k, s, d, tiles_of(s, 64, 64, 256)); },
        {{{"M", 70}, {"N", 68}, {"K", 36}},
         {{"M", 64}, {"N", 64}, {"K", 16}},
         {{"M", 70}, {"N", 65}, {"K", 19}},
         {{"M", 5}, {"N", 3}, {"K", 2}}}}},
      {"sgemm_warptile",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_sgemm(k, s, d, tiles_of(s, 64, 64, 128)); },
        {{{"M", 70}, {"N", 65}, {"K", 19}}, {{"M", 64}, {"N", 64}, {"K", 16}}, {{"M", 5}, {"N", 3}, {"K", 2}}}}},
      // Rung 8's 128 x 128 tiles: K = 19 takes the element-by-element copies (rows of A not a
      // multiple of 4), 36 the 16-byte ones; 260 columns end in a partial tile.
      {"sgemm_pipelined",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_sgemm(k, s, d, tiles_of(s, 128, 128, 256)); },
        {{{"M", 70}, {"N", 65}, {"K", 19}},
         {{"M", 128}, {"N", 128}, {"K", 16}},
         {{"M", 130}, {"N", 260}, {"K", 36}},
         {{"M", 5}, {"N", 3}, {"K", 2}}}}},
      // Small integers: exact in tf32, and every product and sum exact in f32.
      {"mma_tf32",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_sgemm(k, s, d, tiles_of(s, 32, 32, 128)); },
        {{{"M", 70}, {"N", 45}, {"K", 19}}, {{"M", 64}, {"N", 64}, {"K", 32}}, {{"M", 5}, {"N", 3}, {"K", 2}}}}},
      // Edges in every direction, a K that is no multiple of 32, and whole tiles.
      {"igemm_mma",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_igemm(k, s, d, false); },
        {{{"M", 70}, {"N", 45}, {"K", 50}}, {{"M", 64}, {"N", 64}, {"K", 64}}, {{"M", 5}, {"N", 3}, {"K", 2}}}}},
      {"scan_lookback",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_scan(k, s, d, 256, 256); },
        {{{"n", 1000}}, {{"n", 256}}, {{"n", 1}}, {{"n", 5000}}}}},
      // 8192 per block of 1024: 5000 ends in a partial vector of a partial block, 8192 is one whole
      // block, 80003 is ten blocks whose last looks back over nine.
      {"scan_tiled",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_scan(k, s, d, 8192, 1024); },
        {{{"n", 5000}}, {{"n", 8192}}, {{"n", 1}}, {{"n", 80003}}}}},
      // device_scan: scan_tiled's tile; compact: 2048 a tile, 40963 is 21 tiles; the histogram: 4096 a
      // block.
      {"device_scan",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_scan(k, s, d, 8192, 1024); },
        {{{"n", 5000}}, {{"n", 8192}}, {{"n", 1}}, {{"n", 80003}}}}},
      {"device_sum", {run_device_sum, {{{"n", 5000}}, {{"n", 8192}}, {{"n", 1}}, {{"n", 80003}}}}},
      // 4096 keys a tile: 5000 is a tile and a part, 20483 five and a part.
      // `shift`: the last pass's (the launch reported is that pass's scatter); 24 sorts all 32 bits.
      {"radix_sort",
       {run_radix_sort,
        {{{"n", 5000}, {"shift", 24}},
         {{"n", 4096}, {"shift", 24}},
         {{"n", 1}, {"shift", 24}},
         {{"n", 20483}, {"shift", 24}}}}},
      {"compact", {run_compact, {{{"n", 5000}}, {{"n", 2048}}, {{"n", 1}}, {{"n", 40963}}}}},
      {"byte_histogram", {run_byte_histogram, {{{"n", 5000}}, {{"n", 4096}}, {{"n", 1}}, {{"n", 70001}}}}},
      // 70 x 45: tiles cut at both edges; 64 x 96: whole tiles; 1 x 5: one row, every neighbour above and
      // below a zero; 33 x 1: one column.
      // Rows of 1000 (several rounds of the 256 threads and a part), 256 (one round), 1 and 7 (fewer
      // than a warp).
      {"softmax",
       {run_softmax,
        {{{"rows", 5}, {"cols", 1000}},
         {{"rows", 3}, {"cols", 256}},
         {{"rows", 4}, {"cols", 1}},
         {{"rows", 1}, {"cols", 7}}}}},
      {"stencil",
       {run_stencil, {{{"M", 70}, {"N", 45}}, {{"M", 64}, {"N", 96}}, {{"M", 1}, {"N", 5}}, {{"M", 33}, {"N", 1}}}}},
      {"transpose", {run_transpose, {{{"M", 70}, {"N", 45}}, {{"M", 64}, {"N", 32}}, {{"M", 1}, {"N", 5}}}}},
      {"transpose_padded", {run_transpose, {{{"M", 70}, {"N", 45}}, {{"M", 64}, {"N", 32}}, {{"M", 1}, {"N", 5}}}}},
      {"transpose_async", {run_transpose, {{{"M", 70}, {"N", 45}}, {{"M", 64}, {"N", 32}}, {{"M", 1}, {"N", 5}}}}},
      {"warp_mma", {run_warp_mma, {{}, {}, {}}}},
      // Multiples of the 128 x 128 tile and the 64-deep K step (the kernel requires them); K = 64 is
      // one pipeline step, 576 wraps the 4 slots twice.
      {"gemm_wgmma_bf16",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_wgmma_gemm(k, s, d, 128); },
        {{{"M", 256}, {"N", 256}, {"K", 256}},
         {{"M", 128}, {"N", 384}, {"K", 64}},
         {{"M", 384}, {"N", 128}, {"K", 576}}}}},
      // The same on 128 x 256 tiles.
      {"gemm_wgmma_bf16_wide",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_wgmma_gemm(k, s, d, 256); },
        {{{"M", 256}, {"N", 512}, {"K", 256}},
         {{"M", 128}, {"N", 768}, {"K", 64}},
         {{"M", 384}, {"N", 256}, {"K", 576}}}}},
      // The int8 GEMM's tiles are 128 x 256 with 128-deep K steps: K = 128 is one step, 640 wraps
      // the 4 slots once and a part.
      {"igemm_wgmma",
       {[](const Kernel& k, const Size& s, const Device& d) { return run_igemm(k, s, d, true); },
        {{{"M", 256}, {"N", 512}, {"K", 256}},
         {{"M", 128}, {"N", 768}, {"K", 128}},
         {{"M", 384}, {"N", 256}, {"K", 640}}}}},
      // The naive mma kernel tiles C in 16x8 and K in 8 with no edge handling and requires multiples.
      {"mma_tf32_naive",
       {run_mma_naive,
        {{{"M", 16}, {"N", 8}, {"K", 8}}, {{"M", 32}, {"N", 16}, {"K", 24}}, {{"M", 48}, {"N", 8}, {"K", 16}}}}},
  };
  return kCases;
}

/// Blocks per launch, the way each run above sizes its grid.
std::int64_t blocks_of(const std::string& name, const Size& s) {
  auto at = [&](const char* k) { return s.count(k) ? s.at(k) : std::int64_t{1}; };
  auto tiles = [&](std::int64_t bm, std::int64_t bn) { return ceil_div(at("M"), bm) * ceil_div(at("N"), bn); };
  std::int64_t b = 1;
  if (name == "saxpy" || name == "gelu" || name == "scan_lookback" || name == "block_reduce")
    b = ceil_div(at("n"), 256);
  else if (name == "saxpy_vec")
    b = ceil_div(at("n"), 1024);
  else if (name == "fp8_dequant")
    b = ceil_div(at("rows") * at("cols"), 256);
  else if (name == "scan_tiled" || name == "device_scan")
    b = ceil_div(at("n"), 8192);
  else if (name == "device_sum")  // lib::reduce_blocks: at most 1024 blocks of 1024, each its share
    b = std::min<std::int64_t>(ceil_div(at("n"), 8192), 1024);
  else if (name == "radix_sort")
    b = ceil_div(at("n"), 4096);
  else if (name == "compact")
    b = ceil_div(at("n"), 2048);
  else if (name == "byte_histogram")  // at most 1024 blocks (8 of 256 threads an SM of 132, and more):
    b = std::min<std::int64_t>(ceil_div(at("n"), 4096), 1024);  // each its share of the tiles
  else if (name == "softmax")
    b = at("rows");
  else if (name == "vec_copy")
    b = ceil_div(at("n"), 1024);
  else if (name == "block_load_copy")
    b = ceil_div(at("n"), 512);
  else if (name == "sgemm_naive" || name == "sgemm_coalesced")
    b = ceil_div(at("M") * at("N"), 256);
  else if (name == "sgemm_smem" || name == "mma_tf32" || name == "igemm_mma" || name.rfind("transpose", 0) == 0 ||
           name == "stencil")
    b = tiles(32, 32);
  else if (name == "sgemm_pipelined")
    b = tiles(128, 128);
  else if (name.rfind("sgemm_", 0) == 0)
    b = tiles(64, 64);
  else if (name == "gemm_wgmma_bf16")
    b = tiles(128, 128);
  else if (name == "gemm_wgmma_bf16_wide" || name == "igemm_wgmma")
    b = tiles(128, 256);
  else if (name == "mma_tf32_naive")
    b = (at("M") / 16) * (at("N") / 8);
  return std::max<std::int64_t>(1, b);
}

const Case& find(const std::string& name) {
  auto it = cases().find(name);
  if (it == cases().end()) throw std::invalid_argument("no run is defined for example '" + name + "'");
  return it->second;
}

}  // namespace

std::vector<Size> default_sizes(const std::string& name) { return find(name).sizes; }

std::int64_t default_blocks(const std::string& name, const Size& size) {
  find(name);  // an example without a run has no grid either
  return blocks_of(name, size);
}

Grid default_grid(const std::string& name, const Size& size) {
  static const std::map<std::string, std::int64_t> kThreads = {
      {"saxpy", 256},
      {"gelu", 256},
      {"fp8_dequant", 256},
      {"vec_copy", 256},
      {"block_load_copy", 128},
      {"block_reduce", 256},
      {"sgemm_naive", 256},
      {"sgemm_coalesced", 256},
      {"sgemm_smem", 1024},
      {"sgemm_reg1d", 512},
      {"sgemm_reg2d", 256},
      {"sgemm_vec", 256},
      {"sgemm_warptile", 128},
      {"mma_tf32", 128},
      {"scan_lookback", 256},
      {"transpose", 256},
      {"stencil", 256},
      {"softmax", 256},
      {"transpose_padded", 256},
      {"transpose_async", 256},
      {"warp_mma", 32},
      {"gemm_wgmma_bf16", 384},
      {"mma_tf32_naive", 32},
      {"sgemm_pipelined", 256},
      {"scan_tiled", 1024},
      {"device_scan", 1024},
      {"device_sum", 1024},
      {"compact", 256},
      {"radix_sort", 256},
      {"byte_histogram", 256},
      {"gemm_wgmma_bf16_wide", 384},
      {"igemm_mma", 128},
      {"saxpy_vec", 256},
      {"igemm_wgmma", 384},
  };
  auto it = kThreads.find(name);
  if (it == kThreads.end()) throw std::invalid_argument("no grid is defined for example '" + name + "'");
  return Grid{default_blocks(name, size), it->second};
}

RunResult run_kernel(const std::string& name, const Kernel& kernel, const Size& size, const Device& device) {
  const Case& c = find(name);
  Size full = c.sizes.front();
  for (const auto& [k, v] : size) {
    if (!full.count(k))
      throw std::invalid_argument("example '" + name + "' has no size '" + k + "' (it takes: " + sizes_text(full) +
                                  ")");
    full[k] = v;
  }
  return c.run(kernel, full, device);
}

RunResult run_example(const std::string& name, const Size& size, const Device& device) {
  for (const auto& e : all())
    if (e.name == name) return run_kernel(name, e.build(), size, device);
  throw std::invalid_argument("no example named '" + name + "'");
}

}  // namespace vantage::examples
