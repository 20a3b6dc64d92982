// `vantage cache ...`: look at, check, trim, clear, export and import the kernel cache.
#include "tools/cache_cli.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "cache/remote.h"
#include "cache/sign.h"
#include "cache/stats.h"
#include "cache/tier.h"
#include "vantage/cache.hpp"

namespace vantage::tools {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHelp = R"(vantage cache - the on-disk kernel cache

Usage:
  vantage cache path [--json]          print the cache directory in use
  vantage cache ls [--json]            list entries: key, kernel, arch, size, last use
  vantage cache stat [--json]          entries, bytes, cap, directory state
  vantage cache stats [--json]         per tier: hits, misses, compiles avoided, bytes, latency percentiles
  vantage cache verify [FILE] [--json] read and check every entry (of the directory, or of bundle FILE)
  vantage cache prune [--max-bytes N]  remove bad entries, evict least recently used entries down to N bytes
                                       (default: VANTAGE_CACHE_MAX_BYTES, else 2 GiB)
  vantage cache clear                  remove every entry
  vantage cache export FILE [--sign KEY]
                                       write every entry into one bundle file (signed with KEY)
  vantage cache import FILE            check a bundle and copy its entries into the cache
  vantage cache keygen NAME            make a signing key pair: NAME.key (secret) and NAME.pub
  vantage cache push FILE [--sign KEY] copy a bundle's entries into the remote tier ($VANTAGE_CACHE_REMOTE)
  vantage cache pull FILE [--sign KEY] write the remote tier's entries into a bundle file
Every command takes --json for machine-readable output.
  vantage cache COMMAND --help         help for one command

The directory is $VANTAGE_CACHE_DIR, else $XDG_CACHE_HOME/vantage, else ~/.cache/vantage.
Read-only layers ($VANTAGE_CACHE_PATH) are consulted first by programs; these commands act on the
writable directory only, but `vantage cache verify FILE` checks a bundle file.
With $VANTAGE_CACHE_TRUST (':'-separated files of public keys), programs and import use a bundle only
when a listed key signed it, and no read-only directory; programs use an entry of the remote tier
only when a listed key signed it.
)";

