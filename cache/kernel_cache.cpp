// Vantage kernel cache: see vantage/cache.hpp and docs/design.md section 5.
//
// Keys. The disk key is XXH3-128 of the format version, the code generator version, the generated
// source and the canonical NVRTC options (the very list NVRTC is given: language level, target,
// output kind, float contraction; nvrtc::canonical_options makes both) (the "logical" key),
// combined with the NVRTC fingerprint (the full key, in the entry header). XXH3-128 is not a
// cryptographic hash; it is enough here because an entry is only trusted from a directory the user
// owns alone or from a layer the administrator installed, and someone who can write those can place
// any cubin anyway. Entry files are named `<logical>.<first 8 hex of the full key>` so that a host
// without NVRTC, which cannot compute the fingerprint, still finds any build of a source.
//
// The in-process table maps (kernel, Spec, output) to the loaded entry: a repeated lookup takes a
// shared lock and a hash-table probe on the kernel's structural hash, and never hashes source. Two
// kernels whose hashes collide are told apart by structural equality (a pointer comparison when the
// same Kernel is looked up again).
#include "vantage/cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "cache/cache.h"
#include "cache/remote.h"
#include "cache/stats.h"
#include "jit/ir/ir.h"
#include "jit/nvrtc/nvrtc.h"
#include "jit/pipeline/handles.h"
#include "jit/pipeline/pipeline.h"
#include "support/log.h"

