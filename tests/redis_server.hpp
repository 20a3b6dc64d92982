// A real redis-server for the remote tier's tests and benchmark: started on a free loopback port
// with no persistence, killed (SIGKILL, as a crash) and started again on the same port, stopped at
// scope exit. `available()` is false, with the reason, where Debian's redis-server is not installed
// (scripts/setup installs it).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace vantage::test_support {

class RedisServer {
 public:
  RedisServer() : port_(free_port()) { start(); }
  ~RedisServer() { kill(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  static const char* binary() {
    static const char* path = [] {
      for (const char* p : {"/usr/bin/redis-server", "/usr/local/bin/redis-server"})
        if (::access(p, X_OK) == 0) return p;
      return static_cast<const char*>(nullptr);
    }();
    return path;
  }
  bool available() const { return pid_ > 0; }
  const std::string& problem() const { return problem_; }
  int port() const { return port_; }
  /// The URL the cache is configured with, plus `options` ("timeout_ms=50&...").
  std::string url(const std::string& options = "") const {
    return "redis://127.0.0.1:" + std::to_string(port_) + "/0" + (options.empty() ? "" : "?" + options);
  }

  /// Starts the server and waits until it takes connections (up to 5 s).
  bool start() {
    if (!binary()) {
      problem_ = "redis-server is not installed (scripts/setup installs it)";
      return false;
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string port = std::to_string(port_);
      ::execl(binary(), "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1", "--save", "", "--appendonly",
              "no", "--daemonize", "no", "--loglevel", "warning", "--logfile", "/dev/null",
              static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    for (int i = 0; i < 500; ++i) {
      if (answers()) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    problem_ = "redis-server did not start on port " + std::to_string(port_);
    kill();
    return false;
  }
  /// Sends one command (binary-safe arguments) and returns the first line of the reply without its
  /// CRLF ("+OK", ":1", "$-1"): for tests that change what the server holds behind the tier's back.
  std::string command(const std::vector<std::string>& args) const {
    std::string req = "*" + std::to_string(args.size()) + "\r\n";
    for (const auto& a : args) req += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = loopback(port_);
    std::string line;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        ::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char c = 0;
      while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
      if (!line.empty() && line.back() == '\r') line.pop_back();
    }
    ::close(fd);
    return line;
  }
  /// SIGKILL: the server dies as in a crash, with every key.
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  /// A port the kernel just gave out and took back: free now, almost surely still free at start.
  static int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
    ::close(fd);
    return port;
  }
  static sockaddr_in loopback(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
  }
  /// A PING answered with +PONG.
  bool answers() const {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = loopback(port_);
    bool ok = false;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::write(fd, "PING\r\n", 6) == 6) {
      char buf[16] = {};
      ok = ::read(fd, buf, sizeof buf - 1) >= 5 && std::string(buf, 5) == "+PONG";
    }
    ::close(fd);
    return ok;
  }

  int port_;
  pid_t pid_ = -1;
  std::string problem_;
};

/// A server that takes connections and never answers: the kernel completes the handshake from its
/// backlog, and nobody reads.
class SilentServer {
 public:
  SilentServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd_, 64) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port_ = ntohs(a.sin_port);
  }
  ~SilentServer() { ::close(fd_); }
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;
  int port() const { return port_; }
  std::string url(const std::string& options = "") const {
    return "redis://127.0.0.1:" + std::to_string(port_) + "/0" + (options.empty() ? "" : "?" + options);
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace vantage::test_support
