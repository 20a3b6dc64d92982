// The remote cache tier (cache/remote.h) against a real redis-server on a loopback port: entries
// stored and fetched whole, bad values refused with a warning and the kernel compiled, one compile
// per key across a fleet of processes, a lease per key, a silent or dead server costing at most its
// timeout, and the tier used again after Redis restarts.
#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cache/cache.h"
#include "cache/remote.h"
#include "cache/sign.h"
#include "kernels/paper_kernels.hpp"
#include "log_capture.hpp"
#include "redis_server.hpp"
#include "scaled_kernel.hpp"
#include "support/log.h"
#include "test_support.hpp"
#include "vantage/cache.hpp"

namespace vantage {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using cache::RemoteTier;
using test_support::RedisServer;
using test_support::SilentServer;
using test_support::TempDir;

// scripts/setup installs redis-server: a test that cannot start one fails, saying why, rather than
// passing without its assertions.
#define REQUIRE_REDIS(server)                                \
  do {                                                       \
    if (!(server).available()) FAIL() << (server).problem(); \
  } while (0)

using test_support::LogCapture;

std::unique_ptr<RemoteTier> tier_at(const std::string& url, cache::TrustList trust = {},
                                    std::optional<cache::SecretKey> key = std::nullopt) {
  std::string why;
  auto cfg = cache::RemoteConfig::parse(url, &why);
  EXPECT_TRUE(cfg.has_value()) << why;
  return std::make_unique<RemoteTier>(cfg.value_or(cache::RemoteConfig{}), std::move(trust), key);
}

cache::Entry synthetic(const std::string& seed, std::size_t bytes) {
  cache::Entry e;
  e.key = cache::make_key({seed});
  e.cubin.resize(bytes);
  for (std::size_t i = 0; i < bytes; ++i) e.cubin[i] = static_cast<char>(i * 131 + seed.size());
  e.meta["kind"] = "test";
  return e;
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

const std::vector<char>& reference_saxpy() {
  static const std::vector<char> cubin = compile(examples::saxpy(), Spec{}).cubin;
  return cubin;
}

/// A cache with no directory (so every miss reaches the remote tier) on `url`.
CacheConfig remote_only(const std::string& url) {
  CacheConfig c;
  c.disk = false;
  c.remote = url;
  return c;
}

// ------------------------------------------------------------------ configuration
TEST(CacheRemote, TheUrlNamesHostPortDatabasePasswordAndLimits) {
  std::string why;
  auto c = cache::RemoteConfig::parse(
      "redis://:s%40cret@cache.internal:6380/3?timeout_ms=7&breaker_ms=900&lease_ms=4000&wait_ms=8000", &why, nullptr);
  ASSERT_TRUE(c.has_value()) << why;
  EXPECT_EQ(c->host, "cache.internal");
  EXPECT_EQ(c->port, 6380);
  EXPECT_EQ(c->db, 3);
  EXPECT_EQ(c->password, "s@cret");
  EXPECT_EQ(c->timeout.count(), 7);
  EXPECT_EQ(c->breaker.count(), 900);
  EXPECT_EQ(c->lease.count(), 4000);
  EXPECT_EQ(c->wait.count(), 8000);
  EXPECT_EQ(c->url(), "redis://cache.internal:6380/3") << "messages never show the password";

  auto d = cache::RemoteConfig::parse("redis://10.0.0.2", &why, nullptr);
  ASSERT_TRUE(d.has_value()) << why;
  EXPECT_EQ(d->port, 6379);
  EXPECT_EQ(d->db, 0);
  EXPECT_EQ(d->timeout.count(), 5) << "a dead server costs a lookup a few milliseconds by default";

  ::setenv("VANTAGE_TEST_REDIS_PASSWORD", "from-env", 1);
  auto e = cache::RemoteConfig::parse("redis://h:1/0", &why, "VANTAGE_TEST_REDIS_PASSWORD");
  ::unsetenv("VANTAGE_TEST_REDIS_PASSWORD");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->password, "from-env");

  for (auto [url, says] :
       std::vector<std::pair<std::string, std::string>>{{"http://h:1", "not a redis:// URL"},
                                                        {"redis://h:99999", "port"},
                                                        {"redis://h:1/x", "database"},
                                                        {"redis://:1", "no host"},
                                                        {"redis://h:1?timeout=3", "unknown option 'timeout'"},
                                                        {"redis://h:1?timeout_ms=0", "timeout_ms is not a number"},
                                                        {"redis://secret@h:1", "USER:PASSWORD"}}) {
    EXPECT_FALSE(cache::RemoteConfig::parse(url, &why, nullptr).has_value()) << url;
    EXPECT_NE(why.find(says), std::string::npos) << url << ": " << why;
    EXPECT_NE(why.find("VANTAGE_CACHE_REMOTE="), std::string::npos) << why;
  }
}

// ------------------------------------------------------------------ entries
TEST(CacheRemote, AnEntryStoredIsFetchedWholeAndCounted) {
  RedisServer redis;
  REQUIRE_REDIS(redis);
  auto tier = tier_at(redis.url("timeout_ms=1000"));
  const cache::Entry e = synthetic("one", 65536);
  const std::string name = std::string(32, 'a') + ".01234567";
  std::vector<char> bytes;
  std::string why;
  EXPECT_EQ(tier->fetch(name, bytes, &why), RemoteTier::Outcome::Miss);
  ASSERT_TRUE(tier->save(name, e, &why)) << why;
  ASSERT_EQ(tier->fetch(name, bytes, &why), RemoteTier::Outcome::Hit) << why;
  EXPECT_EQ(bytes, cache::serialize(e));
  EXPECT_EQ(tier->names_with_prefix(std::string(32, 'a') + "."), std::vector<std::string>{name})
      << "a host without NVRTC finds the builds of a source";
  auto listed = tier->list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].name, name);
  EXPECT_EQ(listed[0].bytes, static_cast<std::int64_t>(bytes.size()));
  auto counters = tier->counters();
  ASSERT_TRUE(counters.has_value());
  EXPECT_EQ(counters->hits, 1);
  EXPECT_EQ(counters->misses, 1);
  EXPECT_EQ(counters->stores, 1);
  EXPECT_EQ(counters->entries, 1);
  EXPECT_GT(counters->percentile_ms(50), 0.0);
  EXPECT_EQ(tier->clear(), 3) << "the entry, the set of builds and the counters";
  EXPECT_EQ(tier->fetch(name, bytes, &why), RemoteTier::Outcome::Miss);
}

