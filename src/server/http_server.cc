// HttpServer: an epoll front end (one event-loop thread) with strict HTTP/1.1
// request parsing of what the extender needs, two worker pools and optional
// TLS (OpenSSL on the non-blocking sockets). See http_server.h.
#include "server/http_server.h"

#include "analyze/gpu_map.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <vector>

#include "server/extender_args_fast.h"
#include "util/strings.h"

namespace gpupack {

namespace {

using Clock = std::chrono::steady_clock;

// What HTTP lets surround a header value or a chunk size (RFC 9110's OWS is
// space and tab; the line's own CR LF is cut off too), and so what is cut
// from the token file's content, which the Authorization header must equal.
constexpr std::string_view kHttpSpace = " \t\r\n";

std::string error_body(const std::string& msg) { return nlohmann::json{{"Error", msg}}.dump(); }

// Every full-Nodes request allocates a few multi-MB buffers (the body, its
// padded copy, the reply). glibc would map and unmap them (or trim the heap)
// each time, and the page faults that follow cost more than the parse on
// a virtual machine; keeping them in the heap makes the next request reuse
// warm pages. Memory kept: a few times the largest body.
void keep_large_buffers() {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Status";
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A file's identity for change detection.
struct FileStamp {
  bool ok = false;
  ino_t ino = 0;
  off_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

FileStamp stamp_of(const std::string& path) {
  struct stat st {};
  FileStamp s;
  if (::stat(path.c_str(), &st) != 0) return s;
  s.ok = true;
  s.ino = st.st_ino;
  s.size = st.st_size;
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return s;
}

std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (!e) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// A fixed set of threads running queued tasks in order. The worker that went
// idle last takes the next task, so a lone keep-alive client keeps landing on
// the same warm thread (its parse buffers and caches).
class Pool {
 public:
  explicit Pool(int n) {
    for (int i = 0; i < std::max(1, n); ++i) workers_.push_back(std::make_unique<Worker>());
    for (auto& w : workers_) w->thread = std::thread([this, me = w.get()] { run(*me); });
  }
  ~Pool() { join(); }
  void post(std::function<void()> task) {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
    if (!idle_.empty()) {
      Worker* w = idle_.back();
      idle_.pop_back();
      w->woken = true;
      w->cv.notify_one();
    }
  }
  // Runs every queued task, then ends the threads.
  void join() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
      for (Worker* w : idle_) {
        w->woken = true;
        w->cv.notify_one();
      }
      idle_.clear();
    }
    for (auto& w : workers_)
      if (w->thread.joinable()) w->thread.join();
  }

 private:
  struct Worker {
    std::condition_variable cv;
    bool woken = false;
    std::thread thread;
  };
  void run(Worker& me) {
    std::unique_lock lock(mu_);
    for (;;) {
      if (!tasks_.empty()) {
        std::function<void()> task = std::move(tasks_.front());
        tasks_.pop_front();
        lock.unlock();
        task();
        lock.lock();
        continue;
      }
      if (stop_) return;
      idle_.push_back(&me);
      me.cv.wait(lock, [&] { return me.woken; });
      me.woken = false;
    }
  }
  std::mutex mu_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<Worker*> idle_;  // a stack: back() went idle last
  bool stop_ = false;
};

struct HttpRequest {
  std::string method, path, version;
  bool http10 = false;
  bool keep_alive = true;
  bool expect_continue = false;
  bool chunked = false;
  size_t content_length = 0;
  std::string authorization;
  std::string body;
};

struct Reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string extra_headers;  // complete "Name: value\r\n" lines
  bool close = false;
};

Reply json_error(int status, const std::string& msg) {
  Reply r;
  r.status = status;
  r.body = error_body(msg);
  return r;
}

enum class State { kTls, kIdle, kHeaders, kBody, kDispatched, kWriting, kDraining };
enum class Chunk { kSize, kData, kDataEnd, kTrailer };

struct Conn {
  int fd = -1;
  SSL* ssl = nullptr;
  State state = State::kIdle;
  Clock::time_point deadline;
  std::string in;  // received bytes not yet parsed
  HttpRequest req;
  Chunk chunk = Chunk::kSize;
  size_t chunk_left = 0;
  size_t body_got = 0;  // Content-Length bodies: bytes of req.body filled
  // The reply being written: head then body, `sent` bytes of both already out.
  std::string out_head, out_body;
  size_t sent = 0;
  bool close_after = false;
  bool peer_eof = false;  // the client finished sending (FIN or close_notify)
  bool broken = false;    // close at the next chance
  size_t drained = 0;     // kDraining: bytes read and dropped
  uint32_t events = 0;    // what epoll watches now (0 = not registered)
};

}  // namespace

struct HttpServer::Impl {
  ExtenderService& service;
  HttpOptions options;
  LatencyHistogram& latency;
  RequestCounters& counters;
  size_t max_reply_bytes = 0;
  int request_timeout_s = 10;

  int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
  std::thread loop_thread;
  std::unique_ptr<Pool> verbs, metrics_pool;
  std::atomic<bool> stopping{false};
  bool stopped = false;
  std::mutex stop_mu;

  std::unordered_map<int, std::unique_ptr<Conn>> conns;  // loop thread only
  std::mutex done_mu;
  std::vector<Conn*> done;  // handed back by workers

  // TLS and token, loop thread only after start().
  SSL_CTX* ssl_ctx = nullptr;
  FileStamp cert_stamp, key_stamp;
  std::mutex token_mu;
  std::string token;
  FileStamp token_stamp;
  Clock::time_point next_file_check;