/// Each command's own help: what it does, its options, what it prints and its exit status.
struct CommandHelp {
  const char* name;
  const char* text;
};
constexpr CommandHelp kCommandHelp[] = {
    {"path", R"(vantage cache path [--json] - print the cache directory in use

The directory is $VANTAGE_CACHE_DIR, else $XDG_CACHE_HOME/vantage, else ~/.cache/vantage. It need not
exist yet. --json prints {"directory": "..."}.
)"},
    {"ls", R"(vantage cache ls [--json] - list the entries of the cache directory

One line per entry: its key, the kernel's entry point, the architecture, its size and when it was last
used (the least recently used go first when the cache is over its cap). An entry that fails its
checks is listed with BAD and the reason. --json prints an array of objects with the same fields.
)"},
    {"stat", R"(vantage cache stat [--json] - summarize the cache directory

Prints the directory, the number of entries and their bytes, the soft cap (VANTAGE_CACHE_MAX_BYTES,
default 2 GiB) and how many read-only layers VANTAGE_CACHE_PATH names.
)"},
    {"stats", R"(vantage cache stats [--reset] [--json] - what each tier did for the programs that used the cache

Per tier (memory: the in-process table; layers: read-only directories and bundles; disk: this
directory; remote: the Redis tier; compile: NVRTC), summed over every program that used this
directory since the counts were reset: lookups it answered (hits: compiles avoided), lookups it
passed on (misses), the bytes it gave, and the 50th, 90th and 99th percentiles of its lookups' time
(within a factor of two: the counts are kept by powers of two of microseconds; the in-process
table's hits are not timed). A program adds its counts when its cache closes or it exits, and every
ten seconds while it misses. With VANTAGE_CACHE_REMOTE, the fleet's counts kept in Redis follow:
hits, misses, refused values, stores, entries and bytes held, lookup percentiles. --reset clears
this directory's counts. --json prints one object for monitoring.
)"},
    {"verify", R"(vantage cache verify [FILE] [--json] - read and check every entry

Reads each entry of the cache directory and checks its header, format version, key and checksum. Prints
each bad entry and a summary ("N entries, M bad"); exits 1 when any entry is bad (remove them with
vantage cache prune). With FILE, checks that bundle instead: its framing, its signature when it has
one (and, under VANTAGE_CACHE_TRUST, that a listed key made it) and every entry; the summary says
which key signed it.
)"},
    {"prune", R"(vantage cache prune [--max-bytes N] [--json] - trim the cache directory

Removes entries that fail their checks, evicts the least recently used entries until at most N bytes
remain (default: VANTAGE_CACHE_MAX_BYTES, else 2 GiB), and removes temporary files and lock files left
by processes that died while compiling.
)"},
    {"clear", R"(vantage cache clear [--json] - remove every entry, temporary file and lock file

Kernels are compiled again when next used. Read-only layers are never touched.
)"},
    {"export", R"(vantage cache export FILE [--sign KEY] [--json] - write every entry into one bundle file

The bundle carries the compiled kernels of this directory to hosts that should never run NVRTC:
point VANTAGE_CACHE_PATH at it there, or import it. Entries that fail their checks are left out.
--sign KEY signs it with the secret key KEY (from vantage cache keygen): an Ed25519 signature of
the SHA-256 hashes of its entries. Hosts whose VANTAGE_CACHE_TRUST lists the public key use it;
a bundle changed after signing, unsigned, or signed by another key is refused there, with a warning
that names the bundle and the key.
)"},
    {"keygen", R"(vantage cache keygen NAME [--json] - make a key pair for signing bundles

Writes NAME.key (the secret key, mode 0600: keep it where bundles are built, in CI) and NAME.pub (the
public key: list it in a file VANTAGE_CACHE_TRUST names on the hosts that use the bundles). Refuses to
overwrite either file. Prints the key's id (the first 16 hex digits of the public key), which
warnings use to name it.
)"},
    {"import", R"(vantage cache import FILE [--json] - check a bundle and copy its entries into the cache

Verifies the bundle's framing, its signature when it has one (and, under VANTAGE_CACHE_TRUST, that a
listed key made it) and every entry's checksum first; nothing is copied when any is bad (the problems
are printed and the exit status is 1).
)"},
    {"push", R"(vantage cache push FILE [--sign KEY] [--json] - copy a bundle's entries into the remote tier

Checks the bundle as import does (framing, signature, VANTAGE_CACHE_TRUST, every entry) and stores each
entry in the Redis tier VANTAGE_CACHE_REMOTE names, so that a fleet finds them without compiling. A
signed bundle keeps its publisher's signature: its manifest (every entry's name, size and hash) and
that one signature go to the tier beside the entries, and no secret key is needed to push it. With
--sign KEY (else VANTAGE_CACHE_SIGN_KEY) the entries are pushed under a new manifest KEY signs instead.
A server verifies a manifest's signature once and each entry it fetches by its hash alone; under a
trust list it uses only entries whose manifest a listed key signed. Prints how many were stored;
exits 1 when the bundle is refused or the tier does not answer.
)"},
    {"pull", R"(vantage cache pull FILE [--sign KEY] [--json] - write the remote tier's entries into a bundle

Reads every entry of the Redis tier VANTAGE_CACHE_REMOTE names, checks each (its signature, under
VANTAGE_CACHE_TRUST a listed key, its checksum and key) and writes the good ones into the bundle FILE,
signed with KEY when given. Refused entries are named and left out. Exits 1 when the tier does not
answer.
)"},
};

const char* command_help(const std::string& cmd) {
  for (const auto& h : kCommandHelp)
    if (cmd == h.name) return h.text;
  return nullptr;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string when(fs::file_time_type t) {
  auto sys = std::chrono::time_point_cast<std::chrono::system_clock::duration>(t - fs::file_time_type::clock::now() +
                                                                               std::chrono::system_clock::now());
  std::time_t tt = std::chrono::system_clock::to_time_t(sys);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::gmtime(&tt));
  return buf;
}