namespace vantage {
namespace fs = std::filesystem;
using cache::DiskStore;
using cache::Entry;
using cache::Key;
using nlohmann::json;

namespace {

/// Bumped whenever the code generator's output for the same IR changes.
constexpr const char* kCodegenVersion = "vantage-cuda-3";  // 3: hidden lengths, checked accesses

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// ---------------------------------------------------------------- entry metadata
// Scalars as text; the options, parameters, checked accesses and guards as JSON arrays.
std::map<std::string, std::string> encode(const Specialized& s, const Compiled& c, Output output) {
  std::map<std::string, std::string> m;
  m["options"] = json(c.options).dump();
  m["fp_contract"] = s.fp_contract ? "1" : "0";
  m["entry"] = s.entry;
  m["arch"] = arch_name(s.arch);
  m["output"] = output == Output::Ptx ? "ptx" : "cubin";
  m["threads"] = std::to_string(s.threads);
  m["static_shared"] = std::to_string(s.static_shared_bytes);
  m["dynamic_shared"] = std::to_string(s.dynamic_shared_bytes);
  m["barriers"] = std::to_string(s.barriers);
  m["log"] = c.log;
  json params = json::array(), checks = json::array(), guards = json::array();
  for (const ParamInfo& p : s.params)
    params.push_back({{"name", p.name},
                      {"pointer", p.is_pointer},
                      {"type", type_name(p.type)},
                      {"const", p.is_const},
                      {"specialized", p.specialized},
                      {"value", p.value ? json(*p.value) : json(nullptr)},
                      {"alignment", p.alignment},
                      {"extent", p.extent}});
  for (const CheckedAccess& a : s.checks)
    checks.push_back({{"line", a.line},
                      {"column", a.column},
                      {"write", a.write},
                      {"memory", a.memory},
                      {"file", a.file},
                      {"assertion", a.assertion}});
  for (const Guard& g : s.guards)
    guards.push_back({{"kind", static_cast<int>(g.kind)},
                      {"value", g.value},
                      {"param", g.param},
                      {"rule", g.rule},
                      {"text", g.text}});
  m["params"] = params.dump();
  m["checks"] = checks.dump();
  m["guards"] = guards.dump();
  return m;
}

/// The names, sizes and modification times of every file under `dir`, hashed: what an include path
/// contributes to a key (so that an edited header is not served its old kernel).
std::string directory_digest(const std::string& dir) {
  std::vector<std::string> rows;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (!it->is_regular_file(e2)) continue;
    const auto size = it->file_size(e2);
    const auto time = it->last_write_time(e2).time_since_epoch().count();
    rows.push_back(fs::relative(it->path(), dir, e2).string() + " " + std::to_string(size) + " " +
                   std::to_string(time));
  }
  std::sort(rows.begin(), rows.end());
  rows.insert(rows.begin(), "include-path " + dir);
  return cache::make_key(rows).hex();
}

/// The targets older than `arch` whose code may serve it, newest first (never an arch-specific one:
/// its code runs on its own GPU only).
std::vector<Arch> older_targets(Arch arch) {
  std::vector<Arch> out;
  for (Arch a : all_archs())
    if (a != Arch::SM_90a && arch_number(a) < arch_number(arch)) out.insert(out.begin(), a);
  return out;
}

std::int64_t num(const std::map<std::string, std::string>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : std::atoll(it->second.c_str());
}

/// The scalar type `type_name` spells `name`.
std::optional<ScalarType> type_named(const std::string& name) {
  for (ScalarType t : {ScalarType::Bool, ScalarType::I8, ScalarType::U8, ScalarType::I16, ScalarType::U16,
                       ScalarType::I32, ScalarType::U32, ScalarType::I64, ScalarType::U64, ScalarType::F16,
                       ScalarType::BF16, ScalarType::F32, ScalarType::F64, ScalarType::F8E4M3, ScalarType::F8E5M2})
    if (name == type_name(t)) return t;
  return std::nullopt;
}

/// The JSON array under `k`; throws json::exception when it is missing or not an array.
json array_at(const std::map<std::string, std::string>& m, const std::string& k) {
  auto it = m.find(k);
  json a = json::parse(it == m.end() ? std::string("null") : it->second);
  if (!a.is_array()) throw json::type_error::create(302, k + " is not an array", nullptr);
  return a;
}

/// The specialization an entry records; throws json::exception when its metadata is not what
/// encode writes (an entry from another writer, whose checksum held).
Specialized decode(const std::map<std::string, std::string>& m) {
  Specialized s;
  auto get = [&](const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? std::string() : it->second;
  };
  s.entry = get("entry");
  s.fp_contract = get("fp_contract") != "0";
  s.arch = parse_arch(get("arch")).value_or(Arch::SM_90);
  s.threads = num(m, "threads");
  s.static_shared_bytes = num(m, "static_shared");
  s.dynamic_shared_bytes = num(m, "dynamic_shared");
  s.barriers = static_cast<int>(num(m, "barriers"));
  for (const json& j : array_at(m, "params")) {
    ParamInfo p;
    p.name = j.at("name").get<std::string>();
    p.is_pointer = j.at("pointer").get<bool>();
    auto type = type_named(j.at("type").get<std::string>());
    if (!type) throw json::type_error::create(302, "unknown parameter type", nullptr);
    p.type = *type;
    p.is_const = j.at("const").get<bool>();
    p.specialized = j.at("specialized").get<bool>();
    if (!j.at("value").is_null()) p.value = j.at("value").get<std::int64_t>();
    p.alignment = j.at("alignment").get<int>();
    p.extent = j.at("extent").get<std::string>();
    s.params.push_back(std::move(p));
  }
  for (const json& j : array_at(m, "checks")) {
    CheckedAccess c;
    c.line = j.at("line").get<std::uint32_t>();
    c.column = j.at("column").get<std::uint32_t>();
    c.write = j.at("write").get<bool>();
    c.memory = j.at("memory").get<std::string>();
    c.file = j.at("file").get<std::string>();
    c.assertion = j.value("assertion", false);  // absent from entries made before assertions
    s.checks.push_back(std::move(c));
  }
  for (const json& j : array_at(m, "guards")) {
    Guard g;
    g.kind = static_cast<Guard::Kind>(j.at("kind").get<int>());
    g.value = j.at("value").get<std::int64_t>();
    g.param = j.at("param").get<int>();
    g.rule = j.at("rule").get<std::string>();
    g.text = j.at("text").get<std::string>();
    s.guards.push_back(std::move(g));
  }
  return s;
}

/// The cached kernel an entry holds, or null when its metadata cannot be read (`why` says how).
std::shared_ptr<CachedKernel> from_entry(const Entry& e, const char* origin, std::string* why = nullptr) {
  auto k = std::make_shared<CachedKernel>();
  try {
    k->spec = decode(e.meta);
    k->options = array_at(e.meta, "options").get<std::vector<std::string>>();
  } catch (const json::exception& err) {
    if (why) *why = std::string("its metadata is not what this version writes: ") + err.what();
    return nullptr;
  }
  k->cubin = e.cubin;
  k->ptx = e.ptx;
  k->key = e.key.hex();
  k->origin = origin;
  k->registers = static_cast<int>(num(e.meta, "registers"));
  k->local_bytes = num(e.meta, "local_bytes");
  auto log = e.meta.find("log");
  if (log != e.meta.end()) k->log = log->second;
  return k;
}

}  // namespace

