// Vantage remote cache tier: see remote.h.
#include "cache/remote.h"

#include <hiredis/hiredis.h>
#include <sodium.h>
#include <sys/time.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

#include "cache/cache.h"
#include "cache/stats.h"
#include "support/log.h"

namespace vantage::cache {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

struct FreeReply {
  void operator()(redisReply* r) const {
    if (r) freeReplyObject(r);
  }
};
using ReplyPtr = std::unique_ptr<redisReply, FreeReply>;
using Args = std::vector<std::string_view>;

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

bool is_status(const redisReply* r, std::string_view text) {
  return r && r->type == REDIS_REPLY_STATUS && std::string_view(r->str, r->len) == text;
}

std::string reply_text(const redisReply* r) { return r && r->str ? std::string(r->str, r->len) : std::string(); }

/// Decodes %XX in a URL part.
std::string unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool parse_int(std::string_view s, long long lo, long long hi, long long* out) {
  if (s.empty() || s.size() > 12) return false;
  long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

}  // namespace

// ---------------------------------------------------------------- configuration
std::optional<RemoteConfig> RemoteConfig::parse(const std::string& url, std::string* problem,
                                                const char* password_env) {
  auto fail = [&](const std::string& why) -> std::optional<RemoteConfig> {
    *problem = "VANTAGE_CACHE_REMOTE=" + url + ": " + why;
    return std::nullopt;
  };
  constexpr std::string_view kScheme = "redis://";
  std::string_view rest(url);
  if (rest.substr(0, kScheme.size()) != kScheme) return fail("not a redis:// URL (redis://HOST:PORT/DB)");
  rest.remove_prefix(kScheme.size());
  RemoteConfig c;
  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view auth = rest.substr(0, at);
    rest.remove_prefix(at + 1);
    auto colon = auth.find(':');
    if (colon == std::string_view::npos) return fail("the part before '@' is USER:PASSWORD or :PASSWORD");
    c.user = unescape(auth.substr(0, colon));
    c.password = unescape(auth.substr(colon + 1));
  }
  std::string_view hostport = rest;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    hostport = rest.substr(0, slash);
    std::string_view db = rest.substr(slash + 1);
    long long v = 0;
    if (!db.empty() && !parse_int(db, 0, 1 << 20, &v)) return fail("the database after '/' is not a number");
    c.db = static_cast<int>(v);
  }
  if (auto colon = hostport.rfind(':'); colon != std::string_view::npos) {
    long long v = 0;
    if (!parse_int(hostport.substr(colon + 1), 1, 65535, &v)) return fail("the port is not a number from 1 to 65535");
    c.port = static_cast<int>(v);
    hostport = hostport.substr(0, colon);
  }
  if (hostport.empty()) return fail("no host");
  c.host = std::string(hostport);
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    auto eq = item.find('=');
    std::string_view name = item.substr(0, eq), value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    long long v = 0;
    auto ms = [&](std::chrono::milliseconds* field) -> bool {
      if (!parse_int(value, 1, 24LL * 3600 * 1000, &v)) return false;
      *field = std::chrono::milliseconds(v);
      return true;
    };
    bool ok = true;
    if (name == "timeout_ms")
      ok = ms(&c.timeout);
    else if (name == "lease_ms")
      ok = ms(&c.lease);
    else if (name == "breaker_ms")
      ok = ms(&c.breaker);
    else if (name == "wait_ms")
      ok = ms(&c.wait);
    else if (name == "prefix" && !value.empty())
      c.prefix = unescape(value);
    else
      return fail("unknown option '" + std::string(name) +
                  "' (known: timeout_ms, lease_ms, breaker_ms, wait_ms, prefix)");
    if (!ok) return fail(std::string(name) + " is not a number of milliseconds from 1 to 86400000");
  }
  if (c.password.empty() && password_env)
    if (const char* p = std::getenv(password_env)) c.password = p;
  return c;
}

std::string RemoteConfig::url() const {
  return "redis://" + host + ":" + std::to_string(port) + "/" + std::to_string(db);
}

double RemoteCounters::percentile_ms(double p) const { return cache::percentile_ms(latency_us_buckets, p); }

