// Vantage `print`: reading a format, and the line it prints (see print_format.h).
#include "jit/ir/print_format.h"

#include <cctype>
#include <cstdio>
#include <mutex>

namespace vantage::ir {

std::optional<PrintFormat> parse_print_format(std::string_view format, std::string* why) {
  PrintFormat out;
  out.text.emplace_back();
  auto fail = [&](std::string w) -> std::optional<PrintFormat> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  for (std::size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') {
        out.text.back() += '}';
        ++i;
        continue;
      }
      return fail("a '}' at character " + std::to_string(i + 1) + " closes no '{' (write '}}' for a brace)");
    }
    if (c != '{') {
      out.text.back() += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out.text.back() += '{';
      ++i;
      continue;
    }
    const std::size_t close = format.find('}', i);
    if (close == std::string_view::npos)
      return fail("the '{' at character " + std::to_string(i + 1) + " is not closed (write '{{' for a brace)");
    std::string_view inside = format.substr(i + 1, close - i - 1);
    PrintSpec spec;
    if (!inside.empty()) {
      if (inside[0] != ':')
        return fail("'{" + std::string(inside) + "}' is not '{}' or '{:SPEC}' (values are taken in order)");
      inside.remove_prefix(1);
      std::size_t k = 0;
      while (k < inside.size() && std::string_view("-+ 0#").find(inside[k]) != std::string_view::npos) ++k;
      std::size_t digits = 0;
      while (k < inside.size() && std::isdigit(static_cast<unsigned char>(inside[k]))) ++k, ++digits;
      std::size_t precision = 0;
      bool dot = k < inside.size() && inside[k] == '.';
      if (dot)
        for (++k; k < inside.size() && std::isdigit(static_cast<unsigned char>(inside[k]));) ++k, ++precision;
      const std::string_view conversions = "diuxXoeEfFgG";
      if (digits > 2 || precision > 2 || (dot && precision == 0) || k + 1 != inside.size() ||
          conversions.find(inside[k]) == std::string_view::npos)
        return fail("'{:" + std::string(inside) +
                    "}' is not a spec: flags of \"-+ 0#\", a width and a .precision of at most two digits, "
                    "then one of d i u x X o (integers) or e E f F g G (floats)");
      spec.flags_width_precision = std::string(inside.substr(0, k));
      spec.conversion = inside[k];
    }
    out.specs.push_back(spec);
    out.text.emplace_back();
    i = close;
  }
  if (out.specs.size() > static_cast<std::size_t>(kMaxPrintValues))
    return fail("a print takes at most " + std::to_string(kMaxPrintValues) + " values, not " +
                std::to_string(out.specs.size()));
  return out;
}

namespace {
bool integer_conversion(char c) { return c == 'd' || c == 'i' || c == 'u' || c == 'x' || c == 'X' || c == 'o'; }
}  // namespace

std::optional<std::string> print_spec_problem(const PrintSpec& spec, ScalarType t, std::size_t i) {
  if (!spec.conversion) return std::nullopt;
  const bool integral = is_integral(t);
  if (spec.flags_width_precision.find('#') != std::string::npos &&
      (spec.conversion == 'd' || spec.conversion == 'i' || spec.conversion == 'u'))
    return "value " + std::to_string(i + 1) + "'s spec puts '#' on '%" + spec.conversion +
           "', which has no alternative form (x X o e E f F g G have)";
  if (integral == integer_conversion(spec.conversion)) return std::nullopt;
  return "value " + std::to_string(i + 1) + " is " + type_name(t) + ", which '%" + spec.conversion +
         "' does not print (" + (integral ? "d i u x X o" : "e E f F g G") + " do)";
}

PrintAs print_as(const PrintSpec& spec, ScalarType t) {
  if (is_float(t) || is_fp8(t)) return PrintAs::Double;
  if (t == ScalarType::Bool && !spec.conversion) return PrintAs::Bool;
  const char c = spec.conversion ? spec.conversion : (is_signed(t) ? 'd' : 'u');
  return c == 'd' || c == 'i' ? PrintAs::Signed : PrintAs::Unsigned;
}

std::string printf_conversion(const PrintSpec& spec, ScalarType t) {
  switch (print_as(spec, t)) {
    case PrintAs::Bool: return "%s";
    case PrintAs::Double: return "%" + spec.flags_width_precision + (spec.conversion ? spec.conversion : 'g');
    case PrintAs::Signed: return "%" + spec.flags_width_precision + "ll" + (spec.conversion ? spec.conversion : 'd');
    case PrintAs::Unsigned: return "%" + spec.flags_width_precision + "ll" + (spec.conversion ? spec.conversion : 'u');
  }
  return "%s";
}

namespace {
/// printf's text of one value, however long.
template <class T>
std::string printed(const std::string& conversion, T value) {
  char small[64];
  const int n = std::snprintf(small, sizeof small, conversion.c_str(), value);
  if (n < 0) return {};
  if (static_cast<std::size_t>(n) < sizeof small) return std::string(small, static_cast<std::size_t>(n));
  std::string big(static_cast<std::size_t>(n) + 1, '\0');
  std::snprintf(big.data(), big.size(), conversion.c_str(), value);
  big.resize(static_cast<std::size_t>(n));
  return big;
}
}  // namespace

std::string print_line(const PrintFormat& format, std::span<const PrintValue> values) {
  std::string line = format.text.empty() ? std::string() : format.text[0];
  for (std::size_t k = 0; k < format.specs.size() && k < values.size(); ++k) {
    const PrintValue& v = values[k];
    const std::string conv = printf_conversion(format.specs[k], v.type);
    switch (print_as(format.specs[k], v.type)) {
      case PrintAs::Bool: line += v.i ? "true" : "false"; break;
      case PrintAs::Double: line += printed(conv, v.f); break;
      case PrintAs::Signed: line += printed(conv, static_cast<long long>(v.i)); break;
      case PrintAs::Unsigned: {
        // The bits of the value's own width: -1 as an i32 prints as ffffffff.
        const int bits = static_cast<int>(type_bytes(v.type)) * 8;
        auto u = static_cast<unsigned long long>(v.i);
        if (bits < 64) u &= (1ULL << bits) - 1;
        line += printed(conv, u);
        break;
      }
    }
    line += format.text[k + 1];
  }
  line += '\n';
  return line;
}

void write_print_line(std::string_view line) {
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

}  // namespace vantage::ir
