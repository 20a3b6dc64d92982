// The kernel cache: entry format (with a committed golden file), faults that must degrade to a
// warning and a correct kernel, eviction, bundles, record mode, and many processes at once.
#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "cache/cache.h"
#include "cache/stats.h"
#include "jit/nvrtc/nvrtc.h"
#include "jit/pipeline/handles.h"
#include "kernels/paper_kernels.hpp"
#include "log_capture.hpp"
#include "support/log.h"
#include "test_support.hpp"

namespace vantage {
namespace {

namespace fs = std::filesystem;

/// Each test gets its own cache directory.
using test_support::run_command;

struct TempDir : test_support::TempDir {
  TempDir() : test_support::TempDir("vantage_cache_test") {}
};

using test_support::LogCapture;

CacheConfig config_for(const fs::path& dir) {
  CacheConfig c;
  c.dir = dir.string();
  return c;
}

/// The cubin a fresh compile gives, to compare cached results against.
const std::vector<char>& reference_saxpy() {
  static const std::vector<char> cubin = compile(examples::saxpy(), Spec{}).cubin;
  return cubin;
}

std::vector<fs::path> entries_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (auto& e : fs::recursive_directory_iterator(dir / "v1"))
    if (e.path().extension() == ".vkc") out.push_back(e.path());
  return out;
}

std::vector<char> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_file(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// ------------------------------------------------------------------ entry format
cache::Entry sample_entry() {
  cache::Entry e;
  e.key = cache::make_key({"golden", "entry"});
  e.cubin = {'\x7f', 'E', 'L', 'F', 0, 1, 2, 3};
  e.ptx = ".version 9.0\n.target sm_90\n";
  e.meta = {{"entry", "vt_golden_00000000"}, {"log", "line one\nline two"}, {"arch", "sm_90"}};
  return e;
}

TEST(CacheEntry, RoundTrips) {
  auto bytes = cache::serialize(sample_entry());
  cache::ReadError err;
  cache::Key k = sample_entry().key;
  auto e = cache::parse(bytes, &k, &err);
  ASSERT_TRUE(e.has_value()) << cache::describe(err);
  EXPECT_EQ(e->cubin, sample_entry().cubin);
  EXPECT_EQ(e->ptx, sample_entry().ptx);
  EXPECT_EQ(e->meta, sample_entry().meta);
}

TEST(CacheEntry, EveryCorruptionIsDetected) {
  auto bytes = cache::serialize(sample_entry());
  cache::Key k = sample_entry().key;
  cache::ReadError err;
  auto truncated = bytes;
  truncated.resize(bytes.size() - 3);
  EXPECT_FALSE(cache::parse(truncated, &k, &err));
  EXPECT_EQ(err, cache::ReadError::Truncated);
  for (std::size_t i = cache::kHeaderBytes; i < bytes.size(); ++i) {
    auto flipped = bytes;
    flipped[i] ^= 0x20;
    ASSERT_FALSE(cache::parse(flipped, &k, &err)) << "flip at byte " << i;
    EXPECT_EQ(err, cache::ReadError::Checksum);
  }
  cache::Key other = cache::make_key({"another"});
  EXPECT_FALSE(cache::parse(bytes, &other, &err));
  EXPECT_EQ(err, cache::ReadError::WrongKey);
  auto old = bytes;
  old[8] = 0;  // format version 0
  EXPECT_FALSE(cache::parse(old, &k, &err));
  EXPECT_EQ(err, cache::ReadError::OldFormat);
  EXPECT_FALSE(cache::parse(std::vector<char>(10, 'x'), &k, &err));
  EXPECT_EQ(err, cache::ReadError::TooShort);
}

// The committed file pins the format: changing what serialize() writes without bumping
// kFormatVersion (and regenerating with VANTAGE_UPDATE_GOLDEN=1) fails here.
TEST(CacheEntry, MatchesTheGoldenFileOfItsFormatVersion) {
  fs::path golden = fs::path(VANTAGE_GOLDEN_DIR) / ("entry_v" + std::to_string(cache::kFormatVersion) + ".vkc");
  auto bytes = cache::serialize(sample_entry());
  if (const char* u = std::getenv("VANTAGE_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    write_file(golden, bytes);
    GTEST_SKIP() << "rewrote " << golden;
  }
  ASSERT_TRUE(fs::exists(golden)) << "no golden entry for format version " << cache::kFormatVersion
                                  << ": a format change needs a version bump and a new golden file";
  EXPECT_EQ(read_file(golden), bytes) << "the entry format changed without a version bump";
  cache::ReadError err;
  EXPECT_TRUE(cache::parse(read_file(golden), nullptr, &err)) << "the golden entry must still parse";
}

// ------------------------------------------------------------------ store
// The writable directory and a bundle made from it are two tiers that answer a lookup the same way
// (KernelCache walks its tiers through this interface); the bundle refuses to store, saying why.
TEST(CacheTier, ADirectoryAndABundleOfItAnswerTheSameLookups) {
  TempDir dir;
  cache::DiskStore store(dir.path / "store", true);
  ASSERT_TRUE(store.usable()) << store.problem();
  std::string problem;
  ASSERT_TRUE(store.save("saxpy.0123abcd", sample_entry(), &problem)) << problem;
  ASSERT_TRUE(store.save("saxpy.4567ef01", sample_entry(), &problem)) << problem;
  ASSERT_TRUE(store.save("sgemm.89abcdef", sample_entry(), &problem)) << problem;
  std::vector<std::pair<std::string, std::vector<char>>> entries;
  for (const auto& info : store.list()) {
    std::vector<char> bytes;
    ASSERT_TRUE(store.read(info.name, bytes)) << info.name;
    entries.emplace_back(info.name, bytes);
  }
  const auto file = (dir.path / "all.vcb").string();
  auto bundle_bytes = cache::write_bundle(entries);
  std::ofstream(file, std::ios::binary).write(bundle_bytes.data(), static_cast<std::streamsize>(bundle_bytes.size()));
  auto bundle = cache::BundleTier::open(file, &problem);
  ASSERT_NE(bundle, nullptr) << problem;

  for (const cache::Tier* tier :
       {static_cast<const cache::Tier*>(&store), static_cast<const cache::Tier*>(bundle.get())}) {
    EXPECT_EQ(tier->names_with_prefix("saxpy."), (std::vector<std::string>{"saxpy.0123abcd", "saxpy.4567ef01"}));
    EXPECT_EQ(tier->list().size(), 3u);
    std::vector<char> bytes;
    ASSERT_TRUE(tier->read("sgemm.89abcdef", bytes)) << tier->where("sgemm.89abcdef");
    cache::ReadError err;
    auto e = cache::parse(bytes, nullptr, &err);
    ASSERT_TRUE(e.has_value()) << cache::describe(err);
    EXPECT_EQ(e->meta, sample_entry().meta);
    EXPECT_FALSE(tier->read("sgemm.00000000", bytes));
  }
  EXPECT_TRUE(store.writable());
  EXPECT_FALSE(bundle->writable());
  EXPECT_FALSE(bundle->save("x.00000000", sample_entry(), &problem));
  EXPECT_NE(problem.find("read-only"), std::string::npos) << problem;
}

TEST(CacheTier, ALeaseHoldsAKeyUntilItIsDropped) {
  TempDir dir;
  cache::DiskStore store(dir.path / "store", true);
  ASSERT_TRUE(store.usable()) << store.problem();
  const cache::Tier& tier = store;
  {
    auto held = tier.lease("saxpy.0123abcd", std::chrono::milliseconds(100));
    ASSERT_NE(held, nullptr);
    EXPECT_EQ(tier.lease("saxpy.0123abcd", std::chrono::milliseconds(20)), nullptr) << "one lease per key";
    EXPECT_NE(tier.lease("saxpy.4567ef01", std::chrono::milliseconds(20)), nullptr) << "another key is free";
  }
  EXPECT_NE(tier.lease("saxpy.0123abcd", std::chrono::milliseconds(20)), nullptr) << "free again once dropped";
  // A read-only tier gives none: its entries are not made here.
  cache::DiskStore read_only(dir.path / "store", false);
  EXPECT_EQ(static_cast<const cache::Tier&>(read_only).lease("saxpy.0123abcd", std::chrono::milliseconds(20)), nullptr);
  std::string problem;
  ASSERT_TRUE(store.save("saxpy.0123abcd", sample_entry(), &problem)) << problem;
  std::vector<char> bytes;
  ASSERT_TRUE(store.read("saxpy.0123abcd", bytes));
  const auto file = (dir.path / "one.vcb").string();
  auto bundle_bytes = cache::write_bundle({{"saxpy.0123abcd", bytes}});
  std::ofstream(file, std::ios::binary).write(bundle_bytes.data(), static_cast<std::streamsize>(bundle_bytes.size()));
  auto bundle = cache::BundleTier::open(file, &problem);
  ASSERT_NE(bundle, nullptr) << problem;
  EXPECT_EQ(bundle->lease("saxpy.0123abcd", std::chrono::milliseconds(20)), nullptr);
}

TEST(CacheStore, EvictsLeastRecentlyUsedAndKeepsTheCapWithinOneEntry) {
  TempDir dir;
  cache::DiskStore store(dir.path, true);
  ASSERT_TRUE(store.usable()) << store.problem();
  auto now = fs::file_time_type::clock::now();
  std::int64_t one = 0;
  for (int i = 0; i < 10; ++i) {
    cache::Entry e;
    e.key = cache::make_key({std::to_string(i)});
    e.cubin.assign(1000, static_cast<char>(i));
    std::string name = "e" + std::to_string(1000 + i);
    ASSERT_TRUE(store.save(name, e, nullptr));
    fs::last_write_time(store.path_of(name), now - std::chrono::hours(10 - i));  // e1000 oldest
    one = static_cast<std::int64_t>(fs::file_size(store.path_of(name)));
  }
  std::string problem;
  auto hit = store.load("e1001", nullptr, nullptr, &problem);  // a hit makes e1001 the newest
  ASSERT_TRUE(hit.has_value());
  std::int64_t cap = 4 * one + one / 2;
  store.evict(cap, "e1009");
  std::int64_t total = store.total_bytes();
  EXPECT_LE(total, cap + one) << "within one entry of the cap";
  EXPECT_LE(total, cap);
  std::set<std::string> left;
  for (const auto& e : store.list()) left.insert(e.name);
  EXPECT_EQ(left, (std::set<std::string>{"e1001", "e1007", "e1008", "e1009"}));
}

TEST(CacheStore, SweepsStaleTempFilesAndCreatesPrivateDirectories) {
  TempDir dir;
  fs::path root = dir.path / "new" / "cache";
  cache::DiskStore store(root, true);
  ASSERT_TRUE(store.usable()) << store.problem();
  EXPECT_EQ(fs::status(root).permissions() & fs::perms::all, fs::perms::owner_all);
  write_file(root / "tmp" / "dead.123.tmp", {'x'});
  fs::last_write_time(root / "tmp" / "dead.123.tmp", fs::file_time_type::clock::now() - std::chrono::hours(3));
  write_file(root / "tmp" / "live.456.tmp", {'y'});
  EXPECT_EQ(store.sweep(std::chrono::hours(1)), 1);
  EXPECT_TRUE(fs::exists(root / "tmp" / "live.456.tmp"));
}

// ------------------------------------------------------------------ kernel cache
TEST(KernelCache, MemoryThenDiskThenCompile) {
  REQUIRE_NVRTC();
  TempDir dir;
  Kernel k = examples::saxpy();
  {
    KernelCache cache(config_for(dir.path));
    auto a = cache.get(k, Spec{});
    EXPECT_EQ(a->origin, "compiled");
    EXPECT_EQ(a->cubin, reference_saxpy());
    EXPECT_GT(a->registers, 0);
    EXPECT_EQ(a->local_bytes, 0);
    auto b = cache.get(k, Spec{});
    EXPECT_EQ(a.get(), b.get()) << "the second lookup is the in-memory table";
    EXPECT_EQ(cache.stats().compiles, 1);
    EXPECT_EQ(cache.stats().memory_hits, 1);
  }
  KernelCache fresh(config_for(dir.path));
  auto c = fresh.get(examples::saxpy(), Spec{});
  EXPECT_EQ(c->origin, "disk");
  EXPECT_EQ(c->cubin, reference_saxpy());
  EXPECT_EQ(fresh.stats().compiles, 0);
  EXPECT_EQ(c->spec.threads, 256);
  ASSERT_EQ(c->spec.params.size(), 4u);
  EXPECT_EQ(c->spec.params[2].name, "x");
  EXPECT_TRUE(c->spec.params[2].is_const);
  EXPECT_EQ(c->spec.params[2].extent, "n");
}

TEST(KernelCache, GuardsAndSignatureSurviveTheDisk) {
  REQUIRE_NVRTC();
  TempDir dir;
  KernelBuilder b("guarded");
  auto n = b.param<int>("n", specialize);
  auto y = b.param<GlobalPtr<float>>("y", extent(n));
  b.block_threads(64);
  b.body([&](Scope& g) {
    auto gid = g.let("gid", g.id(thread(1)));
    g.split(Level::Block, {{2, [](Scope&) {}}});
    g.partition(
        y, thread(1), [&](Expr i) { return gid + i; },
        [&](Scope& g, View y_t) {
          g.group(thread(1), [&](Scope& th) { th.if_(gid < n, [&](Scope&) { y_t[0] = 2.0f; }); });
        });
  });
  Kernel k = b.build();
  Spec spec = Spec{}.with_size("n", 777);
  std::vector<Guard> want = KernelCache(config_for(dir.path)).get(k, spec)->spec.guards;
  auto got = KernelCache(config_for(dir.path)).get(k, spec);
  ASSERT_EQ(got->origin, "disk");
  ASSERT_EQ(got->spec.guards.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got->spec.guards[i].text, want[i].text);
    EXPECT_EQ(got->spec.guards[i].kind, want[i].kind);
    EXPECT_EQ(got->spec.guards[i].accepts(4, std::vector<std::int64_t>{777}),
              want[i].accepts(4, std::vector<std::int64_t>{777}));
  }
  EXPECT_EQ(got->spec.params[0].value, 777);
}

// The sites of a kernel's checks come back from the disk as they went: an assertion's text, line and
// kind (a failed one read as an access would be reported as one).
TEST(KernelCache, AnAssertionsSiteSurvivesTheDisk) {
  REQUIRE_NVRTC();
  TempDir dir;
  KernelBuilder b("asserts");
  auto n = b.param<int>("n");
  auto y = b.param<GlobalPtr<float>>("y", extent(n));
  b.block_threads(64);
  const int line = __LINE__ + 3;
  b.body([&](Scope& g) {
    lib::for_each(g, y, n, [&](Scope& th, Expr i, ElemRef e) {
      th.assert_that(i % 2 == 0 || n > 1, "odd \"i\" needs n > 1");
      e = 2.0f;
    });
  });
  Kernel k = b.build();
  const std::vector<CheckedAccess> want = KernelCache(config_for(dir.path)).get(k, Spec{})->spec.checks;
  auto got = KernelCache(config_for(dir.path)).get(k, Spec{});
  ASSERT_EQ(got->origin, "disk");
  ASSERT_EQ(want.size(), 1u);
  ASSERT_EQ(got->spec.checks.size(), 1u);
  EXPECT_TRUE(got->spec.checks[0].assertion);
  EXPECT_EQ(got->spec.checks[0].memory, "odd \"i\" needs n > 1");
  EXPECT_EQ(static_cast<int>(got->spec.checks[0].line), line);
  EXPECT_FALSE(got->spec.checks[0].write);
}

// A fault: corrupt the one entry in `dir` with `damage`, then a new cache must warn and still give
// the right kernel (recompiled and rewritten).
void expect_recovers(const std::function<void(const fs::path& entry, const fs::path& dir)>& damage,
                     const std::string& what) {
  TempDir dir;
  KernelCache(config_for(dir.path)).get(examples::saxpy(), Spec{});
  auto files = entries_in(dir.path);
  ASSERT_EQ(files.size(), 1u);
  damage(files[0], dir.path);
  LogCapture log;
  KernelCache cache(config_for(dir.path));
  auto k = cache.get(examples::saxpy(), Spec{});
  EXPECT_EQ(k->cubin, reference_saxpy()) << what;
  EXPECT_EQ(k->origin, "compiled") << what;
  EXPECT_EQ(cache.stats().bad_entries, 1) << what;
  EXPECT_NE(log.text().find("ignored a bad entry"), std::string::npos) << what << ": " << log.text();
  auto again = KernelCache(config_for(dir.path)).get(examples::saxpy(), Spec{});
  EXPECT_EQ(again->origin, "disk") << what << ": the entry was rewritten";
}

TEST(KernelCacheFaults, TruncatedEntry) {
  REQUIRE_NVRTC();
  expect_recovers([](const fs::path& e, const fs::path&) { fs::resize_file(e, fs::file_size(e) / 2); }, "truncated");
}

TEST(KernelCacheFaults, FlippedByte) {
  REQUIRE_NVRTC();
  expect_recovers(
      [](const fs::path& e, const fs::path&) {
        auto b = read_file(e);
        b[b.size() / 2] ^= 1;
        write_file(e, b);
      },
      "flipped byte");
}

TEST(KernelCacheFaults, WrongKeyInTheHeader) {
  REQUIRE_NVRTC();
  expect_recovers(
      [](const fs::path& e, const fs::path&) {
        auto b = read_file(e);
        b[20] ^= 0x55;  // inside the key, which the payload checksum does not cover
        write_file(e, b);
      },
      "wrong key");
}

// An entry another writer made (its checksum whole) whose parameters are not the JSON this version
// writes: tab-separated, as the first format had them. Replaced, not trusted.
TEST(KernelCacheFaults, MetadataThisVersionDoesNotWrite) {
  REQUIRE_NVRTC();
  expect_recovers(
      [](const fs::path& e, const fs::path&) {
        cache::ReadError err;
        auto entry = cache::parse(read_file(e), nullptr, &err);
        ASSERT_TRUE(entry.has_value()) << cache::describe(err);
        ASSERT_TRUE(entry->meta.count("params"));
        entry->meta["params"] = "n\t0\t1\t0\t0\t-\t0\t";
        write_file(e, cache::serialize(*entry));
      },
      "metadata of another writer");
}

TEST(KernelCacheFaults, OlderFormatVersion) {
  REQUIRE_NVRTC();
  expect_recovers(
      [](const fs::path& e, const fs::path&) {
        auto b = read_file(e);
        b[8] = 0;
        write_file(e, b);
      },
      "older format");
}

/// Runs `body` in a child process (so it may drop privileges or limit itself) and returns its exit
/// code; 99 when it crashed.
int in_child(const std::function<int()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 1;
    try {
      rc = body();
    } catch (...) {
      rc = 98;
    }
    ::_exit(rc);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

/// In a child: a cache on `dir` must warn about it and still give the correct kernel.
int degrades_to_memory(const fs::path& dir, const std::string& expected_warning) {
  LogCapture log;
  KernelCache cache(config_for(dir));
  auto k = cache.get(examples::saxpy(), Spec{});
  if (k->cubin != reference_saxpy()) return 10;
  if (log.text().find(expected_warning) == std::string::npos) {
    std::fprintf(stderr, "missing warning '%s' in:\n%s\n", expected_warning.c_str(), log.text().c_str());
    return 11;
  }
  return 0;
}

TEST(KernelCacheFaults, ReadOnlyDirectory) {
  REQUIRE_NVRTC();
  reference_saxpy();
  TempDir dir;
  fs::path root = dir.path / "cache";
  cache::DiskStore(root, true);  // make it, then take away writing
  if (::geteuid() == 0) {
    // root writes anywhere: check as an unprivileged user instead, on a directory it cannot write.
    fs::permissions(dir.path, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    int rc = in_child([&] {
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) return 20;
      return degrades_to_memory(root, "memory only");
    });
    EXPECT_EQ(rc, 0);
  } else {
    fs::permissions(root, fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_EQ(in_child([&] { return degrades_to_memory(root, "not writable"); }), 0);
    fs::permissions(root, fs::perms::owner_all);
  }
}

TEST(KernelCacheFaults, DirectoryOwnedBySomeoneElse) {
  REQUIRE_NVRTC();
  reference_saxpy();
  TempDir dir;
  fs::path root = dir.path / "cache";
  fs::create_directories(root);
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(root.c_str(), 65534, 65534), 0);
    fs::permissions(root, fs::perms::owner_all);
  } else {
    root = "/usr/share";  // exists and is root's
  }
  EXPECT_EQ(in_child([&] { return degrades_to_memory(root, "belongs to another user"); }), 0);
}

TEST(KernelCacheFaults, FullDisk) {
  REQUIRE_NVRTC();
  reference_saxpy();
  TempDir dir;
  int rc = in_child([&] {
    ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG instead of killing
    struct rlimit lim {
      1024, 1024
    };
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) return 21;
    int r = degrades_to_memory(dir.path, "memory only");
    if (r) return r;
    return entries_in(dir.path).empty() ? 0 : 12;  // nothing half-written left behind
  });
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(fs::is_empty(dir.path / "tmp")) << "the failed write's temp file was removed";
}

TEST(KernelCacheFaults, UnreadableBundle) {
  REQUIRE_NVRTC();
  TempDir dir;
  fs::path bundle = dir.path / "broken.vbundle";
  write_file(bundle, std::vector<char>(100, 'z'));
  LogCapture log;
  CacheConfig c = config_for(dir.path / "cache");
  c.read_only = {bundle.string()};
  KernelCache cache(c);
  EXPECT_EQ(cache.get(examples::saxpy(), Spec{})->cubin, reference_saxpy());
  EXPECT_NE(log.text().find("read-only layer skipped"), std::string::npos) << log.text();
}

// ------------------------------------------------------------------ eviction through the cache
TEST(KernelCache, EvictionKeepsTheCap) {
  REQUIRE_NVRTC();
  TempDir dir;
  CacheConfig c = config_for(dir.path);
  c.max_bytes = 12000;  // room for about two small kernels
  KernelCache cache(c);
  for (const auto& ex : examples::all()) cache.get(ex.build(), ex.spec());
  cache::DiskStore store(dir.path, true);
  std::int64_t biggest = 0;
  for (const auto& e : store.list()) biggest = std::max(biggest, e.bytes);
  EXPECT_LE(store.total_bytes(), c.max_bytes + biggest);
  EXPECT_GE(store.list().size(), 1u);
  EXPECT_LT(store.list().size(), examples::all().size());
}

// ------------------------------------------------------------------ layers, bundles, record mode

TEST(KernelCache, BundleRoundTripServesAHostWithoutNvrtc) {
  REQUIRE_NVRTC();
  TempDir dir;
  fs::path src = dir.path / "src", dst = dir.path / "dst", bundle = dir.path / "fleet.vbundle";
  {
    KernelCache cache(config_for(src));
    for (const auto& ex : examples::all()) cache.get(ex.build(), ex.spec());
  }
  int exported = export_bundle(src.string(), bundle.string());
  EXPECT_EQ(exported, static_cast<int>(examples::all().size()));
  std::vector<std::string> problems;
  EXPECT_EQ(verify_bundle(bundle.string(), &problems), exported);
  EXPECT_TRUE(problems.empty()) << problems[0];
  EXPECT_EQ(import_bundle(bundle.string(), dst.string()), exported);
  EXPECT_EQ(entries_in(dst).size(), entries_in(src).size());

  // Another process with NVRTC switched off gets every kernel: from the bundle as a layer...
  int rc = 0;
  std::string out = run_command("VANTAGE_NVRTC=none VANTAGE_CACHE_DISABLE=1 VANTAGE_CACHE_PATH='" + bundle.string() +
                                    "' '" + VANTAGE_CACHE_WORKER + "' examples 2>&1",
                                &rc);
  EXPECT_EQ(rc, 0) << out;
  for (const auto& ex : examples::all()) EXPECT_NE(out.find(ex.name + " "), std::string::npos) << out;
  EXPECT_EQ(out.find("FAILED"), std::string::npos) << out;
  EXPECT_NE(out.find(" layer"), std::string::npos) << out;
  // ...and from the directory it was imported into.
  out = run_command(
      "VANTAGE_NVRTC=none VANTAGE_CACHE_DIR='" + dst.string() + "' '" + VANTAGE_CACHE_WORKER + "' examples 2>&1", &rc);
  EXPECT_EQ(rc, 0) << out;
  // Without either, the same process says what is missing instead of crashing.
  out = run_command(
      "VANTAGE_NVRTC=none VANTAGE_CACHE_DISABLE=1 '" + std::string(VANTAGE_CACHE_WORKER) + "' examples 2>&1", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("NVRTC is not available"), std::string::npos) << out;

  auto bytes = read_file(bundle);
  bytes[bytes.size() / 2] ^= 1;
  write_file(bundle, bytes);
  problems.clear();
  EXPECT_EQ(verify_bundle(bundle.string(), &problems), 0);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("checksum"), std::string::npos) << problems[0];
}

