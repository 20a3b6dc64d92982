// Vantage CUDA C++ emitter: see emit.h. It prints lowered IR (jit/lower) and decides nothing about
// what the kernel does: positions, accesses, barriers and vector copies are all explicit there.
//
// The integer semantics of docs/semantics.md are printed, not assumed: a signed +, -, * or negation
// that may overflow goes through a wrapping helper; a division or remainder that may see zero (or
// MIN / -1), and a shift whose amount may reach the width, go through helpers that give the defined
// result. Where the range analysis proves the edge cannot happen, the plain C++ operator is printed
// and is then defined. Index expressions are computed exactly, in 32 or 64 bits.
#include "jit/cuda/emit.h"

#include <algorithm>

#include "jit/cuda/emitter.h"

namespace vantage::cuda {

constexpr const char* kAtomicHelpers =  // its own first lines say what it is
    "// Atomic loads, stores and ordered atomics (docs/semantics.md): the __nv_atomic builtins, with the\n"
    "// ordering and scope as template arguments; the wrapping counters fenced where ordered.\n"
    "template <int O, int S, class T>\n"
    "static __device__ __forceinline__ T vt_atomic_load(T* p) {\n  T v;\n  __nv_atomic_load(p, &v, O, S);\n"
    "  return v;\n}\n"
    "template <int O, int S, class T>\n"
    "static __device__ __forceinline__ void vt_atomic_store(T* p, T v) { __nv_atomic_store(p, &v, O, S); }\n"
    "template <int O, int S, class T>\n"
    "static __device__ __forceinline__ T vt_atomic_exchange(T* p, T v) {\n  T old;\n"
    "  __nv_atomic_exchange(p, &v, &old, O, S);\n  return old;\n}\n"
    "template <int O, int S, class T>\n"
    "static __device__ __forceinline__ T vt_atomic_cas(T* p, T c, T v) {\n"
    "  __nv_atomic_compare_exchange(p, &c, &v, false, O,\n"
    "                               O == __NV_ATOMIC_RELEASE  ? __NV_ATOMIC_RELAXED\n"
    "                               : O == __NV_ATOMIC_ACQ_REL ? __NV_ATOMIC_ACQUIRE\n"
    "                                                          : O,\n"
    "                               S);\n  return c;\n}\n"
    "template <int S>\n"
    "static __device__ __forceinline__ void vt_atomic_fence() {\n"
    "  if (S == __NV_THREAD_SCOPE_BLOCK)\n    __threadfence_block();\n"
    "  else if (S == __NV_THREAD_SCOPE_SYSTEM)\n    __threadfence_system();\n"
    "  else\n    __threadfence();\n}\n"
    "template <int O, int S>\n"
    "static __device__ __forceinline__ unsigned vt_atomic_wrap(unsigned* p, unsigned v, bool inc) {\n"
    "  if (O == __NV_ATOMIC_RELEASE || O == __NV_ATOMIC_ACQ_REL) vt_atomic_fence<S>();\n"
    "  const unsigned old = S == __NV_THREAD_SCOPE_BLOCK    ? (inc ? atomicInc_block(p, v) : atomicDec_block(p, "
    "v))\n"
    "                       : S == __NV_THREAD_SCOPE_SYSTEM ? (inc ? atomicInc_system(p, v) : "
    "atomicDec_system(p, v))\n"
    "                                                       : (inc ? atomicInc(p, v) : atomicDec(p, v));\n"
    "  if (O == __NV_ATOMIC_ACQUIRE || O == __NV_ATOMIC_ACQ_REL) vt_atomic_fence<S>();\n"
    "  return old;\n}\n"
    "template <int O, int S>\n"
    "static __device__ __forceinline__ unsigned vt_atomic_inc(unsigned* p, unsigned v) {\n"
    "  return vt_atomic_wrap<O, S>(p, v, true);\n}\n"
    "template <int O, int S>\n"
    "static __device__ __forceinline__ unsigned vt_atomic_dec(unsigned* p, unsigned v) {\n"
    "  return vt_atomic_wrap<O, S>(p, v, false);\n}\n";

namespace detail {
namespace {
/// A lowered barrier's statements: cp.async's wait and the proxy fence where it has them, then the
/// barrier itself.
std::vector<std::string> barrier_lines(const ir::Barrier& b) {
  std::vector<std::string> lines;
  if (b.async_wait == ir::kAsyncWaitAll) lines.emplace_back("asm volatile(\"cp.async.wait_all;\" ::: \"memory\");");
  if (b.async_wait > 0)
    lines.emplace_back("asm volatile(\"cp.async.wait_group " + std::to_string(b.async_wait) + ";\" ::: \"memory\");");
  if (b.proxy_fence) lines.emplace_back("asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");");
  const std::string n = std::to_string(b.threads), id = std::to_string(b.id_base);
  switch (b.how) {
    case BarrierKind::Block: lines.emplace_back("__syncthreads();"); return lines;
    case BarrierKind::Warp: lines.emplace_back("__syncwarp();"); return lines;
    case BarrierKind::WarpPart:
      lines.push_back("__syncwarp(((1u << " + n + ") - 1u) << (threadIdx.x & 31u & ~" + std::to_string(b.threads - 1) +
                      "u));");
      return lines;
    case BarrierKind::Named:  // one id per unit of n threads: base + the unit's index in the block
      lines.push_back("asm volatile(\"bar.sync %0, %1;\" :: \"r\"(" + id + "u + threadIdx.x / " + n + "u), \"n\"(" + n +
                      ") : \"memory\");");
      return lines;
    case BarrierKind::NamedFixed:
      lines.push_back("asm volatile(\"bar.sync %0, %1;\" :: \"r\"(" + id + "), \"r\"(" + n + ") : \"memory\");");
      return lines;
    case BarrierKind::Cluster:  // release and acquire at the cluster's scope, the PTX defaults
      lines.emplace_back(
          "asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;\" ::: "
          "\"memory\");");
      return lines;
    case BarrierKind::Planned: break;
  }
  throw InternalError("emit: a barrier that was not lowered");
}
/// What the emitter declares specially of the thread-local arrays: those a vector copy reads or
/// writes are aligned to the vector, mma fragments of 8- and 16-bit elements to the 32-bit registers
/// they are read as; and a wgmma's accumulators are pinned at its fences and waits.
struct LocalArrays : IRVisitor {
  std::unordered_map<const MemNode*, std::int64_t> align;
  std::unordered_set<const MemNode*> accumulators;
  void visit(const VectorCopy& n) override {
    const std::int64_t bytes = n.count * type_bytes(n.src->elem);
    for (const MemNode* m : {n.dst.get(), n.src.get()})
      if (m->space == MemSpace::Local) align[m] = std::max(align[m], bytes);
    IRVisitor::visit(n);
  }
  void visit(const Intrinsic& n) override {
    if (n.op == IntrinsicOp::Wgmma && !n.mems.empty() && n.mems[0]->space == MemSpace::Local)
      accumulators.insert(n.mems[0].get());
    if (n.op == IntrinsicOp::MmaSync)
      for (std::size_t i = 1; i < 3 && i < n.mems.size(); ++i)
        if (n.mems[i]->space == MemSpace::Local && type_bytes(n.mems[i]->elem) < 4)
          align[n.mems[i].get()] = std::max<std::int64_t>(align[n.mems[i].get()], 4);
    IRVisitor::visit(n);
  }
};
/// The kernel's register budget. setmaxnreg moves registers between warpgroups of a block that holds
/// the most its launch bounds allow: one block per multiprocessor, so that ptxas knows the count at
/// entry. A register limit of the compile's (`--maxrregcount`, which ptxas ignores for a kernel with
/// launch bounds) is the kernel's `__maxnreg__` instead, which CUDA allows only without them; with
/// a count of blocks per multiprocessor too, the smaller of the two limits.
std::string launch_bounds(const EmitOptions& o, std::int64_t min_blocks, bool setmaxnreg) {
  const std::int64_t blocks = setmaxnreg ? 1 : min_blocks;
  if (o.max_registers <= 0)
    return "__launch_bounds__(" + std::to_string(o.threads) + (blocks > 0 ? ", " + std::to_string(blocks) : "") + ")";
  std::int64_t limit = o.max_registers;
  const std::int64_t registers = target::info(o.arch).registers_per_block;  // a multiprocessor's too
  const std::int64_t per_block = blocks > 0 ? registers / (o.threads * blocks) / 8 * 8 : 0;
  if (per_block >= 16) limit = std::min(limit, per_block);
  return "__maxnreg__(" + std::to_string(limit) + ")";
}

}  // namespace

auto Emitter::run(const lower::Lowered& lowered) -> EmitResult {
  LocalArrays arrays;
  for (const auto& f : lowered.functions) arrays.walk(f->body);
  arrays.walk(lowered.kernel.body);
  local_align_ = std::move(arrays.align);
  wgmma_acc_ = std::move(arrays.accumulators);
  lowered_ = &lowered;
  name_functions(lowered.functions);
  for (const auto& f : lowered.functions) function(*f);
  kernel(lowered.kernel);
  EmitResult r;
  std::ostringstream src;
  src << "// Generated by Vantage for kernel " << lowered.kernel.name << ", " << opt_.threads << " threads per block, "
      << arch_name(opt_.arch) << ". Do not edit.\n";
  if (v_.uses_fp8) src << "#include <cuda_fp8.h>\n";
  if (v_.uses_half) src << "#include <cuda_fp16.h>\n";
  if (v_.uses_bf16) src << "#include <cuda_bf16.h>\n";
  if (v_.uses_tf32)
    src << "static __device__ __forceinline__ unsigned vt_tf32(float x) {\n"
           "  unsigned r;\n  asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(x));\n  return r;\n}\n";
  if (!lowered.kernel.tensor_maps.empty())
    src << "// A TMA tensor map (CUtensorMap), made by the runtime at launch and passed by value.\n"
           "struct alignas(128) vt_tensor_map {\n  unsigned long long opaque[16];\n};\n";
  if (v_.uses_wgmma)
    src << "// The descriptor of a K-major wgmma tile in the 128-byte swizzle layout: start address / 16, the\n"
           "// leading byte offset (unused for this layout: 1), 8-row groups 1024 bytes apart, 128-byte swizzle.\n"
           "static __device__ __forceinline__ unsigned long long vt_wgmma_desc(const void* p) {\n"
           "  unsigned long long a = static_cast<unsigned long long>(__cvta_generic_to_shared(p));\n"
           "  return ((a & 0x3FFFFull) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);\n"
           "}\n";
  if (v_.uses_select)
    src << "// select evaluates both arms (docs/semantics.md): the arguments of a call all are.\n"
           "template <class T>\nstatic __device__ __forceinline__ T vt_select(bool c, T a, T b) { return c ? a : b; "
           "}\n";
  if (v_.uses_atomic_helpers) src << kAtomicHelpers;
  if (v_.uses_and) src << "static __device__ __forceinline__ bool vt_and(bool a, bool b) { return a && b; }\n";
  if (v_.uses_or) src << "static __device__ __forceinline__ bool vt_or(bool a, bool b) { return a || b; }\n";
  if (v_.uses_checks) {
    // Accesses lowering could not prove inside their memory (docs/runtime.md): the first that
    // leaves records the kernel's tag, the site, the block, the thread, the index and the bound.
    char tag[32];
    std::snprintf(tag, sizeof tag, "%lluull", static_cast<unsigned long long>(lower::check_tag(opt_.entry)));
    src << "static __device__ __noinline__ void vt_fail(unsigned long long* e, int site, long long i, long long n) "
           "{\n"
           "  if (e && atomicCAS(e, 0ull, "
        << tag
        << ") == 0ull) {\n"
           "    e[1] = static_cast<unsigned long long>(site);\n"
           "    e[2] = blockIdx.x;\n"
           "    e[3] = threadIdx.x;\n"
           "    e[4] = static_cast<unsigned long long>(i);\n"
           "    e[5] = static_cast<unsigned long long>(n);\n"
           "    __threadfence_system();\n"
           "  }\n"
           "}\n"
           "template <class T>\n"
           "static __device__ __forceinline__ T vt_fail_zero(unsigned long long* e, int site, long long i, long "
           "long n) {\n"
           "  vt_fail(e, site, i, n);\n"
           "  return T();\n"
           "}\n"
           "template <class T>\n"
           "static __device__ __forceinline__ T vt_ld(const T* p, long long i, long long n, int site, unsigned long "
           "long* "
           "e) {\n"
           "  if (i >= 0 && i < n) return p[i];\n"
           "  vt_fail(e, site, i, n);\n"
           "  return T();\n"
           "}\n"
           "template <class T, class V>\n"
           "static __device__ __forceinline__ void vt_st(T* p, long long i, long long n, V v, int site, unsigned "
           "long "
           "long* e) {\n"
           "  if (i >= 0 && i < n)\n"
           "    p[i] = v;\n"
           "  else\n"
           "    vt_fail(e, site, i, n);\n"
           "}\n";
  }
  if (!v_.helper_text.empty())
    src << "// Integer operations as docs/semantics.md defines them, where plain C++ would be undefined.\n"
        << v_.helper_text;
  src << functions_.str() << out_.str();
  r.source = src.str();
  r.shared_bytes = kernel_smem_;
  r.dynamic_shared = kernel_smem_ > target::info(opt_.arch).shared_static_bytes;
  r.problems = std::move(problems_);
  return r;
}

void Emitter::name_functions(const std::vector<FunctionPtr>& fns) {
  std::set<std::string> taken;
  for (const auto& f : fns) {
    std::string base = "vt_fn_" + identifier(f->name);
    std::string name = base;
    for (int i = 1; taken.count(name); ++i) name = base + "_" + std::to_string(i);
    taken.insert(name);
    fn_names_[f.get()] = name;
  }
}

void Emitter::reset(const StmtPtr& body) {
  v_.clear_names();
  env_ = RangeEnv();
  env_.thread_index = Range{0, opt_.threads - 1};
  env_.block_index = Range{0, (opt_.blocks ? *opt_.blocks : opt_.max_blocks) - 1};
  // The parameters' ranges the variant assumes (Spec::assume).
  for (const auto& [v, r] : lowered_->options.param_ranges) env_.vars[v] = Range{r.first, r.second};
  reassigned_ = reassigned_vars(body);
}

auto Emitter::param_decl(const ParamNode& p) -> std::string {
  if (p.var) return std::string(v_.ctype(p.var->type)) + " " + v_.name(p.var);
  // __restrict__: kernel pointer arguments must not overlap when one is written (the launcher
  // checks it), and overlapping views passed to a device function are rejected (V0609).
  std::string s = p.mem->is_const ? "const " : "";
  return s + v_.ctype(p.mem->elem) + "* __restrict__ " + v_.name(p.mem);
}

void Emitter::kernel(const KernelNode& k) {
  reset(k.body);
  out_.str("");
  std::ostringstream sig;
  sig << opt_.entry << "(";
  for (std::size_t i = 0; i < k.params.size(); ++i) sig << param_decl(k.params[i]) << ", ";
  // Where an access checked as it runs records what went wrong (docs/runtime.md; null: nowhere).
  sig << "unsigned long long* __restrict__ vt_err";
  // TMA tensor maps, by value in parameter space (the runtime passes them after the error record).
  for (const auto& m : k.tensor_maps) sig << ", const __grid_constant__ vt_tensor_map " << v_.name(&m, m.name);
  sig << ")";
  indent_ = 1;
  std::ostringstream body;
  std::swap(body, out_);
  stmt(k.body);
  std::swap(body, out_);
  kernel_smem_ = lowered_->shared_bytes;
  const std::string bounds = launch_bounds(opt_, k.min_blocks, v_.uses_setmaxnreg);
  out_ << "extern \"C\" __global__ void " << bounds << " "
       << (k.cluster > 1 ? "__cluster_dims__(" + std::to_string(k.cluster) + ", 1, 1) " : std::string()) << sig.str()
       << " {\n";
  out_ << "  const int vt_tid = static_cast<int>(threadIdx.x);\n";
  out_ << "  const int vt_bid = static_cast<int>(blockIdx.x);\n";
  // Arrays aligned past 16 bytes (TMA and wgmma tiles): the base is aligned as the kernel starts,
  // in the bytes the layout keeps for it.
  const std::int64_t align = lowered_->shared_align;
  const char* base = align > 16 ? "vt_smem_raw" : "vt_smem";
  if (kernel_smem_ > target::info(opt_.arch).shared_static_bytes) {
    out_ << "  extern __shared__ __align__(16) unsigned char " << base << "[];\n";
  } else if (kernel_smem_ > 0) {
    out_ << "  __shared__ __align__(16) unsigned char " << base << "[" << kernel_smem_ << "];\n";
  }
  if (kernel_smem_ > 0 && align > 16)
    out_ << "  unsigned char* const vt_smem = vt_smem_raw + ((" << align
         << "u - static_cast<unsigned>(__cvta_generic_to_shared(vt_smem_raw)) % " << align << "u) % " << align
         << "u);\n";
  out_ << "  (void)vt_tid;\n  (void)vt_bid;\n  (void)vt_err;\n";
  // What the variant assumes of its parameters (Spec::assume, checked by the launcher), told NVCC
  // too: its own division by a constant, and its loops, then need no corrections for a negative.
  for (const auto& p : k.params) {
    if (!p.var) continue;
    auto r = lowered_->options.param_ranges.find(p.var.get());
    if (r == lowered_->options.param_ranges.end()) continue;
    const std::string v = v_.name(p.var);
    out_ << "  __builtin_assume(" << v << " >= " << int_text(p.var->type, r->second.first) << " && " << v
         << " <= " << int_text(p.var->type, r->second.second) << ");\n";
    if (auto m = lowered_->options.param_multiples.find(p.var.get()); m != lowered_->options.param_multiples.end())
      out_ << "  __builtin_assume(" << v << " % " << int_text(p.var->type, m->second) << " == 0);\n";
  }
  out_ << body.str() << "}\n";
}

void Emitter::function(const FunctionNode& f) {
  reset(f.body);
  std::ostringstream text;
  text << "static __device__ __forceinline__ " << (f.returns ? v_.ctype(*f.returns) : "void") << " " << fn_names_.at(&f)
       << "(";
  for (const auto& p : f.params) text << param_decl(p) << ", ";
  text << "int vt_tid, int vt_bid, unsigned char* vt_smem, unsigned long long* vt_err) {\n";
  text << "  (void)vt_tid;\n  (void)vt_bid;\n  (void)vt_smem;\n  (void)vt_err;\n";
  indent_ = 1;
  std::ostringstream body;
  std::swap(body, out_);
  stmt(f.body);
  std::swap(body, out_);
  text << body.str() << "}\n\n";
  functions_ << text.str();
}

void Emitter::emit(const ir::Barrier& b, const StmtPtr&) {
  for (const std::string& line : barrier_lines(b)) {
    ind();
    out_ << line << "\n";
  }
}

void Emitter::emit(const VectorCopy& n, const StmtPtr&) {
  std::string vt = vector_type(n.dst->elem, n.count);
  ind();
  out_ << "*reinterpret_cast<" << vt << "*>(&" << v_.name(n.dst) << "[" << x_.index(n.dst_index, n.loc)
       << "]) = *reinterpret_cast<const " << vt << "*>(&" << v_.name(n.src) << "[" << x_.index(n.src_index, n.loc)
       << "]);\n";
}

void Emitter::stmt(const StmtPtr& s) {
  if (!s) return;
  if (const auto* seq = as<Seq>(*s)) {
    for (const auto& c : seq->stmts) stmt(c);
    return;
  }
  line(s->loc);
  dispatch(*s, [&](const auto& n) { emit(n, s); });
}

void Emitter::nested(const StmtPtr& s) {
  const std::size_t declared = acc_in_scope_.size();
  ++indent_;
  stmt(s);
  --indent_;
  acc_in_scope_.resize(declared);  // the block's arrays end with it
}

void Emitter::emit(const Seq& n, const StmtPtr&) {
  for (const auto& c : n.stmts) stmt(c);
}

void Emitter::emit(const Let& n, const StmtPtr&) {
  ind();
  // A loop's value of the iteration (Scope::for_ with a step rule) that its body may not use.
  if (n.var->origin == VarNode::Origin::Loop) out_ << "[[maybe_unused]] ";
  // A 64-bit value that fits an int and is computed from 32-bit ones: held in an int (text(VarRef)).
  if (!reassigned_.count(n.var.get()) && n.var->type == ScalarType::I64 &&
      value_range(n.value, env_).within(Range::of(ScalarType::I32)))
    if (auto narrow = x_.narrow32(n.value)) {
      out_ << "int " << v_.name(n.var) << " = " << unparenthesized(*narrow) << ";\n";
      env_.vars[n.var.get()] = value_range(n.value, env_);
      narrowed_.insert(n.var.get());
      return;
    }
  out_ << v_.ctype(n.var->type) << " " << v_.name(n.var) << " = " << x_.expr(n.value) << ";\n";
  if (!reassigned_.count(n.var.get()) && is_integer(n.var->type)) env_.vars[n.var.get()] = value_range(n.value, env_);
}

void Emitter::emit(const Assign& n, const StmtPtr&) {
  ind();
  out_ << v_.name(n.var) << " = " << x_.expr(n.value) << ";\n";
}

void Emitter::emit(const Store& n, const StmtPtr&) {
  ind();
  v_.uses_checks = v_.uses_checks || n.bound;
  if (n.bound)
    out_ << "vt_st(" << v_.name(n.mem) << ", " << x_.index(n.indices[0], n.loc) << ", " << x_.expr(n.bound) << ", "
         << x_.expr(n.value) << ", " << n.site << ", vt_err);\n";
  else
    out_ << x_.access(n.mem, n.indices, n.loc) << " = " << x_.expr(n.value) << ";\n";
}

void Emitter::emit(const If& n, const StmtPtr&) {
  ind();
  out_ << "if (" << unparenthesized(x_.expr(n.cond)) << ") {\n";
  nested(n.then_body);
  ind();
  out_ << "}";
  if (n.else_body) {
    out_ << " else {\n";
    nested(n.else_body);
    ind();
    out_ << "}";
  }
  out_ << "\n";
}

void Emitter::emit(const For& n, const StmtPtr&) {
  auto b = const_int(n.begin), e = const_int(n.end), st = const_int(n.step);
  const ScalarType t = n.var->type;
  // docs/semantics.md, "Loops": bounds and step are evaluated once, before the first iteration; a
  // bound or step that is not a literal or an unassigned variable is held in a constant.
  bool opened = false;
  auto once = [&](const ExprPtr& x, const void* key, const std::string& base) {
    std::string text = x_.expr(x);
    const auto* ref = as<VarRef>(*x);
    if (as<Literal>(*x) || (ref && !reassigned_.count(ref->var.get()))) return text;
    if (!opened) {
      ind();
      out_ << "{\n";
      ++indent_;
      opened = true;
    }
    std::string held = v_.name(key, base);
    ind();
    out_ << "const " << v_.ctype(t) << " " << held << " = " << text << ";\n";
    return held;
  };
  std::string begin = x_.expr(n.begin);
  std::string end = once(n.end, &n.end, n.var->name + "_end"), step = once(n.step, &n.step, n.var->name + "_step");
  std::string v = v_.name(n.var);
  // The variable's range inside the body: begin up to end - 1 (step > 0) or down to end + 1.
  Range rb = value_range(n.begin, env_), re = value_range(n.end, env_), rs = value_range(n.step, env_);
  // The direction: up when the step cannot be negative, down when it cannot be positive (a step of
  // zero runs no iteration, so a step that may be zero adds that test).
  bool up = rs.lo >= 0, down = !up && rs.hi <= 0, may_be_zero = rs.contains(0);
  Range full = Range::of(t);
  Range var = full;
  if (up) var = Range{rb.lo, std::max(rb.lo, re.hi - 1)};
  if (down) var = Range{std::min(rb.hi, re.lo + 1), rb.hi};
  if (var.within(full)) env_.vars[n.var.get()] = var;
  // The counter never wraps: the loop ends when the next value would pass `end`. Where the range
  // analysis proves `v + step` stays in the type, the plain `v < end; v += step` says exactly that;
  // otherwise the step is taken only while the distance left to `end` (exact in the unsigned type,
  // as `v` is strictly before `end`) exceeds it.
  Range next{var.lo + rs.lo, var.hi + rs.hi};
  bool plain = (up || down) && var.within(full) && next.within(full);
  std::string u = type_bytes(t) == 8 ? "unsigned long long" : "unsigned";
  auto cast_u = [&](const std::string& x) { return "static_cast<" + u + ">(" + x + ")"; };
  std::string step_up =
      v + " = " + cast_u(end) + " - " + cast_u(v) + " > " + cast_u(step) + " ? " + v + " + " + step + " : " + end;
  std::string step_down = v + " = " + cast_u(v) + " - " + cast_u(end) + " > " + cast_u("0") + " - " + cast_u(step) +
                          " ? " + v + " + " + step + " : " + end;
  std::string cond, inc;
  if (up || down) {
    cond = v + (up ? " < " : " > ") + end;
    if (may_be_zero) cond = step + " != 0 && " + cond;
    inc = plain ? v + " += " + step : (up ? step_up : step_down);
  } else {
    // A step of unknown sign: up when positive, down when negative, no iteration when zero.
    cond = "(" + step + " > 0 ? " + v + " < " + end + " : " + step + " < 0 && " + v + " > " + end + ")";
    inc = step + " > 0 ? (" + step_up + ") : (" + step_down + ")";
  }
  if (b && e && st && *st != 0) {
    std::int64_t trips =
        *st > 0 ? (*e > *b ? (*e - *b + *st - 1) / *st : 0) : (*b > *e ? (*b - *e - *st - 1) / -*st : 0);
    int factor = unroll_factor(trips, node_count(n.body));
    if (factor == 0 || factor < trips) {
      ind();
      out_ << "#pragma unroll" << (factor == 0 ? std::string() : " " + std::to_string(factor)) << "\n";
    }
  }
  ind();
  out_ << "for (" << v_.ctype(t) << " " << v << " = " << begin << "; " << cond << "; " << inc << ") {\n";
  nested(n.body);
  ind();
  out_ << "}\n";
  if (opened) {
    --indent_;
    ind();
    out_ << "}\n";
  }
}

void Emitter::emit(const Jump& n, const StmtPtr&) {
  ind();
  out_ << (n.is_break ? "break;\n" : "continue;\n");
}

void Emitter::emit(const While& n, const StmtPtr&) {
  ind();
  out_ << "while (" << unparenthesized(x_.expr(n.cond)) << ") {\n";
  nested(n.body);
  ind();
  out_ << "}\n";
}

void Emitter::emit(const SharedAlloc& n, const StmtPtr&) {
  ind();
  out_ << v_.ctype(n.mem->elem) << "* const " << v_.name(n.mem) << " = reinterpret_cast<" << v_.ctype(n.mem->elem)
       << "*>(vt_smem + " << lowered_->shared_offsets.at(n.mem.get()) << ");\n";
}

void Emitter::emit(const LocalAlloc& n, const StmtPtr&) {
  ind();
  if (auto a = local_align_.find(n.mem.get()); a != local_align_.end()) out_ << "alignas(" << a->second << ") ";
  out_ << v_.ctype(n.mem->elem) << " " << v_.name(n.mem) << "[" << n.count << "];\n";
  if (wgmma_acc_.count(n.mem.get())) acc_in_scope_.push_back(&n);
}

void Emitter::emit(const Call& n, const StmtPtr&) {
  // Lowered ABI: pointer arguments as (root, flat offset), then thread position, block position
  // and shared-memory offset (-1: none).
  if (n.args.size() < lower::kAbiArgs) throw InternalError("emit: a call without its ABI arguments");
  std::size_t user = n.args.size() - lower::kAbiArgs;
  ind();
  if (n.result) out_ << v_.ctype(n.result->type) << " " << v_.name(n.result) << " = ";
  out_ << fn_names_.at(n.fn.get()) << "(";
  for (std::size_t i = 0; i < user; ++i) {
    const auto& a = n.args[i];
    if (a.mem)
      out_ << "&" << v_.name(a.mem) << "[" << x_.index(a.value, n.loc) << "]";
    else
      out_ << x_.expr(a.value);
    out_ << ", ";
  }
  auto smem = const_int(n.args[user + 2].value);
  out_ << x_.expr(n.args[user].value) << ", " << x_.expr(n.args[user + 1].value) << ", "
       << (smem && *smem >= 0 ? "vt_smem + " + std::to_string(*smem) : std::string("nullptr")) << ", vt_err);\n";
}

void Emitter::emit(const Unsafe& n, const StmtPtr&) {
  ind();
  out_ << "{\n";
  for (const auto& [nm, e] : n.inputs) {
    ind();
    out_ << "  const auto " << nm << " = " << x_.expr(e) << ";\n";
  }
  for (const auto& [nm, v] : n.outputs) {
    ind();
    out_ << "  auto& " << nm << " = " << v_.name(v) << ";\n";
  }
  line(n.loc);
  out_ << n.cuda << "\n";
  ind();
  out_ << "}\n";
}

void Emitter::emit(const Return& n, const StmtPtr&) {
  ind();
  out_ << "return" << (n.value ? " " + x_.expr(n.value) : "") << ";\n";
}

void Emitter::line(const SourceLoc& loc) {
  if (!loc.known() || !loc.file || !*loc.file) return;
  // A kernel's lines come from a few files: quote each once.
  auto it = quoted_.find(loc.file);
  if (it == quoted_.end()) it = quoted_.emplace(loc.file, quote_path(loc.file)).first;
  out_ << "#line " << loc.line << " " << it->second << "\n";
}

}  // namespace detail

int unroll_factor(std::int64_t trips, std::int64_t size) {
  constexpr int kFactor = 4;
  // A loop of no more trips than the factor costs no more unrolled than the factor would make it.
  return trips <= kFactor || (trips <= 32 && trips * size <= 1024) ? 0 : kFactor;
}

EmitResult emit(const lower::Lowered& lowered, const EmitOptions& options) {
  return detail::Emitter(options).run(lowered);
}

}  // namespace vantage::cuda