// ---------------------------------------------------------------- connections
struct RemoteTier::Connection {
  redisContext* ctx = nullptr;
  std::uint64_t generation = 0;
  std::vector<Args> trailer;  ///< sent after the next commands, their replies dropped (the counters)
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() {
    if (ctx) redisFree(ctx);
  }
  /// Sends the commands (and the trailer) in one write and reads their replies; empty when the
  /// connection failed.
  std::vector<ReplyPtr> run(const std::vector<Args>& commands) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    const std::vector<Args> trailing = std::exchange(trailer, {});
    for (const auto* list : {&commands, &trailing})
      for (const Args& a : *list) {
        argv.clear();
        lens.clear();
        for (std::string_view s : a) {
          argv.push_back(s.data());
          lens.push_back(s.size());
        }
        if (redisAppendCommandArgv(ctx, static_cast<int>(argv.size()), argv.data(), lens.data()) != REDIS_OK) return {};
      }
    std::vector<ReplyPtr> out;
    for (std::size_t i = 0; i < commands.size() + trailing.size(); ++i) {
      void* r = nullptr;
      if (redisGetReply(ctx, &r) != REDIS_OK || !r) return {};
      if (i < commands.size())
        out.emplace_back(static_cast<redisReply*>(r));
      else
        freeReplyObject(r);
    }
    return out;
  }
};

RemoteTier::RemoteTier(RemoteConfig cfg, TrustList trust, std::optional<SecretKey> sign_key)
    : cfg_(std::move(cfg)), trust_(std::move(trust)), sign_key_(sign_key) {}

bool RemoteTier::answering() const { return now_ns() >= open_until_ns_.load(std::memory_order_relaxed); }

void RemoteTier::trip(const std::string& why) const {
  open_until_ns_.store(now_ns() + std::chrono::nanoseconds(cfg_.breaker).count(), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(pool_mu_);
    pool_.clear();  // after a failure every pooled connection is suspect (a restarted server closed them all)
  }
  if (!warned_.exchange(true))
    logging::get().warn(
        "kernel cache: remote tier {} {}; skipping it for {} ms (later failures are logged at debug level)", cfg_.url(),
        why, cfg_.breaker.count());
  else
    logging::get().debug("kernel cache: remote tier {} {}; skipping it for {} ms", cfg_.url(), why,
                         cfg_.breaker.count());
}

std::unique_ptr<RemoteTier::Connection> RemoteTier::take() const {
  {
    std::lock_guard lock(pool_mu_);
    if (!pool_.empty()) {
      auto c = std::move(pool_.back());
      pool_.pop_back();
      return c;
    }
  }
  auto c = std::make_unique<Connection>();
  c->generation = generation_.load(std::memory_order_relaxed);
  const timeval tv = to_timeval(cfg_.timeout);
  c->ctx = redisConnectWithTimeout(cfg_.host.c_str(), cfg_.port, tv);
  if (!c->ctx || c->ctx->err) {
    trip("cannot be reached (" + std::string(c->ctx ? c->ctx->errstr : "out of memory") + ")");
    return nullptr;
  }
  redisSetTimeout(c->ctx, tv);
  std::vector<Args> hello;
  if (!cfg_.password.empty()) {
    if (cfg_.user.empty())
      hello.push_back({"AUTH", cfg_.password});
    else
      hello.push_back({"AUTH", cfg_.user, cfg_.password});
  }
  const std::string db = std::to_string(cfg_.db);
  if (cfg_.db != 0) hello.push_back({"SELECT", db});
  if (!hello.empty()) {
    auto replies = c->run(hello);
    if (replies.size() != hello.size()) {
      trip("did not answer in " + std::to_string(cfg_.timeout.count()) + " ms");
      return nullptr;
    }
    for (const auto& r : replies)
      if (r->type == REDIS_REPLY_ERROR) {
        trip("refused the connection: " + reply_text(r.get()));
        return nullptr;
      }
  }
  return c;
}

void RemoteTier::give(std::unique_ptr<Connection> c) const {
  if (c->generation != generation_.load(std::memory_order_relaxed)) return;
  std::lock_guard lock(pool_mu_);
  pool_.push_back(std::move(c));
}

void RemoteTier::tally(const std::string& field, std::int64_t n) const {
  std::lock_guard lock(tally_mu_);
  pending_[field] += n;
}

