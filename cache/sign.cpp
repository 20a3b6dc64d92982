// Vantage cache signatures: see sign.h.
#include "cache/sign.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "cache/blake3_whole.h"

namespace vantage::cache {
namespace {

constexpr const char* kSecretTag = "vantage-ed25519-secret";
constexpr const char* kPublicTag = "vantage-ed25519-public";

void ensure_sodium() {
  static const int ok = sodium_init();
  if (ok < 0) throw std::runtime_error("libsodium could not be initialised");
}

std::string hex(const unsigned char* p, std::size_t n) {
  std::string s(2 * n + 1, '\0');
  sodium_bin2hex(s.data(), s.size(), p, n);
  s.pop_back();
  return s;
}

template <std::size_t N>
std::optional<std::array<unsigned char, N>> unhex(const std::string& text) {
  std::array<unsigned char, N> out{};
  std::size_t len = 0;
  const char* end = nullptr;
  if (sodium_hex2bin(out.data(), N, text.data(), text.size(), nullptr, &len, &end) != 0 || len != N ||
      end != text.data() + text.size())
    return std::nullopt;
  return out;
}

std::string trim(std::string s) {
  if (auto h = s.find('#'); h != std::string::npos) s.erase(h);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

void write_new(const std::string& file, const std::string& text, mode_t mode) {
  std::FILE* f = nullptr;
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd >= 0) f = ::fdopen(fd, "w");
  if (!f) throw std::runtime_error("cannot create " + file + (errno == EEXIST ? ": it exists" : ""));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write " + file);
}

}  // namespace

PublicKey write_key_pair(const std::string& base) {
  ensure_sodium();
  // Neither file may exist: a new secret key whose public half could not be written would be lost.
  for (const char* ext : {".key", ".pub"})
    if (::access((base + ext).c_str(), F_OK) == 0)
      throw std::runtime_error("cannot create " + base + ext + ": it exists");
  PublicKey pk;
  SecretKey sk;
  crypto_sign_keypair(pk.data(), sk.data());
  std::string secret = kSecretTag;
  secret.append(" ").append(hex(sk.data(), sk.size())).append("\n");
  write_new(base + ".key", secret, 0600);
  sodium_memzero(secret.data(), secret.size());
  sodium_memzero(sk.data(), sk.size());
  std::string line = kPublicTag;
  line.append(" ").append(hex(pk.data(), pk.size())).append("\n");
  write_new(base + ".pub", line, 0644);
  return pk;
}

std::optional<SecretKey> read_secret_key(const std::string& file, std::string* problem) {
  std::ifstream in(file);
  std::string tag, text;
  if (!in || !(in >> tag >> text)) {
    *problem = "cannot read the key " + file;
    return std::nullopt;
  }
  if (tag != kSecretTag) {
    *problem = file + " is not a Vantage secret key (make one with `vantage cache keygen`)";
    return std::nullopt;
  }
  auto k = unhex<64>(text);
  if (!k) *problem = file + ": the key is not 128 hex digits";
  return k;
}

std::optional<PublicKey> parse_public_key(const std::string& line) {
  std::string s = trim(line);
  if (s.rfind(kPublicTag, 0) == 0) s = trim(s.substr(std::string(kPublicTag).size()));
  return unhex<32>(s);
}

std::string key_id(const PublicKey& key) { return hex(key.data(), 8); }

std::string hex_digits(const unsigned char* p, std::size_t n) { return hex(p, n); }

Digest content_hash(const char* data, std::size_t size, ManifestHash hash) {
  Digest h;
  const auto* in = reinterpret_cast<const unsigned char*>(data);
  switch (hash) {
    case ManifestHash::Blake3: vantage_blake3_whole(in, size, h.data()); break;
    case ManifestHash::Sha256: {
      unsigned int n = 0;
      if (EVP_Digest(in, size, h.data(), &n, EVP_sha256(), nullptr) != 1 || n != h.size())
        throw std::runtime_error("OpenSSL could not compute a SHA-256 hash");
      break;
    }
    case ManifestHash::Blake2b:
      ensure_sodium();
      crypto_generichash(h.data(), h.size(), in, size, nullptr, 0);
      break;
  }
  return h;
}

namespace {
void add_line(std::string& m, const std::string& name, const char* data, std::size_t size, ManifestHash hash) {
  const Digest h = content_hash(data, size, hash);
  m += name + " " + std::to_string(size) + " " + hex(h.data(), h.size()) + "\n";
}
constexpr const char* kManifestTag = "vantage-bundle-manifest";
// The header names the hash (1: BLAKE2b-256, 2: SHA-256, 3: BLAKE3), so that one manifest never reads
// as another's.
std::string header(ManifestHash hash) { return kManifestTag + (" " + std::to_string(static_cast<int>(hash))) + "\n"; }
}  // namespace

std::string manifest(const std::map<std::string, std::vector<char>>& entries, ManifestHash hash) {
  ensure_sodium();
  std::string m = header(hash);
  for (const auto& [name, bytes] : entries) add_line(m, name, bytes.data(), bytes.size(), hash);
  return m;
}

std::string entry_manifest(const std::string& name, const char* data, std::size_t size, ManifestHash hash) {
  ensure_sodium();
  std::string m = header(hash);
  add_line(m, name, data, size, hash);
  return m;
}

Signature sign(const std::string& manifest, const SecretKey& key) {
  ensure_sodium();
  Signature s;
  crypto_sign_detached(s.data(), nullptr, reinterpret_cast<const unsigned char*>(manifest.data()), manifest.size(),
                       key.data());
  return s;
}

bool verify(const std::string& manifest, const Signature& sig, const PublicKey& key) {
  ensure_sodium();
  return crypto_sign_verify_detached(sig.data(), reinterpret_cast<const unsigned char*>(manifest.data()),
                                     manifest.size(), key.data()) == 0;
}

bool ParsedManifest::lists(const std::string& name, const char* data, std::size_t size) const {
  auto it = entries.find(name);
  if (it == entries.end() || it->second.size != size) return false;
  const Digest h = content_hash(data, size, hash);
  return sodium_memcmp(h.data(), it->second.digest.data(), h.size()) == 0;
}

std::optional<ParsedManifest> parse_manifest(const std::string& text, std::string* problem) {
  auto fail = [&](const std::string& why) -> std::optional<ParsedManifest> {
    *problem = "not a manifest: " + why;
    return std::nullopt;
  };
  ParsedManifest m;
  std::size_t p = 0;
  for (int hash = 1; hash <= 3; ++hash)
    if (text.rfind(header(static_cast<ManifestHash>(hash)), 0) == 0) {
      m.hash = static_cast<ManifestHash>(hash);
      p = header(m.hash).size();
    }
  if (p == 0) return fail("it does not begin with its header (vantage-bundle-manifest 1, 2 or 3)");
  for (int line = 2; p < text.size(); ++line) {
    const std::size_t end = text.find('\n', p);
    if (end == std::string::npos) return fail("line " + std::to_string(line) + " has no end");
    std::istringstream in(text.substr(p, end - p));
    std::string name, size, digest, extra;
    in >> name >> size >> digest;
    auto h = unhex<32>(digest);
    if (!in || (in >> extra) || !h || size.empty() || size.find_first_not_of("0123456789") != std::string::npos ||
        size.size() > 15 || !m.entries.emplace(name, ParsedManifest::Line{std::stoull(size), *h}).second)
      return fail("line " + std::to_string(line) + " is not `NAME SIZE HASH` of a new name");
    p = end + 1;
  }
  return m;
}

bool TrustList::trusts(const PublicKey& k) const {
  for (const auto& t : keys)
    if (sodium_memcmp(t.data(), k.data(), k.size()) == 0) return true;
  return false;
}

TrustList TrustList::from_files(const std::vector<std::string>& files) {
  TrustList t;
  t.named = !files.empty();
  for (const auto& file : files) {
    std::ifstream in(file);
    if (!in) {
      t.problems.push_back("cannot read the trust list " + file);
      continue;
    }
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (trim(line).empty()) continue;
      if (auto k = parse_public_key(line))
        t.keys.push_back(*k);
      else
        t.problems.push_back(file + ":" + std::to_string(n) + ": not a public key");
    }
  }
  return t;
}

}  // namespace vantage::cache
