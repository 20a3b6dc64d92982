// Vantage frontend: checked kernels, device functions, obligations and diagnostic rendering.
#include <fstream>
#include <sstream>

#include "jit/ir/printer.h"
#include "vantage/builder.hpp"

namespace vantage {

Kernel::Kernel(std::shared_ptr<const ir::KernelNode> ir, std::vector<Obligation> obligations, std::int64_t shared_bytes)
    : ir_(std::move(ir)), obligations_(std::move(obligations)), shared_bytes_(shared_bytes) {}

const std::string& Kernel::name() const {
  static const std::string kEmpty;
  return ir_ ? ir_->name : kEmpty;
}
std::string Kernel::ir_text() const { return ir_ ? ir::print(*ir_) : std::string(); }
std::uint64_t Kernel::structural_hash() const { return ir_ ? ir_->hash : 0; }
bool Kernel::structurally_equal(const Kernel& other) const {
  if (!ir_ || !other.ir_) return ir_ == other.ir_;
  return ir::equal(*ir_, *other.ir_);
}

const std::string& DeviceFunction::name() const {
  static const std::string kEmpty;
  return ir_ ? ir_->name : kEmpty;
}
std::string DeviceFunction::ir_text() const { return ir_ ? ir::print(*ir_) : std::string(); }

bool Obligation::holds(std::int64_t t, std::int64_t b) const {
  auto l = lhs.eval(t, b);
  auto r = rhs.eval(t, b);
  if (!l || !r) return false;
  switch (kind) {
    case Kind::Divides: return *l > 0 && *r % *l == 0;
    case Kind::LessEqual: return *l <= *r;
    case Kind::Equal: return *l == *r;
  }
  return false;
}

std::string Obligation::str() const {
  switch (kind) {
    case Kind::Divides: return rhs.str() + " % " + lhs.str() + " == 0";
    case Kind::LessEqual: return lhs.str() + " <= " + rhs.str();
    case Kind::Equal: return lhs.str() + " == " + rhs.str();
  }
  return "?";
}

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

namespace {
std::string summary(const std::vector<Diagnostic>& ds) {
  std::string s = std::to_string(ds.size()) + " error(s)\n";
  return s + render_all(ds, false);
}
}  // namespace

CheckError::CheckError(std::vector<Diagnostic> diagnostics)
    : std::runtime_error(summary(diagnostics)), diagnostics_(std::move(diagnostics)) {}

bool CheckError::has(std::string_view code) const {
  for (const auto& d : diagnostics_)
    if (d.code == code) return true;
  return false;
}

}  // namespace vantage