bool flag(const std::vector<std::string>& args, const char* name) {
  for (const auto& a : args)
    if (a == name) return true;
  return false;
}

struct Row {
  cache::EntryInfo info;
  std::optional<cache::Entry> entry;
  cache::ReadError error = cache::ReadError::None;
};

std::vector<Row> rows(const cache::DiskStore& store) {
  std::vector<Row> out;
  for (const auto& info : store.list()) {
    Row r{info, std::nullopt, cache::ReadError::None};
    std::vector<char> bytes;
    cache::read_file(info.path, bytes);
    r.entry = cache::parse(bytes, nullptr, &r.error);
    out.push_back(std::move(r));
  }
  return out;
}

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "vantage cache: %s (see vantage cache --help)\n", msg.c_str());
  return 2;
}

/// `stats`: the tiers' counts in the directory's stats.json, and the fleet's in Redis.
int stats_command(const std::vector<std::string>& rest, const CacheConfig& cfg, bool json) {
  const fs::path file = fs::path(cfg.dir) / "stats.json";
  if (flag(rest, "--reset")) {
    std::error_code ec;
    fs::remove(file, ec);
    if (json)
      std::printf("{\"reset\": \"%s\"}\n", json_escape(file.string()).c_str());
    else
      std::printf("reset %s\n", file.c_str());
    return 0;
  }
  std::string why;
  auto local = cache::read_stats(file, &why);
  if (!local) {
    std::fprintf(stderr, "vantage cache stats: %s (vantage cache stats --reset starts again)\n", why.c_str());
    return 1;
  }
  std::optional<cache::RemoteCounters> fleet;
  std::string remote_url;
  if (!cfg.remote.empty()) {
    auto rc = cache::RemoteConfig::parse(cfg.remote, &why);
    if (!rc) {
      std::fprintf(stderr, "vantage cache stats: %s\n", why.c_str());
      return 1;
    }
    if (rc->timeout < std::chrono::milliseconds(2000)) rc->timeout = std::chrono::milliseconds(2000);
    remote_url = rc->url();
    fleet = cache::RemoteTier(*rc, {}, std::nullopt).counters();
    if (!fleet) std::fprintf(stderr, "vantage cache stats: the remote tier %s did not answer\n", remote_url.c_str());
  }
  const char* order[] = {"memory", "layers", "disk", "remote", "compile"};
  if (json) {
    std::printf("{\"directory\": \"%s\", \"flushes\": %lld, \"tiers\": [", json_escape(cfg.dir).c_str(),
                static_cast<long long>(local->flushes));
    bool first = true;
    for (const char* t : order) {
      const cache::TierCounts c = local->tiers.count(t) ? local->tiers.at(t) : cache::TierCounts{};
      auto pct = [&](double p) {
        double v = cache::percentile_ms(c.latency, p);
        return v < 0 ? std::string("null") : std::to_string(v);
      };
      std::printf(
          "%s\n  {\"tier\": \"%s\", \"hits\": %lld, \"misses\": %lld, \"compiles_avoided\": %lld, \"bytes\": "
          "%lld, \"p50_ms\": %s, \"p90_ms\": %s, \"p99_ms\": %s}",
          first ? "" : ",", t, static_cast<long long>(c.hits), static_cast<long long>(c.misses),
          static_cast<long long>(std::string(t) == "compile" ? 0 : c.hits), static_cast<long long>(c.bytes),
          pct(50).c_str(), pct(90).c_str(), pct(99).c_str());
      first = false;
    }
    std::printf("\n], \"fleet\": ");
    if (fleet) {
      auto pct = [&](double p) {
        double v = fleet->percentile_ms(p);
        return v < 0 ? std::string("null") : std::to_string(v);
      };
      std::printf(
          "{\"remote\": \"%s\", \"hits\": %lld, \"misses\": %lld, \"refused\": %lld, \"stores\": %lld, "
          "\"entries\": %lld, \"entry_bytes\": %lld, \"bytes_read\": %lld, \"bytes_written\": %lld, \"p50_ms\": %s, "
          "\"p90_ms\": %s, \"p99_ms\": %s}}\n",
          remote_url.c_str(), static_cast<long long>(fleet->hits), static_cast<long long>(fleet->misses),
          static_cast<long long>(fleet->refused), static_cast<long long>(fleet->stores),
          static_cast<long long>(fleet->entries), static_cast<long long>(fleet->entry_bytes),
          static_cast<long long>(fleet->bytes_read), static_cast<long long>(fleet->bytes_written), pct(50).c_str(),
          pct(90).c_str(), pct(99).c_str());
    } else {
      std::printf("null}\n");
    }
    return cfg.remote.empty() || fleet ? 0 : 1;
  }
  std::printf("%s: counts of %lld cache close%s\n", cfg.dir.c_str(), static_cast<long long>(local->flushes),
              local->flushes == 1 ? "" : "s");
  std::printf("%-8s %10s %10s %17s %12s %8s %8s %8s\n", "TIER", "HITS", "MISSES", "COMPILES AVOIDED", "BYTES", "P50 MS",
              "P90 MS", "P99 MS");
  for (const char* t : order) {
    const cache::TierCounts c = local->tiers.count(t) ? local->tiers.at(t) : cache::TierCounts{};
    auto pct = [&](double p) {
      double v = cache::percentile_ms(c.latency, p);
      char buf[32];
      std::snprintf(buf, sizeof buf, v < 0 ? "-" : "%.3f", v);
      return std::string(buf);
    };
    const bool compile = std::string(t) == "compile";
    std::printf("%-8s %10lld %10s %17s %12lld %8s %8s %8s\n", t, static_cast<long long>(c.hits),
                compile ? "-" : std::to_string(c.misses).c_str(), compile ? "-" : std::to_string(c.hits).c_str(),
                static_cast<long long>(c.bytes), pct(50).c_str(), pct(90).c_str(), pct(99).c_str());
  }
  if (fleet) {
    std::printf(
        "fleet %s: %lld hits, %lld misses, %lld refused, %lld stores; holds %lld entries (%lld bytes); lookups p50 "
        "%.3f, p90 %.3f, p99 %.3f ms\n",
        remote_url.c_str(), static_cast<long long>(fleet->hits), static_cast<long long>(fleet->misses),
        static_cast<long long>(fleet->refused), static_cast<long long>(fleet->stores),
        static_cast<long long>(fleet->entries), static_cast<long long>(fleet->entry_bytes), fleet->percentile_ms(50),
        fleet->percentile_ms(90), fleet->percentile_ms(99));
  }
  return cfg.remote.empty() || fleet ? 0 : 1;
}

