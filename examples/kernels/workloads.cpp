// Example workloads: see workloads.hpp.
#include "kernels/workloads.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "kernels/paper_kernels.hpp"

namespace vantage::examples {
namespace {

using Size = std::map<std::string, std::int64_t>;

template <class T>
std::vector<T> small_ints(std::int64_t n, int seed) {
  std::vector<T> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<T>((i * 7 + seed * 13) % 11 - 5);
  return v;
}

/// n random values of T from `seed` (splitmix64): floats with random 24-bit mantissas in [-1, 1),
/// bf16 those floats truncated, int8 every byte.
template <class T>
std::vector<T> random_values(std::int64_t n, std::uint64_t seed) {
  std::vector<T> v(static_cast<std::size_t>(n));
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull;
  for (auto& e : v) {
    x += 0x9e3779b97f4a7c15ull;
    std::uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const float f = static_cast<float>(static_cast<std::int64_t>(z >> 40) - (std::int64_t{1} << 23)) / 8388608.0f;
    if constexpr (std::is_same_v<T, float>) {
      e = f;
    } else if constexpr (std::is_same_v<T, bfloat16>) {
      std::uint32_t bits;
      std::memcpy(&bits, &f, 4);
      e = bfloat16{static_cast<std::uint16_t>(bits >> 16)};
    } else {
      static_assert(std::is_same_v<T, std::int8_t>);
      e = static_cast<std::int8_t>(z & 0xff);
    }
  }
  return v;
}

template <class T>
std::shared_ptr<DeviceBuffer<T>> upload(const Device& d, const std::vector<T>& host) {
  auto b = std::make_shared<DeviceBuffer<T>>(d.alloc<T>(static_cast<std::int64_t>(host.size())));
  b->copy_from(host);
  return b;
}

template <class T>
std::vector<char> bytes_of(const DeviceBuffer<T>& b) {
  std::vector<char> out(static_cast<std::size_t>(b.size()) * sizeof(T));
  b.copy_to(std::span<T>(reinterpret_cast<T*>(out.data()), static_cast<std::size_t>(b.size())));
  return out;
}

template <class T>
std::vector<T> values_of(const std::vector<char>& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

std::string differs(std::int64_t at, double got, double want) {
  char b[160];
  std::snprintf(b, sizeof b, "element %lld is %.9g, the reference %.9g", static_cast<long long>(at), got, want);
  return b;
}

/// Rows and columns to check of an M x N result: corners, edges and a spread in between.
std::vector<std::pair<std::int64_t, std::int64_t>> samples(std::int64_t M, std::int64_t N) {
  std::vector<std::pair<std::int64_t, std::int64_t>> s;
  for (std::int64_t i = 0; i < 16; ++i)
    for (std::int64_t j = 0; j < 16; ++j)
      s.emplace_back(std::min(M - 1, (i * 7919 + j * 131) % M), std::min(N - 1, (j * 6007 + i * 17) % N));
  s.emplace_back(0, 0);
  s.emplace_back(M - 1, N - 1);
  s.emplace_back(0, N - 1);
  s.emplace_back(M - 1, 0);
  return s;
}

Workload gemm(const Device& d, const Size& s) {
  const std::int64_t M = s.at("M"), N = s.at("N"), K = s.at("K");
  // beta 0: every launch leaves the same C (a tuner or a benchmark launches many times); C is still
  // read, as the kernels read it for any beta.
  const float alpha = 1.5f, beta = 0.0f;
  Workload w;
  auto A = small_ints<float>(M * K, 1), B = small_ints<float>(K * N, 2), C = small_ints<float>(M * N, 3);
  auto a = upload(d, A), b = upload(d, B), c = upload(d, C);
  w.owned = {a, b, c};
  w.args = {LaunchArg(static_cast<int>(M)),
            LaunchArg(static_cast<int>(N)),
            LaunchArg(static_cast<int>(K)),
            LaunchArg(alpha),
            LaunchArg(beta),
            LaunchArg(std::as_const(*a)),
            LaunchArg(std::as_const(*b)),
            LaunchArg(*c)};
  w.restore = [c, C] { c->copy_from(C); };
  w.output = [c] { return bytes_of(*c); };
  w.randomize = [a, b] {
    a->copy_from(random_values<float>(a->size(), 1));
    b->copy_from(random_values<float>(b->size(), 2));
  };
  w.check = [c, A = std::move(A), B = std::move(B), C = std::move(C), M, N, K, alpha, beta] {
    const auto got = values_of<float>(bytes_of(*c));
    for (auto [r, col] : samples(M, N)) {
      double acc = 0;
      for (std::int64_t p = 0; p < K; ++p)
        acc += static_cast<double>(A[static_cast<std::size_t>(r * K + p)]) * B[static_cast<std::size_t>(p * N + col)];
      const std::int64_t i = r * N + col;
      const double want = alpha * acc + beta * C[static_cast<std::size_t>(i)];
      if (got[static_cast<std::size_t>(i)] != want) return differs(i, got[static_cast<std::size_t>(i)], want);
    }
    return std::string();
  };
  w.flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  w.bytes = 4.0 * static_cast<double>(M * K + K * N + 2 * M * N);
  return w;
}

Workload wgmma(const Device& d, const Size& s) {
  const std::int64_t M = s.at("M"), N = s.at("N"), K = s.at("K");
  auto quarter = [](std::int64_t i, int seed) { return static_cast<float>((i * 7 + seed * 3) % 9 - 4) / 4.0f; };
  auto bf16 = [](float f) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return bfloat16{static_cast<std::uint16_t>(bits >> 16)};  // exact: a quarter's low half is zero
  };
  std::vector<bfloat16> A(static_cast<std::size_t>(M * K)), Bt(static_cast<std::size_t>(N * K));
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = bf16(quarter(static_cast<std::int64_t>(i), 1));
  for (std::size_t i = 0; i < Bt.size(); ++i) Bt[i] = bf16(quarter(static_cast<std::int64_t>(i), 2));
  Workload w;
  auto a = upload(d, A), b = upload(d, Bt);
  auto c = upload(d, std::vector<float>(static_cast<std::size_t>(M * N), -1.0f));
  w.owned = {a, b, c};
  w.args = {LaunchArg(static_cast<int>(M)), LaunchArg(static_cast<int>(N)), LaunchArg(static_cast<int>(K)),
            LaunchArg(std::as_const(*a)),   LaunchArg(std::as_const(*b)),   LaunchArg(*c)};
  w.restore = [c] { c->zero(); };
  w.output = [c] { return bytes_of(*c); };
  w.randomize = [a, b] {
    a->copy_from(random_values<bfloat16>(a->size(), 1));
    b->copy_from(random_values<bfloat16>(b->size(), 2));
  };
  w.check = [c, quarter, M, N, K] {
    const auto got = values_of<float>(bytes_of(*c));
    for (auto [r, col] : samples(M, N)) {
      double acc = 0;
      for (std::int64_t p = 0; p < K; ++p) acc += static_cast<double>(quarter(r * K + p, 1)) * quarter(col * K + p, 2);
      const std::int64_t i = r * N + col;
      if (got[static_cast<std::size_t>(i)] != acc) return differs(i, got[static_cast<std::size_t>(i)], acc);
    }
    return std::string();
  };
  w.flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  w.bytes = 2.0 * static_cast<double>(M * K + N * K) + 4.0 * static_cast<double>(M * N);
  return w;
}

/// The int8 GEMM: C (i32) = A (s8, M x K) * B (s8, K x N) of bytes over their whole range, exact.
/// `bt`: B is given as Bt (N x K), as the wgmma GEMMs take it.
Workload igemm(const Device& d, const Size& s, bool bt) {
  const std::int64_t M = s.at("M"), N = s.at("N"), K = s.at("K");
  auto byte = [](std::int64_t i, int seed) {
    return static_cast<std::int8_t>((i * 37 + seed * 101 + i / 61) % 256 - 128);
  };
  std::vector<std::int8_t> A(static_cast<std::size_t>(M * K)), B(static_cast<std::size_t>(K * N));
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = byte(static_cast<std::int64_t>(i), 1);
  for (std::size_t i = 0; i < B.size(); ++i) B[i] = byte(static_cast<std::int64_t>(i), 2);
  Workload w;
  auto a = upload(d, A), b = upload(d, B);
  auto c = upload(d, std::vector<int>(static_cast<std::size_t>(M * N), -1));
  w.owned = {a, b, c};
  w.args = {LaunchArg(static_cast<int>(M)), LaunchArg(static_cast<int>(N)), LaunchArg(static_cast<int>(K)),
            LaunchArg(std::as_const(*a)),   LaunchArg(std::as_const(*b)),   LaunchArg(*c)};
  w.restore = [c] { c->zero(); };
  w.output = [c] { return bytes_of(*c); };
  w.randomize = [a, b] {
    a->copy_from(random_values<std::int8_t>(a->size(), 1));
    b->copy_from(random_values<std::int8_t>(b->size(), 2));
  };
  w.check = [c, byte, M, N, K, bt] {
    const auto got = values_of<int>(bytes_of(*c));
    for (auto [r, col] : samples(M, N)) {
      std::int64_t acc = 0;
      for (std::int64_t p = 0; p < K; ++p) acc += byte(r * K + p, 1) * byte(bt ? col * K + p : p * N + col, 2);
      const std::int64_t i = r * N + col;
      if (got[static_cast<std::size_t>(i)] != acc)
        return differs(i, got[static_cast<std::size_t>(i)], static_cast<double>(acc));
    }
    return std::string();
  };
  w.flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);  // integer ops
  w.bytes = static_cast<double>(M * K + K * N) + 4.0 * static_cast<double>(M * N);
  return w;
}

/// out = in (Copy) or in transposed (Transpose): the output compared with the input element by element.
Workload copy_like(const Device& d, const Size& s, bool transpose) {
  const std::int64_t M = transpose ? s.at("M") : 1, N = transpose ? s.at("N") : s.at("n"), n = M * N;
  auto in = small_ints<float>(n, 5);
  auto i = upload(d, in);
  auto o = upload(d, std::vector<float>(static_cast<std::size_t>(n), -9.0f));
  Workload w;
  w.owned = {i, o};
  if (transpose)
    w.args = {LaunchArg(static_cast<int>(M)), LaunchArg(static_cast<int>(N)), LaunchArg(std::as_const(*i)),
              LaunchArg(*o)};
  else
    w.args = {LaunchArg(static_cast<int>(n)), LaunchArg(std::as_const(*i)), LaunchArg(*o)};
  w.restore = [o, n] { o->copy_from(std::vector<float>(static_cast<std::size_t>(n), -9.0f)); };
  w.output = [o] { return bytes_of(*o); };
  w.check = [o, in = std::move(in), M, N, transpose] {
    const auto got = values_of<float>(bytes_of(*o));
    for (std::int64_t r = 0; r < M; ++r)
      for (std::int64_t c = 0; c < N; ++c) {
        const std::int64_t at = transpose ? c * M + r : r * N + c;
        const float want = in[static_cast<std::size_t>(r * N + c)];
        if (got[static_cast<std::size_t>(at)] != want) return differs(at, got[static_cast<std::size_t>(at)], want);
      }
    return std::string();
  };
  w.bytes = 8.0 * static_cast<double>(n);
  w.copy_bytes = 4 * n;
  w.input = transpose ? 2 : 1;
  return w;
}

/// One step of the 5-point stencil (M x N): the output compared with the same sums in C++, in the
/// kernel's order, zeros past the edges; as a copy, each element read once and written once.
Workload stencil(const Device& d, const Size& s) {
  const std::int64_t M = s.at("M"), N = s.at("N"), n = M * N;
  Workload w = copy_like(d, s, true);
  auto in = small_ints<float>(n, 5);                                   // copy_like's input
  auto o = std::static_pointer_cast<DeviceBuffer<float>>(w.owned[1]);  // copy_like's output
  w.check = [o, in = std::move(in), M, N] {
    const auto got = values_of<float>(bytes_of(*o));
    auto at = [&](std::int64_t r, std::int64_t c) {
      return r < 0 || r >= M || c < 0 || c >= N ? 0.0f : in[static_cast<std::size_t>(r * N + c)];
    };
    for (std::int64_t r = 0; r < M; ++r)
      for (std::int64_t c = 0; c < N; ++c) {
        const float want = 0.2f * ((((at(r, c) + at(r - 1, c)) + at(r + 1, c)) + at(r, c - 1)) + at(r, c + 1));
        const std::int64_t i = r * N + c;
        if (got[static_cast<std::size_t>(i)] != want) return differs(i, got[static_cast<std::size_t>(i)], want);
      }
    return std::string();
  };
  return w;
}

/// The softmax of each row (rows x cols): each row compared with its softmax in double, to 1e-5 of
/// its value; as a copy, each element read once and written once (the kernel reads its row three
/// times, the second and third from L2 where a row fits).
Workload softmax(const Device& d, const Size& s) {
  const std::int64_t rows = s.at("rows"), cols = s.at("cols"), n = rows * cols;
  auto in = small_ints<float>(n, 7);
  auto x = upload(d, in);
  auto y = upload(d, std::vector<float>(static_cast<std::size_t>(n), -9.0f));
  Workload w;
  w.owned = {x, y};
  w.args = {LaunchArg(static_cast<int>(rows)), LaunchArg(static_cast<int>(cols)), LaunchArg(std::as_const(*x)),
            LaunchArg(*y)};
  w.output = [y] { return bytes_of(*y); };
  w.restore = [y, n] { y->copy_from(std::vector<float>(static_cast<std::size_t>(n), -9.0f)); };
  w.check = [y, in = std::move(in), rows, cols] {
    const auto got = values_of<float>(bytes_of(*y));
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* row = in.data() + r * cols;
      double m = -HUGE_VAL, sum = 0;
      for (std::int64_t c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(row[c]));
      for (std::int64_t c = 0; c < cols; ++c) sum += std::exp(row[c] - m);
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::int64_t i = r * cols + c;
        const double want = std::exp(row[c] - m) / sum, g = got[static_cast<std::size_t>(i)];
        if (!(std::fabs(g - want) <= 1e-5 * std::max(1.0, std::fabs(want)))) return differs(i, g, want);
      }
    }
    return std::string();
  };
  w.bytes = 8.0 * static_cast<double>(n);
  w.copy_bytes = 4 * n;
  w.input = 2;
  return w;
}

/// y = a * x + y (saxpy_vec): y is put back before each launch (a copy from the host, outside the
/// timed events), so that every launch leaves the same output.
Workload axpy(const Device& d, const Size& s) {
  const std::int64_t n = s.at("n");
  const float a = 2.0f;
  auto x = small_ints<float>(n, 6), y = small_ints<float>(n, 7);
  auto xb = upload(d, x), yb = upload(d, y);
  Workload w;
  w.owned = {xb, yb};
  w.args = {LaunchArg(static_cast<int>(n)), LaunchArg(a), LaunchArg(std::as_const(*xb)), LaunchArg(*yb)};
  w.reset = [yb, y] { yb->copy_from(y); };
  w.restore = w.reset;
  w.output = [yb] { return bytes_of(*yb); };
  w.check = [yb, x = std::move(x), y, a] {
    const auto got = values_of<float>(bytes_of(*yb));
    for (std::size_t i = 0; i < got.size(); ++i)
      if (got[i] != a * x[i] + y[i]) return differs(static_cast<std::int64_t>(i), got[i], a * x[i] + y[i]);
    return std::string();
  };
  w.bytes = 12.0 * static_cast<double>(n);  // x and y read, y written
  w.copy_bytes = 4 * n;
  w.input = 2;
  return w;
}