TEST(CacheRemote, AKernelMissedLocallyIsTakenFromTheTierWithoutACompile) {
  REQUIRE_NVRTC();
  RedisServer redis;
  REQUIRE_REDIS(redis);
  const std::string url = redis.url("timeout_ms=1000");
  {
    KernelCache first(remote_only(url));
    EXPECT_EQ(first.get(examples::saxpy(), Spec{})->origin, "compiled");
  }
  TempDir dir{"vantage_remote"};
  CacheConfig c = remote_only(url);
  c.disk = true;
  c.dir = dir.path.string();
  {
    KernelCache second(c);
    auto k = second.get(examples::saxpy(), Spec{});
    EXPECT_EQ(k->origin, "remote");
    EXPECT_EQ(k->cubin, reference_saxpy());
    EXPECT_EQ(second.stats().compiles, 0);
    EXPECT_EQ(second.stats().remote_hits, 1);
  }
  KernelCache third(c);
  EXPECT_EQ(third.get(examples::saxpy(), Spec{})->origin, "disk") << "a remote hit is kept in the local directory";
}

/// The saxpy entry the tier holds after one compile (its name and its sealed value).
std::pair<std::string, std::vector<char>> stored_saxpy(const std::string& url, const std::string& sign_key = "") {
  CacheConfig c = remote_only(url);
  c.sign_key = sign_key;
  KernelCache(c).get(examples::saxpy(), Spec{});
  auto tier = tier_at(url);
  auto listed = tier->list();
  EXPECT_EQ(listed.size(), 1u);
  std::vector<char> value;
  EXPECT_TRUE(tier->read_raw(listed.at(0).name, value));
  return {listed.at(0).name, value};
}