// The in-process table is found by structural hash; a collision must not hand out another kernel's
// code. A copy of vec_copy's IR given saxpy's hash stands for two kernels whose hashes collide.
TEST(KernelCache, HashCollisionStillReturnsTheRightKernel) {
  REQUIRE_NVRTC();
  TempDir dir;
  KernelCache cache(config_for(dir.path));
  Kernel saxpy = examples::saxpy();
  Kernel vec = examples::vec_copy();
  auto forged = std::make_shared<ir::KernelNode>(detail::KernelAccess::ir(vec));
  forged->hash = saxpy.structural_hash();
  forged->threads = 256;  // the same launch shape, so that the two Specs are equal too
  Kernel collided = detail::KernelAccess::make(forged, vec.obligations(), vec.shared_bytes());
  ASSERT_EQ(collided.structural_hash(), saxpy.structural_hash());
  auto a = cache.get(saxpy, Spec{});
  auto b = cache.get(collided, Spec{});
  EXPECT_NE(a.get(), b.get());
  EXPECT_NE(b->spec.source.find("vec_copy"), std::string::npos) << "got saxpy's entry for vec_copy";
  EXPECT_EQ(cache.stats().compiles, 2);
  EXPECT_EQ(cache.get(saxpy, Spec{}).get(), a.get()) << "the real kernel still hits";
}