Workload reduce(const Device& d, const Size& s) {
  const std::int64_t n = s.at("n"), blocks = (n + 255) / 256;
  auto x = small_ints<float>(n, 4);
  auto xb = upload(d, x);
  auto o = upload(d, std::vector<float>(static_cast<std::size_t>(blocks), -9.0f));
  Workload w;
  w.owned = {xb, o};
  w.args = {LaunchArg(static_cast<int>(n)), LaunchArg(std::as_const(*xb)), LaunchArg(*o)};
  w.restore = [o, blocks] { o->copy_from(std::vector<float>(static_cast<std::size_t>(blocks), -9.0f)); };
  w.output = [o] { return bytes_of(*o); };
  w.check = [o, x = std::move(x), n, blocks] {
    const auto got = values_of<float>(bytes_of(*o));
    for (std::int64_t b = 0; b < blocks; ++b) {
      double want = 0;
      for (std::int64_t i = b * 256; i < std::min(n, b * 256 + 256); ++i) want += x[static_cast<std::size_t>(i)];
      if (got[static_cast<std::size_t>(b)] != want) return differs(b, got[static_cast<std::size_t>(b)], want);
    }
    return std::string();
  };
  w.bytes = 4.0 * static_cast<double>(n + blocks);
  w.copy_bytes = 4 * n;
  w.input = 1;
  return w;
}

