// Vantage NVRTC binding: see nvrtc.h. The library is found in $VANTAGE_NVRTC, then the toolkit
// ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda), then the loader path; nothing links against it.
#include "jit/nvrtc/nvrtc.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <xxhash.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>

#include "support/log.h"
#include "support/strings.h"

namespace vantage::nvrtc {
namespace {

using Program = void*;
using Status = int;  // nvrtcResult; 0 is NVRTC_SUCCESS

/// The NVRTC entry points Vantage uses, resolved once.
struct Table {
  void* handle = nullptr;
  std::string path;
  std::string include_dir;
  std::string error;
  const char* (*get_error_string)(Status) = nullptr;
  Status (*version)(int*, int*) = nullptr;
  Status (*create_program)(Program*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  Status (*destroy_program)(Program*) = nullptr;
  Status (*compile_program)(Program, int, const char* const*) = nullptr;
  Status (*get_log_size)(Program, std::size_t*) = nullptr;
  Status (*get_log)(Program, char*) = nullptr;
  Status (*get_ptx_size)(Program, std::size_t*) = nullptr;
  Status (*get_ptx)(Program, char*) = nullptr;
  Status (*get_cubin_size)(Program, std::size_t*) = nullptr;
  Status (*get_cubin)(Program, char*) = nullptr;
  int major = 0, minor = 0;
};

std::vector<std::string> candidates() {
  std::vector<std::string> out;
  // Named by the user, it is the only one tried: a different NVRTC than the one asked for would
  // compile, and key the cache, with another compiler without a word (as VANTAGE_CUDA_DRIVER).
  if (const char* env = std::getenv("VANTAGE_NVRTC"); env && *env) return {env};
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* root = std::getenv(var)) out.push_back(std::string(root) + "/lib64/libnvrtc.so.13");
  out.emplace_back("/usr/local/cuda/lib64/libnvrtc.so.13");
  out.emplace_back("/usr/local/cuda/lib64/libnvrtc.so.12");
  out.emplace_back("libnvrtc.so.13");
  out.emplace_back("libnvrtc.so.12");
  out.emplace_back("libnvrtc.so");
  return out;
}

template <class F>
bool resolve(Table& t, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(t.handle, name));
  if (!fn) t.error = std::string("NVRTC at ") + t.path + " has no symbol " + name;
  return fn != nullptr;
}

/// The GNU build id of the loaded object that contains `addr` (read from its notes in memory), or
/// empty when it has none.
std::string build_id(const void* addr) {
  struct Search {
    std::uintptr_t addr;
    std::string id;
  } search{reinterpret_cast<std::uintptr_t>(addr), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        bool mine = false;
        for (int i = 0; i < info->dlpi_phnum && !mine; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          mine = ph.p_type == PT_LOAD && s->addr >= lo && s->addr < lo + ph.p_memsz;
        }
        if (!mine) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
          const unsigned char* end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p);
            const unsigned char* name = p + sizeof(ElfW(Nhdr));
            const unsigned char* desc = name + ((n->n_namesz + 3) & ~3u);
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0 &&
                desc + n->n_descsz <= end) {
              s->id.assign(reinterpret_cast<const char*>(desc), n->n_descsz);
              return 1;
            }
            p = desc + ((n->n_descsz + 3) & ~3u);
          }
        }
        return 1;
      },
      &search);
  return search.id;
}

/// Version plus the build: the library's GNU build id where it has one (read in memory, instantly),
/// else a hash of its bytes (about 100 MiB). Either way a different build of the same version differs.
std::string make_fingerprint(const Table& t) {
  std::string fp = "nvrtc " + std::to_string(t.major) + "." + std::to_string(t.minor);
  auto hex = [](std::uint64_t h) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return std::string(buf);
  };
  if (std::string id = build_id(reinterpret_cast<const void*>(t.version)); !id.empty())
    return fp + " build " + hex(XXH3_64bits(id.data(), id.size()));
  Dl_info info{};
  std::string file;
  if (t.version && dladdr(reinterpret_cast<void*>(t.version), &info) && info.dli_fname) file = info.dli_fname;
  std::ifstream in(file, std::ios::binary);
  if (in) {
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    std::vector<char> buf(1 << 20);
    while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
      XXH3_64bits_update(state, buf.data(), static_cast<std::size_t>(in.gcount()));
    fp += " build " + hex(XXH3_64bits_digest(state));
    XXH3_freeState(state);
  }
  return fp;
}

