// Vantage public vocabulary: levels, sizes, perspectives, scalar types and memory spaces
// (vantage/types.hpp), and diagnostics and the exceptions that carry them (vantage/diagnostics.hpp).
#include <fstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "support/float8.h"
#include "vantage/diagnostics.hpp"
#include "vantage/types.hpp"

namespace vantage {

const char* level_name(Level level) {
  switch (level) {
    case Level::Thread: return "thread";
    case Level::Block: return "block";
    case Level::Grid: return "grid";
  }
  return "?";
}

std::optional<std::int64_t> Size::eval(std::optional<std::int64_t> t, std::optional<std::int64_t> b) const {
  __int128 v = coeff;
  if (threads) {
    if (!t) return std::nullopt;
    v *= *t;
  }
  if (blocks) {
    if (!b) return std::nullopt;
    v *= *b;
  }
  if (v > INT64_MAX || v < INT64_MIN) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

std::string Size::str() const {
  std::string s;
  if (coeff != 1 || is_static()) s = std::to_string(coeff);
  auto factor = [&](const char* f) {
    if (!s.empty()) s += "*";
    s += f;
  };
  if (blocks) factor("B");
  if (threads) factor("T");
  return s;
}

std::string Perspective::str() const { return std::string(level_name(level)) + "(" + count.str() + ")"; }

const char* type_name(ScalarType type) {
  switch (type) {
    case ScalarType::Bool: return "bool";
    case ScalarType::I8: return "i8";
    case ScalarType::U8: return "u8";
    case ScalarType::I16: return "i16";
    case ScalarType::U16: return "u16";
    case ScalarType::F8E4M3: return "f8e4m3";
    case ScalarType::F8E5M2: return "f8e5m2";
    case ScalarType::I32: return "i32";
    case ScalarType::U32: return "u32";
    case ScalarType::I64: return "i64";
    case ScalarType::U64: return "u64";
    case ScalarType::F16: return "f16";
    case ScalarType::BF16: return "bf16";
    case ScalarType::F32: return "f32";
    case ScalarType::F64: return "f64";
  }
  return "?";
}

int type_bytes(ScalarType type) {
  switch (type) {
    case ScalarType::Bool:
    case ScalarType::I8:
    case ScalarType::U8:
    case ScalarType::F8E4M3:
    case ScalarType::F8E5M2: return 1;
    case ScalarType::I16:
    case ScalarType::U16:
    case ScalarType::F16:
    case ScalarType::BF16: return 2;
    case ScalarType::I32:
    case ScalarType::U32:
    case ScalarType::F32: return 4;
    case ScalarType::I64:
    case ScalarType::U64:
    case ScalarType::F64: return 8;
  }
  return 0;
}

const char* space_name(MemSpace space) {
  switch (space) {
    case MemSpace::Global: return "global";
    case MemSpace::Shared: return "shared";
    case MemSpace::Local: return "local";
  }
  return "?";
}

// ---------------------------------------------------------------- diagnostics
std::string SourceLoc::str() const {
  if (!known()) return "<unknown>";
  return std::string(file) + ":" + std::to_string(line) + ":" + std::to_string(column);
}

namespace {
std::string source_line(const SourceLoc& loc) {
  if (!loc.known() || !loc.file || !*loc.file) return {};
  std::ifstream in(loc.file);
  std::string line;
  for (std::uint32_t i = 0; i < loc.line && std::getline(in, line); ++i) {
  }
  if (!in) return {};
  std::string out = "  " + line + "\n  ";
  for (std::uint32_t i = 1; i < loc.column && i <= line.size(); ++i) out += line[i - 1] == '\t' ? '\t' : ' ';
  return out + "^\n";
}

/// The diagnostics without repeats: a statement the user's C++ loop built many times, each breaking
/// the same rule, is reported once (the same code, message, line and notes).
std::vector<Diagnostic> distinct(std::vector<Diagnostic> ds) {
  std::vector<Diagnostic> out;
  std::unordered_set<std::string> seen;
  for (auto& d : ds) {
    std::string key = d.render(false);
    if (seen.insert(std::move(key)).second) out.push_back(std::move(d));
  }
  return out;
}

std::string summary(const std::vector<Diagnostic>& ds) {
  std::string s = std::to_string(ds.size()) + " error(s)\n";
  return s + render_all(ds, false);
}
}  // namespace

std::string Diagnostic::render(bool with_source) const {
  std::string out = loc.str() + ": error[" + code + "]: " + message + "\n";
  if (with_source) out += source_line(loc);
  for (const auto& n : notes) out += n.loc.str() + ": note: " + n.message + "\n";
  return out;
}

std::string render_all(const std::vector<Diagnostic>& diagnostics, bool with_source) {
  std::string out;
  for (const auto& d : diagnostics) out += d.render(with_source);
  return out;
}

CheckError::CheckError(std::vector<Diagnostic> diagnostics) : CheckError(distinct(std::move(diagnostics)), 0) {}

CheckError::CheckError(std::vector<Diagnostic> diagnostics, int)
    : std::runtime_error(summary(diagnostics)), diagnostics_(std::move(diagnostics)) {}

bool CheckError::has(std::string_view code) const {
  for (const auto& d : diagnostics_)
    if (d.code == code) return true;
  return false;
}

CompileError::CompileError(std::string message, std::string log, std::vector<std::string> options, std::string source,
                           std::vector<Diagnostic> diagnostics)
    : std::runtime_error(std::move(message)),
      log_(std::move(log)),
      options_(std::move(options)),
      source_(std::move(source)),
      diagnostics_(std::move(diagnostics)) {}

double value_of(fp8_e4m3 v) { return float8::decode(v.bits, false); }
double value_of(fp8_e5m2 v) { return float8::decode(v.bits, true); }
fp8_e4m3 to_fp8_e4m3(double x) { return {float8::encode(x, false)}; }
fp8_e5m2 to_fp8_e5m2(double x) { return {float8::encode(x, true)}; }

}  // namespace vantage
