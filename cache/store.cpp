// Vantage disk store: see store.h.
#include "cache/store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

namespace vantage::cache {
namespace fs = std::filesystem;

namespace {

std::string error_text(int err) { return std::strerror(err); }

bool write_all(int fd, const char* data, std::size_t n, int* err) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return false;
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

void fsync_dir(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

bool read_file(const fs::path& path, std::vector<char>& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && st.st_size >= 0;
  if (ok) {
    out.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < out.size()) {
      ssize_t n = ::read(fd, out.data() + got, out.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    out.resize(got);  // a file cut short while read is caught by parse()
  }
  ::close(fd);
  return ok;
}

DiskStore::DiskStore(fs::path root, bool writable) : root_(std::move(root)), writable_(writable) {
  std::error_code ec;
  if (writable_) {
    if (!fs::exists(root_, ec)) {
      fs::create_directories(root_, ec);
      if (ec) {
        problem_ = "cannot create " + root_.string() + ": " + ec.message();
        return;
      }
      fs::permissions(root_, fs::perms::owner_all, fs::perm_options::replace, ec);
    }
    struct stat st {};
    if (::stat(root_.c_str(), &st) != 0) {
      problem_ = "cannot stat " + root_.string() + ": " + error_text(errno);
      return;
    }
    if (!S_ISDIR(st.st_mode)) {
      problem_ = root_.string() + " is not a directory";
      return;
    }
    if (st.st_uid != ::geteuid()) {
      problem_ = root_.string() + " belongs to another user (uid " + std::to_string(st.st_uid) +
                 "); Vantage only trusts a cache directory of its own";
      return;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
      problem_ = root_.string() + " may be written by other users; make it private (chmod 700)";
      return;
    }
    for (const char* sub : {"v1", "tmp", "locks"}) {
      fs::create_directories(root_ / sub, ec);
      if (ec) {
        problem_ = "cannot create " + (root_ / sub).string() + ": " + ec.message();
        return;
      }
    }
    if (::access(root_.c_str(), W_OK) != 0 || ::access((root_ / "tmp").c_str(), W_OK) != 0) {
      problem_ = root_.string() + " is not writable";
      return;
    }
  } else if (!fs::is_directory(root_, ec)) {
    problem_ = root_.string() + " is not a readable directory";
    return;
  } else if (auto why = untrusted_owner(root_)) {
    problem_ = *why;
    return;
  }
  usable_ = true;
}

std::optional<std::string> untrusted_owner(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "cannot stat " + path.string() + ": " + error_text(errno);
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    return path.string() + " belongs to another user (uid " + std::to_string(st.st_uid) +
           "); Vantage reads layers only of its own user or of root";
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return path.string() + " may be written by other users; make it writable by its owner only (chmod go-w)";
  return std::nullopt;
}

fs::path DiskStore::path_of(const std::string& name) const {
  std::string a = name.size() >= 2 ? name.substr(0, 2) : "00";
  std::string b = name.size() >= 4 ? name.substr(2, 2) : "00";
  return root_ / "v1" / a / b / (name + ".vkc");
}

std::optional<Entry> DiskStore::load(const std::string& name, const Key* expected, ReadError* error,
                                     std::string* problem) {
  if (!usable_) return std::nullopt;
  fs::path p = path_of(name);
  std::vector<char> bytes;
  if (!read_file(p, bytes)) return std::nullopt;  // a miss, not a problem
  ReadError err = ReadError::None;
  auto e = parse(bytes, expected, &err);
  if (error) *error = err;
  if (!e) {
    if (problem) *problem = p.string() + ": " + describe(err);
    if (writable_) remove(name);  // a bad entry is recompiled and rewritten
    return std::nullopt;
  }
  if (writable_) ::utimensat(AT_FDCWD, p.c_str(), nullptr, 0);  // now: the LRU clock
  return e;
}

std::vector<std::string> DiskStore::names_with_prefix(const std::string& prefix) const {
  std::vector<std::string> out;
  if (!usable_ || prefix.size() < 4) return out;
  std::error_code ec;
  fs::path dir = path_of(prefix).parent_path();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string stem = it->path().stem().string();
    if (it->path().extension() == ".vkc" && stem.rfind(prefix, 0) == 0) out.push_back(stem);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool DiskStore::read(const std::string& name, std::vector<char>& bytes) const {
  return usable_ && read_file(path_of(name), bytes);
}

bool DiskStore::save(const std::string& name, const Entry& e, std::string* problem) {
  if (!usable_ || !writable_) {
    if (problem) *problem = problem_.empty() ? "store is read-only" : problem_;
    return false;
  }
  std::vector<char> bytes = serialize(e);
  fs::path target = path_of(name);
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) {
    if (problem) *problem = "cannot create " + target.parent_path().string() + ": " + ec.message();
    return false;
  }
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  fs::path tmp = root_ / "tmp" / (name + "." + std::to_string(::getpid()) + "." + std::to_string(rng()) + ".tmp");
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (problem) *problem = "cannot create " + tmp.string() + ": " + error_text(errno);
    return false;
  }
  int err = 0;
  bool ok = write_all(fd, bytes.data(), bytes.size(), &err);
  if (ok && ::fsync(fd) != 0) ok = false, err = errno;
  ::close(fd);
  if (ok && ::rename(tmp.c_str(), target.c_str()) != 0) ok = false, err = errno;
  if (!ok) {
    ::unlink(tmp.c_str());
    if (problem) *problem = "cannot write " + target.string() + ": " + error_text(err);
    return false;
  }
  fsync_dir(target.parent_path());
  return true;
}

bool DiskStore::remove(const std::string& name) {
  std::error_code ec;
  return fs::remove(path_of(name), ec);
}

DiskStore::Lock& DiskStore::Lock::operator=(Lock&& o) noexcept {
  if (this != &o) {
    release();
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

DiskStore::Lock::~Lock() { release(); }

void DiskStore::Lock::release() noexcept {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still held: nobody can be holding this file after us
  ::close(fd_);             // closing releases the flock
  fd_ = -1;
}

namespace {
/// Whether `fd` is still the file at `path` (not unlinked or replaced since it was opened).
bool still_named(int fd, const fs::path& path) {
  struct stat a {
  }, b{};
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}
}  // namespace

std::unique_ptr<Tier::Lease> DiskStore::lease(const std::string& name, std::chrono::milliseconds timeout) const {
  struct Held final : Lease {
    explicit Held(Lock l) : lock(std::move(l)) {}
    Lock lock;
  };
  Lock l = lock(name, timeout);
  if (!l.held()) return nullptr;
  return std::make_unique<Held>(std::move(l));
}

DiskStore::Lock DiskStore::lock(const std::string& name, std::chrono::milliseconds timeout) const {
  if (!usable_ || !writable_) return Lock();
  fs::path p = root_ / "locks" / (name + ".lock");
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return Lock();
    bool got = false;
    while (true) {
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
        got = true;
        break;
      }
      if (errno != EWOULDBLOCK && errno != EINTR) break;
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (!got) {
      ::close(fd);
      return Lock();
    }
    if (still_named(fd, p)) return Lock(fd, p);
    ::close(fd);  // the holder before us removed it: lock the new file
    if (std::chrono::steady_clock::now() >= deadline) return Lock();
  }
}

std::vector<EntryInfo> DiskStore::list() const {
  std::vector<EntryInfo> out;
  if (!usable_) return out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root_ / "v1", ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->path().extension() != ".vkc") continue;
    EntryInfo info;
    info.path = it->path();
    info.name = it->path().stem().string();
    info.bytes = static_cast<std::int64_t>(it->file_size(ec));
    info.used = it->last_write_time(ec);
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](const EntryInfo& a, const EntryInfo& b) { return a.name < b.name; });
  return out;
}

std::int64_t DiskStore::total_bytes() const {
  std::int64_t total = 0;
  for (const auto& e : list()) total += e.bytes;
  return total;
}

std::int64_t DiskStore::evict(std::int64_t max_bytes, const std::string& keep) {
  if (!usable_ || !writable_) return 0;
  auto entries = list();
  std::int64_t total = 0;
  for (const auto& e : entries) total += e.bytes;
  std::sort(entries.begin(), entries.end(), [](const EntryInfo& a, const EntryInfo& b) { return a.used < b.used; });
  std::int64_t removed = 0;
  for (const auto& e : entries) {
    if (total <= max_bytes) break;
    if (e.name == keep) continue;
    std::error_code ec;
    if (fs::remove(e.path, ec)) {
      total -= e.bytes;
      removed += e.bytes;
    }
  }
  return removed;
}

int DiskStore::sweep(std::chrono::seconds age) {
  if (!usable_ || !writable_) return 0;
  int n = 0;
  std::error_code ec;
  auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(root_ / "tmp", ec), end; !ec && it != end; it.increment(ec)) {
    auto t = it->last_write_time(ec);
    if (!ec && now - t > age && fs::remove(it->path(), ec)) ++n;
  }
  // A lock file nobody holds was left by a process that died while compiling: take it (it is then
  // ours alone) and let go, which removes it.
  std::vector<fs::path> locks;
  for (fs::directory_iterator it(root_ / "locks", ec), end; !ec && it != end; it.increment(ec))
    locks.push_back(it->path());
  for (const auto& p : locks) {
    int fd = ::open(p.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && still_named(fd, p)) {
      Lock taken(fd, p);
      ++n;
    } else {
      ::close(fd);
    }
  }
  return n;
}

void DiskStore::clear() {
  if (!usable_ || !writable_) return;
  std::error_code ec;
  for (const char* sub : {"v1", "tmp", "locks"}) {
    fs::remove_all(root_ / sub, ec);
    fs::create_directories(root_ / sub, ec);
  }
}

}  // namespace vantage::cache