Workload scan(const Device& d, const Size& s) {
  const std::int64_t n = s.at("n"), blocks = (n + 255) / 256;
  std::vector<int> x(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = static_cast<int>((i * 7919) % 201) - 100;
  auto xb = upload(d, x);
  auto y = upload(d, std::vector<int>(static_cast<std::size_t>(n), -1));
  // A word a block, and one more (lib::device_inclusive_scan's count of the tiles finished).
  auto desc = std::make_shared<DeviceBuffer<std::uint64_t>>(d.alloc<std::uint64_t>(blocks + 1));
  desc->zero();
  Workload w;
  w.owned = {xb, y, desc};
  w.args = {LaunchArg(static_cast<int>(n)), LaunchArg(std::as_const(*xb)), LaunchArg(*y), LaunchArg(*desc)};
  w.reset = [desc] { desc->zero(); };  // the scan needs its words zero at launch
  w.restore = [y, n] { y->copy_from(std::vector<int>(static_cast<std::size_t>(n), -1)); };
  w.output = [y] { return bytes_of(*y); };
  w.check = [y, x = std::move(x), n] {
    const auto got = values_of<int>(bytes_of(*y));
    std::uint32_t sum = 0;  // wrapping, as the kernel's i32 additions
    for (std::int64_t i = 0; i < n; ++i) {
      sum += static_cast<std::uint32_t>(x[static_cast<std::size_t>(i)]);
      if (got[static_cast<std::size_t>(i)] != static_cast<int>(sum))
        return differs(i, got[static_cast<std::size_t>(i)], static_cast<int>(sum));
    }
    return std::string();
  };
  w.bytes = 8.0 * static_cast<double>(n);
  w.copy_bytes = 4 * n;
  w.input = 1;
  return w;
}

/// lib::device_reduce's sum of ints: the storage needs no reset (each launch leaves it zero).
Workload device_sum(const Device& d, const Size& s) {
  const std::int64_t n = s.at("n");
  auto x = small_ints<int>(n, 5);
  auto xb = upload(d, x);
  auto o = upload(d, std::vector<int>{-9});
  auto temp = upload(d, std::vector<std::uint64_t>(static_cast<std::size_t>(lib::device_temp_words(n, 1024)), 0));
  Workload w;
  w.owned = {xb, o, temp};
  w.args = {LaunchArg(static_cast<int>(n)), LaunchArg(std::as_const(*xb)), LaunchArg(*o), LaunchArg(*temp)};
  w.restore = [o] { o->copy_from(std::vector<int>{-9}); };
  w.output = [o] { return bytes_of(*o); };
  w.check = [o, x = std::move(x)] {
    std::uint32_t sum = 0;  // wrapping, as the kernel's i32 additions
    for (int v : x) sum += static_cast<std::uint32_t>(v);
    const int got = values_of<int>(bytes_of(*o)).at(0);
    return got == static_cast<int>(sum) ? std::string() : differs(0, got, static_cast<int>(sum));
  };
  w.bytes = 4.0 * static_cast<double>(n);
  w.copy_bytes = 4 * n;
  w.input = 1;
  return w;
}

/// lib::device_select of the floats above 0.5 (small integers: about 5 in 11 kept).
Workload compact(const Device& d, const Size& s) {
  const std::int64_t n = s.at("n");
  auto x = small_ints<float>(n, 6);
  std::vector<float> want;
  for (float v : x)
    if (v > 0.5f) want.push_back(v);
  auto xb = upload(d, x);
  auto o = upload(d, std::vector<float>(static_cast<std::size_t>(n), -9.0f));
  auto count = upload(d, std::vector<int>{-1});
  auto temp = upload(d, std::vector<std::uint64_t>(static_cast<std::size_t>(lib::device_temp_words(n, 256)), 0));
  Workload w;
  w.owned = {xb, o, count, temp};
  w.args = {LaunchArg(static_cast<int>(n)),
            LaunchArg(0.5f),
            LaunchArg(std::as_const(*xb)),
            LaunchArg(*o),
            LaunchArg(*count),
            LaunchArg(*temp)};
  w.restore = [o, count, n] {
    o->copy_from(std::vector<float>(static_cast<std::size_t>(n), -9.0f));
    count->copy_from(std::vector<int>{-1});
  };
  w.output = [o] { return bytes_of(*o); };
  w.check = [o, count, want = std::move(want)] {
    const int kept = values_of<int>(bytes_of(*count)).at(0);
    if (kept != static_cast<int>(want.size()))
      return "count is " + std::to_string(kept) + ", the reference " + std::to_string(want.size());
    const auto got = values_of<float>(bytes_of(*o));
    for (std::size_t i = 0; i < want.size(); ++i)
      if (got[i] != want[i]) return differs(static_cast<std::int64_t>(i), got[i], want[i]);
    return std::string();
  };
  w.bytes = 4.0 * static_cast<double>(n) + 4.0 * static_cast<double>(want.size());
  w.copy_bytes = 4 * n;
  w.input = 2;
  return w;
}

/// lib::device_histogram of bytes into 256 bins, zeroed before each launch (the counts are added).
Workload byte_histogram(const Device& d, const Size& s) {
  const std::int64_t n = s.at("n");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n));
  std::vector<std::uint32_t> want(256, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>((i * 7919 + i / 3) % 256);
    ++want[bytes[static_cast<std::size_t>(i)]];
  }
  auto b = upload(d, bytes);
  auto h = upload(d, std::vector<std::uint32_t>(256, 0));
  Workload w;
  w.owned = {b, h};
  w.args = {LaunchArg(static_cast<int>(n)), LaunchArg(std::as_const(*b)), LaunchArg(*h)};
  w.reset = [h] { h->zero(); };
  w.restore = [h] { h->zero(); };
  w.output = [h] { return bytes_of(*h); };
  w.check = [h, want = std::move(want)] {
    const auto got = values_of<std::uint32_t>(bytes_of(*h));
    for (std::size_t i = 0; i < want.size(); ++i)
      if (got[i] != want[i]) return differs(static_cast<std::int64_t>(i), got[i], want[i]);
    return std::string();
  };
  w.bytes = static_cast<double>(n);
  w.copy_bytes = n;
  w.input = 1;
  return w;
}