// The disk key holds the options NVRTC is given, and the entry records them: a different option is a
// different entry, never the other one's cubin.
TEST(KernelCache, EntryRecordsTheOptionsItsKeyHolds) {
  REQUIRE_NVRTC();
  TempDir dir;
  KernelCache cache(config_for(dir.path));
  Kernel k = examples::saxpy();
  auto contracted = cache.get(k, Spec{});
  EXPECT_EQ(contracted->options, compile(k, Spec{}).options);
  EXPECT_EQ(contracted->options, nvrtc::canonical_options(Arch::SM_90, Output::Cubin, true));
  auto separate = cache.get(k, Spec{}.with_fp_contract(false));
  EXPECT_NE(separate->key, contracted->key);
  EXPECT_EQ(separate->options, nvrtc::canonical_options(Arch::SM_90, Output::Cubin, false));
  EXPECT_EQ(separate->options.back(), "--fmad=false");
  EXPECT_NE(separate->cubin, contracted->cubin) << "a * x + y is one FFMA only when contraction is allowed";
  // From disk, a fresh cache reads the same options back.
  KernelCache fresh(config_for(dir.path));
  auto again = fresh.get(k, Spec{}.with_fp_contract(false));
  EXPECT_EQ(again->origin, "disk");
  EXPECT_EQ(again->options, separate->options);
  EXPECT_FALSE(again->spec.fp_contract);
}

