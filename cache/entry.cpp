// Vantage cache entries: see entry.h.
#include "cache/entry.h"

#include <xxhash.h>

#include <cstring>

namespace vantage::cache {

void put_le(std::vector<char>& out, int bytes, std::uint64_t v) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
std::uint64_t get_le(const char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}
std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      out += s[i + 1] == 'n' ? '\n' : s[i + 1];
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::string Key::hex() const {
  static const char* const kDigits = "0123456789abcdef";
  std::string s;
  for (auto b : bytes) {
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

std::optional<Key> Key::from_hex(const std::string& hex) {
  if (hex.size() != 32) return std::nullopt;
  Key k;
  for (std::size_t i = 0; i < 16; ++i) {
    auto nib = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      return -1;
    };
    int hi = nib(hex[2 * i]), lo = nib(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    k.bytes[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return k;
}

Key make_key(const std::vector<std::string>& parts) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  for (const auto& p : parts) {
    std::uint64_t n = p.size();
    XXH3_128bits_update(st, &n, sizeof n);
    XXH3_128bits_update(st, p.data(), p.size());
  }
  XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  Key k;
  std::memcpy(k.bytes.data(), c.digest, 16);
  return k;
}

std::vector<char> serialize(const Entry& e) {
  std::string meta;
  for (const auto& [name, value] : e.meta) meta += name + "=" + escape(value) + "\n";
  std::vector<char> payload;
  payload.reserve(e.cubin.size() + e.ptx.size() + meta.size());
  payload.insert(payload.end(), e.cubin.begin(), e.cubin.end());
  payload.insert(payload.end(), e.ptx.begin(), e.ptx.end());
  payload.insert(payload.end(), meta.begin(), meta.end());
  std::vector<char> out(kMagic, kMagic + 8);
  out.reserve(kHeaderBytes + payload.size());
  put_le(out, 4, kFormatVersion);
  put_le(out, 4, static_cast<std::uint32_t>(kHeaderBytes));
  out.insert(out.end(), e.key.bytes.begin(), e.key.bytes.end());
  put_le(out, 8, e.cubin.size());
  put_le(out, 8, e.ptx.size());
  put_le(out, 8, meta.size());
  put_le(out, 8, XXH3_64bits(payload.data(), payload.size()));
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

const char* describe(ReadError e) {
  switch (e) {
    case ReadError::None: return "ok";
    case ReadError::TooShort: return "shorter than a header";
    case ReadError::BadMagic: return "not a Vantage cache entry";
    case ReadError::OldFormat: return "written by an older format version";
    case ReadError::NewFormat: return "written by a newer format version";
    case ReadError::BadHeader: return "header sizes are inconsistent";
    case ReadError::Truncated: return "truncated";
    case ReadError::Checksum: return "checksum mismatch (corrupted)";
    case ReadError::WrongKey: return "holds a different key than its name says";
  }
  return "?";
}

std::optional<Entry> parse(const std::vector<char>& bytes, const Key* expected, ReadError* error) {
  auto fail = [&](ReadError e) -> std::optional<Entry> {
    if (error) *error = e;
    return std::nullopt;
  };
  if (bytes.size() < kHeaderBytes) return fail(ReadError::TooShort);
  if (std::memcmp(bytes.data(), kMagic, 6) != 0) return fail(ReadError::BadMagic);
  auto version = static_cast<std::uint32_t>(get_le(bytes.data() + 8, 4));
  if (version < kFormatVersion) return fail(ReadError::OldFormat);
  if (version > kFormatVersion) return fail(ReadError::NewFormat);
  if (get_le(bytes.data() + 12, 4) != kHeaderBytes) return fail(ReadError::BadHeader);
  Entry e;
  std::memcpy(e.key.bytes.data(), bytes.data() + 16, 16);
  std::uint64_t cubin = get_le(bytes.data() + 32, 8), ptx = get_le(bytes.data() + 40, 8),
                meta = get_le(bytes.data() + 48, 8);
  std::uint64_t sum = get_le(bytes.data() + 56, 8);
  std::uint64_t payload = bytes.size() - kHeaderBytes;
  if (cubin > payload || ptx > payload || meta > payload || cubin + ptx + meta != payload) {
    return fail(cubin + ptx + meta > payload ? ReadError::Truncated : ReadError::BadHeader);
  }
  if (XXH3_64bits(bytes.data() + kHeaderBytes, payload) != sum) return fail(ReadError::Checksum);
  if (expected && !(e.key == *expected)) return fail(ReadError::WrongKey);
  const char* p = bytes.data() + kHeaderBytes;
  e.cubin.assign(p, p + cubin);
  e.ptx.assign(p + cubin, p + cubin + ptx);
  std::string text(p + cubin + ptx, p + cubin + ptx + meta);
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    auto eq = line.find('=');
    if (eq != std::string::npos) e.meta[line.substr(0, eq)] = unescape(line.substr(eq + 1));
    start = end + 1;
  }
  if (error) *error = ReadError::None;
  return e;
}

}  // namespace vantage::cache
