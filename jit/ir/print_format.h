// Vantage `print`: the one meaning of a print's format (docs/semantics.md, "Printing"), shared by the
// checker (which refuses a format it cannot read), the CUDA printer (which turns it into printf's) and
// the interpreter and the CPU backend (which write the line printf would). A format is text with a
// `{}` for each value, or `{:SPEC}` with a printf conversion: flags of "-+ 0#", a width and a
// precision of at most two digits, and a conversion of d, i, u, x, X or o (integers and bool) or e, E,
// f, F, g or G (floats). `{{` and `}}` are braces. Integers are widened to 64 bits (an unsigned
// conversion of a signed value takes the bits of its own width), floats to double, and a bool without
// a spec prints as true or false.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vantage/types.hpp"

namespace vantage::ir {

/// At most this many values a print.
inline constexpr int kMaxPrintValues = 16;

/// One value's place in a format: its printf conversion as written (without `%` and the length).
struct PrintSpec {
  std::string flags_width_precision;  ///< e.g. "-08.3"
  char conversion = 0;                ///< 0: the default for the value's type
};

/// The format cut at its placeholders: text[0] spec[0] text[1] ... spec[n-1] text[n], the text with
/// its doubled braces made single. nullopt, with `why`, where the format cannot be read.
struct PrintFormat {
  std::vector<std::string> text;
  std::vector<PrintSpec> specs;
};
std::optional<PrintFormat> parse_print_format(std::string_view format, std::string* why);

/// Why value `i` of type `t` cannot take its spec's conversion; nullopt where it can.
std::optional<std::string> print_spec_problem(const PrintSpec& spec, ScalarType t, std::size_t i);

/// How a value reaches printf: as a signed or unsigned 64-bit integer, a double, or "true"/"false".
enum class PrintAs : std::uint8_t { Signed, Unsigned, Double, Bool };
PrintAs print_as(const PrintSpec& spec, ScalarType t);
/// printf's conversion for one value: "%" + flags, width, precision, the length and the conversion.
std::string printf_conversion(const PrintSpec& spec, ScalarType t);

/// A value as the host formats it: `i` for integers and bool (an unsigned conversion of a signed
/// value takes its own width's bits), `f` for floats.
struct PrintValue {
  ScalarType type = ScalarType::I32;
  std::int64_t i = 0;
  double f = 0;
};
/// The line a print writes, its newline included, as printf writes it.
std::string print_line(const PrintFormat& format, std::span<const PrintValue> values);
/// Writes a print's line to standard output whole (one line at a time, from any thread), flushed.
void write_print_line(std::string_view line);

}  // namespace vantage::ir