TEST(KernelCache, NoLockFileOutlivesACompile) {
  REQUIRE_NVRTC();
  TempDir dir;
  {
    KernelCache cache(config_for(dir.path));
    for (const auto& ex : examples::all()) cache.get(ex.build(), ex.spec());
    EXPECT_EQ(cache.stats().compiles, static_cast<std::int64_t>(examples::all().size()));
  }
  std::vector<fs::path> locks;
  for (const auto& e : fs::directory_iterator(dir.path / "locks")) locks.push_back(e.path());
  EXPECT_TRUE(locks.empty()) << locks.size() << " lock files left, e.g. " << locks[0];
}

TEST(DiskStore, SweepRemovesLocksNobodyHoldsAndKeepsHeldOnes) {
  TempDir dir;
  cache::DiskStore store(dir.path, true);
  ASSERT_TRUE(store.usable()) << store.problem();
  std::ofstream(dir.path / "locks" / "orphan.lock") << "";  // left by a process killed while compiling
  {
    cache::DiskStore::Lock held = store.lock("busy", std::chrono::milliseconds(100));
    ASSERT_TRUE(held.held());
    EXPECT_EQ(store.sweep(std::chrono::hours(1)), 1);
    EXPECT_FALSE(fs::exists(dir.path / "locks" / "orphan.lock"));
    EXPECT_TRUE(fs::exists(dir.path / "locks" / "busy.lock")) << "a held lock stays";
    // Someone else waiting for it times out rather than sharing it.
    EXPECT_FALSE(store.lock("busy", std::chrono::milliseconds(20)).held());
  }
  EXPECT_FALSE(fs::exists(dir.path / "locks" / "busy.lock")) << "its holder removed it";
  EXPECT_TRUE(store.lock("busy", std::chrono::milliseconds(20)).held()) << "and the key can be locked again";
}