/// Runs `f` on a pooled connection, with the counters not yet sent in the same round trip; nullopt
/// when the breaker is open or the connection failed (which opens it).
template <typename F>
auto RemoteTier::with_connection(F&& f) const {
  using R = decltype(f(std::declval<Connection&>()));
  std::optional<R> out;
  if (!answering()) return out;
  auto c = take();
  if (!c) return out;
  std::map<std::string, std::int64_t> pending;
  {
    std::lock_guard lock(tally_mu_);
    pending.swap(pending_);
  }
  const std::string stats = cfg_.prefix + "stats";
  std::vector<std::string> values;
  values.reserve(pending.size());
  for (const auto& [field, n] : pending) {
    values.push_back(std::to_string(n));
    c->trailer.push_back({"HINCRBY", stats, field, values.back()});
  }
  R r = f(*c);
  if (c->ctx->err) {
    trip(c->ctx->err == REDIS_ERR_IO && std::strstr(c->ctx->errstr, "temporarily unavailable")
             ? "did not answer in " + std::to_string(cfg_.timeout.count()) + " ms"
             : std::string("failed: ") + c->ctx->errstr);
    return out;
  }
  give(std::move(c));
  out = std::move(r);
  return out;
}

auto RemoteTier::get(const std::string& key) const {
  return with_connection([&](Connection& c) {
    auto r = c.run({{"GET", key}});
    return r.empty() ? ReplyPtr() : std::move(r[0]);
  });
}

RemoteTier::~RemoteTier() {
  // Send the counters not yet sent, if the tier still answers.
  bool pending = false;
  {
    std::lock_guard lock(tally_mu_);
    pending = !pending_.empty();
  }
  if (pending) with_connection([&](Connection& c) { return c.run({{"PING"}}).size(); });
  if (sign_key_) sodium_memzero(sign_key_->data(), sign_key_->size());
}

// ---------------------------------------------------------------- entries
std::string RemoteTier::where(const std::string& name) const { return cfg_.url() + " entry " + name; }

struct RemoteTier::Manifest {
  BundleSignature signature;
  ParsedManifest entries;
};

RemoteTier::Outcome RemoteTier::fetch(const std::string& name, std::vector<char>& bytes, std::string* problem) const {
  const auto start = Clock::now();
  const std::string key = cfg_.prefix + "entry:" + name;
  auto reply = get(key);
  if (!reply || !*reply) return Outcome::Unavailable;
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
  tally("lat:" + std::to_string(latency_bucket(us)), 1);
  const redisReply* r = reply->get();
  if (r->type == REDIS_REPLY_NIL) {
    tally("misses", 1);
    return Outcome::Miss;
  }
  auto refuse = [&](const std::string& why) {
    tally("refused", 1);
    *problem = why;
    return Outcome::Refused;
  };
  if (r->type != REDIS_REPLY_STRING) return refuse("the value is not a string (" + reply_text(r) + ")");
  std::optional<BundleSignature> sig;
  std::optional<ManifestId> listed;
  bytes = unseal(r->str, r->len, &sig, &listed);
  tally("bytes_read", static_cast<std::int64_t>(r->len));
  if (listed) {
    // Pushed from a bundle: its manifest's one signature, verified once, covers its hash.
    std::string why;
    bool unavailable = false;
    auto m = manifest(*listed, &why, &unavailable);
    if (unavailable) return Outcome::Unavailable;
    if (!m) return refuse(why);
    if (!m->entries.lists(name, bytes.data(), bytes.size()))
      return refuse("it is not the entry its manifest " + hex_digits(listed->data(), listed->size()) +
                    ", signed by key " + key_id(m->signature.key) +
                    ", lists (changed since it was signed, or stored under another name)");
    sig = m->signature;
  } else if (sig && !verify(entry_manifest(name, bytes.data(), bytes.size(), sig->hash), sig->signature, sig->key)) {
    return refuse("its signature by key " + key_id(sig->key) +
                  " does not verify (changed since it was signed, or stored under another name)");
  }
  if (!trust_.empty() && !sig)
    return refuse(
        "it is not signed, and VANTAGE_CACHE_TRUST accepts only entries a key it lists signed "
        "(VANTAGE_CACHE_SIGN_KEY on the processes that compile)");
  if (!trust_.empty() && !trust_.trusts(sig->key))
    return refuse("it is signed by key " + key_id(sig->key) + ", which VANTAGE_CACHE_TRUST does not list");
  tally("hits", 1);
  return Outcome::Hit;
}

