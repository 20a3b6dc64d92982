// Vantage cache signatures: Ed25519 (libsodium) over a manifest of BLAKE3 content hashes (its
// reference C code with SIMD dispatch: 64 KiB in about 7 µs, where SHA-256 with the CPU's SHA
// extensions takes 33 and libsodium's BLAKE2b 90), one line per entry. Signatures made over BLAKE2b
// or SHA-256 manifests (before BLAKE3) still verify: the signature's magic says which hash its
// manifest used. A publisher makes a key pair
// (`vantage cache keygen`), signs a bundle as it exports it (`vantage cache export --sign KEY`), and
// a fleet lists the public keys it trusts (VANTAGE_CACHE_TRUST): under a trust list a bundle is used
// only when a listed key signed it and the signature verifies over the entries it holds.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vantage::cache {

using PublicKey = std::array<unsigned char, 32>;
using SecretKey = std::array<unsigned char, 64>;
using Signature = std::array<unsigned char, 64>;

/// A new key pair: `base`.key (the secret, mode 0600) and `base`.pub (the public key), one line of
/// text each. Returns the public key; throws std::runtime_error when a file cannot be written or
/// already exists.
PublicKey write_key_pair(const std::string& base);
/// The secret key in a `.key` file; nullopt with the reason.
std::optional<SecretKey> read_secret_key(const std::string& file, std::string* problem);
/// The public key on a line (`vantage-ed25519-public HEX`, or the hex alone).
std::optional<PublicKey> parse_public_key(const std::string& line);
/// How messages name a key: the first 16 hex digits of its public key.
std::string key_id(const PublicKey& key);
/// `n` bytes at `p` as lower-case hex digits.
std::string hex_digits(const unsigned char* p, std::size_t n);

/// The content hash a manifest lists: BLAKE3-256 for what is signed now; BLAKE2b-256 and SHA-256 for
/// signatures made before (still verified).
enum class ManifestHash { Blake2b = 1, Sha256 = 2, Blake3 = 3 };
using Digest = std::array<unsigned char, 32>;
/// The 256-bit `hash` of `size` bytes at `data`.
Digest content_hash(const char* data, std::size_t size, ManifestHash hash);

/// The manifest a signature covers: the entries' names, sizes and content hashes, by name.
std::string manifest(const std::map<std::string, std::vector<char>>& entries, ManifestHash hash = ManifestHash::Blake3);
/// The manifest of one entry (`manifest({{name, bytes}})`) without copying its bytes.
std::string entry_manifest(const std::string& name, const char* data, std::size_t size,
                           ManifestHash hash = ManifestHash::Blake3);

/// A manifest read back: its hash and, by name, each entry's size and content hash.
struct ParsedManifest {
  ManifestHash hash = ManifestHash::Blake3;
  struct Line {
    std::size_t size = 0;
    Digest digest{};
  };
  std::map<std::string, Line> entries;
  /// Whether `size` bytes at `data` are the entry `name` it lists (its size and content hash).
  bool lists(const std::string& name, const char* data, std::size_t size) const;
};
/// The manifest in `text` (as manifest() writes it); nullopt with the reason when it is not one.
std::optional<ParsedManifest> parse_manifest(const std::string& text, std::string* problem);
Signature sign(const std::string& manifest, const SecretKey& key);
bool verify(const std::string& manifest, const Signature& sig, const PublicKey& key);

/// The public keys a process trusts: every key in the trust-list files (VANTAGE_CACHE_TRUST names
/// them; a file holds one key a line, `#` starts a comment). Empty when no file is named; a file or
/// line that cannot be read leaves it not empty, so that it trusts nothing rather than everything.
struct TrustList {
  std::vector<PublicKey> keys;
  std::vector<std::string> problems;  ///< files or lines that could not be read (each warned of once)
  bool named = false;                 ///< some file was named: the list is in force, even with no key in it
  /// No list in force: layers need no signature.
  bool empty() const { return !named; }
  bool trusts(const PublicKey& k) const;
  static TrustList from_files(const std::vector<std::string>& files);
};

}  // namespace vantage::cache