TEST(KernelCache, RecordModeCompilesForEveryArchitecture) {
  REQUIRE_NVRTC();
  TempDir dir;
  CacheConfig c = config_for(dir.path);
  c.record_archs = {Arch::SM_80, Arch::SM_86, Arch::SM_90};
  KernelCache cache(c);
  cache.get(examples::saxpy(), Spec{});
  EXPECT_EQ(entries_in(dir.path).size(), 3u);
  EXPECT_EQ(cache.stats().compiles, 3);
  auto other = KernelCache(config_for(dir.path)).get(examples::saxpy(), Spec{}.with_arch(Arch::SM_80));
  EXPECT_EQ(other->origin, "disk");
}

// ------------------------------------------------------------------ many processes
TEST(CacheStress, EightProcessesWithWritersKilledAtRandom) {
  TempDir dir;
  fs::path root = dir.path / "shared";
  fs::path log = dir.path / "log";
  std::mt19937 rng(12345);
  std::vector<pid_t> pids;
  for (int i = 0; i < 8; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      std::string seed = std::to_string(100 + i);
      ::execl(VANTAGE_CACHE_WORKER, "cache_worker", "stress", root.c_str(), seed.c_str(), "200", log.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  // Kill three of them at random moments, most likely in the middle of a compile or a write.
  std::map<pid_t, std::int64_t> killed;
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 120));
    pid_t victim = pids[static_cast<std::size_t>(i * 3 % 8)];
    ::kill(victim, SIGKILL);
    killed[victim] =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
  }
  int interrupted = 0;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (killed.count(pid) && WIFSIGNALED(status)) {
      ++interrupted;
      continue;
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "worker " << pid << " status " << status << " (3: corrupted read, 4: bad entry seen)";
  }
  EXPECT_GE(interrupted, 2) << "the kills should land while workers run";
  // Every key is present and verifies.
  cache::DiskStore store(root, true);
  for (int key = 0; key < 20; ++key) {
    std::string name = "k" + std::to_string(1000 + key) + "0000";
    cache::Key k = cache::make_key({name});
    std::string problem;
    auto e = store.load(name, &k, nullptr, &problem);
    EXPECT_TRUE(e.has_value()) << "key " << key << " missing " << problem;
  }
  // No two compiles of one key overlapped while the first holder lived.
  std::ifstream in(log);
  struct Span {
    pid_t pid;
    std::int64_t start, end;
  };
  std::map<int, std::vector<Span>> spans;
  std::map<std::pair<int, pid_t>, std::int64_t> open;
  char what;
  int key;
  pid_t pid;
  long long t;
  int compiles = 0;
  while (in >> what >> key >> pid >> t) {
    if (what == 'S') {
      open[{key, pid}] = t;
      ++compiles;
    } else {
      spans[key].push_back({pid, open[{key, pid}], t});
      open.erase({key, pid});
    }
  }
  for (const auto& [kp, start] : open) {  // compiles cut short by SIGKILL end when the process died
    ASSERT_TRUE(killed.count(kp.second)) << "an unfinished compile by a live worker";
    spans[kp.first].push_back({kp.second, start, killed[kp.second]});
  }
  EXPECT_GE(compiles, 20);
  for (auto& [k, list] : spans) {
    std::sort(list.begin(), list.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
    for (std::size_t i = 1; i < list.size(); ++i)
      EXPECT_GE(list[i].start, list[i - 1].end)
          << "key " << k << ": pid " << list[i].pid << " compiled while pid " << list[i - 1].pid << " held the lock";
  }
}