// Named, not anonymous: KernelCache::Impl, whose name has linkage, holds a table of these keys (GCC
// warns of a member whose type has none, as the sanitizer builds' unity batches show).
namespace memory_keys {

/// The in-process key: everything that picks one compiled variant, without touching source. The
/// kernel is held, not only its hash, so that a hash collision cannot return another kernel's code.
struct MemoryKey {
  std::shared_ptr<const ir::KernelNode> kernel;
  Spec spec;
  Output output;
};
/// The same, borrowing: lookups build this, so a hit copies and allocates nothing.
struct MemoryKeyView {
  const ir::KernelNode* kernel;
  const Spec* spec;
  Output output;
};
struct MemoryKeyHash {
  using is_transparent = void;
  static std::size_t hash(const ir::KernelNode& kernel, const Spec& spec, Output output) {
    std::uint64_t h = kernel.hash * 0x9e3779b97f4a7c15ULL;
    auto mix = [&](std::uint64_t v) { h = (h ^ v) * 0xbf58476d1ce4e5b9ULL + (h >> 29); };
    mix(static_cast<std::uint64_t>(spec.threads));
    mix(static_cast<std::uint64_t>(spec.blocks.value_or(-1)));
    mix(static_cast<std::uint64_t>(spec.arch) * 4 + static_cast<std::uint64_t>(output) * 2 + spec.fp_contract);
    mix(static_cast<std::uint64_t>(spec.compiler.max_registers) * 4 + spec.compiler.fast_math * 2 +
        spec.compiler.line_info + spec.compiler.extra.size() * 1024 + spec.compiler.defines.size() * 65536);
    for (const auto& [name, v] : spec.sizes) mix(static_cast<std::uint64_t>(v) + name.size());
    for (const auto& [name, a] : spec.assume)
      mix(static_cast<std::uint64_t>(a.min) ^ (static_cast<std::uint64_t>(a.max) << 1) ^
          (static_cast<std::uint64_t>(a.multiple) << 40) ^ name.size());
    return static_cast<std::size_t>(h);
  }
  std::size_t operator()(const MemoryKey& k) const { return hash(*k.kernel, k.spec, k.output); }
  std::size_t operator()(const MemoryKeyView& k) const { return hash(*k.kernel, *k.spec, k.output); }
};
struct MemoryKeyEqual {
  using is_transparent = void;
  static bool same(const ir::KernelNode* ka, const Spec& a, Output oa, const ir::KernelNode* kb, const Spec& b,
                   Output ob) {
    if (oa != ob || a.threads != b.threads || a.blocks != b.blocks || a.arch != b.arch ||
        a.fp_contract != b.fp_contract || a.sizes != b.sizes || a.assume != b.assume || !(a.compiler == b.compiler))
      return false;
    return ka == kb || ir::equal(*ka, *kb);  // the hash matched; equal structure, not just equal hashes
  }
  bool operator()(const MemoryKey& a, const MemoryKey& b) const {
    return same(a.kernel.get(), a.spec, a.output, b.kernel.get(), b.spec, b.output);
  }
  bool operator()(const MemoryKeyView& a, const MemoryKey& b) const {
    return same(a.kernel, *a.spec, a.output, b.kernel.get(), b.spec, b.output);
  }
  bool operator()(const MemoryKey& a, const MemoryKeyView& b) const { return (*this)(b, a); }
};

}  // namespace memory_keys
using memory_keys::MemoryKey;
using memory_keys::MemoryKeyEqual;
using memory_keys::MemoryKeyHash;
using memory_keys::MemoryKeyView;