/// `push` and `pull`: bundles to and from the remote tier.
int remote_command(const std::string& cmd, const std::vector<std::string>& rest, const CacheConfig& cfg, bool json) {
  std::vector<std::string> files;
  std::string key_file = cfg.sign_key;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == "--sign") {
      if (i + 1 >= rest.size()) return usage_error("--sign needs a secret key file (vantage cache keygen NAME)");
      key_file = rest[++i];
    } else if (rest[i].rfind("--", 0) != 0) {
      files.push_back(rest[i]);
    }
  }
  if (files.size() != 1) return usage_error(cmd + " takes one FILE");
  if (cfg.remote.empty())
    return usage_error(cmd + " needs the remote tier: set VANTAGE_CACHE_REMOTE=redis://HOST:PORT/DB");
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "vantage cache %s: %s\n", cmd.c_str(), why.c_str());
    return 1;
  };
  std::string why;
  std::optional<cache::SecretKey> key;
  if (!key_file.empty() && !(key = cache::read_secret_key(key_file, &why))) return fail("cannot sign: " + why);
  auto rc = cache::RemoteConfig::parse(cfg.remote, &why);
  if (!rc) return fail(why);
  // Commands may wait longer than a launch would.
  if (rc->timeout < std::chrono::milliseconds(2000)) rc->timeout = std::chrono::milliseconds(2000);
  const cache::TrustList trust = cache::TrustList::from_files(cfg.trust);
  cache::RemoteTier tier(*rc, trust, key);
  if (cmd == "push") {
    if (!cache::BundleTier::open(files[0], &why, trust)) return fail(why);
    std::vector<std::string> problems;
    verify_bundle(files[0], &problems);
    for (const auto& p : problems) std::fprintf(stderr, "vantage cache push: %s\n", p.c_str());
    if (!problems.empty()) return 1;
    std::optional<cache::BundleSignature> sig;
    auto entries = cache::read_bundle(files[0], &why, &sig);
    if (!entries) return fail(why);
    // One manifest and one signature for the whole push: the bundle's own, or a new one by KEY.
    std::string manifest;
    if (key) {
      manifest = cache::manifest(*entries);
      sig = cache::sign_manifest(manifest, *key);
    } else if (sig) {
      manifest = cache::manifest(*entries, sig->hash);
    }
    const bool pushed = sig ? tier.push(*entries, manifest, *sig, &why) : [&] {
      for (const auto& [name, bytes] : *entries)
        if (!tier.store(name, bytes, &why)) return false;
      return true;
    }();
    if (!pushed) return fail(why.empty() ? "the remote tier " + rc->url() + " did not answer" : why);
    const int n = static_cast<int>(entries->size());
    const std::string signer = sig ? cache::key_id(sig->key) : "";
    if (json)
      std::printf("{\"pushed\": %d, \"remote\": \"%s\", \"signed\": %s, \"key\": \"%s\"}\n", n, rc->url().c_str(),
                  sig ? "true" : "false", signer.c_str());
    else
      std::printf("pushed %d entr%s to %s%s\n", n, n == 1 ? "y" : "ies", rc->url().c_str(),
                  sig ? (", under one manifest signed by key " + signer).c_str() : ", unsigned");
    return 0;
  }
  std::vector<std::pair<std::string, std::vector<char>>> good;
  int refused = 0;
  for (const auto& info : tier.list()) {
    std::vector<char> bytes;
    auto outcome = tier.fetch(info.name, bytes, &why);
    cache::ReadError err = cache::ReadError::None;
    if (outcome == cache::RemoteTier::Outcome::Hit) {
      auto e = cache::parse(bytes, nullptr, &err);
      if (e && info.name.size() == 41 && info.name.substr(33) == e->key.hex().substr(0, 8)) {
        good.emplace_back(info.name, std::move(bytes));
        continue;
      }
      why = e ? "name does not match its key" : cache::describe(err);
    } else if (outcome != cache::RemoteTier::Outcome::Refused) {
      continue;
    }
    ++refused;
    std::fprintf(stderr, "vantage cache pull: refused %s: %s\n", tier.where(info.name).c_str(), why.c_str());
  }
  if (!tier.answering()) return fail("the remote tier " + rc->url() + " did not answer");
  auto bytes = cache::write_bundle(good, key ? &*key : nullptr);
  const std::string tmp = files[0] + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return fail("cannot write " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, files[0], ec);
  if (ec) return fail("cannot write " + files[0] + ": " + ec.message());
  if (json)
    std::printf("{\"pulled\": %zu, \"refused\": %d, \"file\": \"%s\"}\n", good.size(), refused,
                json_escape(files[0]).c_str());
  else
    std::printf("pulled %zu entr%s from %s into %s%s%s\n", good.size(), good.size() == 1 ? "y" : "ies",
                rc->url().c_str(), files[0].c_str(), key ? ", signed" : "",
                refused ? (", " + std::to_string(refused) + " refused").c_str() : "");
  return 0;
}

