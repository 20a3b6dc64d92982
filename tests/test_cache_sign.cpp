// Signed bundles (cache/sign.h): a bundle signed at export is used under a trust list that names its
// key, and refused, with a reason that names the bundle and the key, when it was changed after
// signing, is unsigned, or was signed by a key the list does not hold.
#include <blake3.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "cache/sign.h"
#include "cache/tier.h"
#include "kernels/paper_kernels.hpp"
#include "test_support.hpp"
#include "vantage/cache.hpp"

namespace vantage {
namespace {

namespace fs = std::filesystem;
using test_support::run_command;
using test_support::TempDir;

std::vector<std::pair<std::string, std::vector<char>>> some_entries(char fill) {
  return {{"saxpy.0123abcd", std::vector<char>(300, fill)}, {"sgemm.89abcdef", std::vector<char>(1000, 'g')}};
}

void write(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
std::vector<char> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

cache::SecretKey secret(const fs::path& base) {
  std::string why;
  auto k = cache::read_secret_key(base.string() + ".key", &why);
  EXPECT_TRUE(k.has_value()) << why;
  return k.value_or(cache::SecretKey{});
}

struct Keys {
  TempDir dir{"vantage_sign"};
  fs::path ours = dir.path / "ours", theirs = dir.path / "theirs";
  cache::PublicKey our_key = cache::write_key_pair(ours.string());
  cache::PublicKey their_key = cache::write_key_pair(theirs.string());
};

TEST(CacheSign, KeygenWritesASecretOnlyItsOwnerReadsAndRefusesToOverwrite) {
  Keys k;
  struct stat st {};
  ASSERT_EQ(::stat((k.ours.string() + ".key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream pub(k.ours.string() + ".pub");
  std::string line;
  std::getline(pub, line);
  auto parsed = cache::parse_public_key(line);
  ASSERT_TRUE(parsed.has_value()) << line;
  EXPECT_EQ(*parsed, k.our_key);
  EXPECT_EQ(cache::key_id(k.our_key).size(), 16u);
  EXPECT_NE(cache::key_id(k.our_key), cache::key_id(k.their_key));
  EXPECT_THROW(cache::write_key_pair(k.ours.string()), std::runtime_error);
  // A public key in the way: no secret key is written whose public half would be lost.
  write(k.dir.path / "half.pub", {'x'});
  EXPECT_THROW(cache::write_key_pair((k.dir.path / "half").string()), std::runtime_error);
  EXPECT_FALSE(fs::exists(k.dir.path / "half.key"));
}

TEST(CacheSign, ASignedBundleIsUsedWhereItsKeyIsTrustedAndRefusedWhereItIsNot) {
  Keys k;
  const fs::path bundle = k.dir.path / "fleet.vbundle";
  const cache::SecretKey sk = secret(k.ours);
  write(bundle, cache::write_bundle(some_entries('s'), &sk));
  const auto ours = cache::TrustList::from_files({k.ours.string() + ".pub"});
  const auto theirs = cache::TrustList::from_files({k.theirs.string() + ".pub"});
  ASSERT_EQ(ours.keys.size(), 1u);

  std::string why;
  auto t = cache::BundleTier::open(bundle.string(), &why, ours);
  ASSERT_NE(t, nullptr) << why;
  ASSERT_TRUE(t->signer().has_value());
  EXPECT_EQ(*t->signer(), k.our_key);
  std::vector<char> bytes;
  ASSERT_TRUE(t->read("saxpy.0123abcd", bytes));
  EXPECT_EQ(bytes, std::vector<char>(300, 's'));
  EXPECT_NE(cache::BundleTier::open(bundle.string(), &why), nullptr) << "no trust list: a good signature is fine";

  why.clear();
  EXPECT_EQ(cache::BundleTier::open(bundle.string(), &why, theirs), nullptr);
  EXPECT_NE(why.find(bundle.string()), std::string::npos) << why;
  EXPECT_NE(why.find("signed by key " + cache::key_id(k.our_key)), std::string::npos) << why;
  EXPECT_NE(why.find("does not list"), std::string::npos) << why;

  // An unsigned bundle under a trust list.
  const fs::path plain = k.dir.path / "plain.vbundle";
  write(plain, cache::write_bundle(some_entries('s')));
  EXPECT_NE(cache::BundleTier::open(plain.string(), &why), nullptr) << why;
  why.clear();
  EXPECT_EQ(cache::BundleTier::open(plain.string(), &why, ours), nullptr);
  EXPECT_NE(why.find("not signed"), std::string::npos) << why;
  EXPECT_NE(why.find(plain.string()), std::string::npos) << why;

  // A trust list that cannot be read, or holds no key, trusts nothing: every bundle is refused.
  const auto missing = cache::TrustList::from_files({(k.dir.path / "nowhere.pub").string()});
  EXPECT_FALSE(missing.empty());
  EXPECT_EQ(cache::BundleTier::open(bundle.string(), &why, missing), nullptr);
  write(k.dir.path / "none.pub", {'#', ' ', 'n', 'o', '\n'});
  const auto none = cache::TrustList::from_files({(k.dir.path / "none.pub").string()});
  EXPECT_FALSE(none.empty());
  EXPECT_EQ(cache::BundleTier::open(bundle.string(), &why, none), nullptr);
  EXPECT_NE(why.find("does not list"), std::string::npos) << why;
}

TEST(CacheSign, ABundleChangedAfterSigningIsRefusedWithOrWithoutATrustList) {
  Keys k;
  const cache::SecretKey sk = secret(k.ours);
  const auto signed_bytes = cache::write_bundle(some_entries('s'), &sk);
  // Other entries in a well-formed bundle (its checksum made anew), with the first one's signature.
  auto forged = cache::write_bundle(some_entries('t'));
  forged.insert(forged.end(), signed_bytes.end() - (8 + 32 + 64), signed_bytes.end());
  const fs::path bundle = k.dir.path / "forged.vbundle";
  write(bundle, forged);
  for (const auto& trust :
       {cache::TrustList{}, cache::TrustList::from_files(std::vector<std::string>{k.ours.string() + ".pub"})}) {
    std::string why;
    EXPECT_EQ(cache::BundleTier::open(bundle.string(), &why, trust), nullptr);
    EXPECT_NE(why.find("signature by key " + cache::key_id(k.our_key) + " does not verify"), std::string::npos) << why;
    EXPECT_NE(why.find(bundle.string()), std::string::npos) << why;
  }
  // A signature cut short is no signature: the framing's checksum fails.
  auto cut = signed_bytes;
  cut.resize(cut.size() - 10);
  write(bundle, cut);
  std::string why;
  EXPECT_EQ(cache::BundleTier::open(bundle.string(), &why), nullptr);
  EXPECT_NE(why.find("checksum"), std::string::npos) << why;
}

// Signatures are over BLAKE3 manifests now, over SHA-256 and BLAKE2b ones before: a bundle or a
// sealed entry signed the old ways still verifies, and the magic binds the signature to its hash, so
// one relabelled as another does not.
TEST(CacheSign, SignaturesOverTheOlderManifestsStillVerifyAndTheMagicNamesTheHash) {
  Keys k;
  const cache::SecretKey sk = secret(k.ours);
  const auto ours = cache::TrustList::from_files({k.ours.string() + ".pub"});
  const auto entries = some_entries('s');
  const std::map<std::string, std::vector<char>> by_name(entries.begin(), entries.end());
  const std::string b3 = cache::manifest(by_name), sha = cache::manifest(by_name, cache::ManifestHash::Sha256),
                    blake = cache::manifest(by_name, cache::ManifestHash::Blake2b);
  EXPECT_EQ(b3.rfind("vantage-bundle-manifest 3\n", 0), 0u) << b3;
  EXPECT_EQ(sha.rfind("vantage-bundle-manifest 2\n", 0), 0u) << sha;
  EXPECT_EQ(blake.rfind("vantage-bundle-manifest 1\n", 0), 0u) << blake;
  // BLAKE3 of 300 bytes of 's', as the Rust `blake3` crate (through Python's binding) gives it.
  EXPECT_NE(b3.find("saxpy.0123abcd 300 9fee1aef7282fb80587ec551b0c469d0e2b3470309ba4325c16f7f48d9943d06"),
            std::string::npos)
      << b3;
  // SHA-256 of the same, as `head -c 300 /dev/zero | tr '\0' s | sha256sum` gives it.
  EXPECT_NE(sha.find("saxpy.0123abcd 300 2955c7328c57ca39d0568bb930a5360e6b0e7f33931639c819d7cbfeaf0a88c7"),
            std::string::npos)
      << sha;

  for (auto hash : {cache::ManifestHash::Blake3, cache::ManifestHash::Sha256, cache::ManifestHash::Blake2b}) {
    const auto bytes = cache::write_bundle(entries, &sk, hash);
    const char digit = static_cast<char>('0' + static_cast<int>(hash));
    EXPECT_EQ(*(bytes.end() - (32 + 64 + 1)), digit);
    const fs::path bundle = k.dir.path / (std::string("fleet") + digit + ".vbundle");
    write(bundle, bytes);
    std::string why;
    EXPECT_NE(cache::BundleTier::open(bundle.string(), &why, ours), nullptr) << why;
    // Another magic over the same signature: it verifies over another hash's manifest, so not.
    for (char other : {'1', '2', '3'}) {
      if (other == digit) continue;
      auto relabelled = bytes;
      *(relabelled.end() - (32 + 64 + 1)) = other;
      write(bundle, relabelled);
      why.clear();
      EXPECT_EQ(cache::BundleTier::open(bundle.string(), &why, ours), nullptr) << other;
      EXPECT_NE(why.find("does not verify"), std::string::npos) << why;
    }

    // A sealed entry, as the remote tier stores it.
    const auto sealed = cache::seal("saxpy.0123abcd", entries[0].second, &sk, hash);
    std::optional<cache::BundleSignature> sig;
    const auto back = cache::unseal(sealed.data(), sealed.size(), &sig);
    ASSERT_TRUE(sig.has_value());
    EXPECT_EQ(back, entries[0].second);
    EXPECT_EQ(sig->hash, hash);
    EXPECT_TRUE(cache::verify(cache::entry_manifest("saxpy.0123abcd", back.data(), back.size(), sig->hash),
                              sig->signature, sig->key));
  }
}

// Manifests list standard BLAKE3 hashes, computed a whole buffer at once (cache/blake3_whole.c): the
// same as the reference hasher at every size to 5000 bytes and at sizes far past 64 KiB, and as the
// Rust crate's values (through Python's `blake3`) at sizes around its batches.
TEST(CacheSign, WholeBufferBlake3IsTheStandardHashAtEverySize) {
  std::vector<char> data(300000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 7) ^ (i >> 8));
  int wrong = 0;
  for (std::size_t n = 0; n <= data.size(); n += n < 5000 ? 1 : n < 70000 ? 13 : 997) {
    cache::Digest want;
    blake3_hasher h;
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, data.data(), n);
    blake3_hasher_finalize(&h, want.data(), want.size());
    if (cache::content_hash(data.data(), n, cache::ManifestHash::Blake3) != want && ++wrong < 5)
      ADD_FAILURE() << "BLAKE3 differs from the reference hasher at " << n << " bytes";
  }
  EXPECT_EQ(wrong, 0);
  std::vector<char> ramp(200000);
  for (std::size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<char>(i % 251);
  const std::pair<std::size_t, const char*> rust[] = {
      {0, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"},
      {1025, "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"},
      {65360, "1bdeadaf81a46ea86cb145d37f61856fdd3eb6935fbf9c39df006dc20f1b5d48"},
      {65536, "68d647e619a930e7b1082f74f334b0c65a315725569bdc123f0ee11881717bfe"},
      {200000, "55409142cced2ec79897459f170b6d22565daf883710b4ad7aeeddaef54244b4"},
  };
  for (const auto& [n, hex] : rust) {
    const cache::Digest d = cache::content_hash(ramp.data(), n, cache::ManifestHash::Blake3);
    EXPECT_EQ(cache::hex_digits(d.data(), d.size()), hex) << n << " bytes";
  }
}

// Read-only layers get the writable directory's checks: a layer others may write could hold
// planted entries.
TEST(CacheLayers, ALayerOthersMayWriteIsSkippedWithTheReason) {
  TempDir dir;
  const fs::path layer = dir.path / "layer", bundle = dir.path / "fleet.vbundle";
  fs::create_directories(layer / "v1");
  fs::permissions(layer, fs::perms::owner_all | fs::perms::group_all | fs::perms::others_all);
  cache::DiskStore open_dir(layer, false);
  EXPECT_FALSE(open_dir.usable());
  EXPECT_NE(open_dir.problem().find("may be written by other users"), std::string::npos) << open_dir.problem();
  fs::permissions(layer, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  EXPECT_TRUE(cache::DiskStore(layer, false).usable());

  write(bundle, cache::write_bundle(some_entries('s')));
  fs::permissions(bundle, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_write);
  std::string why;
  EXPECT_EQ(cache::BundleTier::open(bundle.string(), &why), nullptr);
  EXPECT_NE(why.find(bundle.string() + " may be written by other users"), std::string::npos) << why;
  fs::permissions(bundle, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_NE(cache::BundleTier::open(bundle.string(), &why), nullptr) << why;
}

// The fleet's set-up: a bundle signed where it is built, a host without NVRTC that trusts the key.
TEST(CacheSign, AHostWithoutNvrtcRunsEveryExampleFromATrustedBundleAndNamesABrokenOne) {
  REQUIRE_NVRTC();
  Keys k;
  const fs::path src = k.dir.path / "src", bundle = k.dir.path / "fleet.vbundle";
  {
    CacheConfig c;
    c.dir = src.string();
    KernelCache cache(c);
    for (const auto& ex : examples::all()) cache.get(ex.build(), ex.spec());
  }
  ASSERT_EQ(export_bundle(src.string(), bundle.string(), k.ours.string() + ".key"),
            static_cast<int>(examples::all().size()));
  const std::string env = "VANTAGE_NVRTC=none VANTAGE_CACHE_DISABLE=1 VANTAGE_CACHE_PATH='" + bundle.string() + "' ";
  const std::string worker = std::string("'") + VANTAGE_CACHE_WORKER + "' examples 2>&1";
  int rc = 0;
  std::string out = run_command(env + "VANTAGE_CACHE_TRUST='" + k.ours.string() + ".pub' " + worker, &rc);
  EXPECT_EQ(rc, 0) << out;
  for (const auto& ex : examples::all()) EXPECT_NE(out.find(ex.name + " "), std::string::npos) << out;
  EXPECT_EQ(out.find("FAILED"), std::string::npos) << out;

  // Trusting another key: refused, and the launch says which bundle and why.
  out = run_command(env + "VANTAGE_CACHE_TRUST='" + k.theirs.string() + ".pub' " + worker, &rc);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("NVRTC is not available"), std::string::npos) << out;
  EXPECT_NE(out.find("skipped: bundle " + bundle.string()), std::string::npos) << out;
  EXPECT_NE(out.find("does not list"), std::string::npos) << out;

  // A directory layer carries no signature: under a trust list it is not used.
  out = run_command("VANTAGE_NVRTC=none VANTAGE_CACHE_DISABLE=1 VANTAGE_CACHE_PATH='" + src.string() +
                        "' VANTAGE_CACHE_TRUST='" + k.ours.string() + ".pub' " + worker,
                    &rc);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("skipped: directory " + src.string() + ": a directory carries no signature"), std::string::npos)
      << out;

  // The signature broken (its last byte changed): refused even by the right trust list.
  auto bytes = slurp(bundle);
  bytes.back() ^= 1;
  write(bundle, bytes);
  out = run_command(env + "VANTAGE_CACHE_TRUST='" + k.ours.string() + ".pub' " + worker, &rc);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("bundle " + bundle.string()), std::string::npos) << out;
  EXPECT_NE(out.find("does not verify"), std::string::npos) << out;
}

}  // namespace
}  // namespace vantage