TEST(CacheRemote, BadValuesAreRefusedWithTheReasonAndTheKernelCompiled) {
  REQUIRE_NVRTC();
  RedisServer redis;
  REQUIRE_REDIS(redis);
  TempDir dir{"vantage_remote"};
  const std::string url = redis.url("timeout_ms=1000");
  const fs::path ours = dir.path / "ours", theirs = dir.path / "theirs";
  cache::write_key_pair(ours.string());
  cache::write_key_pair(theirs.string());
  std::ofstream(dir.path / "trust") << std::ifstream(ours.string() + ".pub").rdbuf();
  const std::string trust = (dir.path / "trust").string();

  const auto [name, unsigned_value] = stored_saxpy(url);
  auto tier = tier_at(url);
  tier->clear();
  const auto signed_value = stored_saxpy(url, ours.string() + ".key").second;
  tier->clear();
  const auto their_value = stored_saxpy(url, theirs.string() + ".key").second;
  ASSERT_EQ(signed_value.size(), unsigned_value.size() + 104);

  struct Case {
    const char* what;
    std::vector<char> value;
    bool trusted;
    std::string says;
  };
  std::vector<char> truncated(unsigned_value.begin(), unsigned_value.begin() + unsigned_value.size() / 2);
  std::vector<char> corrupted = unsigned_value;
  corrupted[corrupted.size() / 2] ^= 0x20;
  std::vector<char> forged = signed_value;
  forged[forged.size() / 3] ^= 0x01;  // inside the entry: its signature no longer covers it
  const std::vector<Case> cases = {
      {"truncated", truncated, false, "truncated"},
      {"corrupted", corrupted, false, "checksum"},
      {"changed after signing", forged, false, "does not verify"},
      {"unsigned under a trust list", unsigned_value, true, "it is not signed"},
      {"signed by a key the list does not hold", their_value, true, "which VANTAGE_CACHE_TRUST does not list"},
      {"changed after signing, under a trust list", forged, true, "does not verify"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    tier->clear();
    std::string why;
    ASSERT_TRUE(tier->store_raw(name, c.value, &why)) << why;
    LogCapture log;
    CacheConfig cfg = remote_only(url);
    if (c.trusted) {
      cfg.trust = {trust};
      cfg.sign_key = ours.string() + ".key";
    }
    KernelCache cache(cfg);
    auto k = cache.get(examples::saxpy(), Spec{});
    EXPECT_EQ(k->origin, "compiled");
    EXPECT_EQ(k->cubin, reference_saxpy());
    EXPECT_EQ(cache.stats().remote_refused, 1);
    EXPECT_NE(log.text().find("refused " + tier->where(name)), std::string::npos) << log.text();
    EXPECT_NE(log.text().find(c.says), std::string::npos) << log.text();
    std::vector<char> now;
    ASSERT_TRUE(tier->read_raw(name, now));
    EXPECT_EQ(now, c.trusted ? signed_value : unsigned_value) << "the compile replaced the bad value";
  }

  // A good value moved to another key's name: the key echo (unsigned) or the signature (signed) refuses it.
  const std::string other = std::string(32, 'b') + name.substr(32);
  std::vector<char> bytes;
  std::string why;
  tier->store_raw(other, signed_value, &why);
  EXPECT_EQ(tier->fetch(other, bytes, &why), RemoteTier::Outcome::Refused);
  EXPECT_NE(why.find("stored under another name"), std::string::npos) << why;
  tier->store_raw(other, unsigned_value, &why);
  auto r = cache::remote_get_or_produce(*tier, other, cache::make_key({"another key"}),
                                        [] { return synthetic("another key", 100); });
  EXPECT_TRUE(r.produced);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find("holds a different key than its name says"), std::string::npos) << r.problems[0];
}