std::shared_ptr<const RemoteTier::Manifest> RemoteTier::manifest(const ManifestId& id, std::string* problem,
                                                                 bool* unavailable) const {
  {
    std::lock_guard lock(manifests_mu_);
    if (auto it = manifests_.find(id); it != manifests_.end()) return it->second;
  }
  const std::string hex_id = hex_digits(id.data(), id.size());
  auto reply = get(cfg_.prefix + "manifest:" + hex_id);
  if (!reply || !*reply) {
    *unavailable = true;
    return nullptr;
  }
  const redisReply* r = reply->get();
  const std::string which = "its manifest " + hex_id;
  auto fail = [&](const std::string& why) {
    *problem = which + why;
    return nullptr;
  };
  if (r->type == REDIS_REPLY_NIL) return fail(" is not in the tier (evicted? push its bundle again)");
  auto stored = r->type == REDIS_REPLY_STRING ? read_signed_manifest(r->str, r->len) : std::nullopt;
  if (!stored) return fail(" is not a signed manifest");
  const auto& [text, sig] = *stored;
  if (manifest_id(text) != id) return fail(" holds another manifest");
  if (!verify(text, sig.signature, sig.key))
    return fail(": its signature by key " + key_id(sig.key) + " does not verify");
  std::string why;
  auto parsed = parse_manifest(text, &why);
  if (!parsed) return fail(": " + why);
  auto m = std::make_shared<const Manifest>(Manifest{sig, std::move(*parsed)});
  // Content-addressed, so never stale; a bounded number kept (a fleet pushes few bundles).
  constexpr std::size_t kManifestsKept = 64;
  std::lock_guard lock(manifests_mu_);
  if (manifests_.size() >= kManifestsKept) manifests_.clear();
  manifests_.emplace(id, m);
  return m;
}

bool RemoteTier::push(const std::map<std::string, std::vector<char>>& entries, const std::string& manifest_text,
                      const BundleSignature& sig, std::string* problem) {
  auto fail = [&](const std::string& why) {
    *problem = why;
    return false;
  };
  std::string why;
  auto parsed = parse_manifest(manifest_text, &why);
  if (!parsed) return fail("cannot push: " + why);
  if (!verify(manifest_text, sig.signature, sig.key))
    return fail("cannot push: the manifest's signature by key " + key_id(sig.key) + " does not verify");
  for (const auto& [name, bytes] : entries)
    if (!parsed->lists(name, bytes.data(), bytes.size()))
      return fail("cannot push: the manifest does not list entry " + name + " as it is");
  const ManifestId id = manifest_id(manifest_text);
  const std::vector<char> value = signed_manifest(manifest_text, sig);
  auto ok = with_connection([&](Connection& c) {
    auto r = c.run({{"SET", cfg_.prefix + "manifest:" + hex_digits(id.data(), id.size()),
                     std::string_view(value.data(), value.size())}});
    return r.size() == 1 && is_status(r[0].get(), "OK");
  });
  if (!ok || !*ok) return fail(ok ? cfg_.url() + ": the manifest was not stored (Redis refused the write)" : "");
  for (const auto& [name, bytes] : entries)
    if (!store_raw(name, seal_listed(bytes, id), problem)) return false;
  return true;
}

bool RemoteTier::read(const std::string& name, std::vector<char>& bytes) const {
  std::string why;
  return fetch(name, bytes, &why) == Outcome::Hit;
}

bool RemoteTier::read_raw(const std::string& name, std::vector<char>& value) const {
  const std::string key = cfg_.prefix + "entry:" + name;
  auto reply = get(key);
  if (!reply || !*reply || (*reply)->type != REDIS_REPLY_STRING) return false;
  value.assign((*reply)->str, (*reply)->str + (*reply)->len);
  return true;
}

bool RemoteTier::store_raw(const std::string& name, const std::vector<char>& value, std::string* problem) {
  const std::string key = cfg_.prefix + "entry:" + name;
  const std::string builds = cfg_.prefix + "builds:" + name.substr(0, name.find('.'));
  auto ok = with_connection([&](Connection& c) {
    auto r = c.run({{"SET", key, std::string_view(value.data(), value.size())}, {"SADD", builds, name}});
    return r.size() == 2 && is_status(r[0].get(), "OK");
  });
  if (!ok || !*ok) {
    // No answer: the breaker has logged it. An answer that is not OK (out of memory, read-only
    // replica) is worth saying.
    if (problem) *problem = ok ? where(name) + ": not stored (Redis refused the write)" : "";
    return false;
  }
  tally("stores", 1);
  tally("bytes_written", static_cast<std::int64_t>(value.size()));
  return true;
}

