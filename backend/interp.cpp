// Vantage's interpreter backend: the lowered kernel itself, run by the reference interpreter with
// every check, from the same packed arguments the GPU and CPU backends take.
#include <chrono>
#include <cstring>
#include <memory>

#include "backend/backend.h"
#include "jit/interp/interp.h"
#include "jit/pipeline/pipeline.h"
#include "support/float16.h"
#include "support/float8.h"

namespace vantage::backend {
namespace {

template <class T>
T slot_as(const void* slot) {
  T v;
  std::memcpy(&v, slot, sizeof v);
  return v;
}

class InterpExecutable final : public Executable {
 public:
  explicit InterpExecutable(lower::Lowered lowered) : lowered_(std::move(lowered)) {}

  Outcome run(const Launch& l) const override {
    const auto& params = lowered_.kernel.params;
    const std::size_t n = lowered_.user_params;
    std::vector<interp::Arg> args(n);
    std::size_t length = n;  // the hidden lengths follow the parameters, one per pointer
    for (std::size_t i = 0; i < n; ++i) {
      const void* slot = l.pointers[i];
      interp::Arg& a = args[i];
      if (params[i].mem) {
        a.is_buffer = true;
        a.data = reinterpret_cast<void*>(slot_as<std::uint64_t>(slot));
        a.length = slot_as<std::int64_t>(l.pointers[length++]);
        a.extent = l.extents[i];
        continue;
      }
      a = decode(params[i].var->type, slot);
    }
    interp::Options o;
    const InterpreterOptions& io = *l.interpreter;
    o.order = io.order == ThreadOrder::Forward   ? interp::Order::Forward
              : io.order == ThreadOrder::Reverse ? interp::Order::Reverse
                                                 : interp::Order::Random;
    o.seed = io.seed;
    o.checks = io.checks;
    o.max_statements = io.max_statements;
    std::shared_ptr<CostReport> measured;
    if (io.measure) o.measure = (measured = std::make_shared<CostReport>()).get();
    auto start = std::chrono::steady_clock::now();
    interp::Stats st = interp::run(lowered_, l.blocks, args, o);
    Outcome out;
    out.measured = std::move(measured);
    out.thread_statements = st.thread_statements;
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  }

 private:
  /// A scalar from its packed slot (exactly the parameter's C++ type), in the interpreter's
  /// representation: integers in `i` as the IR holds them, floats in `f`.
  static interp::Arg decode(ScalarType type, const void* slot) {
    switch (type) {
      case ScalarType::Bool: return interp::Arg::integer(slot_as<bool>(slot) ? 1 : 0);
      case ScalarType::F8E4M3:
      case ScalarType::F8E5M2: {
        auto bits = slot_as<std::uint8_t>(slot);
        interp::Arg a = interp::Arg::real(float8::decode(bits, type == ScalarType::F8E5M2));
        a.i = bits;
        return a;
      }
      case ScalarType::I8: return interp::Arg::integer(slot_as<std::int8_t>(slot));
      case ScalarType::U8: return interp::Arg::integer(slot_as<std::uint8_t>(slot));
      case ScalarType::I16: return interp::Arg::integer(slot_as<std::int16_t>(slot));
      case ScalarType::U16: return interp::Arg::integer(slot_as<std::uint16_t>(slot));
      case ScalarType::I32: return interp::Arg::integer(slot_as<std::int32_t>(slot));
      case ScalarType::U32: return interp::Arg::integer(slot_as<std::uint32_t>(slot));
      case ScalarType::I64:
      case ScalarType::U64: return interp::Arg::integer(slot_as<std::int64_t>(slot));
      case ScalarType::F32: return interp::Arg::real(slot_as<float>(slot));
      case ScalarType::F64: return interp::Arg::real(slot_as<double>(slot));
      case ScalarType::F16: {
        auto bits = slot_as<std::uint16_t>(slot);
        interp::Arg a = interp::Arg::real(float16::half_to_float(bits));
        a.i = bits;
        return a;
      }
      case ScalarType::BF16: {
        auto bits = slot_as<std::uint16_t>(slot);
        interp::Arg a = interp::Arg::real(float16::bf16_to_float(bits));
        a.i = bits;
        return a;
      }
    }
    return {};
  }

  lower::Lowered lowered_;
};

class InterpBackend final : public Backend {
 public:
  std::unique_ptr<Executable> make(const Kernel& kernel, Spec spec, const Target&) const override {
    auto lowered = pipeline::lower_for(kernel, spec);
    std::vector<int> alignment(lowered.lowered.user_params, 0);
    for (const auto& [i, bytes] : lowered.lowered.param_alignment) alignment[static_cast<std::size_t>(i)] = bytes;
    auto e = std::make_unique<InterpExecutable>(std::move(lowered.lowered));
    e->alignment = std::move(alignment);
    e->guards = std::move(lowered.specialized.guards);
    e->block_threads = lowered.specialized.threads;
    return e;
  }
  std::string toolchain() const override { return "interpreter"; }
};

}  // namespace

const Backend& interpreter() {
  static const InterpBackend b;
  return b;
}

}  // namespace vantage::backend
