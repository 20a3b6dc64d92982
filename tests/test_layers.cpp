// The pipeline's one-way dependencies: every file belongs to a layer of docs/architecture.md and
// includes only its own or earlier layers; public headers include only public headers and name no
// IR type. The table is read from the document, so the rule and its description cannot drift apart.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace {

namespace fs = std::filesystem;
const fs::path kRoot = VANTAGE_SOURCE_DIR;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Layer {
  int index;
  std::string name;
  std::vector<std::string> paths;  ///< folder prefixes ("jit/ir/") and header files
};

/// The layer table of docs/architecture.md: `| # | layer | `paths` ... | ... |`.
std::vector<Layer> layers() {
  std::vector<Layer> out;
  std::istringstream doc(slurp(kRoot / "docs/architecture.md"));
  static const std::regex kRow(R"(^\| (\d+) \| (\w+) \| ([^|]+) \|)");
  static const std::regex kPath("`([^`]+)`");
  std::string line;
  while (std::getline(doc, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, kRow)) continue;
    Layer l{std::stoi(m[1]), m[2], {}};
    std::string cell = m[3];
    for (auto it = std::sregex_iterator(cell.begin(), cell.end(), kPath); it != std::sregex_iterator(); ++it)
      l.paths.push_back((*it)[1]);
    out.push_back(std::move(l));
  }
  return out;
}

/// The layer a path of the tree belongs to (-1 when none).
int layer_of(const std::vector<Layer>& table, const std::string& path) {
  int best = -1;
  std::size_t best_len = 0;
  for (const auto& l : table)
    for (const auto& p : l.paths)
      if (path.rfind(p, 0) == 0 && p.size() > best_len) best = l.index, best_len = p.size();
  return best;
}

std::vector<std::string> sources() {
  std::vector<std::string> out;
  for (const char* dir : {"support", "jit", "cache", "backend", "runtime", "frontend", "library", "tune", "include",
                          "tools", "examples", "bench", "tests"}) {
    for (const auto& e : fs::recursive_directory_iterator(kRoot / dir)) {
      auto ext = e.path().extension();
      if (ext == ".cpp" || ext == ".h" || ext == ".hpp") out.push_back(fs::relative(e.path(), kRoot).string());
    }
  }
  return out;
}

/// The tree path an include names: "vantage/x.hpp" is a public header, "jit/..." a tree path.
std::string resolve(const std::string& included, const std::string& from) {
  if (included.rfind("vantage/", 0) == 0) return "include/" + included;
  if (fs::exists(kRoot / included)) return included;
  fs::path sibling = fs::path(from).parent_path() / included;  // "kernels/x.hpp" from examples/
  if (fs::exists(kRoot / sibling)) return sibling.string();
  fs::path example = fs::path("examples") / included;
  if (fs::exists(kRoot / example)) return example.string();
  return "";
}

TEST(Layers, TheTableIsReadAndOrdered) {
  auto table = layers();
  ASSERT_GE(table.size(), 10u) << "docs/architecture.md lost its layer table";
  for (std::size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(table[i].index, static_cast<int>(i));
    EXPECT_FALSE(table[i].paths.empty()) << table[i].name;
  }
}

TEST(Layers, NoFileIncludesALaterLayer) {
  auto table = layers();
  static const std::regex kInclude(R"(^\s*#\s*include\s*["<]([^">]+)[">])");
  int checked = 0;
  for (const auto& file : sources()) {
    int own = layer_of(table, file);
    EXPECT_GE(own, 0) << file << " belongs to no layer of docs/architecture.md";
    if (own < 0) continue;
    std::istringstream text(slurp(kRoot / file));
    std::string line;
    while (std::getline(text, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, kInclude)) continue;
      std::string target = resolve(m[1], file);
      if (target.empty()) continue;  // the standard library, spdlog, gtest, ...
      int theirs = layer_of(table, target);
      ++checked;
      EXPECT_GE(theirs, 0) << file << " includes " << target << ", which belongs to no layer";
      EXPECT_LE(theirs, own) << file << " (layer " << table[own].name << ") includes " << target << " (layer "
                             << (theirs >= 0 ? table[theirs].name : "?") << ")";
    }
  }
  EXPECT_GT(checked, 100) << "too few includes found: is the tree where the test thinks?";
}

/// What the runtime may include of jit/: docs/architecture.md's line "The runtime sees of `jit/`
/// only: ..." (the build reads the same line for the runtime layer's include path).
std::vector<std::string> runtime_sees_of_jit() {
  std::istringstream doc(slurp(kRoot / "docs/architecture.md"));
  static const std::regex kPath("`([^`]+)`");
  const std::string lead = "The runtime sees of `jit/` only: ";
  std::vector<std::string> out;
  std::string line;
  while (std::getline(doc, line)) {
    if (line.rfind(lead, 0) != 0) continue;
    std::string rest = line.substr(lead.size());
    for (auto it = std::sregex_iterator(rest.begin(), rest.end(), kPath); it != std::sregex_iterator(); ++it)
      out.push_back((*it)[1]);
  }
  return out;
}

/// The runtime checks, packs and launches through the backends' interface (backend/backend.h): of
/// the compiler's stages it reads only the target table and the kernel's signature, which holds no
/// IR type. A backend folder, the IR or a header that brings the IR in is refused.
TEST(Layers, TheRuntimeReachesTheStagesOnlyThroughTheBackends) {
  static const std::regex kInclude(R"(^\s*#\s*include\s*"([^"]+)\")");
  const std::vector<std::string> allowed = runtime_sees_of_jit();
  ASSERT_EQ(allowed, (std::vector<std::string>{"jit/target/", "jit/pipeline/signature.h"}))
      << "docs/architecture.md's line on what the runtime sees of jit/ changed";
  int files = 0;
  for (const auto& e : fs::directory_iterator(kRoot / "runtime")) {
    ++files;
    std::istringstream lines(slurp(e.path()));
    std::string line;
    while (std::getline(lines, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, kInclude)) continue;
      const std::string inc = m[1];
      if (inc.rfind("jit/", 0) != 0) continue;
      bool ok = false;
      for (const auto& a : allowed) ok = ok || inc.rfind(a, 0) == 0;
      EXPECT_TRUE(ok) << "runtime/" << e.path().filename().string() << " includes " << inc
                      << ": the runtime reaches the stages through backend/backend.h";
    }
  }
  EXPECT_GE(files, 3) << "runtime/ not found";
  // And what it may include brings no IR in: the signature header names no IR type.
  const std::string signature = slurp(kRoot / "jit/pipeline/signature.h");
  EXPECT_EQ(signature.find("jit/ir/"), std::string::npos);
  EXPECT_EQ(signature.find("ir::"), std::string::npos);
}

TEST(Layers, PublicHeadersIncludeOnlyPublicHeadersAndNameNoIrType) {
  static const std::regex kInclude(R"(^\s*#\s*include\s*"([^"]+)\")");
  for (const auto& e : fs::directory_iterator(kRoot / "include/vantage")) {
    std::string text = slurp(e.path());
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      std::smatch m;
      if (std::regex_search(line, m, kInclude)) {
        EXPECT_EQ(m[1].str().rfind("vantage/", 0), 0u) << e.path().filename() << " includes " << m[1];
      }
    }
    EXPECT_EQ(text.find("ir::"), std::string::npos) << e.path().filename() << " names an IR type";
  }
}

}  // namespace