/// What a command takes besides --json and --help: options without a value, options with one, and
/// at most how many operands (files or names; a missing one is the command's own to name).
struct Grammar {
  std::vector<std::string> flags, valued;
  std::size_t max_operands = 0;
};

const std::map<std::string, Grammar>& grammars() {
  static const std::map<std::string, Grammar> g = {
      {"path", {}},
      {"ls", {}},
      {"stat", {}},
      {"stats", {{"--reset"}, {}, 0}},
      {"verify", {{}, {}, 1}},
      {"prune", {{}, {"--max-bytes"}, 0}},
      {"clear", {}},
      {"export", {{}, {"--sign"}, 1}},
      {"import", {{}, {}, 1}},
      {"keygen", {{}, {}, 1}},
      {"push", {{}, {"--sign"}, 1}},
      {"pull", {{}, {"--sign"}, 1}},
  };
  return g;
}

/// An option the command does not take, or operands it does not take, refused before it acts: a
/// mistyped option to `clear` or `prune` must not run the command as if it were not there.
std::optional<std::string> misuse(const std::string& cmd, const std::vector<std::string>& rest) {
  auto it = grammars().find(cmd);
  if (it == grammars().end()) return "unknown command '" + cmd + "'";
  const Grammar& g = it->second;
  auto in = [](const std::vector<std::string>& v, const std::string& a) {
    return std::find(v.begin(), v.end(), a) != v.end();
  };
  std::size_t operands = 0;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    const std::string& a = rest[i];
    if (a == "--json" || in(g.flags, a)) continue;
    if (in(g.valued, a)) {
      ++i;  // its value (a missing one is the command's to name)
      continue;
    }
    if (a.size() > 1 && a[0] == '-') return cmd + " does not take the option '" + a + "'";
    if (++operands > g.max_operands)
      return cmd + (g.max_operands == 0 ? " takes no FILE or NAME" : " takes one FILE or NAME") + ": '" + a +
             "' is one too many";
  }
  return std::nullopt;
}

}  // namespace

