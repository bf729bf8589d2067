#include "server/http_server.h"

#include <fmt/format.h>
#include "server/httplib_config.h"
#include "server/extender_args_fast.h"

#include <malloc.h>

#include <chrono>
#include <stdexcept>

namespace gpupack {

namespace {

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

}  // namespace

std::string normalize_url_prefix(const std::string& prefix) {
  std::string p = prefix;
  for (char c : p)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '.' || c == '-'))
      throw std::invalid_argument(fmt::format("--url-prefix \"{}\": only letters, digits and / _ . - are allowed", prefix));
  while (!p.empty() && p.back() == '/') p.pop_back();
  if (!p.empty() && p.front() != '/') p.insert(p.begin(), '/');
  return p;
}

HttpServer::HttpServer(ExtenderService& service, HttpOptions options, LatencyHistogram& latency,
                       RequestCounters& counters)
    : service_(service), options_(std::move(options)), latency_(latency), counters_(counters) {
  options_.url_prefix = normalize_url_prefix(options_.url_prefix);
  server_ = std::make_unique<httplib::Server>();
  install_routes();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::install_routes() {
  httplib::Server& s = *server_;
  const int threads = std::max(1, options_.threads);
  s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  s.set_payload_max_length(options_.max_body_bytes);
  s.set_read_timeout(options_.read_timeout_s, 0);
  s.set_write_timeout(options_.write_timeout_s, 0);
  s.set_keep_alive_timeout(5);
  // The scheduler reuses one connection; httplib's default closes it every
  // 5 requests, and the reconnect lands on a worker whose buffers are cold.
  s.set_keep_alive_max_count(100000);
  const size_t limit = options_.max_body_bytes;
  s.set_error_handler(httplib::Server::HandlerWithResponse([limit](const httplib::Request& req,
                                                                   httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string msg;
    if (res.status == 413) msg = fmt::format("request body exceeds the limit of {} bytes", limit);
    else if (res.status == 404) msg = fmt::format("no route for {} {}", req.method, req.path);
    else msg = fmt::format("HTTP {}", res.status);
    res.set_content(error_body(msg), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string msg = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      msg = std::string("internal error: ") + e.what();
    } catch (...) {
    }
    res.status = 500;
    res.set_content(error_body(msg), "application/json");
  });

  if (options_.serve_metrics) {
    s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(render_metrics(service_.metrics(), latency_, counters_), "text/plain; version=0.0.4");
    });
    s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
    s.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
      if (service_.ready()) {
        res.set_content("ok\n", "text/plain");
      } else {
        res.status = 503;
        res.set_content("cluster state not loaded\n", "text/plain");
      }
    });
  }
  if (!options_.serve_extender) return;

  // Each verb: parse (400 for an unreadable request only), call the service,
  // serialise, time it.
  auto route = [this](const std::string& verb, auto&& handle) {
    server_->Post(options_.url_prefix + "/" + verb, [this, verb, handle](const httplib::Request& req,
                                                                        httplib::Response& res) {
      const auto t0 = std::chrono::steady_clock::now();
      std::string error;
      std::string body = handle(req.body, &error);
      if (!error.empty()) {
        res.status = 400;
        res.set_content(error_body(error), "application/json");
      } else {
        res.set_content(std::move(body), "application/json");
      }
      latency_.observe(verb, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      counters_.add(verb, res.status == -1 ? 200 : res.status);
    });
  };
  route("filter", [this](const std::string& body, std::string* error) -> std::string {
    auto args = parse_extender_args_fast(body);
    if (!args) {
      *error = args.error().what();
      return "";
    }
    // A pod-level problem is the reply's Error with 200 (the scheduler shows it).
    return to_json_text(service_.filter(args.value()));
  });
  route("prioritize", [this](const std::string& body, std::string* error) -> std::string {
    auto args = parse_extender_args_fast(body);
    if (!args) {
      *error = args.error().what();
      return "";
    }
    HostPriorityList r = service_.prioritize(args.value(), error);
    return error->empty() ? to_json_text(r) : "";
  });
  route("bind", [this](const std::string& body, std::string* error) -> std::string {
    auto args = parse_extender_binding_args(body);
    if (!args) {
      *error = args.error().what();
      return "";
    }
    return to_json_text(service_.bind(args.value()));
  });
  route("preempt", [this](const std::string& body, std::string* error) -> std::string {
    auto args = parse_extender_preemption_args(body);
    if (!args) {
      *error = args.error().what();
      return "";
    }
    ExtenderPreemptionResult r = service_.preempt(args.value(), error);
    return error->empty() ? to_json_text(r) : "";
  });
}

int HttpServer::start() {
  keep_large_buffers();
  if (options_.port == 0) {
    port_ = server_->bind_to_any_port(options_.host);
  } else {
    port_ = server_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ <= 0) throw std::runtime_error(fmt::format("cannot listen on {}:{}", options_.host, options_.port));
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return port_;
}

void HttpServer::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpupack
