// Vantage cache internals shared by KernelCache, the CLI and the stress test: the disk path of a
// lookup, bundles, and the resources recorded from a cubin.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cache/sign.h"
#include "cache/store.h"

namespace vantage::cache {

/// What happened on the disk path of one lookup.
struct DiskResult {
  std::optional<Entry> entry;
  bool produced = false;  ///< the producer ran (a miss)
  bool waited = false;    ///< another process held the key's lock for a while
  bool lock_timed_out = false;
  std::string write_problem;  ///< the entry could not be saved (memory-only from here)
  std::string read_problem;   ///< a bad entry was found (and replaced)
};

/// Load `name`; on a miss take the key's lock, load again (another process may have written it
/// meanwhile), else produce, save and evict down to `max_bytes`. Past `timeout` without the lock,
/// produce anyway. `producer` may throw; nothing is saved then.
DiskResult get_or_produce(DiskStore& store, const std::string& name, const Key& key,
                          const std::function<Entry()>& producer, std::chrono::milliseconds timeout,
                          std::int64_t max_bytes);

/// Bundle file: "VNTGBND1" | u32 version | u32 count | { u64 name bytes | name | u64 entry bytes |
/// entry }* | u64 XXH3-64 of everything before it; signed (`key`), then "VNTGSIG2" | the Ed25519
/// public key (32 bytes) | its signature of the entries' manifest (64 bytes; sign.h). "VNTGSIG1"
/// marks a signature over a BLAKE2b manifest (`hash`: what Vantage signed before SHA-256), still read.
std::vector<char> write_bundle(const std::vector<std::pair<std::string, std::vector<char>>>& entries,
                               const SecretKey* key = nullptr, ManifestHash hash = ManifestHash::Sha256);
/// A bundle's signature, when it has one.
struct BundleSignature {
  PublicKey key;
  Signature signature;
  ManifestHash hash = ManifestHash::Sha256;  ///< the hash of the manifest it signs (its magic's)
};
/// Entries by name, or nullopt with the reason; `signature` (when given) is set to the bundle's, or
/// to nullopt for an unsigned bundle. The signature is read, not verified.
std::optional<std::map<std::string, std::vector<char>>> read_bundle(
    const std::string& file, std::string* problem, std::optional<BundleSignature>* signature = nullptr);

/// One entry as the remote tier stores it: the entry's bytes, then, when `key` is given, "VNTGSIG2" |
/// the public key | its signature of the one-entry manifest of `name` and the bytes (sign.h), so a
/// value moved to another name or changed fails to verify ("VNTGSIG1" with a BLAKE2b manifest).
std::vector<char> seal(const std::string& name, const std::vector<char>& entry, const SecretKey* key,
                       ManifestHash hash = ManifestHash::Sha256);
/// Splits a sealed value into the entry's bytes and its signature (nullopt when unsigned); the
/// signature is read, not verified.
std::vector<char> unseal(const char* value, std::size_t size, std::optional<BundleSignature>* signature);

/// Registers and local memory per thread, from the cubin's .nv.info (-1 when absent).
void cubin_resources(const std::vector<char>& cubin, int* registers, std::int64_t* local_bytes);

}  // namespace vantage::cache