/// The whole radix sort of u32 keys with u32 values (radix_sort's run: keys with many equal ones,
/// values their indices): four passes of radix_counts, radix_places and the example's scatter,
/// from the input buffers through a second pair and back. Each launch overwrites the input, so
/// reset puts it back. The check: keys in order, each with its own value, equal keys in their
/// input order.
Workload radix_sort_all(const Device& d, const Size& s, bool onesweep) {
  static const Kernel counts = radix_counts(), places = radix_places(), scatter = radix_sort();
  const std::int64_t n = s.at("n"), m = lib::radix_table_size(n, 256);
  std::vector<std::uint32_t> keys(static_cast<std::size_t>(n)), vals(keys.size());
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u;
    keys[static_cast<std::size_t>(i)] = i % 4 == 0 ? h : (h % 50) << 16;
    vals[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(i);
  }
  auto k0 = upload(d, keys), v0 = upload(d, vals), k1 = upload(d, keys), v1 = upload(d, vals);
  auto table = upload(d, std::vector<int>(static_cast<std::size_t>(m), 0));
  auto place = upload(d, std::vector<int>(static_cast<std::size_t>(m), 0));
  auto temp = upload(d, std::vector<std::uint64_t>(static_cast<std::size_t>(lib::device_temp_words(m, 256)), 0));
  Workload w;
  w.owned = {k0, v0, k1, v1, table, place, temp};
  if (onesweep) {
    // One histogram launch, then a launch a pass; the counts and look-back words zeroed once here.
    static const Kernel histogram = radix_histogram_all(), sweep = radix_onesweep_pass();
    auto hist = upload(d, std::vector<int>(static_cast<std::size_t>(lib::radix_hist_size()), 0));
    auto lookback =
        upload(d, std::vector<std::uint32_t>(static_cast<std::size_t>(lib::radix_lookback_words(n, 256)), 0));
    w.owned.push_back(hist);
    w.owned.push_back(lookback);
    w.run = [=](const Stream& stream) {
      const Grid tiles{lib::radix_blocks(n, 256), 256}, counting{lib::radix_histogram_blocks(n, 256), 256};
      const LaunchArg h[] = {LaunchArg(static_cast<int>(n)), LaunchArg(std::as_const(*k0)), LaunchArg(*hist)};
      launch(histogram, stream, counting, h);
      for (int pass = 0; pass < 4; ++pass) {
        auto& from_k = pass % 2 == 0 ? *k0 : *k1;
        auto& from_v = pass % 2 == 0 ? *v0 : *v1;
        auto& to_k = pass % 2 == 0 ? *k1 : *k0;
        auto& to_v = pass % 2 == 0 ? *v1 : *v0;
        const LaunchArg x[] = {LaunchArg(static_cast<int>(n)),
                               LaunchArg(8 * pass),
                               LaunchArg(std::as_const(from_k)),
                               LaunchArg(std::as_const(from_v)),
                               LaunchArg(*hist),
                               LaunchArg(*lookback),
                               LaunchArg(to_k),
                               LaunchArg(to_v)};
        launch(sweep, stream, tiles, x);
      }
    };
  } else {
    w.run = [=](const Stream& stream) {
      const Grid tiles{lib::radix_blocks(n, 256), 256}, scan{lib::device_blocks(m, 256), 256};
      for (int pass = 0; pass < 4; ++pass) {
        auto& from_k = pass % 2 == 0 ? *k0 : *k1;
        auto& from_v = pass % 2 == 0 ? *v0 : *v1;
        auto& to_k = pass % 2 == 0 ? *k1 : *k0;
        auto& to_v = pass % 2 == 0 ? *v1 : *v0;
        const LaunchArg c[] = {LaunchArg(static_cast<int>(n)), LaunchArg(8 * pass), LaunchArg(std::as_const(from_k)),
                               LaunchArg(*table)};
        launch(counts, stream, tiles, c);
        const LaunchArg p[] = {LaunchArg(static_cast<int>(m)), LaunchArg(std::as_const(*table)), LaunchArg(*place),
                               LaunchArg(*temp)};
        launch(places, stream, scan, p);
        const LaunchArg x[] = {LaunchArg(static_cast<int>(n)),
                               LaunchArg(8 * pass),
                               LaunchArg(std::as_const(from_k)),
                               LaunchArg(std::as_const(from_v)),
                               LaunchArg(std::as_const(*place)),
                               LaunchArg(to_k),
                               LaunchArg(to_v)};
        launch(scatter, stream, tiles, x);
      }
    };
  }
  w.reset = [k0, v0, keys, vals] {
    k0->copy_from(keys);
    v0->copy_from(vals);
  };
  w.restore = w.reset;
  w.output = [k0, v0] {
    auto out = bytes_of(*k0);
    auto more = bytes_of(*v0);
    out.insert(out.end(), more.begin(), more.end());
    return out;
  };
  w.check = [k0, v0, keys, n] {
    const auto got_k = values_of<std::uint32_t>(bytes_of(*k0)), got_v = values_of<std::uint32_t>(bytes_of(*v0));
    std::vector<bool> seen(static_cast<std::size_t>(n), false);
    for (std::int64_t i = 0; i < n; ++i) {
      const std::uint32_t v = got_v[static_cast<std::size_t>(i)], k = got_k[static_cast<std::size_t>(i)];
      if (v >= static_cast<std::uint64_t>(n) || seen[v] || keys[v] != k)
        return "element " + std::to_string(i) + " is the pair (" + std::to_string(k) + ", " + std::to_string(v) +
               "), not one of the input's";
      seen[v] = true;
      if (i > 0 && (k < got_k[static_cast<std::size_t>(i - 1)] ||
                    (k == got_k[static_cast<std::size_t>(i - 1)] && v < got_v[static_cast<std::size_t>(i - 1)])))
        return "elements " + std::to_string(i - 1) + " and " + std::to_string(i) + " are out of order (or unstable)";
    }
    return std::string();
  };
  w.bytes = 16.0 * static_cast<double>(n);  // nominal: the pairs read and written once
  return w;
}