const Table& table() {
  static Table t = [] {
    Table t;
    if (const char* env = std::getenv("VANTAGE_NVRTC"); env && std::string(env) == "none") {
      t.error = "NVRTC disabled by VANTAGE_NVRTC=none";
      return t;
    }
    std::string tried;
    for (const auto& c : candidates()) {
      t.handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (t.handle) {
        t.path = c;
        break;
      }
      tried += "\n  " + c + ": " + dlerror();
    }
    if (!t.handle) {
      const char* env = std::getenv("VANTAGE_NVRTC");
      t.error = env && *env ? "VANTAGE_NVRTC names an NVRTC that cannot be loaded:" + tried +
                                  "\nSet it to a libnvrtc.so, or unset it to search the toolkit."
                            : "NVRTC not found; tried:" + tried +
                                  "\nSet VANTAGE_NVRTC to libnvrtc.so or CUDA_HOME to the toolkit.";
      return t;
    }
    bool ok = resolve(t, t.get_error_string, "nvrtcGetErrorString") && resolve(t, t.version, "nvrtcVersion") &&
              resolve(t, t.create_program, "nvrtcCreateProgram") &&
              resolve(t, t.destroy_program, "nvrtcDestroyProgram") &&
              resolve(t, t.compile_program, "nvrtcCompileProgram") &&
              resolve(t, t.get_log_size, "nvrtcGetProgramLogSize") && resolve(t, t.get_log, "nvrtcGetProgramLog") &&
              resolve(t, t.get_ptx_size, "nvrtcGetPTXSize") && resolve(t, t.get_ptx, "nvrtcGetPTX") &&
              resolve(t, t.get_cubin_size, "nvrtcGetCUBINSize") && resolve(t, t.get_cubin, "nvrtcGetCUBIN");
    if (!ok) {
      dlclose(t.handle);
      t.handle = nullptr;
      return t;
    }
    t.version(&t.major, &t.minor);
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(t.version), &info) && info.dli_fname) {
      auto inc = std::filesystem::path(info.dli_fname).parent_path().parent_path() / "include";
      if (std::filesystem::exists(inc / "cuda_fp16.h")) t.include_dir = inc.string();
    }
    logging::get().debug("loaded NVRTC {}.{} from {}", t.major, t.minor, t.path);
    return t;
  }();
  return t;
}

const Table& loaded() {
  const Table& t = table();
  if (!t.handle) throw ToolchainError(t.error);
  return t;
}

/// Fails with the NVRTC call, the program and the result in words.
void ok(const Table& t, Status s, const char* call, const std::string& name) {
  if (s != 0)
    throw ToolchainError(std::string(call) + " failed for " + name + ": " + t.get_error_string(s) + " (" +
                         std::to_string(s) + ")");
}

struct ProgramOwner {
  const Table& t;
  Program p = nullptr;
  ~ProgramOwner() {
    if (p) t.destroy_program(&p);
  }
};

}  // namespace

std::vector<std::string> canonical_options(Arch arch, Output output, bool fp_contract,
                                           const CompilerOptions& compiler) {
  std::string target = arch_name(arch) + 3;  // "90a" of "sm_90a"
  std::vector<std::string> opts = {
      "--std=c++20", std::string("--gpu-architecture=") + (output == Output::Ptx ? "compute_" : "sm_") + target};
  if (!fp_contract) opts.emplace_back("--fmad=false");
  auto refuse = [](const std::string& what) -> void {
    throw CompileError("compiler options: " + what, "", {}, "", {});
  };
  if (compiler.fast_math) opts.emplace_back("--use_fast_math");
  if (compiler.line_info) opts.emplace_back("--generate-line-info");
  if (compiler.max_registers < 0 || compiler.max_registers > 255)
    refuse("max_registers " + std::to_string(compiler.max_registers) + " is not from 1 to 255 (0: NVRTC's choice)");
  if (compiler.max_registers > 0) opts.push_back("--maxrregcount=" + std::to_string(compiler.max_registers));
  for (const auto& path : compiler.include_paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) refuse("include path '" + path + "' is not a directory");
    opts.push_back("--include-path=" + path);
  }
  for (const auto& [name, value] : compiler.defines) {
    bool ident = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
    for (char c : name) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!ident) refuse("define '" + name + "' is not a macro name");
    opts.push_back("--define-macro=" + name + (value.empty() ? "" : "=" + value));
  }
  for (const auto& o : compiler.extra) opts.push_back(o);
  return opts;
}