  Impl(ExtenderService& s, HttpOptions o, LatencyHistogram& l, RequestCounters& c)
      : service(s), options(std::move(o)), latency(l), counters(c) {}
  ~Impl() {
    if (ssl_ctx) SSL_CTX_free(ssl_ctx);
    for (int fd : {listen_fd, epoll_fd, wake_fd})
      if (fd >= 0) ::close(fd);
  }

  // ---- files --------------------------------------------------------------

  SSL_CTX* load_tls(std::string* error) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
      *error = "SSL_CTX_new: " + openssl_error();
      return nullptr;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (SSL_CTX_use_certificate_chain_file(ctx, options.tls_cert_file.c_str()) != 1) {
      *error = fmt::format("TLS certificate {}: {}", options.tls_cert_file, openssl_error());
    } else if (SSL_CTX_use_PrivateKey_file(ctx, options.tls_key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      *error = fmt::format("TLS key {}: {}", options.tls_key_file, openssl_error());
    } else if (SSL_CTX_check_private_key(ctx) != 1) {
      *error = fmt::format("TLS key {} does not match certificate {}", options.tls_key_file, options.tls_cert_file);
    } else if (!options.tls_client_ca_file.empty()) {
      STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(options.tls_client_ca_file.c_str());
      if (SSL_CTX_load_verify_locations(ctx, options.tls_client_ca_file.c_str(), nullptr) != 1 || !names) {
        *error = fmt::format("TLS client CA {}: {}", options.tls_client_ca_file, openssl_error());
        if (names) sk_X509_NAME_pop_free(names, X509_NAME_free);
      } else {
        SSL_CTX_set_client_CA_list(ctx, names);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      }
    }
    if (!error->empty()) {
      SSL_CTX_free(ctx);
      return nullptr;
    }
    return ctx;
  }

