// Vantage disk store: a directory of cache entries.
//
//   ROOT/v1/ab/cd/<name>.vkc   entries, two-level fan-out on the name's first four hex digits
//   ROOT/tmp/                  files being written (temp, fsync, rename); stale ones are swept
//   ROOT/locks/<key>.lock      advisory per-key locks (flock): one compile of a key at a time; the
//                              holder removes the file before it lets go, so none outlive a compile
//
// Readers never lock: an entry appears whole (rename) or not at all, and is verified when read. The
// modification time is the LRU clock, set explicitly on every hit. A writable store refuses a
// directory that another user owns or may write, since entries are trusted once verified.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/entry.h"
#include "cache/tier.h"

namespace vantage::cache {

/// Reads a whole file with one read (after fstat); false when it cannot be opened.
bool read_file(const std::filesystem::path& path, std::vector<char>& out);
/// Why a read-only layer (a directory or a bundle file) at `path` cannot be trusted: it belongs to
/// a user other than this process's and root, or others than its owner may write it. Nothing when
/// it can.
std::optional<std::string> untrusted_owner(const std::filesystem::path& path);

class DiskStore final : public Tier {
 public:
  /// Opens a store. A writable one creates the directory (0700) when missing. When the directory
  /// cannot be used, `usable()` is false and `problem()` says why; nothing throws.
  DiskStore(std::filesystem::path root, bool writable);

  bool usable() const { return usable_; }
  bool writable() const override { return writable_; }
  const std::string& problem() const { return problem_; }
  const std::filesystem::path& root() const { return root_; }

  std::filesystem::path path_of(const std::string& name) const;
  /// Reads and verifies the entry `name`; touches it on success (writable stores).
  std::optional<Entry> load(const std::string& name, const Key* expected, ReadError* error, std::string* problem);
  /// Names of entries whose name starts with `prefix` (used to find any build of a source).
  std::vector<std::string> names_with_prefix(const std::string& prefix) const override;
  std::string where(const std::string& name) const override { return path_of(name).string(); }
  bool read(const std::string& name, std::vector<char>& bytes) const override;
  /// Writes atomically. On failure returns false with the reason; the directory is left clean.
  bool save(const std::string& name, const Entry& e, std::string* problem) override;
  bool remove(const std::string& name);

  /// An exclusive advisory lock on a key; released when destroyed (or when its process dies). The
  /// holder unlinks the lock file before closing it; a waiter that then gets the lock on the unlinked
  /// file sees that the path no longer names it and starts again, so two processes never both hold a
  /// key's lock. Move-only.
  class Lock {
   public:
    Lock() = default;
    Lock(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
    Lock(Lock&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
    Lock& operator=(Lock&& o) noexcept;
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;
    ~Lock();
    bool held() const { return fd_ >= 0; }

   private:
    void release() noexcept;
    int fd_ = -1;
    std::filesystem::path path_;
  };
  /// Waits up to `timeout` for the key's lock; an empty Lock when it could not be had.
  Lock lock(const std::string& name, std::chrono::milliseconds timeout) const;
  /// The key's lock as the tier's lease.
  std::unique_ptr<Lease> lease(const std::string& name, std::chrono::milliseconds timeout) const override;

  std::vector<EntryInfo> list() const override;
  std::int64_t total_bytes() const;
  /// Removes least recently used entries until the total is at most `max_bytes`, never `keep`.
  /// Returns the bytes removed.
  std::int64_t evict(std::int64_t max_bytes, const std::string& keep = "");
  /// Removes temp files older than `age` (left by killed writers) and lock files nobody holds (left
  /// by processes killed while compiling). Returns the files removed.
  int sweep(std::chrono::seconds age);
  /// Removes every entry, temp file and lock.
  void clear();

 private:
  std::filesystem::path root_;
  bool writable_ = false;
  bool usable_ = false;
  std::string problem_;
};

}  // namespace vantage::cache