std::string include_dir() { return table().include_dir; }

Result compile(const std::string& source, const std::string& name, const std::vector<std::string>& options) {
  const Table& t = loaded();
  Result r;
  r.options = options;
  std::vector<std::string> argv_storage = options;
  if (!t.include_dir.empty()) argv_storage.push_back("--include-path=" + t.include_dir);
  std::vector<const char*> argv;
  for (const auto& o : argv_storage) argv.push_back(o.c_str());
  ProgramOwner prog{t};
  ok(t, t.create_program(&prog.p, source.c_str(), name.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram", name);
  Status compiled = t.compile_program(prog.p, static_cast<int>(argv.size()), argv.data());
  std::size_t log_size = 0;
  ok(t, t.get_log_size(prog.p, &log_size), "nvrtcGetProgramLogSize", name);
  if (log_size > 1) {
    r.log.resize(log_size);
    ok(t, t.get_log(prog.p, r.log.data()), "nvrtcGetProgramLog", name);
    r.log.resize(log_size - 1);  // drop the terminating NUL
  }
  if (compiled != 0) {
    auto diags = parse_log(r.log);
    std::string joined;
    for (const auto& o : options) joined += (joined.empty() ? "" : " ") + o;
    std::string message = "NVRTC could not compile " + name + " (" + joined + "): " + t.get_error_string(compiled) +
                          "\n" + (diags.empty() ? r.log : render_all(diags));
    // An option NVRTC does not know: say which, first.
    if (auto at = r.log.find("unrecognized option "); at != std::string::npos) {
      std::string option = r.log.substr(at + 20);
      option = option.substr(0, option.find_first_of(" \n"));
      message = "NVRTC does not know the option '" + option + "' (CompilerOptions::extra)\n" + message;
    }
    throw CompileError(std::move(message), r.log, r.options, source, std::move(diags));
  }
  bool ptx = false;
  for (const auto& o : options) ptx = ptx || o.rfind("--gpu-architecture=compute_", 0) == 0;
  // The PTX always: a cubin's entry carries it, so that a GPU its machine code does not run on (a
  // newer one) is served by the driver compiling it.
  std::size_t ptx_size = 0;
  ok(t, t.get_ptx_size(prog.p, &ptx_size), "nvrtcGetPTXSize", name);
  r.ptx.resize(ptx_size);
  ok(t, t.get_ptx(prog.p, r.ptx.data()), "nvrtcGetPTX", name);
  while (!r.ptx.empty() && r.ptx.back() == '\0') r.ptx.pop_back();
  if (!ptx) {
    std::size_t size = 0;
    ok(t, t.get_cubin_size(prog.p, &size), "nvrtcGetCUBINSize", name);
    r.cubin.resize(size);
    ok(t, t.get_cubin(prog.p, r.cubin.data()), "nvrtcGetCUBIN", name);
  }
  return r;
}

std::string fingerprint() {
  // Only cache keys need it, so it is made on first ask.
  static const std::string fp = make_fingerprint(loaded());
  return fp;
}

bool available() { return table().handle != nullptr; }

std::vector<Diagnostic> parse_log(const std::string& log) {
  static const std::regex kLine(R"(^(.*)\((\d+)\): (error|warning)[^:]*: (.*)$)");
  std::vector<Diagnostic> out;
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(start, end - start);
    std::smatch m;
    if (std::regex_match(line, m, kLine)) {
      SourceLoc loc{strings::intern(m[1].str()), static_cast<std::uint32_t>(std::stoul(m[2].str())), 1};
      out.push_back({m[3] == "error" ? "V1101" : "V1102", m[4].str(), loc, {}});
    }
    start = end + 1;
  }
  return out;
}

}  // namespace vantage::nvrtc

namespace vantage {

std::string compiler_fingerprint() { return nvrtc::fingerprint(); }
bool nvrtc_available() { return nvrtc::available(); }

}  // namespace vantage
