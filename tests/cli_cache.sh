#!/usr/bin/env bash
# `vantage cache` end to end on a scratch directory. Usage: cli_cache.sh VANTAGE CACHE_WORKER
set -euo pipefail
vantage=$1
worker=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export VANTAGE_CACHE_DIR="$work/cache"

"$vantage" cache --help | grep -q "vantage cache - the on-disk kernel cache"
# Each command has its own help, not the general one.
for c in path ls stat stats verify prune clear export import keygen push pull; do
  "$vantage" cache "$c" --help >"$work/help.txt"
  head -n 1 "$work/help.txt" | grep -q "^vantage cache $c"
  if grep -q "Usage:" "$work/help.txt"; then echo "cache $c --help printed the general help"; exit 1; fi
done
if "$vantage" cache nonsense --help 2>/dev/null; then echo "help for an unknown command"; exit 1; fi
[ "$("$vantage" cache path)" = "$work/cache" ]

"$worker" examples >/dev/null            # compiles and stores every example
# Compiling left no lock file behind (each compile's holder removes its lock before letting go).
[ -z "$(ls -A "$work/cache/locks")" ] || { echo "lock files left:"; ls "$work/cache/locks"; exit 1; }
"$vantage" cache verify | grep -q ", 0 bad"
entries=$("$vantage" cache ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[ "$entries" -ge 9 ]
"$vantage" cache stat --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["entries"] >= 9, d'
# The worker's counts reached the directory when its cache closed: a compile per entry, each a disk miss.
"$vantage" cache stats --json | python3 -c "
import json,sys; d=json.load(sys.stdin); t={r['tier']: r for r in d['tiers']}
assert d['flushes'] == 1 and t['compile']['hits'] == $entries and t['disk']['misses'] == $entries, d
assert t['compile']['p50_ms'] > 0 and t['compile']['bytes'] > 0 and d['fleet'] is None, d"
"$worker" examples >/dev/null            # every example from the directory this time
"$vantage" cache stats | grep -q "^disk  *$entries  *$entries  *$entries "

# A corrupted entry: verify says so and fails; prune removes it.
victim=$(find "$work/cache/v1" -name '*.vkc' | head -n 1)
printf 'garbage' | dd of="$victim" bs=1 seek=100 conv=notrunc 2>/dev/null
if "$vantage" cache verify >"$work/verify.txt"; then echo "verify missed a corrupted entry"; exit 1; fi
grep -q "BAD" "$work/verify.txt"
"$vantage" cache prune | grep -q "removed 1 bad entry"
"$vantage" cache verify | grep -q ", 0 bad"

# Export, import elsewhere, same entries.
"$vantage" cache export "$work/fleet.vbundle" | grep -q "exported"
VANTAGE_CACHE_DIR="$work/other" "$vantage" cache import "$work/fleet.vbundle" | grep -q "imported"
[ "$(VANTAGE_CACHE_DIR="$work/other" "$vantage" cache ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = "$((entries - 1))" ]

# Signed: a key pair, a signed export; an import under a trust list of that key takes it, one of
# another key refuses it, naming the key; keygen never overwrites a key.
"$vantage" cache keygen "$work/ci" | grep -q "^key [0-9a-f]\{16\}: secret $work/ci.key, public $work/ci.pub"
[ "$(stat -c %a "$work/ci.key")" = 600 ]
if "$vantage" cache keygen "$work/ci" 2>"$work/err.txt"; then echo "keygen overwrote a key"; exit 1; fi
grep -q "exists" "$work/err.txt"
"$vantage" cache keygen "$work/other" --json >/dev/null
"$vantage" cache export "$work/signed.vbundle" --sign "$work/ci.key" | grep -q "signed"
VANTAGE_CACHE_TRUST="$work/ci.pub" VANTAGE_CACHE_DIR="$work/trusting" "$vantage" cache import "$work/signed.vbundle" | grep -q imported
if VANTAGE_CACHE_TRUST="$work/other.pub" VANTAGE_CACHE_DIR="$work/wary" "$vantage" cache import "$work/signed.vbundle" 2>"$work/err.txt"; then
  echo "imported a bundle signed by a key the trust list does not hold"; exit 1
fi
grep -q "signed by key [0-9a-f]\{16\}, which VANTAGE_CACHE_TRUST does not list" "$work/err.txt"
if VANTAGE_CACHE_TRUST="$work/ci.pub" VANTAGE_CACHE_DIR="$work/wary" "$vantage" cache import "$work/fleet.vbundle" 2>"$work/err.txt"; then
  echo "imported an unsigned bundle under a trust list"; exit 1
fi
grep -q "not signed" "$work/err.txt"
"$vantage" cache verify "$work/signed.vbundle" | grep -q ", 0 bad, signed by key [0-9a-f]\{16\}$"
"$vantage" cache verify "$work/fleet.vbundle" | grep -q ", 0 bad, unsigned$"
VANTAGE_CACHE_TRUST="$work/ci.pub" "$vantage" cache verify "$work/signed.vbundle" --json |
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["ok"] and d["bad"] == 0 and len(d["signed_by"]) == 16, d'
if VANTAGE_CACHE_TRUST="$work/other.pub" "$vantage" cache verify "$work/signed.vbundle" 2>"$work/err.txt"; then
  echo "verify passed a bundle signed by a key the trust list does not hold"; exit 1
fi
grep -q "does not list" "$work/err.txt"
if "$vantage" cache export "$work/x.vbundle" --sign "$work/ci.pub" 2>"$work/err.txt"; then echo "signed with a public key"; exit 1; fi
grep -q "not a Vantage secret key" "$work/err.txt"

# A bad bundle is refused with a reason.
printf 'not a bundle' > "$work/bad.vbundle"
if "$vantage" cache import "$work/bad.vbundle" 2>"$work/err.txt"; then echo "imported garbage"; exit 1; fi
grep -q "not a Vantage bundle" "$work/err.txt"

# The remote tier: a real redis-server on a free loopback port. A signed bundle pushed there serves a
# host without NVRTC that trusts the key (every example, no compile); pull brings the entries back.
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  echo "cli cache: redis-server is not installed (scripts/setup installs it)"; exit 1
fi
if "$vantage" cache push "$work/signed.vbundle" 2>"$work/err.txt"; then echo "push without a remote tier"; exit 1; fi
grep -q "set VANTAGE_CACHE_REMOTE" "$work/err.txt"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --logfile /dev/null &
redis_pid=$!
trap 'kill -9 $redis_pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 200); do redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done
# A generous timeout: the test shares two cores with the rest of the suite.
export VANTAGE_CACHE_REMOTE="redis://127.0.0.1:$port/0?timeout_ms=2000"
"$worker" examples >/dev/null   # the example prune removed is compiled again
"$vantage" cache export "$work/all.vbundle" --sign "$work/ci.key" >/dev/null
# Pushed without the secret key: the publisher's signature travels with the bundle's manifest.
ci_id=$(sed 's/^vantage-ed25519-public //' "$work/ci.pub" | cut -c1-16)
"$vantage" cache push "$work/all.vbundle" | grep -q "^pushed $entries entries to redis://127.0.0.1:$port/0, under one manifest signed by key $ci_id$"
VANTAGE_NVRTC=none VANTAGE_CACHE_TRUST="$work/ci.pub" VANTAGE_CACHE_DIR="$work/server" "$worker" examples >"$work/served.txt"
[ "$(wc -l <"$work/served.txt")" -ge 9 ]
if grep -v " remote$" "$work/served.txt"; then echo "a host without NVRTC did not take every example from the remote tier"; exit 1; fi
# Under a trust list of another key the same entries are refused, by name, and without NVRTC the launch fails.
if VANTAGE_NVRTC=none VANTAGE_CACHE_TRUST="$work/other.pub" VANTAGE_CACHE_DIR="$work/server2" "$worker" examples >"$work/refused.txt" 2>&1; then
  echo "a host used remote entries signed by a key its trust list does not hold"; exit 1
fi
grep -q "refused redis://127.0.0.1:$port/0 entry [0-9a-f]\{32\}\.[0-9a-f]\{8\}: it is signed by key [0-9a-f]\{16\}, which VANTAGE_CACHE_TRUST does not list" "$work/refused.txt"
grep -q "FAILED .*is in no cache layer and NVRTC is not available" "$work/refused.txt"
VANTAGE_CACHE_TRUST="$work/ci.pub" "$vantage" cache pull "$work/pulled.vbundle" --json |
  python3 -c "import json,sys; d=json.load(sys.stdin); assert d['pulled'] == $entries and d['refused'] == 0, d"
"$vantage" cache verify "$work/pulled.vbundle" | grep -q "^$work/pulled.vbundle: $entries entries, 0 bad, unsigned$"
# The fleet's counts in Redis: the host without NVRTC took every example from the tier.
"$vantage" cache stats --json | python3 -c "
import json,sys; d=json.load(sys.stdin); f=d['fleet']
assert f['hits'] >= $entries and f['stores'] >= $entries and f['entries'] == $entries and f['p50_ms'] > 0, f"
VANTAGE_CACHE_DIR="$work/server" "$vantage" cache stats | grep -q "^remote  *$entries  *0  *$entries "
VANTAGE_CACHE_DIR="$work/server" "$vantage" cache stats --reset | grep -q "^reset $work/server/stats.json$"
VANTAGE_CACHE_DIR="$work/server" "$vantage" cache stats | grep -q "^remote  *0  *0  *0 "
kill -9 $redis_pid; wait $redis_pid 2>/dev/null || true
if "$vantage" cache pull "$work/x.vbundle" 2>"$work/err.txt"; then echo "pulled from a dead server"; exit 1; fi
grep -q "did not answer\|cannot be reached" "$work/err.txt"
unset VANTAGE_CACHE_REMOTE

"$vantage" cache prune --max-bytes 0 --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["bytes_left"] == 0, d'
"$vantage" cache path --json | python3 -c 'import json,sys; json.load(sys.stdin)["directory"]' 
"$vantage" cache clear | grep -q cleared
echo "cli cache: ok"
