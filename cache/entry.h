// Vantage cache entries: one self-contained file per compiled kernel. Layout (little endian):
//
//   magic "VNTGKC01" | u32 format version | u32 header bytes | key (16 bytes)
//   u64 cubin bytes | u64 ptx bytes | u64 metadata bytes | u64 XXH3-64 of everything after the header
//   cubin | ptx | metadata (text, one `name=value` per line, values escaped; the structured ones JSON)
//
// The checksum covers the payload; the header repeats the key so that a file renamed or copied to
// the wrong name is caught. Bump kFormatVersion whenever the bytes written change: a committed
// golden entry fails the tests otherwise.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vantage::cache {

inline constexpr std::uint32_t kFormatVersion = 2;  // 2: the structured metadata as JSON
inline constexpr char kMagic[8] = {'V', 'N', 'T', 'G', 'K', 'C', '0', '1'};
inline constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 16 + 8 * 4;

/// 128-bit content key (XXH3-128).
struct Key {
  std::array<std::uint8_t, 16> bytes{};
  std::string hex() const;
  static std::optional<Key> from_hex(const std::string& hex);
  friend bool operator==(const Key&, const Key&) = default;
};

/// XXH3-128 of the parts, each length-prefixed so that ("ab", "c") and ("a", "bc") differ.
Key make_key(const std::vector<std::string>& parts);

struct Entry {
  Key key;
  std::vector<char> cubin;
  std::string ptx;
  std::map<std::string, std::string> meta;  ///< entry, arch, fingerprint, signature, guards, log, ...
};

/// The bytes of an entry file.
std::vector<char> serialize(const Entry& e);
/// `bytes` bytes of `v`, little-endian: the one byte order of entries and bundles.
void put_le(std::vector<char>& out, int bytes, std::uint64_t v);
/// The little-endian number in `bytes` bytes at p.
std::uint64_t get_le(const char* p, int bytes);

enum class ReadError { None, TooShort, BadMagic, OldFormat, NewFormat, BadHeader, Truncated, Checksum, WrongKey };
const char* describe(ReadError e);

/// Parses and verifies an entry; `expected` (when given) must match the key in the header.
std::optional<Entry> parse(const std::vector<char>& bytes, const Key* expected, ReadError* error);

}  // namespace vantage::cache