  bool load_token(std::string* error) {
    std::ifstream in(options.token_file, std::ios::binary);
    if (!in) {
      *error = fmt::format("token file {}: cannot open", options.token_file);
      return false;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string t(trim(ss.str(), kHttpSpace));
    if (t.empty()) {
      *error = fmt::format("token file {}: empty", options.token_file);
      return false;
    }
    std::lock_guard lock(token_mu);
    token = std::move(t);
    return true;
  }

  // Re-reads the certificate, key and token when their files change; a
  // version that does not load keeps the previous one (said once).
  void check_files(Clock::time_point now) {
    if (now < next_file_check) return;
    next_file_check = now + std::chrono::milliseconds(500);
    if (ssl_ctx) {
      const FileStamp c = stamp_of(options.tls_cert_file), k = stamp_of(options.tls_key_file);
      if (c.ok && k.ok && (!(c == cert_stamp) || !(k == key_stamp))) {
        std::string error;
        if (SSL_CTX* fresh = load_tls(&error)) {
          SSL_CTX_free(ssl_ctx);  // live connections hold their own reference
          ssl_ctx = fresh;
          cert_stamp = c;
          key_stamp = k;
          fmt::print(stderr, "gpupack serve: reloaded TLS certificate {}\n", options.tls_cert_file);
        } else if (!error.empty()) {
          // A half-written pair is retried at the next check; say it once.
          static thread_local std::string said;
          if (error != said) fmt::print(stderr, "gpupack serve: keeping the previous certificate: {}\n", error);
          said = error;
        }
      }
    }
    if (!options.token_file.empty()) {
      const FileStamp t = stamp_of(options.token_file);
      std::string error;
      if (t.ok && !(t == token_stamp) && load_token(&error)) token_stamp = t;
    }
  }

  bool token_ok(const HttpRequest& req) {
    if (options.token_file.empty()) return true;
    static constexpr char kBearer[] = "bearer ";
    const std::string& a = req.authorization;
    if (a.size() <= 7 || lower(a.substr(0, 7)) != kBearer) return false;
    const std::string given(trim(a.substr(7), kHttpSpace));
    std::lock_guard lock(token_mu);
    return given.size() == token.size() && CRYPTO_memcmp(given.data(), token.data(), token.size()) == 0;
  }

  // ---- start / stop -------------------------------------------------------

  int start() {
    max_reply_bytes = options.max_reply_bytes ? options.max_reply_bytes : 2 * options.max_body_bytes + (1u << 20);
    request_timeout_s = std::max(1, std::min(options.read_timeout_s, options.request_timeout_s));
    if (!options.tls_cert_file.empty() || !options.tls_key_file.empty() || !options.tls_client_ca_file.empty()) {
      if (options.tls_cert_file.empty() || options.tls_key_file.empty())
        throw std::runtime_error("TLS needs both a certificate file and a key file");
      std::string error;
      cert_stamp = stamp_of(options.tls_cert_file);
      key_stamp = stamp_of(options.tls_key_file);
      ssl_ctx = load_tls(&error);
      if (!ssl_ctx) throw std::runtime_error(error);
    }
    if (!options.token_file.empty()) {
      std::string error;
      token_stamp = stamp_of(options.token_file);
      if (!load_token(&error)) throw std::runtime_error(error);
    }

    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* res = nullptr;
    const std::string where = fmt::format("{}:{}", options.host, options.port);
    if (::getaddrinfo(options.host.empty() ? nullptr : options.host.c_str(), std::to_string(options.port).c_str(),
                      &hints, &res) != 0 ||
        !res)
      throw std::runtime_error(fmt::format("cannot listen on {}: unknown address", where));
    std::string error;
    for (addrinfo* a = res; a && listen_fd < 0; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      int one = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) {
        listen_fd = fd;
      } else {
        error = std::strerror(errno);
        ::close(fd);
      }
    }
    ::freeaddrinfo(res);
    if (listen_fd < 0) throw std::runtime_error(fmt::format("cannot listen on {}: {}", where, error));
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound), &len);
    const int port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                                 : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);

    epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd < 0 || wake_fd < 0) throw std::runtime_error(fmt::format("epoll/eventfd: {}", std::strerror(errno)));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_fd;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev);
    ev.data.fd = wake_fd;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &ev);

    verbs = std::make_unique<Pool>(options.serve_extender ? options.threads : 1);
    metrics_pool = std::make_unique<Pool>(options.metrics_threads);
    next_file_check = Clock::now() + std::chrono::milliseconds(500);
    loop_thread = std::thread([this] { loop(); });
    return port;
  }

  void stop() {
    std::lock_guard lock(stop_mu);
    if (stopped) return;
    stopped = true;
    // Held gang binds are answered now, so their replies get the grace period.
    if (options.serve_extender) service.stop_gangs("gpupack serve is stopping; the bind is not done");
    if (loop_thread.joinable()) {
      stopping = true;
      wake();
      loop_thread.join();
    }
    if (verbs) verbs->join();
    if (options.serve_extender) service.stop_gangs("gpupack serve is stopping; the bind is not done");
    if (metrics_pool) metrics_pool->join();
    for (auto& [fd, c] : conns) free_conn(*c);
    conns.clear();
  }

  void wake() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd, &one, sizeof one);
  }

  // ---- the event loop -----------------------------------------------------

  void loop() {
    std::vector<epoll_event> events(256);
    Clock::time_point next_scan = Clock::now();
    Clock::time_point shutdown_by{};
    bool accepting = true;
    Clock::time_point accept_again{};
    for (;;) {
      const int n = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), 100);
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == listen_fd) {
          if (accepting && !stopping) accept_all(&accepting, &accept_again);
        } else if (fd == wake_fd) {
          uint64_t v;
          [[maybe_unused]] ssize_t r = ::read(wake_fd, &v, sizeof v);
          collect_done();
        } else {
          auto it = conns.find(fd);
          if (it != conns.end()) on_event(*it->second, events[i].events);
        }
      }
      const auto now = Clock::now();
      if (!accepting && now >= accept_again) {
        accepting = true;
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = listen_fd;
        ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev);
      }
      if (stopping) {
        if (shutdown_by == Clock::time_point{}) {
          shutdown_by = now + std::chrono::seconds(std::max(0, options.shutdown_grace_s));
          ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
          ::close(listen_fd);
          listen_fd = -1;
          // Idle and half-read connections go now; replies being made or
          // written get the grace period.
          std::vector<int> drop;
          for (auto& [cfd, c] : conns)
            if (c->state != State::kDispatched && c->state != State::kWriting) drop.push_back(cfd);
          for (int cfd : drop) close_conn(cfd);
        }
        if (conns.empty() || now >= shutdown_by) {
          // Workers still running hand their connections back into `done`;
          // stop() frees them after joining the pools.
          std::vector<int> drop;
          for (auto& [cfd, c] : conns)
            if (c->state != State::kDispatched) drop.push_back(cfd);
          for (int cfd : drop) close_conn(cfd);
          return;
        }
      }
      if (now >= next_scan) {
        next_scan = now + std::chrono::milliseconds(100);
        check_files(now);
        std::vector<int> expired;
        for (auto& [cfd, c] : conns)
          if (c->state != State::kDispatched && now >= c->deadline) expired.push_back(cfd);
        for (int cfd : expired) close_conn(cfd);
      }
    }
  }

  void accept_all(bool* accepting, Clock::time_point* accept_again) {
    for (;;) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: stop accepting for a moment instead of spinning.
          ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
          *accepting = false;
          *accept_again = Clock::now() + std::chrono::milliseconds(100);
        }
        return;  // EAGAIN or a connection that went away
      }
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      if (static_cast<int>(conns.size()) >= options.max_connections) {
        refuse(fd);
        continue;
      }
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      if (ssl_ctx) {
        c->ssl = SSL_new(ssl_ctx);
        if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
          if (c->ssl) SSL_free(c->ssl);
          ::close(fd);
          continue;
        }
        c->state = State::kTls;
        c->deadline = Clock::now() + std::chrono::seconds(request_timeout_s);
      } else {
        c->deadline = Clock::now() + std::chrono::seconds(std::max(1, options.idle_timeout_s));
      }
      c->events = EPOLLIN | EPOLLRDHUP;
      epoll_event ev{};
      ev.events = c->events;
      ev.data.fd = fd;
      if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        free_conn(*c);
        continue;
      }
      conns.emplace(fd, std::move(c));
    }
  }

  // Beyond max_connections: a plain 503 (TLS clients just see the close).
  void refuse(int fd) {
    if (!ssl_ctx) {
      const std::string body =
          error_body(fmt::format("too many connections (limit {}); retry later", options.max_connections));
      const std::string msg = fmt::format(
          "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
          "Connection: close\r\nRetry-After: 1\r\n\r\n{}",
          body.size(), body);
      [[maybe_unused]] ssize_t n = ::send(fd, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      ::shutdown(fd, SHUT_WR);
    }
    ::close(fd);
  }

  void free_conn(Conn& c) {
    if (c.ssl) {
      SSL_free(c.ssl);
      c.ssl = nullptr;
    }
    if (c.fd >= 0) ::close(c.fd);
    c.fd = -1;
  }

  void close_conn(int fd) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    if (it->second->events) ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    free_conn(*it->second);
    conns.erase(it);
  }

  // 0 unregisters the socket (a hang-up while a worker owns the connection
  // must not spin the loop), anything else (re)registers it.
  void watch(Conn& c, uint32_t events) {
    if (c.events == events) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = c.fd;
    const int op = events == 0 ? EPOLL_CTL_DEL : c.events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    c.events = events;
    ::epoll_ctl(epoll_fd, op, c.fd, events ? &ev : nullptr);
  }

  void on_event(Conn& c, uint32_t ev) {
    const int fd = c.fd;
    if (c.state == State::kDispatched) return;  // the worker owns it; errors show when it writes
    if (c.state == State::kTls) {
      handshake(c);
    } else if (c.state == State::kDraining) {
      drain(c);
    } else if (c.state == State::kWriting) {
      if (write_some(c)) {
        finish_reply(c);
        continue_reading(c);
      }
    } else if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
      read_and_parse(c);
    }
    if (c.broken) close_conn(fd);
  }

  void handshake(Conn& c) {
    ERR_clear_error();
    const int r = SSL_accept(c.ssl);
    if (r == 1) {
      c.state = State::kIdle;
      c.deadline = Clock::now() + std::chrono::seconds(std::max(1, options.idle_timeout_s));
      watch(c, EPOLLIN | EPOLLRDHUP);
      read_and_parse(c);  // data may already sit in OpenSSL's buffer
      return;
    }
    const int e = SSL_get_error(c.ssl, r);
    if (e == SSL_ERROR_WANT_READ)
      watch(c, EPOLLIN | EPOLLRDHUP);
    else if (e == SSL_ERROR_WANT_WRITE)
      watch(c, EPOLLOUT);
    else
      c.broken = true;  // plain HTTP, a wrong client certificate, a reset
    ERR_clear_error();
  }

  // Reads up to `max` bytes to `p`. Returns bytes read, 0 when nothing is
  // available now; sets peer_eof at the end of input, broken on an error.
  size_t read_raw(Conn& c, char* p, size_t max) {
    ssize_t n;
    if (c.ssl) {
      ERR_clear_error();
      n = SSL_read(c.ssl, p, static_cast<int>(std::min<size_t>(max, 1 << 30)));
      if (n <= 0) {
        const int e = SSL_get_error(c.ssl, static_cast<int>(n));
        if (e == SSL_ERROR_ZERO_RETURN)
          c.peer_eof = true;
        else if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
          c.broken = true;
        ERR_clear_error();
        n = 0;
      }
    } else {
      n = ::recv(c.fd, p, max, 0);
      if (n == 0) c.peer_eof = true;
      if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) c.broken = true;
        n = 0;
      }
    }
    return static_cast<size_t>(n);
  }

  size_t read_into(Conn& c, std::string& dst, size_t max) {
    const size_t old = dst.size();
    dst.resize(old + max);
    const size_t n = read_raw(c, dst.data() + old, max);
    dst.resize(old + n);
    return n;
  }

  static bool reading(const Conn& c) {
    return c.state == State::kIdle || c.state == State::kHeaders || c.state == State::kBody;
  }

  void read_and_parse(Conn& c) {
    constexpr size_t kChunk = 64 << 10;
    for (int rounds = 0; rounds < 64 && !c.broken; ++rounds) {
      if (!reading(c)) return;
      size_t n;
      if (c.state == State::kBody && !c.req.chunked && c.in.empty()) {
        // Straight into the body: no copy of a multi-MB NodeList.
        const size_t want = c.req.content_length - c.body_got;
        n = read_raw(c, c.req.body.data() + c.body_got, std::min<size_t>(want, 4u << 20));
        c.body_got += n;
      } else {
        n = read_into(c, c.in, kChunk);
      }
      if (n > 0 || !c.in.empty()) parse(c);
      if (c.peer_eof) {
        // Requests already read are answered (then the connection closes);
        // a request cut short is dropped.
        if (reading(c)) c.broken = true;
        return;
      }
      if (n == 0) return;
    }
  }

  // Sends an error reply that ends the connection (the rest of the request
  // is not read).
  void fail(Conn& c, int status, const std::string& msg) {
    Reply r = json_error(status, msg);
    r.close = true;
    c.close_after = true;
    send_reply(c, std::move(r));
  }

  void parse(Conn& c) {
    const auto now = Clock::now();
    while (!c.broken && reading(c)) {
      if (c.state == State::kIdle) {
        if (c.in.empty()) return;
        c.state = State::kHeaders;
        c.deadline = now + std::chrono::seconds(request_timeout_s);
      }
      if (c.state == State::kHeaders) {
        const size_t end = c.in.find("\r\n\r\n");
        if (end == std::string::npos) {
          if (c.in.size() > options.max_header_bytes)
            fail(c, 431, fmt::format("request line and headers exceed {} bytes", options.max_header_bytes));
          return;
        }
        if (end + 4 > options.max_header_bytes) {
          fail(c, 431, fmt::format("request line and headers exceed {} bytes", options.max_header_bytes));
          return;
        }
        std::string error;
        int status = parse_head(c, c.in.substr(0, end), &error);
        c.in.erase(0, end + 4);
        if (status != 0) {
          fail(c, status, error);
          return;
        }
        if (c.req.expect_continue && (c.req.chunked || c.req.content_length > 0)) {
          static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
          raw_send(c, kContinue, sizeof kContinue - 1);
        }
        c.state = State::kBody;
        c.chunk = Chunk::kSize;
        c.body_got = 0;
        if (!c.req.chunked) {
          // Filled in place, with room for the JSON reader's padding (it
          // then takes the body over without a copy).
          c.req.body.reserve(c.req.content_length + kExtenderBodyPadding);
          c.req.body.resize(c.req.content_length);
        }
      }
      if (c.state == State::kBody) {
        if (!c.req.chunked) {
          const size_t take = std::min(c.in.size(), c.req.content_length - c.body_got);
          if (take) std::memcpy(c.req.body.data() + c.body_got, c.in.data(), take);
          c.in.erase(0, take);
          c.body_got += take;
          if (c.body_got < c.req.content_length) return;
        } else if (!dechunk(c)) {
          return;
        }
        dispatch(c);
      }
    }
  }

  // Decodes chunked framing from c.in into the body; true when complete.
  bool dechunk(Conn& c) {
    for (;;) {
      if (c.chunk == Chunk::kData) {
        const size_t take = std::min(c.chunk_left, c.in.size());
        c.req.body.append(c.in, 0, take);
        c.in.erase(0, take);
        c.chunk_left -= take;
        if (c.chunk_left > 0) return false;
        c.chunk = Chunk::kDataEnd;
      }
      const size_t eol = c.in.find("\r\n");
      if (eol == std::string::npos) {
        if (c.in.size() > 4096) fail(c, 400, "chunked body: a chunk-size or trailer line over 4096 bytes");
        return false;
      }
      const std::string line = c.in.substr(0, eol);
      c.in.erase(0, eol + 2);
      if (c.chunk == Chunk::kDataEnd) {
        if (!line.empty()) {
          fail(c, 400, "chunked body: chunk data not followed by CRLF");
          return false;
        }
        c.chunk = Chunk::kSize;
      } else if (c.chunk == Chunk::kSize) {
        const std::string hex(trim(line.substr(0, line.find(';')), kHttpSpace));
        size_t size = 0;
        if (hex.empty() || hex.size() > 15) {
          fail(c, 400, fmt::format("chunked body: bad chunk size \"{}\"", hex.substr(0, 20)));
          return false;
        }
        for (char ch : hex) {
          const int d = std::isdigit(static_cast<unsigned char>(ch)) ? ch - '0'
                        : (ch >= 'a' && ch <= 'f')                   ? ch - 'a' + 10
                        : (ch >= 'A' && ch <= 'F')                   ? ch - 'A' + 10
                                                                     : -1;
          if (d < 0) {
            fail(c, 400, fmt::format("chunked body: bad chunk size \"{}\"", hex));
            return false;
          }
          size = size * 16 + static_cast<size_t>(d);
        }
        if (size > options.max_body_bytes - c.req.body.size()) {
          fail(c, 413, fmt::format("request body exceeds the limit of {} bytes", options.max_body_bytes));
          return false;
        }
        if (size == 0) {
          c.chunk = Chunk::kTrailer;
        } else {
          c.chunk = Chunk::kData;
          c.chunk_left = size;
          // Grow 4x at a time, never past the limit: the buffers left behind
          // (kept by the heap, see keep_large_buffers) stay under a third of it.
          const size_t need = c.req.body.size() + size;
          if (c.req.body.capacity() < need)
            c.req.body.reserve(
                std::min(options.max_body_bytes, std::max({need, 4 * c.req.body.capacity(), size_t{65536}})));
        }
      } else {  // trailers, ignored, end at an empty line
        if (line.empty()) return true;
      }
    }
  }

  // Parses the request line and headers; 0 or an error status with `error`.
  int parse_head(Conn& c, const std::string& head, std::string* error) {
    HttpRequest& r = c.req;
    r = HttpRequest{};
    size_t pos = head.find("\r\n");
    const std::string line = head.substr(0, pos);
    const size_t s1 = line.find(' '), s2 = line.rfind(' ');
    if (s1 == std::string::npos || s2 == s1) {
      *error = "malformed request line";
      return 400;
    }
    r.method = line.substr(0, s1);
    r.path = line.substr(s1 + 1, s2 - s1 - 1);
    r.version = line.substr(s2 + 1);
    if (r.version == "HTTP/1.0") {
      r.http10 = true;
      r.keep_alive = false;
    } else if (r.version != "HTTP/1.1") {
      *error = fmt::format("unsupported protocol \"{}\"", r.version.substr(0, 20));
      return r.version.rfind("HTTP/", 0) == 0 ? 505 : 400;
    }
    if (r.path.empty() || r.path[0] != '/') {
      *error = "request target must be a path";
      return 400;
    }
    if (const size_t q = r.path.find('?'); q != std::string::npos) r.path.resize(q);
    bool have_length = false;
    while (pos != std::string::npos) {
      const size_t start = pos + 2;
      pos = head.find("\r\n", start);
      const std::string h = head.substr(start, pos == std::string::npos ? std::string::npos : pos - start);
      const size_t colon = h.find(':');
      if (colon == std::string::npos || colon == 0 || h[0] == ' ' || h[0] == '\t') {
        *error = "malformed header line";
        return 400;
      }
      const std::string name = lower(h.substr(0, colon));
      const std::string value(trim(h.substr(colon + 1), kHttpSpace));
      if (name == "content-length") {
        if (value.empty() || value.size() > 18 || !std::all_of(value.begin(), value.end(), ::isdigit) ||
            (have_length && std::stoull(value) != r.content_length)) {
          *error = "bad Content-Length";
          return 400;
        }
        have_length = true;
        r.content_length = std::stoull(value);
      } else if (name == "transfer-encoding") {
        if (lower(value) != "chunked") {
          *error = fmt::format("Transfer-Encoding \"{}\" is not supported (only chunked)", value.substr(0, 40));
          return 501;
        }
        r.chunked = true;
      } else if (name == "content-encoding") {
        const std::string v = lower(value);
        if (!v.empty() && v != "identity") {
          *error =
              fmt::format("Content-Encoding \"{}\" is not accepted: send the body uncompressed", value.substr(0, 40));
          return 415;
        }
      } else if (name == "connection") {
        const std::string v = lower(value);
        if (v.find("close") != std::string::npos)
          r.keep_alive = false;
        else if (v.find("keep-alive") != std::string::npos)
          r.keep_alive = true;
      } else if (name == "expect") {
        if (lower(value) != "100-continue") {
          *error = "unsupported Expect";
          return 400;  // 417 in spirit; the message says which
        }
        r.expect_continue = true;
      } else if (name == "authorization") {
        r.authorization = value;
      }
    }
    if (r.chunked && have_length) {
      *error = "both Content-Length and Transfer-Encoding";
      return 400;
    }
    if (!r.chunked && r.content_length > options.max_body_bytes) {
      *error = fmt::format("request body exceeds the limit of {} bytes", options.max_body_bytes);
      return 413;
    }
    return 0;
  }

  void raw_send(Conn& c, const char* data, size_t n) {
    if (c.ssl) {
      ERR_clear_error();
      SSL_write(c.ssl, data, static_cast<int>(n));  // tiny; a short write shows later as a broken connection
      ERR_clear_error();
    } else {
      [[maybe_unused]] ssize_t r = ::send(c.fd, data, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
  }

  // ---- routing ------------------------------------------------------------

  enum class Route { kHealth, kMetrics, kReady, kVerb, kUi, kUiState, kNone };

  void dispatch(Conn& c) {
    HttpRequest& r = c.req;
    c.close_after = !r.keep_alive || stopping;
    c.state = State::kDispatched;
    watch(c, 0);
    Route route = Route::kNone;
    std::string verb;
    bool known_path = false;
    const bool get = r.method == "GET" || r.method == "HEAD";
    if (options.serve_metrics && (r.path == "/healthz" || r.path == "/readyz" || r.path == "/metrics")) {
      known_path = true;
      if (get) route = r.path == "/healthz" ? Route::kHealth : r.path == "/readyz" ? Route::kReady : Route::kMetrics;
    }
    if (options.serve_metrics && (r.path == "/ui" || r.path == "/ui/" || r.path == "/ui/state.json")) {
      known_path = true;
      if (get) route = r.path == "/ui/state.json" ? Route::kUiState : Route::kUi;
    }
    const std::string& pre = options.url_prefix;
    if (options.serve_extender && r.path.size() > pre.size() + 1 && r.path.compare(0, pre.size(), pre) == 0 &&
        r.path[pre.size()] == '/') {
      const std::string v = r.path.substr(pre.size() + 1);
      if (v == "filter" || v == "prioritize" || v == "bind" || v == "preempt") {
        known_path = true;
        if (r.method == "POST") route = Route::kVerb, verb = v;
      }
    }
    if (route == Route::kNone) {
      Reply rep =
          known_path
              ? json_error(405, fmt::format("{} does not take {}", r.path, r.method.substr(0, 16)))
              : json_error(404, fmt::format("no route for {} {}", r.method.substr(0, 16), r.path.substr(0, 200)));
      if (known_path) rep.extra_headers = fmt::format("Allow: {}\r\n", verb.empty() && get ? "GET" : "POST");
      send_reply(c, std::move(rep));
      return;
    }
    // The /ui page holds no data (it is open, like a login page); its data,
    // /ui/state.json, needs the token as /metrics does.
    if ((route == Route::kVerb || route == Route::kMetrics || route == Route::kUiState) && !token_ok(r)) {
      Reply rep = json_error(401, "a valid bearer token is required");
      rep.extra_headers = "WWW-Authenticate: Bearer\r\n";
      send_reply(c, std::move(rep));
      return;
    }
    Conn* cp = &c;
    switch (route) {
      case Route::kHealth: {
        Reply rep;
        rep.content_type = "text/plain";
        rep.body = "ok\n";
        send_reply(c, std::move(rep));
        return;
      }
      case Route::kReady:
        metrics_pool->post([this, cp] {
          Reply rep;
          rep.content_type = "text/plain";
          if (service.ready()) {
            rep.body = "ok\n";
          } else {
            rep.status = 503;
            rep.body = "cluster state not loaded\n";
          }
          worker_reply(*cp, std::move(rep));
        });
        return;
      case Route::kMetrics:
        metrics_pool->post([this, cp] {
          Reply rep;
          rep.content_type = "text/plain; version=0.0.4";
          rep.body =
              guarded([&] { return render_metrics(service.metrics(), latency, counters) + render_process_metrics(); },
                      &rep.status);
          if (rep.status != 200) rep.content_type = "application/json";
          worker_reply(*cp, std::move(rep));
        });
        return;
      case Route::kUi: {
        Reply rep;
        rep.content_type = "text/html; charset=utf-8";
        rep.body = gpu_map_page("gpupack: GPU map", nullptr, "/ui/state.json", 2);
        send_reply(c, std::move(rep));
        return;
      }
      case Route::kUiState:
        metrics_pool->post([this, cp] {
          Reply rep;
          rep.content_type = "application/json";
          rep.body = guarded([&] { return service.gpu_map().dump(); }, &rep.status);
          worker_reply(*cp, std::move(rep));
        });
        return;
      case Route::kVerb:
        if (verb == "bind") {
          verbs->post([this, cp] { run_bind(cp); });
        } else {
          // The body is taken over (the connection's request is reset once the
          // reply is out).
          verbs->post([this, cp, verb] { worker_reply(*cp, run_verb(verb, std::move(cp->req.body))); });
        }
        return;
      case Route::kNone:
        return;
    }
  }

  // Runs `f`; an exception becomes a 500 JSON body.
  template <typename F>
  std::string guarded(F&& f, int* status) {
    try {
      return f();
    } catch (const std::exception& e) {
      *status = 500;
      return error_body(std::string("internal error: ") + e.what());
    } catch (...) {
      *status = 500;
      return error_body("internal error");
    }
  }

  Reply run_verb(const std::string& verb, std::string&& body) {
    const auto t0 = Clock::now();
    Reply rep;
    std::string error;
    rep.body = guarded([&] { return handle_verb(verb, std::move(body), &error); }, &rep.status);
    if (rep.status == 200 && !error.empty()) {
      rep.status = 400;
      rep.body = error_body(error);
    }
    latency.observe(verb, std::chrono::duration<double>(Clock::now() - t0).count());
    counters.add(verb, rep.status);
    return rep;
  }

  // bind may be answered later (a gang member waits for its gang, holding
  // no worker); the reply goes out from whichever thread answers it.
  void run_bind(Conn* cp) {
    const auto t0 = Clock::now();
    auto finish = [this, cp, t0](Reply rep) {
      latency.observe("bind", std::chrono::duration<double>(Clock::now() - t0).count());
      counters.add("bind", rep.status);
      worker_reply(*cp, std::move(rep));
    };
    auto args = parse_extender_binding_args(cp->req.body);
    if (!args) {
      Reply rep;
      rep.status = 400;
      rep.body = error_body(args.error().what());
      finish(std::move(rep));
      return;
    }
    auto answered = std::make_shared<std::atomic<bool>>(false);
    try {
      service.bind_async(args.value(), [finish, answered](ExtenderBindingResult r) {
        *answered = true;
        Reply rep;
        rep.body = to_json_text(r);
        finish(std::move(rep));
      });
    } catch (const std::exception& e) {
      if (*answered) return;
      Reply rep;
      rep.status = 500;
      rep.body = error_body(std::string("internal error: ") + e.what());
      finish(std::move(rep));
    }
  }

  std::string handle_verb(const std::string& verb, std::string&& body, std::string* error) {
    if (verb == "filter") {
      auto args = parse_extender_args_fast(std::move(body));
      if (!args) {
        *error = args.error().what();
        return "";
      }
      // A pod-level problem is the reply's Error with 200 (the scheduler shows it).
      return to_json_text(service.filter(args.value()));
    }
    if (verb == "prioritize") {
      auto args = parse_extender_args_fast(std::move(body));
      if (!args) {
        *error = args.error().what();
        return "";
      }
      HostPriorityList r = service.prioritize(args.value(), error);
      return error->empty() ? to_json_text(r) : "";
    }
    if (verb == "bind") {
      auto args = parse_extender_binding_args(body);
      if (!args) {
        *error = args.error().what();
        return "";
      }
      return to_json_text(service.bind(args.value()));
    }
    auto args = parse_extender_preemption_args(body);
    if (!args) {
      *error = args.error().what();
      return "";
    }
    ExtenderPreemptionResult r = service.preempt(args.value(), error);
    return error->empty() ? to_json_text(r) : "";
  }

  // ---- replies ------------------------------------------------------------

  // Fills the connection's output with one reply (head + body).
  void prepare(Conn& c, Reply r) {
    if (r.body.size() > max_reply_bytes) {
      const size_t size = r.body.size();
      r = json_error(500, fmt::format("reply of {} bytes exceeds the limit of {} bytes", size, max_reply_bytes));
    }
    if (r.close) c.close_after = true;
    const bool head_only = c.req.method == "HEAD";
    std::string head = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}", r.status,
                                   reason_phrase(r.status), r.content_type, r.body.size(), r.extra_headers);
    if (c.close_after)
      head += "Connection: close\r\n";
    else if (c.req.http10)
      head += "Connection: keep-alive\r\n";
    head += "\r\n";
    if (head_only) r.body.clear();
    if (c.ssl) {
      // One SSL_write: records fill whole segments.
      head += r.body;
      c.out_head = std::move(head);
      c.out_body.clear();
    } else {
      c.out_head = std::move(head);
      c.out_body = std::move(r.body);
    }
    c.sent = 0;
  }

  // Writes what it can; true when the whole reply is out (or the connection
  // broke, which sets broken).
  bool write_some(Conn& c) {
    for (;;) {
      const size_t total = c.out_head.size() + c.out_body.size();
      if (c.sent >= total) return true;
      ssize_t n;
      if (c.ssl) {
        ERR_clear_error();
        const size_t left = c.out_head.size() - c.sent;
        n = SSL_write(c.ssl, c.out_head.data() + c.sent, static_cast<int>(std::min<size_t>(left, 1 << 30)));
        if (n <= 0) {
          const int e = SSL_get_error(c.ssl, static_cast<int>(n));
          ERR_clear_error();
          if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) return false;
          c.broken = true;
          return true;
        }
      } else {
        iovec iov[2];
        int cnt = 0;
        if (c.sent < c.out_head.size()) {
          iov[cnt++] = {c.out_head.data() + c.sent, c.out_head.size() - c.sent};
          if (!c.out_body.empty()) iov[cnt++] = {c.out_body.data(), c.out_body.size()};
        } else {
          const size_t off = c.sent - c.out_head.size();
          iov[cnt++] = {c.out_body.data() + off, c.out_body.size() - off};
        }
        msghdr msg{};
        msg.msg_iov = iov;
        msg.msg_iovlen = static_cast<size_t>(cnt);
        n = ::sendmsg(c.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
          if (errno == EINTR) continue;
          c.broken = true;
          return true;
        }
      }
      c.sent += static_cast<size_t>(n);
    }
  }

  // On the loop thread: prepare, write, and go on with the connection.
  void send_reply(Conn& c, Reply r) {
    c.state = State::kDispatched;  // not reading while the reply is out
    prepare(c, std::move(r));
    if (write_some(c))
      finish_reply(c);
    else
      start_writing(c);
  }

  void start_writing(Conn& c) {
    c.state = State::kWriting;
    c.deadline = Clock::now() + std::chrono::seconds(std::max(1, options.write_timeout_s));
    watch(c, EPOLLOUT);
  }

  // After a complete reply: close, or wait for (or parse) the next request.
  void finish_reply(Conn& c) {
    c.out_head.clear();
    c.out_body = std::string();
    if (c.broken || c.peer_eof || stopping) {
      c.broken = true;  // the caller closes it
      return;
    }
    if (c.close_after) {
      // Lingering close: send FIN, then read and drop what the client still
      // sends (the rest of a refused body) for up to a second, so that the
      // reply is not destroyed by a reset before the client reads it.
      if (c.ssl) SSL_shutdown(c.ssl);
      ::shutdown(c.fd, SHUT_WR);
      c.state = State::kDraining;
      c.deadline = Clock::now() + std::chrono::seconds(1);
      watch(c, EPOLLIN | EPOLLRDHUP);
      return;
    }
    c.req = HttpRequest{};
    c.state = State::kIdle;
    c.deadline = Clock::now() + std::chrono::seconds(std::max(1, options.idle_timeout_s));
    watch(c, EPOLLIN | EPOLLRDHUP);
  }

  void drain(Conn& c) {
    static thread_local std::vector<char> scratch(64 << 10);
    for (int i = 0; i < 64 && !c.broken; ++i) {
      const ssize_t n = ::recv(c.fd, scratch.data(), scratch.size(), 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) c.broken = true;
      if (n <= 0) return;
      c.drained += static_cast<size_t>(n);
      if (c.drained > (16u << 20)) c.broken = true;
    }
  }

  // After finish_reply outside parse(): a pipelined request may wait in our
  // buffer or OpenSSL's, where epoll does not see it.
  void continue_reading(Conn& c) {
    if (!c.broken && c.state == State::kIdle && (!c.in.empty() || (c.ssl && SSL_pending(c.ssl) > 0))) read_and_parse(c);
  }

  // On a worker: write directly (no hop through the loop on the fast path),
  // then hand the connection back.
  void worker_reply(Conn& c, Reply r) {
    prepare(c, std::move(r));
    write_some(c);
    {
      std::lock_guard lock(done_mu);
      done.push_back(&c);
    }
    wake();
  }

  void collect_done() {
    std::vector<Conn*> ready;
    {
      std::lock_guard lock(done_mu);
      ready.swap(done);
    }
    for (Conn* c : ready) {
      const int fd = c->fd;
      const size_t total = c->out_head.size() + c->out_body.size();
      if (c->broken || c->sent >= total) {
        finish_reply(*c);
        continue_reading(*c);
      } else {
        start_writing(*c);
      }
      if (c->broken) close_conn(fd);
    }
  }
};

std::string normalize_url_prefix(const std::string& prefix) {
  std::string p = prefix;
  for (char c : p)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '.' || c == '-'))
      throw std::invalid_argument(
          fmt::format("--url-prefix \"{}\": only letters, digits and / _ . - are allowed", prefix));
  while (!p.empty() && p.back() == '/') p.pop_back();
  if (!p.empty() && p.front() != '/') p.insert(p.begin(), '/');
  return p;
}

HttpServer::HttpServer(ExtenderService& service, HttpOptions options, LatencyHistogram& latency,
                       RequestCounters& counters) {
  options.url_prefix = normalize_url_prefix(options.url_prefix);
  impl_ = std::make_unique<Impl>(service, std::move(options), latency, counters);
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::start() {
  keep_large_buffers();
  // OpenSSL writes with write(2), not send(MSG_NOSIGNAL): a TLS client gone
  // away must give EPIPE, not end the process.
  struct sigaction old {};
  if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) ::signal(SIGPIPE, SIG_IGN);
  port_ = impl_->start();
  return port_;
}

void HttpServer::stop() {
  if (impl_) impl_->stop();
}

}  // namespace gpupack