// A pushed bundle (`vantage cache push`): one manifest and its one signature beside the entries. A
// process verifies the manifest once and each entry by its hash alone; every way the manifest or an
// entry can be wrong is refused with its reason.
TEST(CacheRemote, APushedBundlesEntriesAreCheckedAgainstItsManifestVerifiedOnce) {
  RedisServer redis;
  REQUIRE_REDIS(redis);
  TempDir dir{"vantage_remote"};
  const fs::path ours = dir.path / "ours", theirs = dir.path / "theirs";
  cache::write_key_pair(ours.string());
  cache::write_key_pair(theirs.string());
  std::string why;
  const cache::SecretKey our_key = *cache::read_secret_key(ours.string() + ".key", &why);
  const cache::SecretKey their_key = *cache::read_secret_key(theirs.string() + ".key", &why);
  const cache::TrustList trust = cache::TrustList::from_files({ours.string() + ".pub"});
  const std::string url = redis.url("timeout_ms=1000");

  std::map<std::string, std::vector<char>> entries;
  for (int i = 0; i < 3; ++i)
    entries[std::string(32, static_cast<char>('a' + i)) + ".0000000" + std::to_string(i)] =
        cache::serialize(synthetic("pushed" + std::to_string(i), 1000 + 4096 * static_cast<std::size_t>(i)));
  const std::string manifest = cache::manifest(entries);
  const cache::BundleSignature sig = cache::sign_manifest(manifest, our_key);
  const std::string id = cache::hex_digits(cache::manifest_id(manifest).data(), 16);
  const std::string manifest_key = "vantage:manifest:" + id;
  const std::string first = entries.begin()->first, second = std::next(entries.begin())->first;

  auto pusher = tier_at(url);
  ASSERT_TRUE(pusher->push(entries, manifest, sig, &why)) << why;
  auto server = tier_at(url, trust);
  std::vector<char> bytes;
  for (const auto& [name, want] : entries) {
    ASSERT_EQ(server->fetch(name, bytes, &why), RemoteTier::Outcome::Hit) << name << ": " << why;
    EXPECT_EQ(bytes, want);
  }
  auto pulled = cache::remote_get_or_produce(*server, first, cache::make_key({"pushed0"}),
                                             []() -> cache::Entry { throw std::runtime_error("a miss"); });
  ASSERT_TRUE(pulled.entry.has_value());
  EXPECT_EQ(pulled.entry->cubin, synthetic("pushed0", 1000).cubin);

  // Verified once: with the manifest gone from Redis, this process still takes the entries; a new one
  // does not.
  ASSERT_EQ(redis.command({"DEL", manifest_key}), ":1");
  EXPECT_EQ(server->fetch(second, bytes, &why), RemoteTier::Outcome::Hit) << why;
  EXPECT_EQ(tier_at(url, trust)->fetch(second, bytes, &why), RemoteTier::Outcome::Refused);
  EXPECT_NE(why.find("its manifest " + id + " is not in the tier"), std::string::npos) << why;

  // Each bad value or manifest, seen by a fresh process under the trust list.
  std::vector<char> listed;
  ASSERT_TRUE(pusher->read_raw(first, listed));
  std::vector<char> changed = listed;
  changed[changed.size() / 2] ^= 0x01;
  std::vector<char> signed_text = cache::signed_manifest(manifest, sig);
  std::vector<char> bad_signature = signed_text;
  bad_signature.back() ^= 0x01;
  std::vector<char> other_text = cache::signed_manifest(manifest + first + " 1 " + std::string(64, '0') + "\n", sig);
  const std::vector<char> truncated(signed_text.begin(), signed_text.begin() + 40);
  const std::string theirs_manifest = manifest;  // the same entries, signed by a key the list does not hold
  const std::vector<char> theirs_text =
      cache::signed_manifest(theirs_manifest, cache::sign_manifest(manifest, their_key));
  struct Case {
    const char* what;
    std::string name;
    std::vector<char> value, manifest_value;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"an entry changed", first, changed, signed_text, "is not the entry its manifest " + id},
      {"an entry under another name", second, listed, signed_text, "stored under another name"},
      {"a manifest whose signature does not verify", first, listed, bad_signature, "signature by key"},
      {"another manifest under its id", first, listed, other_text, "holds another manifest"},
      {"a manifest cut short", first, listed, truncated, "is not a signed manifest"},
      {"a manifest signed by a key the list does not hold", first, listed, theirs_text,
       "which VANTAGE_CACHE_TRUST does not list"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ASSERT_TRUE(pusher->store_raw(c.name, c.value, &why)) << why;
    ASSERT_EQ(redis.command({"SET", manifest_key, std::string(c.manifest_value.begin(), c.manifest_value.end())}),
              "+OK");
    why.clear();
    EXPECT_EQ(tier_at(url, trust)->fetch(c.name, bytes, &why), RemoteTier::Outcome::Refused);
    EXPECT_NE(why.find(c.says), std::string::npos) << why;
    ASSERT_TRUE(pusher->push(entries, manifest, sig, &why)) << why;  // put everything back
  }
  // Without a trust list a pushed entry's manifest must still verify.
  ASSERT_TRUE(pusher->store_raw(first, changed, &why));
  EXPECT_EQ(tier_at(url)->fetch(first, bytes, &why), RemoteTier::Outcome::Refused);

  // What push itself refuses: a signature over something else, an entry the manifest does not list.
  auto more = entries;
  more[std::string(32, 'f') + ".00000009"] = cache::serialize(synthetic("extra", 10));
  EXPECT_FALSE(pusher->push(more, manifest, sig, &why));
  EXPECT_NE(why.find("does not list entry " + std::string(32, 'f')), std::string::npos) << why;
  EXPECT_FALSE(pusher->push(entries, manifest + "x", sig, &why));
  EXPECT_NE(why.find("not a manifest"), std::string::npos) << why;
  cache::BundleSignature wrong = sig;
  wrong.signature[0] ^= 0x01;
  EXPECT_FALSE(pusher->push(entries, manifest, wrong, &why));
  EXPECT_NE(why.find("does not verify"), std::string::npos) << why;
}