// ------------------------------------------------------------------ bad entries in read-only layers
// A layer (directory or bundle) whose entry is truncated, corrupted, or another target's entry under
// this one's name: the entry is refused with a warning naming where it is, the kernel compiled, the
// result right.
TEST(CacheLayers, ABadEntryInALayerIsRefusedAndTheKernelCompiled) {
  REQUIRE_NVRTC();
  reference_saxpy();
  TempDir dir;
  const fs::path layer = dir.path / "layer", other = dir.path / "sm80";
  KernelCache(config_for(layer)).get(examples::saxpy(), Spec{});
  KernelCache(config_for(other)).get(examples::saxpy(), Spec{}.with_arch(Arch::SM_80));
  fs::permissions(layer, fs::perms::owner_all);
  ASSERT_EQ(entries_in(layer).size(), 1u);
  ASSERT_EQ(entries_in(other).size(), 1u);
  const fs::path entry = entries_in(layer)[0];
  const std::vector<char> good = read_file(entry), sm80 = read_file(entries_in(other)[0]);
  struct Case {
    const char* what;
    std::vector<char> bytes;
    const char* says;
  };
  std::vector<char> truncated(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2));
  std::vector<char> corrupted = good;
  corrupted[corrupted.size() / 2] ^= 0x10;
  for (const Case& c : {Case{"truncated", truncated, "truncated"}, Case{"corrupted", corrupted, "checksum mismatch"},
                        Case{"sm_80's entry under sm_90's name", sm80, "holds a different key than its name says"}}) {
    SCOPED_TRACE(c.what);
    for (bool as_bundle : {false, true}) {
      write_file(entry, c.bytes);
      CacheConfig cfg = config_for(dir.path / (std::string("cache_") + (as_bundle ? "b" : "d")));
      cfg.read_only = {layer.string()};
      if (as_bundle) {
        const fs::path bundle = dir.path / "layer.vbundle";
        write_file(bundle, cache::write_bundle({{entry.stem().string(), c.bytes}}));
        fs::permissions(bundle, fs::perms::owner_read | fs::perms::owner_write);
        cfg.read_only = {bundle.string()};
      }
      LogCapture log;
      KernelCache cache(cfg);
      auto k = cache.get(examples::saxpy(), Spec{});
      EXPECT_EQ(k->origin, "compiled");
      EXPECT_EQ(k->cubin, reference_saxpy());
      EXPECT_EQ(cache.stats().bad_entries, 1);
      EXPECT_NE(log.text().find(c.says), std::string::npos) << log.text();
      EXPECT_NE(log.text().find(as_bundle ? "bundle entry " + entry.stem().string() : entry.string()),
                std::string::npos)
          << log.text();
      fs::remove_all(cfg.dir);
    }
  }
  write_file(entry, good);
  CacheConfig cfg = config_for(dir.path / "cache_good");
  cfg.read_only = {layer.string()};
  EXPECT_EQ(KernelCache(cfg).get(examples::saxpy(), Spec{})->origin, "layer") << "the whole entry is used";
}