enum class Shape {
  None,
  Gemm,
  Wgmma,
  Copy,
  Transpose,
  Reduce,
  Scan,
  Sum,
  Select,
  Histogram,
  IGemm,
  Sort,
  Sweep,
  Axpy,
  IGemmBt,
  Stencil,
  Softmax
};

Shape shape_of(const std::string& name) {
  if (name.rfind("gemm_wgmma_bf16", 0) == 0) return Shape::Wgmma;
  if (name == "mma_tf32" || (name.rfind("sgemm_", 0) == 0)) return Shape::Gemm;
  if (name == "vec_copy") return Shape::Copy;
  if (name == "saxpy_vec") return Shape::Axpy;
  if (name.rfind("transpose", 0) == 0) return Shape::Transpose;
  if (name == "stencil") return Shape::Stencil;
  if (name == "softmax") return Shape::Softmax;
  if (name == "block_reduce") return Shape::Reduce;
  if (name == "scan_lookback" || name == "scan_tiled" || name == "device_scan") return Shape::Scan;
  if (name == "device_sum") return Shape::Sum;
  if (name == "compact") return Shape::Select;
  if (name == "byte_histogram") return Shape::Histogram;
  if (name == "igemm_mma") return Shape::IGemm;
  if (name.rfind("igemm_wgmma", 0) == 0) return Shape::IGemmBt;
  if (name == "radix_sort") return Shape::Sort;
  if (name == "radix_sort_onesweep") return Shape::Sweep;
  return Shape::None;
}

}  // namespace