bool RemoteTier::store(const std::string& name, const std::vector<char>& bytes, std::string* problem) {
  return store_raw(name, seal(name, bytes, sign_key_ ? &*sign_key_ : nullptr), problem);
}

bool RemoteTier::save(const std::string& name, const Entry& e, std::string* problem) {
  return store(name, serialize(e), problem);
}

std::vector<std::string> RemoteTier::names_with_prefix(const std::string& prefix) const {
  std::vector<std::string> out;
  if (!prefix.empty() && prefix.back() == '.' && prefix.find('.') == prefix.size() - 1) {
    // One source's builds: the set the writers keep.
    const std::string key = cfg_.prefix + "builds:" + prefix.substr(0, prefix.size() - 1);
    auto reply = with_connection([&](Connection& c) {
      auto r = c.run({{"SMEMBERS", key}});
      return r.empty() ? ReplyPtr() : std::move(r[0]);
    });
    if (reply && *reply && (*reply)->type == REDIS_REPLY_ARRAY)
      for (std::size_t i = 0; i < (*reply)->elements; ++i) out.push_back(reply_text((*reply)->element[i]));
    std::sort(out.begin(), out.end());
    return out;
  }
  for (const auto& info : list())
    if (info.name.rfind(prefix, 0) == 0) out.push_back(info.name);
  return out;
}