// ------------------------------------------------------------------ leases
TEST(CacheRemote, ALeaseIsOneHoldersUntilDroppedOrExpired) {
  RedisServer redis;
  REQUIRE_REDIS(redis);
  auto a = tier_at(redis.url("timeout_ms=1000&lease_ms=300"));
  auto b = tier_at(redis.url("timeout_ms=1000&lease_ms=300"));
  auto held = a->lease("k", std::chrono::milliseconds(0));
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(b->lease("k", std::chrono::milliseconds(50)), nullptr) << "another process holds it";
  EXPECT_NE(b->lease("other", std::chrono::milliseconds(0)), nullptr) << "a lease is per key";
  held.reset();
  auto next = b->lease("k", std::chrono::milliseconds(0));
  EXPECT_NE(next, nullptr) << "dropped, it is free at once";
  // A holder that dies never drops it: the expiry frees it.
  auto t = Clock::now();
  auto after_expiry = a->lease("k", std::chrono::milliseconds(5000));
  EXPECT_NE(after_expiry, nullptr);
  EXPECT_GT(ms_since(t), 150.0);
  next.reset();  // the expired holder's release leaves the new holder's lease alone
  EXPECT_EQ(b->lease("k", std::chrono::milliseconds(0)), nullptr);
}

// ------------------------------------------------------------------ a server that fails
TEST(CacheRemote, ASilentServerCostsOneTimeoutThenTheBreakerSkipsIt) {
  SilentServer silent;
  ASSERT_NE(silent.port(), 0);
  LogCapture log;
  auto tier = tier_at(silent.url("timeout_ms=100&breaker_ms=60000"));
  const cache::Key key = cache::make_key({"k"});
  auto t = Clock::now();
  auto r = cache::remote_get_or_produce(*tier, "k.00000000", key, [] { return synthetic("k", 100); });
  const double first = ms_since(t);
  EXPECT_TRUE(r.produced);
  EXPECT_FALSE(r.hit);
  EXPECT_TRUE(r.problems.empty());
  EXPECT_GE(first, 90.0);
  EXPECT_LE(first, 100.0 + 150.0) << "one timeout, then no lease wait and no store";
  EXPECT_NE(log.text().find("did not answer in 100 ms; skipping it for 60000 ms"), std::string::npos) << log.text();
  EXPECT_FALSE(tier->answering());
  t = Clock::now();
  r = cache::remote_get_or_produce(*tier, "k.00000000", key, [] { return synthetic("k", 100); });
  EXPECT_LT(ms_since(t), 50.0) << "the breaker skips the tier without a round trip";
  EXPECT_TRUE(r.produced);

  // Nobody listening: refused at once, the same way.
  auto dead = tier_at("redis://127.0.0.1:1/0?timeout_ms=100");
  t = Clock::now();
  std::vector<char> bytes;
  std::string why;
  EXPECT_EQ(dead->fetch("k.00000000", bytes, &why), RemoteTier::Outcome::Unavailable);
  EXPECT_LT(ms_since(t), 100.0);
  EXPECT_FALSE(dead->answering());
}