bool has_workload(const std::string& name) { return shape_of(name) != Shape::None; }

namespace {
/// The size names each Shape's workload takes, space-separated.
const std::string& needs(Shape shape) {
  static const std::string kNeeds[] = {"",  "M N K", "M N K", "n", "M N", "n",     "n",   "n",        "n",
                                       "n", "M N K", "n",     "n", "n",   "M N K", "M N", "rows cols"};
  return kNeeds[static_cast<int>(shape)];
}
}  // namespace

std::vector<std::string> workload_sizes(const std::string& name) {
  std::vector<std::string> out;
  const std::string& want = needs(shape_of(name));
  for (const char* k : {"M", "N", "K", "n", "rows", "cols"})
    if (want.find(k) != std::string::npos) out.emplace_back(k);
  return out;
}

Workload make_workload(const std::string& name, const Size& size, const Device& d) {
  const Shape shape = shape_of(name);
  const std::string& want = needs(shape);
  for (const char* k : {"M", "N", "K", "n", "rows", "cols"})
    if (want.find(k) != std::string::npos && !size.count(k))
      throw std::invalid_argument("example '" + name + "' needs the size " + k + " (it takes " + want + ")");
  switch (shape) {
    case Shape::Gemm: return gemm(d, size);
    case Shape::Wgmma: return wgmma(d, size);
    case Shape::Copy: return copy_like(d, size, false);
    case Shape::Transpose: return copy_like(d, size, true);
    case Shape::Reduce: return reduce(d, size);
    case Shape::Scan: return scan(d, size);
    case Shape::Sum: return device_sum(d, size);
    case Shape::Select: return compact(d, size);
    case Shape::Histogram: return byte_histogram(d, size);
    case Shape::IGemm: return igemm(d, size, false);
    case Shape::IGemmBt: return igemm(d, size, true);
    case Shape::Sort: return radix_sort_all(d, size, false);
    case Shape::Sweep: return radix_sort_all(d, size, true);
    case Shape::Axpy: return axpy(d, size);
    case Shape::Stencil: return stencil(d, size);
    case Shape::Softmax: return softmax(d, size);
    case Shape::None: break;
  }
  throw std::invalid_argument("example '" + name +
                              "' has no workload (the GEMMs, igemm_mma, igemm_wgmma, vec_copy, saxpy_vec, the "
                              "transposes, the stencil, radix_sort, "
                              "block_reduce, the scans and the device-wide examples have)");
}

}  // namespace vantage::examples
