// Vantage public target vocabulary: the GPU architectures Vantage compiles for and the kinds of
// machine code it produces. Every limit and feature of an architecture lives in one table
// (jit/target); these are its names.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace vantage {

/// Target GPU architectures. sm_90a enables Hopper-only instructions (wgmma).
enum class Arch : std::uint8_t { SM_80, SM_86, SM_89, SM_90, SM_90a };
/// "sm_80", ..., "sm_90a".
const char* arch_name(Arch arch);
/// Compute capability times ten: 80, 86, 89, 90, 90.
int arch_number(Arch arch);
/// The architecture named "sm_90" (or "sm_90a", ...); nullopt for a name Vantage does not know.
std::optional<Arch> parse_arch(std::string_view name);
/// Every architecture Vantage knows, oldest first.
const std::vector<Arch>& all_archs();
/// "sm_80, sm_86, sm_89, sm_90, sm_90a", for messages.
const char* arch_names();

/// What NVRTC is asked to produce.
enum class Output : std::uint8_t { Cubin, Ptx };

}  // namespace vantage