int cache_main(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kHelp, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string& cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (flag(rest, "--help") || flag(rest, "-h")) {
    const char* help = command_help(cmd);
    if (!help) return usage_error("unknown command '" + cmd + "'");
    std::fputs(help, stdout);
    return 0;
  }
  if (auto why = misuse(cmd, rest)) return usage_error(*why);
  bool json = flag(rest, "--json");
  CacheConfig cfg = CacheConfig::from_env();
  if (cfg.dir.empty()) return usage_error("no cache directory: set VANTAGE_CACHE_DIR or HOME");

  if (cmd == "keygen") {
    std::vector<std::string> names;
    for (const auto& a : rest)
      if (a.rfind("--", 0) != 0) names.push_back(a);
    if (names.size() != 1) return usage_error("keygen takes one NAME (it writes NAME.key and NAME.pub)");
    try {
      const std::string id = cache::key_id(cache::write_key_pair(names[0]));
      if (json)
        std::printf("{\"secret\": \"%s.key\", \"public\": \"%s.pub\", \"id\": \"%s\"}\n", json_escape(names[0]).c_str(),
                    json_escape(names[0]).c_str(), id.c_str());
      else
        std::printf("key %s: secret %s.key, public %s.pub\n", id.c_str(), names[0].c_str(), names[0].c_str());
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "vantage cache keygen: %s\n", e.what());
      return 1;
    }
  }
  if (cmd == "path") {
    if (json)
      std::printf("{\"directory\": \"%s\"}\n", json_escape(cfg.dir).c_str());
    else
      std::printf("%s\n", cfg.dir.c_str());
    return 0;
  }
  std::vector<std::string> operands;
  for (const auto& a : rest)
    if (a.rfind("--", 0) != 0) operands.push_back(a);
  if (cmd == "verify" && operands.size() == 1) {  // a bundle file
    const std::string& file = operands[0];
    std::string why;
    auto tier = cache::BundleTier::open(file, &why, cache::TrustList::from_files(cfg.trust));
    if (!tier) {
      if (json)
        std::printf("{\"bundle\": \"%s\", \"ok\": false, \"problem\": \"%s\"}\n", json_escape(file).c_str(),
                    json_escape(why).c_str());
      else
        std::fprintf(stderr, "vantage cache verify: %s\n", why.c_str());
      return 1;
    }
    std::vector<std::string> problems;
    const int good = verify_bundle(file, &problems);
    const std::string signer = tier->signer() ? cache::key_id(*tier->signer()) : "";
    if (json) {
      std::printf("{\"bundle\": \"%s\", \"ok\": %s, \"entries\": %d, \"bad\": %zu, \"signed_by\": %s}\n",
                  json_escape(file).c_str(), problems.empty() ? "true" : "false", good, problems.size(),
                  signer.empty() ? "null" : ("\"" + signer + "\"").c_str());
    } else {
      for (const auto& p : problems) std::printf("BAD  %s\n", p.c_str());
      std::printf(
          "%s: %d entries, %zu bad, %s\n", file.c_str(), good, problems.size(),
          signer.empty()
              ? "unsigned"
              : ("signed by key " + signer + (cfg.trust.empty() ? "" : ", which VANTAGE_CACHE_TRUST lists")).c_str());
    }
    return problems.empty() ? 0 : 1;
  }
  if (cmd == "push" || cmd == "pull") return remote_command(cmd, rest, cfg, json);
  if (cmd == "stats") return stats_command(rest, cfg, json);
  cache::DiskStore store(cfg.dir, true);
  if (!store.usable() && cmd != "export") {
    std::fprintf(stderr, "vantage cache: %s\n", store.problem().c_str());
    return 1;
  }
  if (cmd == "ls" || cmd == "verify") {
    auto all = rows(store);
    int bad = 0;
    if (json) std::printf("[");
    bool first = true;
    if (!json && cmd == "ls") std::printf("%-41s %-28s %-7s %9s  %s\n", "KEY", "KERNEL", "ARCH", "BYTES", "LAST USED");
    for (const auto& r : all) {
      bool ok = r.entry.has_value();
      if (!ok) ++bad;
      std::string kernel = ok && r.entry->meta.count("entry") ? r.entry->meta.at("entry") : "?";
      std::string arch = ok && r.entry->meta.count("arch") ? r.entry->meta.at("arch") : "?";
      if (json) {
        std::printf(
            "%s\n  {\"key\": \"%s\", \"kernel\": \"%s\", \"arch\": \"%s\", \"bytes\": %lld, \"last_used\": \"%s\", "
            "\"ok\": %s, \"problem\": \"%s\"}",
            first ? "" : ",", r.info.name.c_str(), json_escape(kernel).c_str(), arch.c_str(),
            static_cast<long long>(r.info.bytes), when(r.info.used).c_str(), ok ? "true" : "false",
            ok ? "" : cache::describe(r.error));
        first = false;
      } else if (cmd == "ls") {
        std::printf("%-41s %-28s %-7s %9lld  %s%s\n", r.info.name.c_str(), kernel.c_str(), arch.c_str(),
                    static_cast<long long>(r.info.bytes), when(r.info.used).c_str(),
                    ok ? "" : (std::string("  BAD: ") + cache::describe(r.error)).c_str());
      } else if (!ok) {
        std::printf("BAD  %s: %s\n", r.info.path.c_str(), cache::describe(r.error));
      }
    }
    if (json) std::printf("%s]\n", all.empty() ? "" : "\n");
    if (!json && cmd == "verify")
      std::printf("%zu entries, %d bad%s\n", all.size(), bad, bad ? " (remove them with: vantage cache prune)" : "");
    return cmd == "verify" && bad ? 1 : 0;
  }
  if (cmd == "stat") {
    auto all = store.list();
    std::int64_t total = 0;
    for (const auto& e : all) total += e.bytes;
    if (json) {
      std::printf(
          "{\"directory\": \"%s\", \"entries\": %zu, \"bytes\": %lld, \"max_bytes\": %lld, \"read_only_layers\": "
          "%zu}\n",
          json_escape(cfg.dir).c_str(), all.size(), static_cast<long long>(total),
          static_cast<long long>(cfg.max_bytes), cfg.read_only.size());
    } else {
      std::printf(
          "directory        %s\nentries          %zu\nbytes            %lld\ncap (soft)       %lld\n"
          "read-only layers %zu\n",
          cfg.dir.c_str(), all.size(), static_cast<long long>(total), static_cast<long long>(cfg.max_bytes),
          cfg.read_only.size());
    }
    return 0;
  }
  if (cmd == "prune") {
    std::int64_t max = cfg.max_bytes;
    for (std::size_t i = 0; i < rest.size(); ++i) {
      if (rest[i] == "--max-bytes") {
        if (i + 1 >= rest.size()) return usage_error("--max-bytes needs a number");
        char* end = nullptr;
        max = std::strtoll(rest[i + 1].c_str(), &end, 10);
        if (!end || *end || max < 0) return usage_error("--max-bytes needs a non-negative number");
        ++i;
      }
    }
    int removed_bad = 0;
    for (const auto& r : rows(store))
      if (!r.entry && store.remove(r.info.name)) ++removed_bad;
    std::int64_t freed = store.evict(max);
    int swept = store.sweep(std::chrono::hours(1));
    if (json)
      std::printf("{\"removed_bad\": %d, \"evicted_bytes\": %lld, \"swept\": %d, \"bytes_left\": %lld}\n", removed_bad,
                  static_cast<long long>(freed), swept, static_cast<long long>(store.total_bytes()));
    else
      std::printf("removed %d bad entr%s, evicted %lld bytes, swept %d temp or lock file(s); %lld bytes left\n",
                  removed_bad, removed_bad == 1 ? "y" : "ies", static_cast<long long>(freed), swept,
                  static_cast<long long>(store.total_bytes()));
    return 0;
  }
  if (cmd == "clear") {
    store.clear();
    if (json)
      std::printf("{\"cleared\": \"%s\"}\n", json_escape(cfg.dir).c_str());
    else
      std::printf("cleared %s\n", cfg.dir.c_str());
    return 0;
  }
  if (cmd == "export" || cmd == "import") {
    std::vector<std::string> files;
    std::string key;
    for (std::size_t i = 0; i < rest.size(); ++i) {
      if (rest[i] == "--sign" && cmd == "export") {
        if (i + 1 >= rest.size()) return usage_error("--sign needs a secret key file (vantage cache keygen NAME)");
        key = rest[++i];
      } else if (rest[i].rfind("--", 0) != 0) {
        files.push_back(rest[i]);
      }
    }
    if (files.size() != 1) return usage_error(cmd + " takes one FILE");
    try {
      if (cmd == "export") {
        int n = export_bundle(cfg.dir, files[0], key);
        if (json)
          std::printf("{\"exported\": %d, \"file\": \"%s\"}\n", n, json_escape(files[0]).c_str());
        else
          std::printf("exported %d entr%s to %s%s\n", n, n == 1 ? "y" : "ies", files[0].c_str(),
                      key.empty() ? "" : ", signed");
      } else {
        std::vector<std::string> problems;
        std::string why;
        if (!cache::BundleTier::open(files[0], &why, cache::TrustList::from_files(cfg.trust))) {
          std::fprintf(stderr, "vantage cache import: %s\n", why.c_str());
          return 1;
        }
        int good = verify_bundle(files[0], &problems);
        for (const auto& p : problems) std::fprintf(stderr, "vantage cache import: %s\n", p.c_str());
        if (!problems.empty()) return 1;
        int n = import_bundle(files[0], cfg.dir);
        if (json)
          std::printf("{\"imported\": %d, \"verified\": %d, \"directory\": \"%s\"}\n", n, good,
                      json_escape(cfg.dir).c_str());
        else
          std::printf("imported %d of %d entr%s into %s\n", n, good, good == 1 ? "y" : "ies", cfg.dir.c_str());
      }
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "vantage cache %s: %s\n", cmd.c_str(), e.what());
      return 1;
    }
  }
  return usage_error("unknown command '" + cmd + "'");
}

}  // namespace vantage::tools