TEST(CacheRemote, ALaunchWhoseRedisDoesNotAnswerCompilesWithinTheTimeout) {
  REQUIRE_NVRTC();
  reference_saxpy();
  SilentServer silent;
  LogCapture log;
  KernelCache cache(remote_only(silent.url("timeout_ms=50")));
  auto k = cache.get(examples::saxpy(), Spec{});
  EXPECT_EQ(k->cubin, reference_saxpy());
  EXPECT_EQ(k->origin, "compiled");
  EXPECT_NE(log.text().find("did not answer in 50 ms"), std::string::npos) << log.text();
}

TEST(CacheRemote, TheTierIsUsedAgainAfterRedisRestarts) {
  RedisServer redis;
  REQUIRE_REDIS(redis);
  LogCapture log;
  auto tier = tier_at(redis.url("timeout_ms=1000&breaker_ms=200"));
  const std::string name = std::string(32, 'c') + ".01234567";
  std::string why;
  ASSERT_TRUE(tier->save(name, synthetic("c", 1000), &why)) << why;
  redis.kill();
  std::vector<char> bytes;
  EXPECT_EQ(tier->fetch(name, bytes, &why), RemoteTier::Outcome::Unavailable);
  EXPECT_FALSE(tier->answering());
  ASSERT_TRUE(redis.start()) << redis.problem();
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_TRUE(tier->answering());
  EXPECT_EQ(tier->fetch(name, bytes, &why), RemoteTier::Outcome::Miss) << "a fresh server, reached again";
  ASSERT_TRUE(tier->save(name, synthetic("c", 1000), &why)) << why;
  EXPECT_EQ(tier->fetch(name, bytes, &why), RemoteTier::Outcome::Hit);
  EXPECT_NE(log.text().find("skipping it for 200 ms"), std::string::npos) << log.text();
}

