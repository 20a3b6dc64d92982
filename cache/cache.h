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
/// entry }* | u64 XXH3-64 of everything before it; signed (`key`), then "VNTGSIG3" | the Ed25519
/// public key (32 bytes) | its signature of the entries' manifest (64 bytes; sign.h). The magic's
/// digit names the manifest's hash: '3' BLAKE3; '2' SHA-256 and '1' BLAKE2b, what Vantage signed
/// before, still read.
std::vector<char> write_bundle(const std::vector<std::pair<std::string, std::vector<char>>>& entries,
                               const SecretKey* key = nullptr, ManifestHash hash = ManifestHash::Blake3);
/// A bundle's signature, when it has one.
struct BundleSignature {
  PublicKey key;
  Signature signature;
  ManifestHash hash = ManifestHash::Blake3;  ///< the hash of the manifest it signs (its magic's)
};
/// `manifest` signed by `key`, as a bundle's signature (`hash`: the manifest's hash).
BundleSignature sign_manifest(const std::string& manifest, const SecretKey& key,
                              ManifestHash hash = ManifestHash::Blake3);
/// Entries by name, or nullopt with the reason; `signature` (when given) is set to the bundle's, or
/// to nullopt for an unsigned bundle. The signature is read, not verified.
std::optional<std::map<std::string, std::vector<char>>> read_bundle(
    const std::string& file, std::string* problem, std::optional<BundleSignature>* signature = nullptr);

/// A manifest's name in the remote tier: the first 16 bytes of the BLAKE3 hash of its text.
using ManifestId = std::array<unsigned char, 16>;
ManifestId manifest_id(const std::string& manifest);

/// One entry as the remote tier stores it: the entry's bytes, then, when `key` is given, "VNTGSIG3" |
/// the public key | its signature of the one-entry manifest of `name` and the bytes (sign.h), so a
/// value moved to another name or changed fails to verify ("VNTGSIG2" with a SHA-256 manifest,
/// "VNTGSIG1" with a BLAKE2b one).
std::vector<char> seal(const std::string& name, const std::vector<char>& entry, const SecretKey* key,
                       ManifestHash hash = ManifestHash::Blake3);
/// An entry pushed under a signed manifest (`vantage cache push`): the entry's bytes, then "VNTGMFS1" |
/// the manifest's id. The value carries no signature of its own: the manifest's covers its hash.
std::vector<char> seal_listed(const std::vector<char>& entry, const ManifestId& manifest);
/// Splits a sealed value into the entry's bytes and its signature (nullopt when unsigned) or, for a
/// pushed entry, the id of the manifest that lists it (`listed`, when given); nothing is verified.
std::vector<char> unseal(const char* value, std::size_t size, std::optional<BundleSignature>* signature,
                         std::optional<ManifestId>* listed = nullptr);
/// A signed manifest as the remote tier stores it: its text, then its signature as a bundle's ends.
std::vector<char> signed_manifest(const std::string& manifest, const BundleSignature& sig);
/// The text and signature of a stored signed manifest (not verified); nullopt when it has no signature.
std::optional<std::pair<std::string, BundleSignature>> read_signed_manifest(const char* value, std::size_t size);

/// Registers and local memory per thread, from the cubin's .nv.info (-1 when absent).
void cubin_resources(const std::vector<char>& cubin, int* registers, std::int64_t* local_bytes);

}  // namespace vantage::cache
