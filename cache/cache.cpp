// Vantage cache internals: see cache.h.
#include "cache/cache.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <fstream>

namespace vantage::cache {

DiskResult get_or_produce(DiskStore& store, const std::string& name, const Key& key,
                          const std::function<Entry()>& producer, std::chrono::milliseconds timeout,
                          std::int64_t max_bytes) {
  DiskResult r;
  ReadError err = ReadError::None;
  r.entry = store.load(name, &key, &err, &r.read_problem);
  if (r.entry) return r;
  auto start = std::chrono::steady_clock::now();
  const std::unique_ptr<Tier::Lease> lease = store.lease(name, timeout);
  r.waited = std::chrono::steady_clock::now() - start > std::chrono::milliseconds(5);
  r.lock_timed_out = store.writable() && store.usable() && !lease;
  if (lease) {
    std::string again;
    r.entry = store.load(name, &key, &err, &again);
    if (r.entry) return r;
  }
  r.entry = producer();
  r.produced = true;
  if (store.usable() && store.writable()) {
    if (store.save(name, *r.entry, &r.write_problem)) store.evict(max_bytes, name);
  } else {
    r.write_problem = store.problem();
  }
  return r;
}

namespace {
constexpr char kBundleMagic[8] = {'V', 'N', 'T', 'G', 'B', 'N', 'D', '1'};
constexpr std::size_t kSignatureBytes = 8 + 32 + 64;

// "VNTGSIG" and the manifest's hash: '1' BLAKE2b-256, '2' SHA-256, '3' BLAKE3.
void put_signature(std::vector<char>& out, const BundleSignature& sig) {
  const char magic[8] = {'V', 'N', 'T', 'G', 'S', 'I', 'G', static_cast<char>('0' + static_cast<int>(sig.hash))};
  out.insert(out.end(), magic, magic + 8);
  out.insert(out.end(), sig.key.begin(), sig.key.end());
  out.insert(out.end(), sig.signature.begin(), sig.signature.end());
}
void put_signature(std::vector<char>& out, const std::string& manifest, const SecretKey& key, ManifestHash hash) {
  put_signature(out, sign_manifest(manifest, key, hash));
}
constexpr char kListedMagic[8] = {'V', 'N', 'T', 'G', 'M', 'F', 'S', '1'};
constexpr std::size_t kListedBytes = 8 + 16;

// The signature that ends `size` bytes at `p`, when they end with one.
std::optional<BundleSignature> trailing_signature(const char* p, std::size_t size) {
  if (size < kSignatureBytes) return std::nullopt;
  const char* s = p + size - kSignatureBytes;
  if (std::memcmp(s, "VNTGSIG", 7) != 0 || s[7] < '1' || s[7] > '3') return std::nullopt;
  BundleSignature sig;
  sig.hash = static_cast<ManifestHash>(s[7] - '0');
  std::memcpy(sig.key.data(), s + 8, 32);
  std::memcpy(sig.signature.data(), s + 40, 64);
  return sig;
}

}  // namespace

std::vector<char> write_bundle(const std::vector<std::pair<std::string, std::vector<char>>>& entries,
                               const SecretKey* key, ManifestHash hash) {
  std::vector<char> out(kBundleMagic, kBundleMagic + 8);
  put_le(out, 4, kFormatVersion);
  put_le(out, 4, entries.size());
  for (const auto& [name, bytes] : entries) {
    put_le(out, 8, name.size());
    out.insert(out.end(), name.begin(), name.end());
    put_le(out, 8, bytes.size());
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  put_le(out, 8, XXH3_64bits(out.data(), out.size()));
  if (key) {
    std::map<std::string, std::vector<char>> by_name(entries.begin(), entries.end());
    put_signature(out, manifest(by_name, hash), *key, hash);
  }
  return out;
}

std::optional<std::map<std::string, std::vector<char>>> read_bundle(const std::string& file, std::string* problem,
                                                                    std::optional<BundleSignature>* signature) {
  auto fail = [&](const std::string& why) -> std::optional<std::map<std::string, std::vector<char>>> {
    if (problem) *problem = file + ": " + why;
    return std::nullopt;
  };
  std::vector<char> b;
  if (!read_file(file, b)) return fail("cannot be read");
  if (signature) signature->reset();
  if (b.size() >= 24 + kSignatureBytes)
    if (auto s = trailing_signature(b.data(), b.size())) {
      if (signature) *signature = s;
      b.resize(b.size() - kSignatureBytes);
    }
  if (b.size() < 24 || std::memcmp(b.data(), kBundleMagic, 8) != 0) return fail("not a Vantage bundle");
  if (get_le(b.data() + 8, 4) != kFormatVersion) return fail("bundle format version differs from this Vantage's");
  if (get_le(b.data() + b.size() - 8, 8) != XXH3_64bits(b.data(), b.size() - 8))
    return fail("checksum mismatch (truncated or corrupted)");
  std::uint64_t count = get_le(b.data() + 12, 4);
  std::size_t p = 16, end = b.size() - 8;
  std::map<std::string, std::vector<char>> out;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (p + 8 > end) return fail("entry table runs past the end");
    std::uint64_t n = get_le(b.data() + p, 8);
    p += 8;
    if (n > end - p) return fail("entry name runs past the end");
    std::string name(b.data() + p, n);
    p += n;
    if (p + 8 > end) return fail("entry runs past the end");
    std::uint64_t m = get_le(b.data() + p, 8);
    p += 8;
    if (m > end - p) return fail("entry runs past the end");
    out[name].assign(b.data() + p, b.data() + p + m);
    p += m;
  }
  if (p != end) return fail("trailing bytes after the entries");
  return out;
}

std::vector<char> seal(const std::string& name, const std::vector<char>& entry, const SecretKey* key,
                       ManifestHash hash) {
  std::vector<char> out = entry;
  if (key) put_signature(out, entry_manifest(name, entry.data(), entry.size(), hash), *key, hash);
  return out;
}

BundleSignature sign_manifest(const std::string& manifest, const SecretKey& key, ManifestHash hash) {
  BundleSignature sig;
  sig.hash = hash;
  std::copy(key.begin() + 32, key.end(), sig.key.begin());  // an Ed25519 secret key ends with its public key
  sig.signature = sign(manifest, key);
  return sig;
}

ManifestId manifest_id(const std::string& manifest) {
  const Digest h = content_hash(manifest.data(), manifest.size(), ManifestHash::Blake3);
  ManifestId id;
  std::copy(h.begin(), h.begin() + id.size(), id.begin());
  return id;
}

std::vector<char> seal_listed(const std::vector<char>& entry, const ManifestId& manifest) {
  std::vector<char> out(entry);
  out.insert(out.end(), kListedMagic, kListedMagic + 8);
  out.insert(out.end(), manifest.begin(), manifest.end());
  return out;
}

std::vector<char> unseal(const char* value, std::size_t size, std::optional<BundleSignature>* signature,
                         std::optional<ManifestId>* listed) {
  *signature = trailing_signature(value, size);
  if (listed) listed->reset();
  if (!*signature && listed && size >= kListedBytes && std::memcmp(value + size - kListedBytes, kListedMagic, 8) == 0) {
    ManifestId id;
    std::memcpy(id.data(), value + size - 16, 16);
    *listed = id;
    return std::vector<char>(value, value + size - kListedBytes);
  }
  return std::vector<char>(value, value + size - (*signature ? kSignatureBytes : 0));
}

std::vector<char> signed_manifest(const std::string& manifest, const BundleSignature& sig) {
  std::vector<char> out(manifest.begin(), manifest.end());
  put_signature(out, sig);
  return out;
}

std::optional<std::pair<std::string, BundleSignature>> read_signed_manifest(const char* value, std::size_t size) {
  auto sig = trailing_signature(value, size);
  if (!sig) return std::nullopt;
  return std::make_pair(std::string(value, size - kSignatureBytes), *sig);
}

void cubin_resources(const std::vector<char>& c, int* registers, std::int64_t* local_bytes) {
  *registers = -1;
  *local_bytes = -1;
  auto u = [&](std::size_t off, int bytes) -> std::uint64_t {
    return off + static_cast<std::size_t>(bytes) <= c.size() ? get_le(c.data() + off, bytes) : 0;
  };
  if (c.size() < 64 ||
      std::memcmp(c.data(),
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      c[4] != 2)
    return;
  std::uint64_t shoff = u(0x28, 8), entsize = u(0x3a, 2), count = u(0x3c, 2), strndx = u(0x3e, 2);
  if (shoff == 0 || entsize < 0x28 || strndx >= count || shoff + count * entsize > c.size()) return;
  std::uint64_t strtab = u(shoff + strndx * entsize + 0x18, 8);
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t h = shoff + i * entsize;
    std::uint64_t name = strtab + u(h, 4), off = u(h + 0x18, 8), size = u(h + 0x20, 8);
    if (name + 8 >= c.size() || off + size > c.size()) continue;
    if (std::strncmp(c.data() + name, ".nv.info", 8) != 0 || c[name + 8] != '\0') continue;
    // Records: format byte, attribute byte, then a value by format (4: u16 size + data).
    for (std::uint64_t p = off; p + 2 <= off + size;) {
      auto fmt = static_cast<unsigned char>(c[p]), attr = static_cast<unsigned char>(c[p + 1]);
      p += 2;
      if (fmt == 4) {
        std::uint64_t n = u(p, 2);
        p += 2;
        if (attr == 0x2f && n >= 8) *registers = static_cast<int>(u(p + 4, 4));             // EIATTR_REGCOUNT
        if (attr == 0x11 && n >= 8) *local_bytes = static_cast<std::int64_t>(u(p + 4, 4));  // EIATTR_FRAME_SIZE
        p += n;
      } else if (fmt == 3) {
        p += 2;
      } else if (fmt == 2) {
        p += 1;
      }
    }
  }
}

}  // namespace vantage::cache