// ---------------------------------------------------------------- configuration
std::string CacheConfig::default_dir() {
  if (const char* d = std::getenv("VANTAGE_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/vantage";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/vantage";
  return "";
}

CacheConfig CacheConfig::from_env() {
  CacheConfig c;
  c.dir = default_dir();
  if (const char* p = std::getenv("VANTAGE_CACHE_PATH")) c.read_only = split(p, ':');
  if (const char* m = std::getenv("VANTAGE_CACHE_MAX_BYTES")) {
    char* end = nullptr;
    long long v = std::strtoll(m, &end, 10);
    if (end && *end == '\0' && v > 0)
      c.max_bytes = v;
    else
      logging::get().warn("VANTAGE_CACHE_MAX_BYTES={} is not a positive byte count; using {}", m, c.max_bytes);
  }
  if (const char* t = std::getenv("VANTAGE_CACHE_TRUST"); t && *t) c.trust = split(t, ':');
  if (const char* r = std::getenv("VANTAGE_CACHE_REMOTE"); r && *r) c.remote = r;
  if (const char* k = std::getenv("VANTAGE_CACHE_SIGN_KEY"); k && *k) c.sign_key = k;
  if (const char* d = std::getenv("VANTAGE_CACHE_DISABLE"); d && std::string(d) == "1") c.disk = false;
  if (const char* a = std::getenv("VANTAGE_ARCHS")) {
    for (const auto& name : split(a, ',')) {
      if (auto arch = vantage::parse_arch(name))
        c.record_archs.push_back(*arch);
      else
        logging::get().warn("VANTAGE_ARCHS: unknown architecture '{}' ignored", name);
    }
  }
  return c;
}

// ---------------------------------------------------------------- the cache
struct KernelCache::Impl {
  CacheConfig cfg;
  std::unique_ptr<DiskStore> store;  // the writable layer, or null
  std::string problem;
  std::vector<std::unique_ptr<cache::Tier>> layers;  // the read-only tiers: directories and bundles
  std::vector<std::string> refused;                  // the layers not used, and why (for the no-NVRTC error)
  std::unique_ptr<cache::RemoteTier> remote;         // the shared tier, or null
  mutable std::shared_mutex mu;
  std::unordered_map<MemoryKey, std::shared_ptr<const CachedKernel>, MemoryKeyHash, MemoryKeyEqual> table;
  std::unordered_map<std::string, std::shared_ptr<const std::vector<char>>> artifacts;  ///< by name
  std::atomic<std::int64_t> disk_hits{0}, layer_hits{0}, compiles{0}, write_failures{0}, bad_entries{0};
  // What each tier did (stats.h), and what of it DIR/stats.json already has.
  cache::TierMeter memory_meter, layer_meter, disk_meter, remote_meter, compile_meter;
  std::mutex flush_mu;
  std::map<std::string, cache::TierCounts> flushed;
  std::atomic<std::int64_t> last_flush_ns{now_ns()};  // read without the lock on every miss

  static std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  std::vector<std::pair<std::string, const cache::TierMeter*>> meters() const {
    return {{"memory", &memory_meter},
            {"layers", &layer_meter},
            {"disk", &disk_meter},
            {"remote", &remote_meter},
            {"compile", &compile_meter}};
  }
  void flush() {
    if (!store || !store->usable()) return;
    std::map<std::string, cache::TierCounts> now, delta;
    for (const auto& [name, m] : meters()) {
      now[name] = m->snapshot();
      cache::TierCounts d = now[name] - flushed[name];
      if (!d.empty()) delta[name] = d;
    }
    last_flush_ns.store(now_ns(), std::memory_order_relaxed);
    if (delta.empty()) return;
    std::string why;
    if (cache::add_stats(store->root() / "stats.json", delta, &why))
      flushed = std::move(now);
    else
      logging::get().debug("kernel cache: statistics not saved: {}", why);
  }
  std::atomic<std::int64_t> remote_hits{0}, remote_refused{0}, remote_waits{0};
  std::once_flag warn_write, warn_read;

  void warn_write_once(const std::string& why) {
    ++write_failures;
    std::call_once(warn_write,
                   [&] { logging::get().warn("kernel cache: {}; keeping compiled kernels in memory only", why); });
  }
  void warn_read_once(const std::string& why) {
    ++bad_entries;
    std::call_once(warn_read, [&] { logging::get().warn("kernel cache: ignored a bad entry ({}); recompiling", why); });
    logging::get().debug("kernel cache: bad entry {}", why);
  }

  /// An entry of `logical` from the read-only layers (and, without NVRTC, the user's directory too);
  /// with NVRTC the exact build, without it any build of that source.
  std::optional<Entry> from_layers(const std::string& logical, const std::optional<Key>& full) {
    auto accept = [&](const std::vector<char>& bytes, const std::string& where) -> std::optional<Entry> {
      cache::ReadError err;
      auto e = cache::parse(bytes, full ? &*full : nullptr, &err);
      if (!e) {
        warn_read_once(where + ": " + cache::describe(err));
        return std::nullopt;
      }
      if (!full && !(e->key == cache::make_key({logical, e->meta["fingerprint"]}))) {
        warn_read_once(where + ": key does not match its contents");
        return std::nullopt;
      }
      return e;
    };
    std::vector<const cache::Tier*> tiers;
    for (const auto& t : layers) tiers.push_back(t.get());
    if (!full && store && store->usable()) tiers.push_back(store.get());
    for (const cache::Tier* t : tiers) {
      for (const auto& name : t->names_with_prefix(logical + ".")) {
        if (full && name != logical + "." + full->hex().substr(0, 8)) continue;
        std::vector<char> bytes;
        t->read(name, bytes);
        if (auto e = accept(bytes, t->where(name))) return e;
      }
    }
    return std::nullopt;
  }

  void refuse_remote(const std::vector<std::string>& problems) {
    for (const auto& p : problems) {
      ++remote_refused;
      logging::get().warn("kernel cache: refused {}; compiling the kernel instead", p);
    }
  }

  /// Without NVRTC: any build of `logical` the remote tier holds and will vouch for; what it refused
  /// goes to `skipped` (this lookup's, for its error: `refused` is the constructor's, read by all).
  std::optional<Entry> from_remote_any(const std::string& logical, std::vector<std::string>* skipped) {
    for (const auto& name : remote->names_with_prefix(logical + ".")) {
      std::vector<char> bytes;
      std::string why;
      auto outcome = remote->fetch(name, bytes, &why);
      if (outcome == cache::RemoteTier::Outcome::Unavailable) break;
      if (outcome == cache::RemoteTier::Outcome::Refused) {
        skipped->push_back(remote->where(name) + ": " + why);
        refuse_remote({skipped->back()});
        continue;
      }
      if (outcome != cache::RemoteTier::Outcome::Hit) continue;
      cache::ReadError err;
      auto e = cache::parse(bytes, nullptr, &err);
      if (e && e->key == cache::make_key({logical, e->meta["fingerprint"]})) return e;
      refuse_remote({remote->where(name) + ": " + (e ? "key does not match its contents" : cache::describe(err))});
    }
    return std::nullopt;
  }
};

KernelCache::KernelCache(CacheConfig config) : impl_(std::make_unique<Impl>()) {
  impl_->cfg = std::move(config);
  if (impl_->cfg.disk && !impl_->cfg.dir.empty()) {
    impl_->store = std::make_unique<DiskStore>(impl_->cfg.dir, true);
    if (!impl_->store->usable()) {
      impl_->problem = impl_->store->problem();
      logging::get().warn("kernel cache: {}; keeping compiled kernels in memory only", impl_->problem);
    } else {
      impl_->store->sweep(std::chrono::hours(1));
    }
  } else if (impl_->cfg.disk) {
    impl_->problem = "no cache directory (set VANTAGE_CACHE_DIR or HOME)";
  }
  const cache::TrustList trust = cache::TrustList::from_files(impl_->cfg.trust);
  for (const auto& p : trust.problems) logging::get().warn("kernel cache: VANTAGE_CACHE_TRUST: {}", p);
  for (const auto& layer : impl_->cfg.read_only) {
    std::error_code ec;
    std::string why;
    if (fs::is_directory(layer, ec)) {
      if (!trust.empty()) {
        why = "directory " + layer +
              ": a directory carries no signature, and VANTAGE_CACHE_TRUST accepts only "
              "bundles a key it lists signed (vantage cache export --sign KEY)";
      } else {
        auto d = std::make_unique<DiskStore>(layer, false);
        if (d->usable()) {
          impl_->layers.push_back(std::move(d));
          continue;
        }
        why = "directory " + d->problem();
      }
    } else if (auto b = cache::BundleTier::open(layer, &why, trust)) {
      impl_->layers.push_back(std::move(b));
      continue;
    }
    logging::get().warn("kernel cache: read-only layer skipped: {}", why);
    impl_->refused.push_back(why);
  }
  if (!impl_->cfg.remote.empty()) {
    std::string why;
    std::optional<cache::SecretKey> key;
    if (!impl_->cfg.sign_key.empty()) {
      key = cache::read_secret_key(impl_->cfg.sign_key, &why);
      if (!key) logging::get().warn("kernel cache: VANTAGE_CACHE_SIGN_KEY: {}; storing entries unsigned", why);
    }
    if (auto rc = cache::RemoteConfig::parse(impl_->cfg.remote, &why))
      impl_->remote = std::make_unique<cache::RemoteTier>(std::move(*rc), trust, key);
    else
      logging::get().warn("kernel cache: remote tier not used: {}", why);
  }
}

KernelCache::~KernelCache() { flush_stats(); }

void KernelCache::flush_stats() {
  std::lock_guard lock(impl_->flush_mu);
  impl_->flush();
}

KernelCache& KernelCache::global() {
  static KernelCache* cache = [] {
    auto* c = new KernelCache();  // lives to the end of the process
    std::atexit([] { KernelCache::global().flush_stats(); });
    return c;
  }();
  return *cache;
}

std::shared_ptr<const CachedKernel> KernelCache::get(const Kernel& kernel, const Spec& spec, Output output) {
  {
    std::shared_lock lock(impl_->mu);
    auto it = impl_->table.find(MemoryKeyView{&detail::KernelAccess::ir(kernel), &spec, output});
    if (it != impl_->table.end()) {
      impl_->memory_meter.hit_untimed();
      return it->second;
    }
  }
  impl_->memory_meter.miss_untimed();
  using Clock = std::chrono::steady_clock;
  if (Impl::now_ns() - impl_->last_flush_ns.load(std::memory_order_relaxed) > 10'000'000'000) {
    std::unique_lock flush(impl_->flush_mu, std::try_to_lock);
    if (flush) impl_->flush();
  }

  Specialized s = specialize_for(kernel, spec);
  auto key_for = [&](const Specialized& sp) {
    std::vector<std::string> parts = {"vantage-entry", std::to_string(cache::kFormatVersion), kCodegenVersion,
                                      sp.source};
    for (auto& o : nvrtc::canonical_options(sp.arch, output, sp.fp_contract, sp.compiler))
      parts.push_back(std::move(o));
    // What the include paths hold: a header changed makes another key.
    for (const auto& dir : sp.compiler.include_paths) parts.push_back(directory_digest(dir));
    return cache::make_key(parts);
  };
  std::string logical = key_for(s).hex();
  std::optional<Key> full;
  std::string fingerprint;
  if (nvrtc::available()) {
    fingerprint = nvrtc::fingerprint();
    full = cache::make_key({logical, fingerprint});
  }

  std::shared_ptr<CachedKernel> result;
  std::vector<std::string> skipped;  // remote entries this lookup refused, for its error
  std::string why;
  auto size_of = [](const Entry& e) { return static_cast<std::int64_t>(e.cubin.size() + e.ptx.size()); };
  const auto layers_start = Clock::now();
  if (auto e = impl_->from_layers(logical, full)) {
    result = from_entry(*e, "layer", &why);
    if (result) {
      ++impl_->layer_hits;
      impl_->layer_meter.hit(size_of(*e), Clock::now() - layers_start);
    } else {
      impl_->warn_read_once("a read-only layer's entry of kernel '" + kernel.name() + "': " + why);
    }
  }
  if (!result && !impl_->layers.empty()) impl_->layer_meter.miss(Clock::now() - layers_start);
  if (!result && !full && impl_->remote) {
    const auto t = Clock::now();
    if (auto e = impl_->from_remote_any(logical, &skipped)) {
      result = from_entry(*e, "remote", &why);
      if (result) {
        ++impl_->remote_hits;
        impl_->remote_meter.hit(size_of(*e), Clock::now() - t);
      }
    }
    if (!result) impl_->remote_meter.miss(Clock::now() - t);
  }
  // Without NVRTC, a build for an older target serves this one: its machine code where that runs on
  // the GPU (same major version), else its PTX, which the driver compiles (backend/cuda.cpp).
  for (Arch older : older_targets(spec.arch)) {
    if (result || full) break;
    Spec os = spec;
    os.arch = older;
    Specialized so;
    try {
      so = specialize_for(kernel, os);
    } catch (const CheckError&) {
      continue;  // the kernel needs what that target lacks
    }
    const std::string ol = key_for(so).hex();
    std::optional<Entry> e = impl_->from_layers(ol, std::nullopt);
    const char* origin = "layer";
    if (!e && impl_->remote) {
      e = impl_->from_remote_any(ol, &skipped);
      origin = "remote";
    }
    if (!e || !(result = from_entry(*e, origin, &why))) continue;
    logging::get().info("kernel cache: kernel '{}' has no {} build here and NVRTC is not available; using its {} build",
                        kernel.name(), arch_name(spec.arch), arch_name(older));
    s = std::move(so);
  }
  if (!result && !full) {
    std::string refused;
    for (const auto& r : impl_->refused) refused += "\n  skipped: " + r;
    for (const auto& r : skipped) refused += "\n  skipped: " + r;
    throw ToolchainError("kernel '" + kernel.name() + "' for " + arch_name(spec.arch) +
                         " is in no cache layer and NVRTC is not available here (set VANTAGE_CACHE_PATH to a "
                         "bundle that has it)" +
                         refused);
  } else if (!result) {
    Clock::duration below_disk{0};  // time spent past the directory: the remote tier and compiles
    auto produce = [&](const Specialized& sp) {
      const auto t = Clock::now();
      Compiled r = pipeline::compile_specialized(sp, output);
      ++impl_->compiles;
      impl_->compile_meter.hit(static_cast<std::int64_t>(r.cubin.size() + r.ptx.size()), Clock::now() - t);
      Entry e;
      e.key = cache::make_key({key_for(sp).hex(), fingerprint});
      e.meta = encode(sp, r, output);
      e.cubin = std::move(r.cubin);
      e.ptx = std::move(r.ptx);
      e.meta["fingerprint"] = fingerprint;
      int regs;
      std::int64_t local;
      cache::cubin_resources(e.cubin, &regs, &local);
      e.meta["registers"] = std::to_string(regs);
      e.meta["local_bytes"] = std::to_string(local);
      return e;
    };
    std::string name = logical + "." + full->hex().substr(0, 8);
    // Past the local tiers: the remote one (when configured) before a compile, filled after it.
    bool from_remote = false;
    auto remote_or_produce = [&]() -> Entry {
      const auto start = Clock::now();
      if (!impl_->remote) {
        Entry e = produce(s);
        below_disk = Clock::now() - start;
        return e;
      }
      Clock::duration compiling{0};
      auto r = cache::remote_get_or_produce(*impl_->remote, name, *full, [&] {
        const auto t = Clock::now();
        Entry e = produce(s);
        compiling = Clock::now() - t;
        return e;
      });
      below_disk = Clock::now() - start;
      impl_->refuse_remote(r.problems);
      if (r.waited) ++impl_->remote_waits;
      if (r.hit) {
        ++impl_->remote_hits;
        impl_->remote_meter.hit(size_of(*r.entry), below_disk);
      } else {
        impl_->remote_meter.miss(below_disk - compiling);
      }
      from_remote = r.hit;
      return std::move(*r.entry);
    };
    if (impl_->store && impl_->store->usable()) {
      const auto disk_start = Clock::now();
      auto r = cache::get_or_produce(*impl_->store, name, *full, remote_or_produce, impl_->cfg.lock_timeout,
                                     impl_->cfg.max_bytes);
      const auto disk_time = Clock::now() - disk_start - below_disk;
      if (r.produced)
        impl_->disk_meter.miss(disk_time);
      else
        impl_->disk_meter.hit(size_of(*r.entry), disk_time);
      if (!r.read_problem.empty()) impl_->warn_read_once(r.read_problem);
      if (!r.write_problem.empty()) impl_->warn_write_once(r.write_problem);
      if (r.lock_timed_out) logging::get().info("kernel cache: lock on {} timed out; compiled anyway", name);
      if (!r.produced) ++impl_->disk_hits;
      result = from_entry(*r.entry, !r.produced ? "disk" : from_remote ? "remote" : "compiled", &why);
      if (!result) {  // written by another version or tool, its checksum whole: replace it
        impl_->warn_read_once(impl_->store->where(name) + ": " + why);
        Entry fresh = produce(s);
        std::string problem;
        if (!impl_->store->save(name, fresh, &problem)) impl_->warn_write_once(problem);
        result = from_entry(fresh, "compiled");
      }
    } else {
      Entry e = remote_or_produce();
      result = from_entry(e, from_remote ? "remote" : "compiled", &why);
      if (!result) {  // a remote entry from another version, its signature and checksum whole
        impl_->refuse_remote({impl_->remote->where(name) + ": " + why});
        result = from_entry(produce(s), "compiled");
      }
    }
    // Record mode: the same kernel for every architecture of the fleet, into the same directory.
    for (Arch other : impl_->cfg.record_archs) {
      if (other == spec.arch || !impl_->store || !impl_->store->usable()) continue;
      Spec os = spec;
      os.arch = other;
      Specialized sp = specialize_for(kernel, os);
      std::string ol = key_for(sp).hex();
      Key ofull = cache::make_key({ol, fingerprint});
      auto r = cache::get_or_produce(
          *impl_->store, ol + "." + ofull.hex().substr(0, 8), ofull, [&] { return produce(sp); },
          impl_->cfg.lock_timeout, impl_->cfg.max_bytes);
      if (!r.write_problem.empty()) impl_->warn_write_once(r.write_problem);
    }
  }
  result->spec.source = s.source;  // entries carry no source; the specialization just made it

  std::unique_lock lock(impl_->mu);
  auto [it, inserted] =
      impl_->table.emplace(MemoryKey{detail::KernelAccess::ir_ptr(kernel), spec, output}, std::move(result));
  return it->second;
}

std::shared_ptr<const std::vector<char>> KernelCache::artifact(const std::string& kind,
                                                               const std::vector<std::string>& key_parts,
                                                               const std::function<std::vector<char>()>& produce,
                                                               std::string* origin) {
  std::vector<std::string> parts = {"vantage-artifact", std::to_string(cache::kFormatVersion), kind};
  parts.insert(parts.end(), key_parts.begin(), key_parts.end());
  Key key = cache::make_key(parts);
  std::string name = kind + "." + key.hex();
  {
    std::shared_lock lock(impl_->mu);
    if (auto it = impl_->artifacts.find(name); it != impl_->artifacts.end()) {
      impl_->memory_meter.hit_untimed();
      if (origin) *origin = "memory";
      return it->second;
    }
  }
  impl_->memory_meter.miss_untimed();
  using Clock = std::chrono::steady_clock;
  Clock::duration making{0};
  auto make = [&] {
    const auto t = Clock::now();
    Entry e;
    e.key = key;
    e.cubin = produce();
    e.meta["kind"] = kind;
    ++impl_->compiles;
    making = Clock::now() - t;
    impl_->compile_meter.hit(static_cast<std::int64_t>(e.cubin.size()), making);
    return e;
  };
  std::shared_ptr<const std::vector<char>> bytes;
  if (impl_->store && impl_->store->usable()) {
    const auto t = Clock::now();
    auto r = cache::get_or_produce(*impl_->store, name, key, make, impl_->cfg.lock_timeout, impl_->cfg.max_bytes);
    if (r.produced)
      impl_->disk_meter.miss(Clock::now() - t - making);
    else
      impl_->disk_meter.hit(static_cast<std::int64_t>(r.entry->cubin.size()), Clock::now() - t);
    if (!r.read_problem.empty()) impl_->warn_read_once(r.read_problem);
    if (!r.write_problem.empty()) impl_->warn_write_once(r.write_problem);
    if (!r.produced) ++impl_->disk_hits;
    if (origin) *origin = r.produced ? "compiled" : "disk";
    bytes = std::make_shared<const std::vector<char>>(std::move(r.entry->cubin));
  } else {
    if (origin) *origin = "compiled";
    bytes = std::make_shared<const std::vector<char>>(make().cubin);
  }
  std::unique_lock lock(impl_->mu);
  return impl_->artifacts.emplace(name, bytes).first->second;
}

std::vector<TierStats> KernelCache::tier_stats() const {
  std::vector<TierStats> out;
  for (const auto& [name, m] : impl_->meters()) {
    cache::TierCounts c = m->snapshot();
    out.push_back({name, c.hits, c.misses, c.bytes, c.latency});
  }
  return out;
}

double TierStats::percentile_ms(double p) const { return cache::percentile_ms(latency_us_log2, p); }

CacheStats KernelCache::stats() const {
  CacheStats s;
  s.memory_hits = impl_->memory_meter.snapshot().hits;
  s.disk_hits = impl_->disk_hits;
  s.layer_hits = impl_->layer_hits;
  s.compiles = impl_->compiles;
  s.write_failures = impl_->write_failures;
  s.bad_entries = impl_->bad_entries;
  s.remote_hits = impl_->remote_hits;
  s.remote_refused = impl_->remote_refused;
  s.remote_waits = impl_->remote_waits;
  return s;
}

std::string KernelCache::directory() const {
  return impl_->store && impl_->store->usable() ? impl_->store->root().string() : "";
}
std::string KernelCache::problem() const { return impl_->problem; }

// ---------------------------------------------------------------- bundles
int export_bundle(const std::string& cache_dir, const std::string& file, const std::string& key_file) {
  std::optional<cache::SecretKey> key;
  if (!key_file.empty()) {
    std::string why;
    key = cache::read_secret_key(key_file, &why);
    if (!key) throw std::runtime_error("cannot sign: " + why);
  }
  DiskStore store(cache_dir, false);
  if (!store.usable()) throw std::runtime_error("cannot export: " + store.problem());
  std::vector<std::pair<std::string, std::vector<char>>> entries;
  for (const auto& info : store.list()) {
    std::vector<char> bytes;
    cache::read_file(info.path, bytes);
    cache::ReadError err;
    if (!cache::parse(bytes, nullptr, &err)) {
      logging::get().warn("export: skipped {}: {}", info.path.string(), cache::describe(err));
      continue;
    }
    entries.emplace_back(info.name, std::move(bytes));
  }
  auto bytes = cache::write_bundle(entries, key ? &*key : nullptr);
  std::string tmp = file + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  fs::rename(tmp, file);
  return static_cast<int>(entries.size());
}

int verify_bundle(const std::string& file, std::vector<std::string>* problems) {
  std::string why;
  auto b = cache::read_bundle(file, &why);
  if (!b) {
    if (problems) problems->push_back(why);
    return 0;
  }
  int good = 0;
  for (const auto& [name, bytes] : *b) {
    cache::ReadError err;
    auto e = cache::parse(bytes, nullptr, &err);
    // Names are <logical key>.<first 8 hex digits of the full key in the header>.
    if (e && name.size() == 41 && name[32] == '.' && name.substr(33) == e->key.hex().substr(0, 8)) {
      ++good;
    } else if (problems) {
      problems->push_back(name + ": " + (e ? "name does not match its key" : cache::describe(err)));
    }
  }
  return good;
}

int import_bundle(const std::string& file, const std::string& cache_dir) {
  std::vector<std::string> problems;
  std::string why;
  auto b = cache::read_bundle(file, &why);
  if (!b) throw std::runtime_error(why);
  DiskStore store(cache_dir, true);
  if (!store.usable()) throw std::runtime_error("cannot import: " + store.problem());
  int n = 0;
  for (const auto& [name, bytes] : *b) {
    cache::ReadError err;
    auto e = cache::parse(bytes, nullptr, &err);
    if (!e) {
      logging::get().warn("import: skipped {}: {}", name, cache::describe(err));
      continue;
    }
    std::string problem;
    if (!store.save(name, *e, &problem)) throw std::runtime_error(problem);
    ++n;
  }
  return n;
}

}  // namespace vantage