// ------------------------------------------------------------------ threads (scripts/test --tsan)
TEST(Concurrency, EightThreadsShareOneRemoteTier) {
  RedisServer redis;
  REQUIRE_REDIS(redis);
  auto tier = tier_at(redis.url("timeout_ms=5000&lease_ms=5000"));
  std::atomic<int> produced{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 30; ++i) {
        const int k = (t + i) % 6;
        const std::string seed = "key" + std::to_string(k);
        auto r = cache::remote_get_or_produce(*tier, std::string(32, static_cast<char>('a' + k)) + ".00000000",
                                              cache::make_key({seed}), [&] {
                                                ++produced;
                                                return synthetic(seed, 5000 + 10 * static_cast<std::size_t>(k));
                                              });
        if (!r.entry || r.entry->cubin != synthetic(seed, 5000 + 10 * static_cast<std::size_t>(k)).cubin) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(produced.load(), 6) << "one producer per key: the lease holds across threads too";
}

// Threads of one process meeting a pushed bundle's manifest for the first time at once: each fetches
// or finds it, and every entry is taken whole.
TEST(Concurrency, EightThreadsMeetOnePushedManifest) {
  RedisServer redis;
  REQUIRE_REDIS(redis);
  TempDir dir{"vantage_remote"};
  cache::write_key_pair((dir.path / "ci").string());
  std::string why;
  const cache::SecretKey key = *cache::read_secret_key((dir.path / "ci.key").string(), &why);
  std::map<std::string, std::vector<char>> entries;
  for (int i = 0; i < 6; ++i)
    entries[std::string(32, static_cast<char>('a' + i)) + ".00000000"] =
        cache::serialize(synthetic("p" + std::to_string(i), 3000 + 17 * static_cast<std::size_t>(i)));
  const std::string manifest = cache::manifest(entries);
  ASSERT_TRUE(tier_at(redis.url("timeout_ms=5000"))->push(entries, manifest, cache::sign_manifest(manifest, key), &why))
      << why;
  auto tier = tier_at(redis.url("timeout_ms=5000"), cache::TrustList::from_files({(dir.path / "ci.pub").string()}));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 12; ++i) {
        auto it = std::next(entries.begin(), (t + i) % 6);
        std::vector<char> bytes;
        std::string problem;
        if (tier->fetch(it->first, bytes, &problem) != RemoteTier::Outcome::Hit || bytes != it->second) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

Kernel scaled_saxpy(int i) {
  return test_support::scaled_saxpy("scaled_" + std::to_string(i), 2.0f + static_cast<float>(i), 64);
}

// The kernels the fleet tests compile and share are right where they run: y = s x + y on the
// interpreter in two thread orders and on the CPU backend.
TEST(CacheRemote, TheFleetsKernelsComputeWhatTheySay) {
  std::vector<Device> devices = {Device::interpreter({.order = ThreadOrder::Forward}),
                                 Device::interpreter({.order = ThreadOrder::Reverse})};
  if (Device::cpu_available()) devices.push_back(Device::cpu(2));
  for (const Device& d : devices)
    for (int i : {0, 3}) {
      SCOPED_TRACE(d.name() + ", kernel " + std::to_string(i));
      const int n = 1000;  // not a multiple of the block
      std::vector<float> x(n), y(n, 1.0f);
      for (int j = 0; j < n; ++j) x[static_cast<std::size_t>(j)] = static_cast<float>(j % 17);
      scaled_saxpy(i).launch(d, Grid{(n + 63) / 64, 64}, n, std::as_const(x), y);
      for (int j = 0; j < n; ++j)
        ASSERT_EQ(y[static_cast<std::size_t>(j)], (2.0f + static_cast<float>(i)) * static_cast<float>(j % 17) + 1.0f)
            << j;
    }
}

TEST(Concurrency, ThreadsOfOneCacheShareTheRemoteLeaseAndCompileEachKernelOnce) {
  REQUIRE_NVRTC();
  RedisServer redis;
  REQUIRE_REDIS(redis);
  const std::string url = redis.url("timeout_ms=5000&lease_ms=60000&wait_ms=60000");
  std::vector<Kernel> kernels;
  for (int i = 0; i < 4; ++i) kernels.push_back(scaled_saxpy(i));
  KernelCache cache(remote_only(url));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      for (std::size_t i = 0; i < kernels.size(); ++i) {
        const std::size_t k = (i + static_cast<std::size_t>(t)) % kernels.size();
        auto got = cache.get(kernels[k], Spec{});
        if (got->cubin.empty()) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(cache.stats().compiles, 4) << "the lease in Redis orders the threads of one process too";
  KernelCache other(remote_only(url));
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    auto a = cache.get(kernels[k], Spec{}), b = other.get(kernels[k], Spec{});
    EXPECT_EQ(b->origin, "remote");
    EXPECT_EQ(a->cubin, b->cubin);
  }
}

// ------------------------------------------------------------------ a fleet of processes
struct WorkerRun {
  pid_t pid;
  fs::path out;
};

WorkerRun spawn_worker(const fs::path& dir, int index, const std::string& url, int kernels) {
  WorkerRun w{-1, dir / ("out" + std::to_string(index))};
  const fs::path cache_dir = dir / ("cache" + std::to_string(index));
  w.pid = ::fork();
  if (w.pid == 0) {
    ::setenv("VANTAGE_CACHE_DIR", cache_dir.c_str(), 1);
    ::setenv("VANTAGE_CACHE_REMOTE", url.c_str(), 1);
    ::unsetenv("VANTAGE_CACHE_PATH");
    ::unsetenv("VANTAGE_CACHE_TRUST");
    ::unsetenv("VANTAGE_CACHE_DISABLE");
    if (!std::freopen(w.out.c_str(), "w", stdout)) std::_Exit(126);
    const std::string n = std::to_string(kernels), start = std::to_string(index * 7 % kernels);
    ::execl(VANTAGE_CACHE_WORKER, "cache_worker", "fleet", n.c_str(), start.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  return w;
}

struct Line {
  int kernel;
  std::string origin, hash;
  long long t;
};

std::vector<Line> lines_of(const fs::path& out) {
  std::vector<Line> lines;
  std::ifstream in(out);
  Line l;
  while (in >> l.kernel >> l.origin >> l.hash >> l.t) lines.push_back(l);
  return lines;
}

/// Every worker printed every kernel, no failure, and every kernel's cubin is the same everywhere.
void expect_right(const std::vector<WorkerRun>& runs, int kernels, std::map<std::string, int>* origins) {
  std::map<int, std::set<std::string>> hashes;
  for (const auto& w : runs) {
    auto lines = lines_of(w.out);
    EXPECT_EQ(static_cast<int>(lines.size()), kernels) << w.out;
    for (const auto& l : lines) {
      hashes[l.kernel].insert(l.hash);
      ++(*origins)[l.origin];
    }
  }
  EXPECT_EQ(static_cast<int>(hashes.size()), kernels);
  for (const auto& [k, set] : hashes) EXPECT_EQ(set.size(), 1u) << "kernel " << k << " differs between processes";
}

TEST(CacheFleet, SixteenProcessesCompileEachOfFortyKernelsExactlyOnce) {
  REQUIRE_NVRTC();
  RedisServer redis;
  REQUIRE_REDIS(redis);
  TempDir dir{"vantage_fleet"};
  // Generous limits: sixteen compiling processes on two cores must not trip the breaker.
  const std::string url = redis.url("timeout_ms=2000&lease_ms=120000&wait_ms=120000");
  std::vector<WorkerRun> runs;
  for (int i = 0; i < 16; ++i) runs.push_back(spawn_worker(dir.path, i, url, 40));
  for (const auto& w : runs) {
    int status = 0;
    ::waitpid(w.pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << w.out;
  }
  std::map<std::string, int> origins;
  expect_right(runs, 40, &origins);
  EXPECT_EQ(origins["compiled"], 40) << "each kernel compiled once across the fleet";
  EXPECT_EQ(origins["remote"], 16 * 40 - 40);
  auto tier = tier_at(redis.url());
  EXPECT_EQ(tier->list().size(), 40u);
}

TEST(CacheFleet, RedisKilledMidRunAndRestartedNeverStopsTheFleet) {
  REQUIRE_NVRTC();
  RedisServer redis;
  REQUIRE_REDIS(redis);
  TempDir dir{"vantage_fleet"};
  const std::string url = redis.url("timeout_ms=1000&breaker_ms=200&lease_ms=120000&wait_ms=120000");
  std::vector<WorkerRun> runs;
  for (int i = 0; i < 8; ++i) runs.push_back(spawn_worker(dir.path, i, url, 40));
  auto printed = [&] {
    std::size_t n = 0;
    for (const auto& w : runs) n += lines_of(w.out).size();
    return n;
  };
  auto deadline = Clock::now() + std::chrono::seconds(120);
  while (printed() < 8 * 6 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::size_t before = printed();
  redis.kill();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(redis.start()) << redis.problem();
  const long long restarted =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  for (const auto& w : runs) {
    int status = 0;
    ::waitpid(w.pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << w.out;
  }
  EXPECT_LT(before, std::size_t{8 * 40}) << "Redis was killed before the fleet finished";
  std::map<std::string, int> origins;
  expect_right(runs, 40, &origins);
  EXPECT_GE(origins["compiled"], 40);
  int remote_after = 0;
  for (const auto& w : runs)
    for (const auto& l : lines_of(w.out)) remote_after += l.origin == "remote" && l.t > restarted;
  EXPECT_GT(remote_after, 0) << "the tier served the fleet again after the restart";
  EXPECT_GT(tier_at(redis.url())->list().size(), 0u) << "and was filled again";
}

}  // namespace
}  // namespace vantage