bool RemoteTier::scan(const std::string& pattern, const std::function<void(std::vector<std::string>&)>& batch) const {
  std::string cursor = "0";
  do {
    auto reply = with_connection([&](Connection& c) {
      auto r = c.run({{"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}});
      return r.empty() ? ReplyPtr() : std::move(r[0]);
    });
    if (!reply || !*reply || (*reply)->type != REDIS_REPLY_ARRAY || (*reply)->elements != 2) return false;
    cursor = reply_text((*reply)->element[0]);
    const redisReply* keys = (*reply)->element[1];
    std::vector<std::string> names;
    for (std::size_t i = 0; i < keys->elements; ++i) names.push_back(reply_text(keys->element[i]));
    if (!names.empty()) batch(names);
  } while (cursor != "0");
  return true;
}

std::vector<EntryInfo> RemoteTier::list() const {
  std::vector<EntryInfo> out;
  const std::size_t skip = cfg_.prefix.size() + 6;  // "PREFIX entry:"
  scan(cfg_.prefix + "entry:*", [&](std::vector<std::string>& keys) {
    std::vector<Args> lens;
    for (const auto& k : keys) lens.push_back({"STRLEN", k});
    auto sizes = with_connection([&](Connection& c) { return c.run(lens); });
    for (std::size_t i = 0; i < keys.size(); ++i) {
      EntryInfo e;
      e.name = keys[i].substr(skip);
      e.path = where(e.name);
      if (sizes && i < sizes->size() && (*sizes)[i]) e.bytes = (*sizes)[i]->integer;
      out.push_back(std::move(e));
    }
  });
  std::sort(out.begin(), out.end(), [](const EntryInfo& a, const EntryInfo& b) { return a.name < b.name; });
  return out;
}

std::int64_t RemoteTier::clear() {
  std::int64_t removed = 0;
  scan(cfg_.prefix + "*", [&](std::vector<std::string>& keys) {
    Args del = {"DEL"};
    for (const auto& k : keys) del.push_back(k);
    auto n = with_connection([&](Connection& c) {
      auto r = c.run({del});
      return r.empty() ? std::int64_t{0} : static_cast<std::int64_t>(r[0]->integer);
    });
    if (n) removed += *n;
  });
  return removed;
}

std::optional<RemoteCounters> RemoteTier::counters() const {
  const std::string stats = cfg_.prefix + "stats";
  auto reply = with_connection([&](Connection& c) {
    auto r = c.run({{"HGETALL", stats}});
    return r.empty() ? ReplyPtr() : std::move(r[0]);
  });
  if (!reply || !*reply || (*reply)->type != REDIS_REPLY_ARRAY) return std::nullopt;
  RemoteCounters out;
  out.latency_us_buckets.assign(kLatencyBuckets, 0);
  for (std::size_t i = 0; i + 1 < (*reply)->elements; i += 2) {
    const std::string field = reply_text((*reply)->element[i]);
    const std::int64_t v = std::atoll(reply_text((*reply)->element[i + 1]).c_str());
    if (field == "hits") out.hits = v;
    if (field == "misses") out.misses = v;
    if (field == "refused") out.refused = v;
    if (field == "stores") out.stores = v;
    if (field == "bytes_read") out.bytes_read = v;
    if (field == "bytes_written") out.bytes_written = v;
    if (field.rfind("lat:", 0) == 0) {
      const int b = std::atoi(field.c_str() + 4);
      if (b >= 0 && b < kLatencyBuckets) out.latency_us_buckets[static_cast<std::size_t>(b)] += v;
    }
  }
  for (const auto& e : list()) {
    ++out.entries;
    out.entry_bytes += e.bytes;
  }
  return out;
}

// ---------------------------------------------------------------- leases
class RemoteLease final : public Tier::Lease {
 public:
  RemoteLease(const RemoteTier* tier, std::string name, std::string token)
      : tier_(tier), name_(std::move(name)), token_(std::move(token)) {}
  ~RemoteLease() override { tier_->release(name_, token_); }

 private:
  const RemoteTier* tier_;
  std::string name_, token_;
};

void RemoteTier::release(const std::string& name, const std::string& token) const {
  // Deletes the lease only if it is still this holder's: one that expired and was taken by another
  // process stays.
  static constexpr std::string_view kScript =
      "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
  const std::string key = cfg_.prefix + "lease:" + name;
  with_connection([&](Connection& c) { return c.run({{"EVAL", kScript, "1", key, token}}).size(); });
}

std::unique_ptr<Tier::Lease> RemoteTier::lease(const std::string& name, std::chrono::milliseconds timeout) const {
  unsigned char raw[16];
  randombytes_buf(raw, sizeof raw);
  std::string token(2 * sizeof raw + 1, '\0');
  sodium_bin2hex(token.data(), token.size(), raw, sizeof raw);
  token.pop_back();
  const std::string key = cfg_.prefix + "lease:" + name, expiry = std::to_string(cfg_.lease.count());
  const auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    auto got = with_connection([&](Connection& c) {
      auto r = c.run({{"SET", key, token, "NX", "PX", expiry}});
      return !r.empty() && is_status(r[0].get(), "OK");
    });
    if (!got) return nullptr;  // no answer: go on without the tier
    if (*got) return std::make_unique<RemoteLease>(this, name, token);
    if (Clock::now() + pause > deadline) return nullptr;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

// ---------------------------------------------------------------- the remote path of a lookup
RemoteResult remote_get_or_produce(RemoteTier& tier, const std::string& name, const Key& key,
                                   const std::function<Entry()>& producer) {
  RemoteResult r;
  auto note = [&](std::string problem) {  // the look after the lease finds the same bad value again
    if (std::find(r.problems.begin(), r.problems.end(), problem) == r.problems.end())
      r.problems.push_back(std::move(problem));
  };
  auto look = [&] {
    std::vector<char> bytes;
    std::string why;
    switch (tier.fetch(name, bytes, &why)) {
      case RemoteTier::Outcome::Hit: {
        ReadError err = ReadError::None;
        r.entry = parse(bytes, &key, &err);
        if (r.entry) {
          r.hit = true;
          return true;
        }
        note(tier.where(name) + ": " + describe(err));
        return false;
      }
      case RemoteTier::Outcome::Refused: note(tier.where(name) + ": " + why); return false;
      default: return false;
    }
  };
  if (look()) return r;
  const auto start = Clock::now();
  const std::unique_ptr<Tier::Lease> lease = tier.lease(name, tier.config().wait);
  r.waited = Clock::now() - start > std::chrono::milliseconds(5);
  if (lease && look()) return r;  // another process may have stored it between the look and the lease
  r.entry = producer();
  r.produced = true;
  std::string why;
  if (!tier.save(name, *r.entry, &why) && !why.empty()) r.problems.push_back(why);
  return r;
}

}  // namespace vantage::cache
