// Vantage's kernels beside their hand-written twins: see twins.hpp.
#include "twins.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "jit/nvrtc/nvrtc.h"
#include "kernels/paper_kernels.hpp"
#include "kernels/stages.hpp"

namespace vantage::twins {

const std::vector<Twin>& all() {
  const std::map<std::string, std::int64_t> gemm{{"M", 4096}, {"N", 4096}, {"K", 4096}};
  const std::map<std::string, std::int64_t> matrix{{"M", 8192}, {"N", 8192}};
  const std::map<std::string, std::int64_t> vector{{"n", std::int64_t{1} << 26}};
  const std::map<std::string, std::int64_t> rows{{"rows", 8192}, {"cols", 8192}};
  static const std::vector<Twin> kTwins = {
      {"sgemm_smem", "sgemm.cu", "twin_sgemm_smem", gemm},
      {"sgemm_reg1d", "sgemm.cu", "twin_sgemm_reg1d", gemm},
      {"sgemm_reg2d", "sgemm.cu", "twin_sgemm_reg2d", gemm},
      {"sgemm_vec", "sgemm.cu", "twin_sgemm_vec", gemm},
      {"sgemm_warptile", "sgemm.cu", "twin_sgemm_warptile", gemm},
      {"sgemm_pipelined", "async.cu", "twin_sgemm_pipelined", gemm},
      {"mma_tf32", "mma.cu", "twin_mma_tf32", gemm},
      {"igemm_mma", "mma.cu", "twin_igemm_mma", gemm},
      {"vec_copy", "copy.cu", "twin_vec_copy", vector},
      {"saxpy_vec", "copy.cu", "twin_saxpy_vec", vector},
      {"transpose", "copy.cu", "twin_transpose", matrix},
      {"transpose_padded", "copy.cu", "twin_transpose_padded", matrix},
      {"transpose_async", "async.cu", "twin_transpose_async", matrix},
      {"stencil", "copy.cu", "twin_stencil", matrix},
      {"block_reduce", "reduce_scan.cu", "twin_block_reduce", vector},
      {"softmax", "reduce_scan.cu", "twin_softmax", rows},
      {"scan_lookback", "reduce_scan.cu", "twin_scan_lookback", vector},
      {"scan_tiled", "reduce_scan.cu", "twin_scan_tiled", vector},
      {"device_scan", "reduce_scan.cu", "twin_scan_tiled", vector},
      {"compact", "device.cu", "twin_compact", vector},
      {"byte_histogram", "device.cu", "twin_byte_histogram", vector},
      // A (argument 3, M x K) and Bt (4, N x K) by TMA, in 4 slots of 128 + BN rows of 128 bytes
      // (bench/twins/wgmma.cu's TWIN_WGMMA_SHARED).
      {"gemm_wgmma_bf16",
       "wgmma.cu",
       "twin_gemm_wgmma_bf16",
       gemm,
       {{3, 0, 2, 128, 64}, {4, 1, 2, 128, 64}},
       4 * 256 * 128 + 64 + 1024},
      {"gemm_wgmma_bf16_wide",
       "wgmma.cu",
       "twin_gemm_wgmma_bf16_wide",
       gemm,
       {{3, 0, 2, 128, 64}, {4, 1, 2, 256, 64}},
       4 * 384 * 128 + 64 + 1024},
  };
  return kTwins;
}

std::string kind_of(const std::string& opcode) {
  auto dot = opcode.find('.');
  const std::string base = opcode.substr(0, dot);
  auto width = [&](const std::string& what) {
    if (opcode.find(".128") != std::string::npos) return what + ".128";
    if (opcode.find(".64") != std::string::npos) return what + ".64";
    return what + ".32";
  };
  if (base == "FFMA") return "FFMA";
  if (base == "HMMA" || base == "IMMA" || base == "DMMA") return "HMMA";
  if (base == "HGMMA" || base == "IGMMA" || base == "QGMMA") return "HGMMA";
  if (base == "LDG" || base == "STG" || base == "LDS" || base == "STS") return width(base);
  if (base == "LDGSTS" || base == "LDSM" || base == "STSM") return base;
  if (base == "LDL" || base == "STL") return "LOCAL";
  if (base == "ATOM" || base == "ATOMG" || base == "ATOMS" || base == "RED" || base == "REDG") return "ATOM";
  if (base == "BAR") return "BAR";
  if (base == "CALL") return "CALL";
  for (const char* b : {"BRA", "BRX", "JMP", "JMX", "BSSY", "BSYNC", "WARPSYNC", "EXIT", "RET", "BREAK", "BMOV"})
    if (base == b) return "BRANCH";
  for (const char* p :
       {"ISETP", "FSETP", "DSETP", "HSETP2", "PLOP3", "P2R", "R2P", "UISETP", "UPLOP3", "VOTE", "VOTEU"})
    if (base == p) return "PRED";
  for (const char* f : {"FADD", "FMUL", "FMNMX", "HADD2", "HMUL2", "HFMA2", "DADD", "DMUL", "DFMA", "FSWZADD"})
    if (base == f) return "FP";
  // Reciprocals and conversions: an integer division by a value known only at run time is made of them.
  for (const char* c : {"MUFU", "FCHK", "F2F", "FRND"})
    if (base == c) return "CONV";
  if (base == "SHFL") return "SHFL";
  for (const char* i :
       {"IMAD",  "IADD3", "IADD",  "LEA",   "SHF",    "LOP3", "IMNMX", "IABS",  "MOV",    "SEL",   "I2F",  "F2I",
        "I2FP",  "F2IP",  "S2R",   "S2UR",  "CS2R",   "LDC",  "ULDC",  "VIADD", "VIMNMX", "IMUL",  "POPC", "FLO",
        "BREV",  "PRMT",  "SGXT",  "BMSK",  "UIADD3", "UMOV", "ULEA",  "USHF",  "ULOP3",  "UIMAD", "USEL", "FSEL",
        "UPRMT", "UFLO",  "UPOPC", "USGXT", "UBMSK",  "R2UR", "IDP",   "IDP4A", "MOV32I"})
    if (base == i) return "INT";
  return "OTHER";
}

int Code::loop_work() const {
  auto get = [&](const char* k) {
    auto it = loop_kinds.find(k);
    return it == loop_kinds.end() ? 0 : it->second;
  };
  int math = get("FFMA") + get("FP") + get("HMMA") + get("HGMMA");
  if (math > 0) return math;
  int memory = get("LDGSTS") + get("LDSM") + get("ATOM");
  for (const char* w : {".32", ".64", ".128"})
    for (const char* what : {"LDG", "STG", "LDS", "STS"}) memory += get((std::string(what) + w).c_str());
  return memory;
}

int Code::spills() const {
  auto it = kinds.find("LOCAL");
  return it == kinds.end() ? 0 : it->second;
}

double Row::loop_ratio() const {
  const int vw = vantage.loop_work(), hw = hand.loop_work();
  if (vw == 0 || hw == 0 || hand.loop_instructions == 0) return 0;
  return (static_cast<double>(vantage.loop_instructions) / vw) / (static_cast<double>(hand.loop_instructions) / hw);
}

namespace {

/// cuobjdump's resource usage and SASS of a cubin.
std::string dump(const std::vector<char>& cubin) {
  std::string tool = examples::find_cuobjdump();
  if (tool.empty()) throw ToolchainError("cuobjdump not found (scripts/setup installs it; or set VANTAGE_CUOBJDUMP)");
  char path[] = "/tmp/vantage_twin_XXXXXX";
  int fd = ::mkstemp(path);
  if (fd < 0) throw ToolchainError("cannot create a temporary file for cuobjdump");
  ::close(fd);
  { std::ofstream(path, std::ios::binary).write(cubin.data(), static_cast<std::streamsize>(cubin.size())); }
  std::string dir = std::filesystem::path(tool).parent_path().string();
  std::string cmd = (dir.empty() ? "" : "PATH='" + dir + "':\"$PATH\" ") + "'" + tool +
                    "' --dump-resource-usage --dump-sass '" + path + "' 2>&1";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    std::filesystem::remove(path);
    throw ToolchainError("cannot run " + tool);
  }
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = ::pclose(p);
  std::filesystem::remove(path);
  if (rc != 0) throw ToolchainError("cuobjdump failed: " + out);
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

Code analyse_text(const std::string& text, const std::string& function) {
  Code code;
  // Resource usage: " Function NAME:" then "  REG:n STACK:n SHARED:n LOCAL:n ...".
  std::smatch m;
  std::regex usage(" Function " + function + ":\\s*\\n\\s*REG:(\\d+) STACK:(\\d+) SHARED:(\\d+) LOCAL:(\\d+)");
  if (std::regex_search(text, m, usage)) {
    code.registers = std::stoi(m[1]);
    code.stack = std::stoi(m[2]);
    code.shared = std::stoi(m[3]);
    code.local = std::stoi(m[4]);
  }
  // The function's SASS: from "Function : NAME" to the next function.
  const std::string head = "Function : " + function + "\n";
  auto start = text.find(head);
  if (start == std::string::npos) throw std::runtime_error("the cubin has no function '" + function + "'");
  auto end = text.find("Function : ", start + head.size());
  std::istringstream lines(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
  struct Instr {
    long address;
    std::string kind;
    long target = -1;        ///< a branch's or call's target
    bool always = false;     ///< an unguarded branch, exit or return: control never falls through
    bool divergent = false;  ///< BRA.DIV: taken only where the warp is diverged
  };
  std::vector<Instr> code_lines;
  static const std::regex line(R"(/\*([0-9a-f]{4,})\*/\s+(@!?U?P[0-9T]\s+)?([A-Z0-9_.]+)([^;]*);)");
  static const std::regex hex(R"(0x([0-9a-f]+)\s*$)");
  static const std::regex predicate_operand(R"(^\s*!?U?P[0-9T]\s*,)");
  for (std::string l; std::getline(lines, l);) {
    if (!std::regex_search(l, m, line)) continue;
    Instr in{std::stol(m[1], nullptr, 16), kind_of(m[3])};
    const std::string opcode = m[3], operands = m[4];
    const bool guarded = m[2].matched;
    if (opcode.rfind("BRA", 0) == 0) {
      std::smatch t;
      if (std::regex_search(operands, t, hex)) in.target = std::stol(t[1], nullptr, 16);
      in.divergent = opcode.rfind("BRA.DIV", 0) == 0;
      in.always = !guarded && !in.divergent && !std::regex_search(operands, predicate_operand);
    } else if (opcode.rfind("EXIT", 0) == 0 || opcode.rfind("RET", 0) == 0 || opcode.rfind("BRX", 0) == 0 ||
               opcode.rfind("JMX", 0) == 0) {
      in.always = !guarded;
    }
    ++code.kinds[in.kind];
    ++code.instructions;
    code_lines.push_back(std::move(in));
  }
  // What runs where the warps stay converged: from the first instruction, along fall-throughs and
  // branches, but not into the paths for diverged warps (BRA.DIV) or into called functions (an
  // access's failure report). Only loops there are hot.
  std::vector<bool> hot(code_lines.size(), false);
  {
    std::map<long, std::size_t> at;
    for (std::size_t i = 0; i < code_lines.size(); ++i) at[code_lines[i].address] = i;
    std::vector<std::size_t> work{0};
    while (!work.empty() && !code_lines.empty()) {
      std::size_t i = work.back();
      work.pop_back();
      if (i >= code_lines.size() || hot[i]) continue;
      hot[i] = true;
      const Instr& in = code_lines[i];
      if (in.target >= 0 && !in.divergent && in.kind == "BRANCH")
        if (auto t = at.find(in.target); t != at.end()) work.push_back(t->second);
      if (!in.always) work.push_back(i + 1);
    }
  }
  // Loops: a backward branch and its target. The hottest is an innermost one (no loop inside it)
  // with the most math, or memory where none has math.
  struct Loop {
    long first, last;
  };
  std::vector<Loop> loops;
  // (A branch to itself is the trap after the last EXIT, not a loop.)
  for (std::size_t i = 0; i < code_lines.size(); ++i) {
    const Instr& in = code_lines[i];
    if (hot[i] && !in.divergent && in.target >= 0 && in.target < in.address) loops.push_back({in.target, in.address});
  }
  auto count = [&](const Loop& l) {
    std::map<std::string, int> kinds;
    int n = 0;
    for (const auto& in : code_lines)
      if (in.address >= l.first && in.address <= l.last) {
        ++kinds[in.kind];
        ++n;
      }
    return std::make_pair(kinds, n);
  };
  int best_work = -1;
  bool best_math = false;
  for (const auto& l : loops) {
    bool innermost = true;
    for (const auto& o : loops)
      if (&o != &l && o.first >= l.first && o.last <= l.last && (o.first != l.first || o.last != l.last))
        innermost = false;
    if (!innermost) continue;
    auto [kinds, n] = count(l);
    Code probe;
    probe.loop_kinds = kinds;
    const int work = probe.loop_work();
    const bool math = kinds.count("FFMA") || kinds.count("FP") || kinds.count("HMMA") || kinds.count("HGMMA");
    if ((math && !best_math) || (math == best_math && work > best_work)) {
      best_work = work;
      best_math = math;
      code.loop_kinds = std::move(kinds);
      code.loop_instructions = n;
      code.has_loop = true;
    }
  }
  if (!code.has_loop) {
    for (std::size_t i = 0; i < code_lines.size(); ++i)
      if (hot[i]) {
        ++code.loop_kinds[code_lines[i].kind];
        ++code.loop_instructions;
      }
  }
  return code;
}

Code analyse(const std::vector<char>& cubin, const std::string& function) {
  return analyse_text(dump(cubin), function);
}

const Twin* find(const std::string& example) {
  for (const auto& t : all())
    if (t.example == example) return &t;
  return nullptr;
}

Spec variant_spec(const examples::Example& example, const std::map<std::string, std::int64_t>& sizes, Arch arch) {
  Spec spec = example.spec(Spec{}.with_arch(arch));
  for (const auto& [name, value] : sizes) {
    if (example.sizes.count(name))
      spec.sizes[name] = value;
    else if (auto a = Assumption::of(value))
      spec.assume[name] = *a;
  }
  return spec;
}

std::vector<char> compile_twin(const Twin& twin, const std::map<std::string, std::int64_t>& sizes,
                               const std::string& twins_dir, Arch arch) {
  std::string source;
  for (const auto& [name, value] : sizes) source += "#define TWIN_" + name + " " + std::to_string(value) + "\n";
  source += read_file(twins_dir + "/" + twin.file);
  // Float contraction as the examples have it (Spec's default).
  const auto options = nvrtc::canonical_options(arch, Output::Cubin, Spec{}.fp_contract);
  // A source file holds several twins (sgemm.cu rungs 3 to 7): each of its sizes compiles once in a
  // process, not once for each twin and row.
  std::string key = twin.file + '\n' + source;
  for (const auto& o : options) key += '\n' + o;
  static std::mutex mutex;
  static std::map<std::string, std::vector<char>> compiled;
  {
    std::lock_guard lock(mutex);
    if (auto it = compiled.find(key); it != compiled.end()) return it->second;
  }
  auto cubin = nvrtc::compile(source, twin.file, options).cubin;
  std::lock_guard lock(mutex);
  return compiled.try_emplace(std::move(key), std::move(cubin)).first->second;
}

Row compare(const Twin& twin, const std::string& twins_dir, Arch arch) {
  const examples::Example* example = nullptr;
  for (const auto& e : examples::all())
    if (e.name == twin.example) example = &e;
  if (!example) throw std::runtime_error("no example '" + twin.example + "'");
  // At its benchmark sizes, as the launcher compiles it.
  Spec spec = variant_spec(*example, twin.sizes, arch);
  Row row;
  row.twin = twin;
  Compiled c = compile(example->build(), spec);
  row.checks = static_cast<int>(c.spec.checks.size());
  row.proven = row.checks == 0;
  row.vantage = analyse(c.cubin, c.spec.entry);
  // For the target the example names (sm_90a for the wgmma GEMMs), as its own kernel is.
  row.hand = analyse(compile_twin(twin, twin.sizes, twins_dir, example->arch.value_or(arch)), twin.entry);
  return row;
}

std::string markdown(const std::vector<Row>& rows) {
  auto get = [](const std::map<std::string, int>& k, const std::string& name) {
    auto it = k.find(name);
    return it == k.end() ? 0 : it->second;
  };
  auto pair = [](int v, int h) { return std::to_string(v) + " / " + std::to_string(h); };
  auto widths = [&](const std::map<std::string, int>& k, const char* what) {
    return std::to_string(get(k, std::string(what) + ".32")) + "·" + std::to_string(get(k, std::string(what) + ".64")) +
           "·" + std::to_string(get(k, std::string(what) + ".128"));
  };
  auto math = [&](const std::map<std::string, int>& k) {
    return get(k, "FFMA") + get(k, "FP") + get(k, "HMMA") + get(k, "HGMMA");
  };
  std::ostringstream o;
  o << "Whole kernel, Vantage / twin (LDG and LDS: 32·64·128-bit):\n\n"
    << "| kernel | checked accesses | registers | spills | shared B | instructions | math | LDG | LDS | integer | "
       "predicate | branch | call | barrier |\n"
    << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    const auto &v = r.vantage.kinds, &h = r.hand.kinds;
    o << "| " << r.twin.example << " | " << r.checks << " | " << pair(r.vantage.registers, r.hand.registers) << " | "
      << pair(r.vantage.spills(), r.hand.spills()) << " | " << pair(r.vantage.shared, r.hand.shared) << " | "
      << pair(r.vantage.instructions, r.hand.instructions) << " | " << pair(math(v), math(h)) << " | "
      << widths(v, "LDG") << " / " << widths(h, "LDG") << " | " << widths(v, "LDS") << " / " << widths(h, "LDS")
      << " | " << pair(get(v, "INT"), get(h, "INT")) << " | " << pair(get(v, "PRED"), get(h, "PRED")) << " | "
      << pair(get(v, "BRANCH"), get(h, "BRANCH")) << " | " << pair(get(v, "CALL"), get(h, "CALL")) << " | "
      << pair(get(v, "BAR"), get(h, "BAR")) << " |\n";
  }
  o << "\nHottest loop (the innermost loop with the most math; its hot code where there is none), Vantage "
       "/ twin, and its instructions per unit of work (math, or memory where it has none), Vantage's over the "
       "twin's:\n\n"
    << "| kernel | instructions | math | LDS | integer | predicate | branch | per unit of work | ratio |\n"
    << "|---|---|---|---|---|---|---|---|---|\n";
  char ratio[32];
  for (const auto& r : rows) {
    const auto &v = r.vantage.loop_kinds, &h = r.hand.loop_kinds;
    auto per = [](const Code& c) {
      char b[32];
      std::snprintf(b, sizeof b, "%.2f",
                    c.loop_work() ? static_cast<double>(c.loop_instructions) / c.loop_work() : 0.0);
      return std::string(b);
    };
    std::snprintf(ratio, sizeof ratio, "%.2f", r.loop_ratio());
    o << "| " << r.twin.example << (r.vantage.has_loop ? "" : " (no loop)") << " | "
      << pair(r.vantage.loop_instructions, r.hand.loop_instructions) << " | " << pair(math(v), math(h)) << " | "
      << widths(v, "LDS") << " / " << widths(h, "LDS") << " | " << pair(get(v, "INT"), get(h, "INT")) << " | "
      << pair(get(v, "PRED"), get(h, "PRED")) << " | " << pair(get(v, "BRANCH"), get(h, "BRANCH")) << " | "
      << per(r.vantage) << " / " << per(r.hand) << " | " << ratio << " |\n";
  }
  return o.str();
}

}  // namespace vantage::twins
