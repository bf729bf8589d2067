// HttpServer: the HTTP face of `gpupack serve` (cpp-httplib).
//
// Contract:
// - Routes (POST): <prefix>/filter, <prefix>/prioritize, <prefix>/bind,
//   <prefix>/preempt, answering with the extender wire types (exact keys).
//   GET /metrics (Prometheus text 0.0.4), /healthz (always 200 while the
//   process serves), /readyz (200 once the cluster model is loaded, else 503).
// - Input errors never crash the server and never change state: a body that
//   is not valid wire JSON or names an unknown GPU resource gets 400 with
//   {"Error": "<what, with the field path>"}; a body over
//   `max_body_bytes` gets 413 with a JSON message; unknown paths 404; a
//   handler exception 500. A client slower than `read_timeout_s` is cut off.
//   Requests are served by a pool of `threads` workers, so one slow client
//   does not block the others. A keep-alive connection stays open for up to
//   100,000 requests (idle timeout 5 s), so the scheduler's connection keeps
//   its worker and that worker's warm parse buffers.
// - start() raises glibc's mmap/trim thresholds (process-wide) so that the
//   multi-MB buffers of full-Nodes requests are reused, not re-faulted.
// - Every extender call is timed from the complete body to the serialised
//   reply and recorded in latency() (gpupack_decision_duration_seconds).
// - start() binds and serves on a background thread and returns the bound
//   port (0 = pick a free one) or throws std::runtime_error; stop() is
//   idempotent and joins. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "server/extender_service.h"
#include "server/metrics.h"

namespace httplib {
class Server;
}

namespace gpupack {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8888;
  std::string url_prefix;                // e.g. "/gpupack"; "" = routes at the root
  size_t max_body_bytes = 64u << 20;     // 64 MiB: a 5,000-node full NodeList fits
  int read_timeout_s = 10;
  int write_timeout_s = 10;
  int threads = 8;
  bool serve_metrics = true;             // /metrics, /healthz, /readyz on this listener
  bool serve_extender = true;
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

 private:
  void install_routes();

  ExtenderService& service_;
  HttpOptions options_;
  LatencyHistogram& latency_;
  RequestCounters& counters_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

// Normalises a URL prefix: "" or "/" -> "", "x/" -> "/x". Throws
// std::invalid_argument on characters outside [A-Za-z0-9/_.-].
std::string normalize_url_prefix(const std::string& prefix);

}  // namespace gpupack