// ------------------------------------------------------------------ older targets
// Without NVRTC, a layer's build for an older target serves a newer one: sm_80's machine code runs
// on sm_86, and on sm_90 its PTX (every entry carries it) is what the driver compiles.
TEST(KernelCache, WithoutNvrtcALayerBuiltForAnOlderTargetServesANewerOne) {
  REQUIRE_NVRTC();
  TempDir dir;
  const fs::path layer = dir.path / "layer", empty = dir.path / "empty";
  {
    KernelCache made(config_for(layer));
    auto k = made.get(examples::saxpy(), Spec{}.with_arch(Arch::SM_80));
    EXPECT_FALSE(k->ptx.empty()) << "a cubin's entry carries its PTX";
    EXPECT_NE(k->ptx.find(".target sm_80"), std::string::npos);
  }
  fs::permissions(layer, fs::perms::owner_all);
  auto run = [&](const std::string& arch, const fs::path& path, int* rc) {
    return run_command("VANTAGE_NVRTC=none VANTAGE_CACHE_PATH=" + path.string() + " VANTAGE_CACHE_DIR=" +
                           (dir.path / "cache").string() + " " + VANTAGE_CACHE_WORKER + " arch " + arch + " 2>&1",
                       rc);
  };
  int rc = 0;
  EXPECT_EQ(run("sm_86", layer, &rc), "layer sm_80 ptx\n");
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(run("sm_90", layer, &rc), "layer sm_80 ptx\n");
  EXPECT_EQ(rc, 0);
  fs::create_directories(empty / "v1");
  const std::string out = run("sm_86", empty, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("FAILED kernel 'saxpy' for sm_86 is in no cache layer and NVRTC is not available"),
            std::string::npos)
      << out;
}

// ------------------------------------------------------------------ compiler options
/// One thread runs an unsafe block that needs a header and a define.
Kernel header_kernel() {
  KernelBuilder k("uses_a_header");
  k.block_threads(32);
  k.body([&](Scope& g) {
    g.group(thread(1), [&](Scope& th) {
      th.unsafe(thread(1), "\n#include \"vt_value.h\"\nint v = VT_VALUE + VT_EXTRA; (void)v;\n");
    });
  });
  return k.build();
}

