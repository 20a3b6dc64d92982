// Vantage examples: see stages.hpp.
#include "kernels/stages.hpp"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace vantage::examples {

std::string find_cuobjdump() {
  if (const char* env = std::getenv("VANTAGE_CUOBJDUMP")) return env;
  for (const char* p : {"/opt/vantage-tools/cuda/nvidia/cu13/bin/cuobjdump", "/usr/local/cuda/bin/cuobjdump"})
    if (::access(p, X_OK) == 0) return p;
  if (std::system("command -v cuobjdump >/dev/null 2>&1") == 0) return "cuobjdump";
  return "";
}

std::string sass(const std::vector<char>& cubin) {
  std::string tool = find_cuobjdump();
  if (tool.empty()) throw ToolchainError("cuobjdump not found (scripts/setup installs it; or set VANTAGE_CUOBJDUMP)");
  char path[] = "/tmp/vantage_cubin_XXXXXX";
  int fd = ::mkstemp(path);
  if (fd < 0) throw ToolchainError("cannot create a temporary file for cuobjdump");
  ::close(fd);
  { std::ofstream(path, std::ios::binary).write(cubin.data(), static_cast<std::streamsize>(cubin.size())); }
  // cuobjdump runs nvdisasm, found beside it or on PATH.
  std::string dir = std::filesystem::path(tool).parent_path().string();
  std::string cmd =
      (dir.empty() ? "" : "PATH='" + dir + "':\"$PATH\" ") + "'" + tool + "' --dump-sass '" + path + "' 2>&1";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    int rc = ::pclose(p);
    std::filesystem::remove(path);
    if (rc != 0) throw ToolchainError("cuobjdump failed: " + out);
    return out;
  }
  std::filesystem::remove(path);
  throw ToolchainError("cannot run " + tool);
}

Spec with_ptxas_report(Spec spec) {
  spec.compiler.extra.push_back("--ptxas-options=-v");
  return spec;
}

PtxasReport ptxas_report(const std::string& log) {
  PtxasReport r;
  bool entry = false, found = false, compiling = false;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(std::string(" \0", 2)) == std::string::npos) continue;  // NVRTC's log ends in a NUL
    // The report's lines: "ptxas info    : ..." and their continuations "ptxas         . ...";
    // a warning stays.
    const auto text = line.rfind("ptxas", 0) == 0 ? line.find_first_not_of(' ', 5) : std::string::npos;
    const bool report = line.rfind("ptxas info", 0) == 0 || (text != std::string::npos && line[text] == '.');
    if (!report) {
      r.rest += line + "\n";
      continue;
    }
    // "ptxas info    : Function properties for vt_NAME_HASH", then its "N bytes stack frame, S bytes
    // spill stores, L bytes spill loads"; a device function's name is mangled (_Z...).
    if (const auto at = line.find("Function properties for "); at != std::string::npos) {
      entry = line.compare(at + 24, 3, "vt_") == 0;
      continue;
    }
    // "ptxas info    : Used N registers, ..." after the entry function's "Compiling entry function".
    if (line.find("Compiling entry function 'vt_") != std::string::npos) compiling = true;
    if (const auto at = line.find(": Used "); compiling && at != std::string::npos) {
      r.registers = std::strtol(line.c_str() + at + 7, nullptr, 10);
      compiling = false;
    }
    const auto stores = line.find(" bytes spill stores"), loads = line.find(" bytes spill loads");
    if (!entry || stores == std::string::npos || loads == std::string::npos) continue;
    auto number_before = [&](std::size_t end) {
      std::size_t b = end;
      while (b > 0 && std::isdigit(static_cast<unsigned char>(line[b - 1]))) --b;
      return std::strtol(line.c_str() + b, nullptr, 10);
    };
    r.spills += number_before(stores) + number_before(loads);
    found = true;
    entry = false;
  }
  if (!found) throw std::runtime_error("no entry function's spills in the log (compiled with_ptxas_report?): " + log);
  return r;
}

int emit_stage(int argc, char** argv, const Kernel& kernel, Spec spec) {
  std::string stage;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--emit=", 0) == 0) {
      stage = a.substr(7);
    } else if (a.rfind("--arch=", 0) == 0) {
      auto arch = parse_arch(a.substr(7));
      if (!arch) {
        std::fprintf(stderr, "unknown %s (%s)\n", a.c_str(), arch_names());
        return 2;
      }
      spec.arch = *arch;
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: %s [--emit=ir|lowered|cuda|ptx|sass] [--arch=ARCH]\n  ARCH: %s (default sm_90)\n", argv[0],
                  arch_names());
      return 0;
    } else {
      std::fprintf(stderr, "unknown argument '%s' (try --help)\n", a.c_str());
      return 2;
    }
  }
  if (stage.empty()) return -1;
  try {
    if (stage == "ir") {
      std::printf("%s", kernel.ir_text().c_str());
    } else if (stage == "lowered") {
      std::printf("%s", kernel.lowered(spec).c_str());
    } else if (stage == "cuda") {
      std::printf("%s", kernel.source(spec).c_str());
    } else if (stage == "ptx") {
      std::printf("%s", kernel.ptx(spec).c_str());
    } else if (stage == "sass") {
      std::printf("%s", sass(kernel.cubin(spec)).c_str());
    } else {
      std::fprintf(stderr, "unknown --emit=%s (ir, lowered, cuda, ptx, sass)\n", stage.c_str());
      return 2;
    }
    return 0;
  } catch (const CheckError& e) {
    std::fprintf(stderr, "%s", render_all(e.diagnostics()).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
  return 1;
}

}  // namespace vantage::examples
