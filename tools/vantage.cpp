// The `vantage` command line: look at the example kernels (IR, check result, obligations).
// Later issues add compile, cache and run commands.
#include <cstdio>
#include <cstring>
#include <string>

#include "kernels/paper_kernels.hpp"

namespace {

constexpr const char* kHelp = R"(vantage - build, check and inspect GPU kernels

Usage:
  vantage examples              list the built-in example kernels
  vantage check [NAME...]       build and check examples (all when none named); exit 1 if any fails
  vantage ir NAME               print the checked IR of an example
  vantage version               print the version
  vantage --help                this text

Environment:
  VANTAGE_LOG   log level: trace, debug, info, warn (default), error, off
)";

const vantage::examples::Example* find(const std::string& name) {
  for (const auto& ex : vantage::examples::all())
    if (ex.name == name) return &ex;
  return nullptr;
}

int unknown(const std::string& name) {
  std::fprintf(stderr, "vantage: no example named '%s' (see 'vantage examples')\n", name.c_str());
  return 2;
}

int check_one(const vantage::examples::Example& ex) {
  try {
    auto k = ex.build();
    std::printf("%-16s ok  (shared %lld B, %zu obligation(s))\n", ex.name.c_str(),
                static_cast<long long>(k.shared_bytes()), k.obligations().size());
    for (const auto& o : k.obligations()) std::printf("  obligation %s: %s\n", o.str().c_str(), o.description.c_str());
    return 0;
  } catch (const vantage::CheckError& e) {
    std::printf("%-16s rejected\n%s", ex.name.c_str(), vantage::render_all(e.diagnostics()).c_str());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    std::fputs(kHelp, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  if (cmd == "version") {
    std::printf("vantage %s\n", vantage::version());
    return 0;
  }
  if (cmd == "examples") {
    for (const auto& ex : vantage::examples::all()) std::printf("%-16s %s\n", ex.name.c_str(), ex.what.c_str());
    return 0;
  }
  if (cmd == "check") {
    int rc = 0;
    if (argc == 2) {
      for (const auto& ex : vantage::examples::all()) rc |= check_one(ex);
      return rc;
    }
    for (int i = 2; i < argc; ++i) {
      const auto* ex = find(argv[i]);
      if (!ex) return unknown(argv[i]);
      rc |= check_one(*ex);
    }
    return rc;
  }
  if (cmd == "ir") {
    if (argc != 3) {
      std::fprintf(stderr, "vantage ir: give one example name\n");
      return 2;
    }
    const auto* ex = find(argv[2]);
    if (!ex) return unknown(argv[2]);
    try {
      std::printf("%s", ex->build().ir_text().c_str());
      return 0;
    } catch (const vantage::CheckError& e) {
      std::fprintf(stderr, "%s", vantage::render_all(e.diagnostics()).c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "vantage: unknown command '%s'\n\n%s", cmd.c_str(), kHelp);
  return 2;
}
