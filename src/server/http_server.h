// HttpServer: the HTTP(S) face of `gpupack serve`.
//
// Contract:
// - Routes (POST): <prefix>/filter, <prefix>/prioritize, <prefix>/bind,
//   <prefix>/preempt, answering with the extender wire types (exact keys).
//   GET /metrics (Prometheus text 0.0.4), /healthz (always 200 while the
//   process serves), /readyz (200 once the cluster model is loaded, else 503),
//   /ui (the GPU map page, analyze/gpu_map.h) and /ui/state.json (its data).
// - bind may be answered later than its worker returns (a gang member waits
//   for its gang, ExtenderService::bind_async): no worker is held meanwhile;
//   stop() first has the service answer every held bind.
// - Input errors never crash the server and never change state: a body that
//   is not valid wire JSON or names an unknown GPU resource gets 400 with
//   {"Error": "<what, with the field path>"}; unknown paths 404, a known path
//   with another method 405, a handler exception 500. Every error reply is
//   JSON {"Error": ...}.
// - Limits count what is really read: a body (Content-Length, or chunked,
//   counted after de-chunking) over `max_body_bytes` gets 413 and the
//   connection is closed without reading the rest; a Content-Encoding other
//   than identity gets 415 (bodies are never inflated); a request line plus
//   headers over `max_header_bytes` gets 431; a reply over `max_reply_bytes`
//   is replaced by a 500 naming the size. Memory per connection is bounded by
//   these limits.
// - Connections: one event-loop thread accepts and reads every connection
//   (non-blocking, epoll), so idle or slow connections hold no worker. Beyond
//   `max_connections` open connections a new one gets 503 + close. A request
//   (headers and body) must arrive within min(read_timeout_s,
//   request_timeout_s) of its first byte, a reply must be written within
//   write_timeout_s, and a keep-alive connection idle for idle_timeout_s is
//   closed; a connection past a deadline is closed without a reply. Accepted
//   sockets have TCP_NODELAY and every reply (status line, headers, body)
//   leaves in one writev, so a request costs one round trip.
// - Pools: complete verb requests run on `threads` workers; /metrics and
//   /readyz on `metrics_threads` others; /healthz is answered by the event
//   loop itself. A slow scraper or a queue of verbs never delays /healthz.
//   A keep-alive connection serves any number of requests.
// - TLS (when tls_cert_file is set): HTTPS only (a plain-HTTP client gets no
//   HTTP reply; the handshake fails and the connection is closed), TLS 1.2+.
//   The certificate and key files are re-read within about a second of a
//   change (connections made after that use them; a pair that does not load
//   keeps the previous one and is reported on stderr). With
//   tls_client_ca_file, a client must present a certificate signed by that CA.
// - token_file: when set, the verbs, /metrics and /ui/state.json need
//   "Authorization: Bearer <token>" equal to the file's content
//   (whitespace-trimmed; re-read on change), else 401. /healthz, /readyz and
//   the /ui page (no data) stay open.
// - Every extender call is timed from the complete body to the serialised
//   reply and recorded in latency() (gpupack_decision_duration_seconds).
// - start() raises glibc's mmap/trim thresholds (process-wide) so that the
//   multi-MB buffers of full-Nodes requests are reused, not re-faulted, sets
//   SIGPIPE to ignored if it was at its default (OpenSSL writes with
//   write(2); a vanished TLS client must not end the process), binds,
//   serves on background threads and returns the bound port (0 = pick a free
//   one); it throws std::runtime_error naming the address or file on failure.
// - stop() (idempotent; also the destructor): stops accepting, closes idle
//   and half-read connections at once, lets requests already handed to a
//   worker finish and their replies be written for up to shutdown_grace_s,
//   then closes the rest and joins every thread. Handlers are never
//   interrupted (they take milliseconds). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "server/extender_service.h"
#include "server/metrics.h"

namespace gpupack {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8888;
  std::string url_prefix;               // e.g. "/gpupack"; "" = routes at the root
  size_t max_body_bytes = 64u << 20;    // 64 MiB: a 5,000-node full NodeList fits
  size_t max_reply_bytes = 0;           // 0 = 2 x max_body_bytes + 1 MiB
  size_t max_header_bytes = 16u << 10;  // request line + headers
  int read_timeout_s = 10;              // request deadline (kept for compatibility)
  int request_timeout_s = 10;           // headers + body, from the request's first byte
  int write_timeout_s = 10;             // one reply
  int idle_timeout_s = 60;              // keep-alive connection without a request
  int max_connections = 4096;           // open connections; 503 + close beyond
  int shutdown_grace_s = 5;             // stop(): time left to in-flight replies
  int threads = 8;                      // verb workers
  int metrics_threads = 1;              // /metrics and /readyz workers
  bool serve_metrics = true;            // /metrics, /healthz, /readyz on this listener
  bool serve_extender = true;
  std::string tls_cert_file;       // PEM chain; set = HTTPS only
  std::string tls_key_file;        // PEM key (required with tls_cert_file)
  std::string tls_client_ca_file;  // set = client certificates required
  std::string token_file;          // set = bearer token on verbs and /metrics
};

class HttpServer {
 public:
  HttpServer(ExtenderService& service, HttpOptions options, LatencyHistogram& latency, RequestCounters& counters);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int start();
  void stop();
  int port() const { return port_; }

  struct Impl;  // the event loop, pools and TLS state (http_server.cc)

 private:
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

// Normalises a URL prefix: "" or "/" -> "", "x/" -> "/x". Throws
// std::invalid_argument on characters outside [A-Za-z0-9/_.-].
std::string normalize_url_prefix(const std::string& prefix);

}  // namespace gpupack