TEST(KernelCache, CompilerOptionsReachNvrtcAndEveryOneIsPartOfTheKey) {
  REQUIRE_NVRTC();
  TempDir dir;
  KernelCache cache(config_for(dir.path / "cache"));
  CompilerOptions fast;
  fast.fast_math = true;
  fast.line_info = true;
  fast.max_registers = 32;
  auto plain = cache.get(examples::saxpy(), Spec{});
  auto tuned = cache.get(examples::saxpy(), Spec{}.with_compiler(fast));
  EXPECT_NE(plain->key, tuned->key);
  for (const char* o : {"--use_fast_math", "--generate-line-info", "--maxrregcount=32"}) {
    EXPECT_NE(std::find(tuned->options.begin(), tuned->options.end(), o), tuned->options.end()) << o;
    EXPECT_EQ(std::find(plain->options.begin(), plain->options.end(), o), plain->options.end()) << o;
  }
  EXPECT_NE(tuned->ptx.find(".ftz.f32"), std::string::npos) << "fast math flushes denormals";
  EXPECT_EQ(plain->ptx.find(".ftz.f32"), std::string::npos);
  EXPECT_NE(tuned->ptx.find(".loc"), std::string::npos) << "line information";
  EXPECT_EQ(cache.stats().compiles, 2);

  // Include paths and defines for unsafe blocks; the headers' state is part of the key.
  const fs::path include = dir.path / "include";
  fs::create_directories(include);
  std::ofstream(include / "vt_value.h") << "#define VT_VALUE 41\n";
  CompilerOptions with_header;
  with_header.include_paths = {include.string()};
  with_header.defines = {{"VT_EXTRA", "1"}};
  Kernel k = header_kernel();
  EXPECT_THROW(cache.get(k, Spec{}), CompileError) << "no include path: NVRTC finds no header";
  auto first = cache.get(k, Spec{}.with_compiler(with_header));
  EXPECT_NE(std::find(first->options.begin(), first->options.end(), "--define-macro=VT_EXTRA=1"), first->options.end());
  std::ofstream(include / "vt_value.h") << "#define VT_VALUE 4100\n";  // edited: another size
  const std::int64_t before = cache.stats().compiles;
  KernelCache fresh(config_for(dir.path / "cache"));
  auto second = fresh.get(k, Spec{}.with_compiler(with_header));
  EXPECT_NE(first->key, second->key) << "an edited header is another key";
  EXPECT_EQ(second->origin, "compiled");
  EXPECT_EQ(cache.stats().compiles, before);

  // Refused by name.
  auto refused = [&](CompilerOptions o, const std::string& says) {
    try {
      cache.get(examples::saxpy(), Spec{}.with_compiler(std::move(o)));
      ADD_FAILURE() << says;
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  CompilerOptions bad;
  bad.max_registers = 300;
  refused(bad, "max_registers 300 is not from 1 to 255");
  bad = {};
  bad.include_paths = {(dir.path / "missing").string()};
  refused(bad, "include path '" + (dir.path / "missing").string() + "' is not a directory");
  bad = {};
  bad.defines = {{"1X", "2"}};
  refused(bad, "define '1X' is not a macro name");
  bad = {};
  bad.extra = {"--frobnicate"};
  refused(bad, "NVRTC does not know the option '--frobnicate'");
}

// ------------------------------------------------------------------ statistics
TEST(CacheStats, PercentilesComeFromPowersOfTwoOfMicroseconds) {
  EXPECT_EQ(cache::latency_bucket(0), 0);
  EXPECT_EQ(cache::latency_bucket(1), 1);
  EXPECT_EQ(cache::latency_bucket(3), 2);
  EXPECT_EQ(cache::latency_bucket(1000), 10);  // under 1024 us
  EXPECT_EQ(cache::latency_bucket(std::int64_t{1} << 40), cache::kLatencyBuckets - 1);
  std::vector<std::int64_t> b(cache::kLatencyBuckets, 0);
  EXPECT_EQ(cache::percentile_ms(b, 50), -1.0);
  b[10] = 98;  // 98 lookups under 1.024 ms, 2 under 16.384 ms
  b[14] = 2;
  EXPECT_DOUBLE_EQ(cache::percentile_ms(b, 50), 1.024);
  EXPECT_DOUBLE_EQ(cache::percentile_ms(b, 98), 1.024);
  EXPECT_DOUBLE_EQ(cache::percentile_ms(b, 99), 16.384);
}

TEST(CacheStats, EachTierCountsItsLookupsAndTheDirectoryAddsUpEveryCache) {
  REQUIRE_NVRTC();
  TempDir dir;
  auto tier = [](const std::vector<TierStats>& all, const std::string& name) {
    for (const auto& t : all)
      if (t.tier == name) return t;
    ADD_FAILURE() << "no tier " << name;
    return TierStats{};
  };
  std::int64_t entry_bytes = 0;  // the cubin and its PTX
  {
    KernelCache a(config_for(dir.path));
    auto k = a.get(examples::saxpy(), Spec{});
    entry_bytes = static_cast<std::int64_t>(k->cubin.size() + k->ptx.size());
    a.get(examples::saxpy(), Spec{});
    auto t = a.tier_stats();
    EXPECT_EQ(tier(t, "memory").hits, 1);
    EXPECT_EQ(tier(t, "memory").misses, 1);
    EXPECT_EQ(tier(t, "disk").misses, 1);
    EXPECT_EQ(tier(t, "disk").hits, 0);
    EXPECT_EQ(tier(t, "compile").hits, 1);
    EXPECT_EQ(tier(t, "compile").bytes, entry_bytes);
    EXPECT_GT(tier(t, "compile").percentile_ms(50), 0.0);
    EXPECT_EQ(tier(t, "memory").percentile_ms(50), -1.0) << "the in-process table is not timed";
    a.flush_stats();
    a.flush_stats();  // nothing new: nothing added
  }
  {
    KernelCache b(config_for(dir.path));
    EXPECT_EQ(b.get(examples::saxpy(), Spec{})->origin, "disk");
  }
  std::string why;
  auto file = cache::read_stats(dir.path / "stats.json", &why);
  ASSERT_TRUE(file.has_value()) << why;
  EXPECT_EQ(file->flushes, 2) << "one flush per cache that counted something";
  EXPECT_EQ(file->tiers["disk"].hits, 1);
  EXPECT_EQ(file->tiers["disk"].misses, 1);
  EXPECT_EQ(file->tiers["compile"].hits, 1);
  EXPECT_EQ(file->tiers["memory"].hits, 1);
  EXPECT_EQ(file->tiers["memory"].misses, 2);
  EXPECT_EQ(file->tiers["disk"].bytes, entry_bytes);

  write_file(dir.path / "stats.json", std::vector<char>(10, '{'));
  EXPECT_FALSE(cache::read_stats(dir.path / "stats.json", &why).has_value());
  EXPECT_NE(why.find("is not a statistics file"), std::string::npos) << why;
  {
    KernelCache c(config_for(dir.path));
    c.get(examples::saxpy(), Spec{});
  }
  file = cache::read_stats(dir.path / "stats.json", &why);
  ASSERT_TRUE(file.has_value()) << "a damaged file starts again: " << why;
  EXPECT_EQ(file->tiers["disk"].hits, 1);
}

}  // namespace
}  // namespace vantage
