// gpupack serve: the kube-scheduler extender (filter, prioritize, bind,
// preempt) with /metrics, /healthz and /readyz.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "io/kubectl.h"
#include "io/pod_resources.h"
#include "policy/registry.h"
#include "server/bind_journal.h"
#include "server/cluster_watch.h"
#include "server/extender_service.h"
#include "server/http_server.h"
#include "server/kube_client.h"
#include "server/kubeconfig.h"
#include "server/metrics.h"
#include "util/files.h"
#include "util/heap.h"
#include "util/log.h"

namespace gpupack::cli {
namespace {

constexpr auto kHeapReleaseInterval = std::chrono::seconds(30);
std::atomic<int> g_stop_signal{0};  // the signal that asked to stop; 0 = none
extern "C" void on_signal(int sig) { g_stop_signal = sig; }

struct ServeFlags {
  std::string listen = "127.0.0.1:8888";
  std::string metrics_listen;
  std::string url_prefix;
  std::string policy = "fgd";
  std::string nodes, pods, claims, pods_out, port_file;
  std::string kubeconfig, context;
  std::string log_level = "info";
  bool in_cluster = false;
  int resync_s = 0;
  bool full_reloads = false;
  int threads = 8;
  int read_timeout_s = 10;
  size_t max_body_bytes = 64u << 20;
  HttpOptions http;             // the listener's limits, TLS and token (flags below)
  std::string assume = "auto";  // auto | on | off
  int assume_timeout_s = 30;
  bool legacy_failed_nodes = false;
  std::vector<std::string> scheduler_names = {"gpupack-scheduler"};
  bool accept_request_nodes = false;
  double gang_timeout_s = 20;
  double gang_bind_wait_s = 8;
  int metrics_max_nodes = 5000;
  int score_threads = 1;
  double restart_grace_s = 5;
  std::vector<std::string> topology_labels;
  std::string pod_groups;
};

std::map<std::string, int> pod_group_minimums(const std::vector<K8sPodGroup>& groups) {
  std::map<std::string, int> out;
  for (const K8sPodGroup& g : groups) out[g.key()] = g.min_member;
  return out;
}

// Lists the PodGroups of every API the server serves (a 404 is an API not
// installed); returns false (and says why once) when
// one that exists could not be read.
bool list_pod_groups(const KubeClient& client, std::map<std::string, int>& out, std::string* error) {
  std::map<std::string, int> all;
  const std::pair<const char*, KubeResponse> lists[] = {{"scheduling.x-k8s.io", client.list_coscheduling_pod_groups()},
                                                        {"scheduling.volcano.sh", client.list_volcano_pod_groups()},
                                                        {"scheduling.run.ai", client.list_kai_pod_groups()}};
  for (const auto& [api, r] : lists) {
    if (r.status == 404) continue;
    if (!r.error.empty()) {
      *error = fmt::format("listing {} podgroups: {}", api, r.error);
      return false;
    }
    std::vector<std::string> rejected;
    for (const auto& [key, min] : pod_group_minimums(parse_pod_group_list(r.body, api, &rejected))) all[key] = min;
    for (const std::string& why : rejected) log_warn("pod group not read", {{"detail", why}});
  }
  out = std::move(all);
  return true;
}

std::pair<std::string, int> split_listen(const std::string& flag, const std::string& v) {
  const size_t colon = v.rfind(':');
  if (colon == std::string::npos || colon == 0)
    throw std::invalid_argument(fmt::format("{} \"{}\": expected ADDR:PORT", flag, v));
  int port = -1;
  try {
    size_t used = 0;
    port = std::stoi(v.substr(colon + 1), &used);
    if (used != v.size() - colon - 1) port = -1;
  } catch (...) {
  }
  if (port < 0 || port > 65535) throw std::invalid_argument(fmt::format("{} \"{}\": bad port", flag, v));
  std::string host = v.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {host, port};
}

std::string read_text(const std::string& path) { return read_file_bounded(path); }

std::vector<nlohmann::json> raw_items(const std::string& text, const std::string& source) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object() || !doc.contains("items") || !doc["items"].is_array())
    throw std::invalid_argument(source + ": not a Kubernetes List with an items array");
  return doc["items"].get<std::vector<nlohmann::json>>();
}

void run_serve(const ServeFlags& f) {
  set_log_level(f.log_level);
  // A long-running server: one heap arena per core, not glibc's eight, each
  // of which would keep its own free memory (docs/SERVE.md, Memory).
  limit_heap_arenas(static_cast<int>(std::max(2U, std::thread::hardware_concurrency())));
  const bool snapshot = !f.nodes.empty() || !f.pods.empty();
  ServiceOptions so;
  so.policy = f.policy;
  // Without the API nothing else tells gpupack where a pod went when the
  // scheduler binds it: assume it on the node scored 10 (docs/SERVE.md).
  so.assume_on_prioritize = f.assume == "on" || (f.assume == "auto" && snapshot);
  so.assume_timeout = std::chrono::seconds(f.assume_timeout_s);
  so.legacy_failed_nodes = f.legacy_failed_nodes;
  so.accept_request_nodes = f.accept_request_nodes;
  so.gang_timeout = std::chrono::milliseconds(static_cast<int64_t>(f.gang_timeout_s * 1000));
  so.topology_labels = f.topology_labels;
  so.gang_bind_wait = std::chrono::milliseconds(static_cast<int64_t>(f.gang_bind_wait_s * 1000));
  so.metrics_max_nodes = f.metrics_max_nodes;
  so.score_threads = f.score_threads;
  for (const std::string& n : f.scheduler_names)
    if (n != "*") so.scheduler_names.insert(n);
  if (std::find(f.scheduler_names.begin(), f.scheduler_names.end(), "*") != f.scheduler_names.end())
    so.scheduler_names.clear();
  ExtenderService service(so);
  std::unique_ptr<KubeClient> client;
  std::unique_ptr<KubeBinder> binder;
  std::unique_ptr<BindJournal> journal;  // snapshot mode with --pods-out
  std::unique_ptr<ClusterWatch> watch;
  if (snapshot) {
    if (f.nodes.empty() || f.pods.empty()) throw std::invalid_argument("--nodes and --pods go together");
    std::vector<std::string> node_warnings;
    auto nodes = read_node_list_file(f.nodes, nullptr, &node_warnings);
    for (const std::string& w : node_warnings) log_warn("node", {{"detail", w}});
    const std::string pod_text = read_text(f.pods);
    auto pods = parse_pod_list(pod_text, f.pods);
    auto objects = raw_items(pod_text, f.pods);
    if (!f.pods_out.empty()) {
      // Binds acknowledged before a crash are in the journal: replay them,
      // make the result durable in --pods-out, then start the journal anew.
      const std::string journal_path = f.pods_out + ".journal";
      const std::vector<BindRecord> records = read_bind_journal(journal_path);
      if (!records.empty()) {
        for (const std::string& m : apply_bind_records(objects, records))
          log_warn("journal bind not applied", {{"detail", m}});
        pods.clear();
        for (const nlohmann::json& o : objects) pods.push_back(parse_pod(o));
        log_info("bind journal replayed", {{"journal", journal_path}, {"binds", std::to_string(records.size())}});
      }
      write_file_atomically(f.pods_out,
                            nlohmann::json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", objects}}.dump(1) + "\n");
      if (std::filesystem::exists(journal_path)) {
        std::filesystem::resize_file(journal_path, 0);
        sync_file_and_dir(journal_path);
      }
      journal = std::make_unique<BindJournal>(journal_path);
    }
    if (!f.claims.empty()) {
      for (const std::string& m : apply_resource_claims(pods, read_resource_claim_list_file(f.claims)))
        log_warn("resource claim not charged", {{"detail", m}});
    }
    if (!f.pod_groups.empty()) service.set_pod_groups(pod_group_minimums(read_pod_group_list_file(f.pod_groups)));
    for (const std::string& u : service.set_cluster(std::move(nodes), std::move(pods), std::move(objects)))
      log_warn("pod not attributed", {{"pod", u}});
    if (journal) service.set_binder(journal.get());  // a bind is acknowledged once journaled
  } else {
    if (!f.claims.empty())
      throw std::invalid_argument("--claims goes with --nodes/--pods (the API is watched instead)");
    if (!f.pod_groups.empty())
      throw std::invalid_argument("--pod-groups goes with --nodes/--pods (the API is listed instead)");
    KubeConfig cfg = resolve_kube_config({.kubeconfig_path = f.kubeconfig, .context = f.context});
    log_info("API server", {{"server", cfg.server}, {"source", cfg.source}});
    client = std::make_unique<KubeClient>(cfg);
    binder = std::make_unique<KubeBinder>(*client);
    WatchOptions w;
    w.relist_s = f.resync_s;
    w.pod_updates_in_place = !f.full_reloads;
    watch = std::make_unique<ClusterWatch>(*client, service, w);
    watch->start();  // lists (or throws), then watches
    // A process killed while it wrote binds may have left requests in flight
    // (an annotation PATCHed, its Binding not yet applied): such a Binding
    // can land after this process listed. Pending pods that carry gpupack's
    // assignment or gang commit say so; before serving, give those requests
    // time to land (the watch applies them), so that no decision is made on
    // GPUs a late Binding is about to take.
    int intents = 0;
    for (const K8sPod& p : service.pods())
      if (p.node_name.empty() && !p.terminal() &&
          (p.assigned || p.annotations.count(std::string(annotations::kGangCommit))))
        ++intents;
    if (intents > 0 && f.restart_grace_s > 0) {
      log_info("waiting for binds a previous process left in flight",
               {{"pods", std::to_string(intents)}, {"seconds", fmt::format("{}", f.restart_grace_s)}});
      std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(f.restart_grace_s * 1000)));
    }
    // Gang minimums are known before the first call (then every 10 s).
    std::map<std::string, int> groups;
    std::string group_error;
    if (list_pod_groups(*client, groups, &group_error)) {
      service.set_pod_groups(std::move(groups));
    } else {
      log_warn("pod groups not listed", {{"error", group_error}});
    }
    service.set_binder(binder.get());
  }

  LatencyHistogram latency;
  RequestCounters counters;
  auto [host, port] = split_listen("--listen", f.listen);
  HttpOptions main_opts = f.http;
  main_opts.host = host;
  main_opts.port = port;
  main_opts.url_prefix = f.url_prefix;
  main_opts.threads = f.threads;
  main_opts.read_timeout_s = f.read_timeout_s;
  main_opts.max_body_bytes = f.max_body_bytes;
  HttpServer main_server(service, main_opts, latency, counters);
  // From the first listener on, a stop signal drains: a supervisor may send
  // SIGTERM as soon as the port file (written last) says the server is up.
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const int bound = main_server.start();
  std::unique_ptr<HttpServer> metrics_server;
  int metrics_port = 0;
  std::string metrics_host;
  if (!f.metrics_listen.empty()) {
    auto [mhost, mport] = split_listen("--metrics-listen", f.metrics_listen);
    metrics_host = mhost;
    HttpOptions m = f.http;  // same limits, certificate and token; no client CA (probes have none)
    m.tls_client_ca_file.clear();
    m.host = mhost;
    m.port = mport;
    m.serve_extender = false;
    m.threads = 2;
    metrics_server = std::make_unique<HttpServer>(service, m, latency, counters);
    metrics_port = metrics_server->start();
  }
  LogFields started = {{"mode", snapshot ? "snapshot" : "api"},
                       {"policy", f.policy},
                       {"listen", fmt::format("{}:{}{}", host, bound, main_opts.url_prefix)},
                       {"tls", main_opts.tls_cert_file.empty() ? "off" : "on"}};
  if (metrics_server) started.push_back({"metrics_listen", fmt::format("{}:{}", metrics_host, metrics_port)});
  log_info("serving", started);
  if (!f.port_file.empty()) write_file_atomically(f.port_file, fmt::format("{}\n", bound));

  uint64_t written = service.mutation_count();
  std::string reported_error, group_error;
  std::vector<std::string> reported_notes;
  auto next_groups = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto next_trim = std::chrono::steady_clock::now() + kHeapReleaseInterval;
  while (!g_stop_signal) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    service.tick();  // gang and assumption timeouts; gang members a crash left unbound
    if (std::chrono::steady_clock::now() >= next_trim) {
      // Reloads free whole models at once; hand those pages back so that the
      // resident set follows what is in use (gpupack_process_heap_*).
      const auto t0 = std::chrono::steady_clock::now();
      const int64_t released = release_free_heap();
      next_trim = std::chrono::steady_clock::now() + kHeapReleaseInterval;
      log_debug(
          "heap released",
          {{"bytes", std::to_string(released)},
           {"ms",
            fmt::format("{:.1f}",
                        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count())}});
    }
    if (client && std::chrono::steady_clock::now() >= next_groups) {
      // PodGroup objects change rarely: listed every 10 s, not watched.
      next_groups = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      std::map<std::string, int> groups;
      std::string error;
      if (list_pod_groups(*client, groups, &error)) {
        service.set_pod_groups(std::move(groups));
      } else if (error != group_error) {
        log_warn("pod groups not listed", {{"error", error}});
      }
      group_error = error;
    }
    if (!f.pods_out.empty() && service.mutation_count() != written) {
      written = service.mutation_count();
      write_file_atomically(f.pods_out, service.pod_list_json().dump(1) + "\n");
    }
    if (watch) {
      // Say what went wrong with the API once, not on every retry.
      const std::string error = watch->stats().last_error;
      if (!error.empty() && error != reported_error) log_error("API watch", {{"error", error}});
      reported_error = error;
      std::vector<std::string> notes = watch->stats().claim_notes;
      if (notes != reported_notes) {
        for (const std::string& n : notes) log_warn("resource claim not charged", {{"detail", n}});
        reported_notes = std::move(notes);
      }
    }
  }
  if (watch) watch->stop();
  // Both listeners drain at once: the exit comes within one shutdown grace.
  std::thread metrics_stop([&] {
    if (metrics_server) metrics_server->stop();
  });
  main_server.stop();
  metrics_stop.join();
  log_info("stopped", {{"signal", g_stop_signal.load() == SIGTERM ? "SIGTERM" : "SIGINT"}});
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve",
                                     "Run the kube-scheduler extender (filter, prioritize, bind, preempt) "
                                     "with /metrics, /healthz and /readyz");
  cmd->add_option("--listen", flags->listen, "ADDR:PORT for the extender (port 0 = any free port)")
      ->capture_default_str();
  cmd->add_option("--metrics-listen", flags->metrics_listen,
                  "ADDR:PORT for a second listener with /metrics, /healthz, /readyz only");
  cmd->add_option("--url-prefix", flags->url_prefix, "path prefix of the extender verbs, e.g. /gpupack");
  cmd->add_option("--policy", flags->policy, "scoring policy")
      ->capture_default_str()
      ->check(CLI::IsMember(gpupack::policy_names()));
  cmd->add_option("--nodes", flags->nodes, "start from `kubectl get nodes -o json` (no API server)");
  cmd->add_option("--pods", flags->pods, "start from `kubectl get pods -A -o json` (no API server)");
  cmd->add_option("--claims", flags->claims,
                  "with --pods: `kubectl get resourceclaims -A -o json`, GPUs allocated through DRA are charged");
  cmd->add_option("--pods-out", flags->pods_out,
                  "snapshot mode: binds are durable: each is journaled (FILE.journal, fsynced) before it is "
                  "acknowledged, the pods with binds applied are written here; restart with --pods FILE");
  cmd->add_option("--port-file", flags->port_file, "write the bound extender port to this file");
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "kubeconfig for the API (default: KUBECONFIG, ~/.kube/config, then the in-cluster service account)");
  cmd->add_option("--context", flags->context, "kubeconfig context to use instead of current-context");
  cmd->add_option("--resync", flags->resync_s,
                  "API mode: besides watching, relist nodes and pods every N seconds (0 = only when a watch needs it)")
      ->capture_default_str();
  cmd->add_flag("--full-reloads", flags->full_reloads,
                "API mode: rebuild the whole model for pod events too (default: pod events change it in place)");
  cmd->add_option("--log-level", flags->log_level, "error, warn, info or debug (logfmt lines on stderr)")
      ->capture_default_str()
      ->check(CLI::IsMember({"error", "warn", "info", "debug"}));
  cmd->add_option("--threads", flags->threads, "HTTP worker threads")->capture_default_str()->check(CLI::Range(1, 256));
  cmd->add_option("--read-timeout", flags->read_timeout_s, "seconds before a slow client is cut off")
      ->capture_default_str()
      ->check(CLI::Range(1, 600));
  cmd->add_option("--max-body-bytes", flags->max_body_bytes, "largest request body accepted (413 above)")
      ->capture_default_str();
  HttpOptions& h = flags->http;
  cmd->add_option("--request-timeout", h.request_timeout_s, "seconds a request (headers and body) may take to arrive")
      ->capture_default_str()
      ->check(CLI::Range(1, 600));
  cmd->add_option("--idle-timeout", h.idle_timeout_s, "seconds an idle keep-alive connection is kept")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--max-connections", h.max_connections, "open connections per listener (503 + close beyond)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--max-reply-bytes", h.max_reply_bytes, "largest reply sent (500 above; 0 = 2 x max body + 1 MiB)")
      ->capture_default_str();
  cmd->add_option("--shutdown-grace", h.shutdown_grace_s, "seconds in-flight requests get on SIGTERM")
      ->capture_default_str()
      ->check(CLI::Range(0, 600));
  cmd->add_option("--tls-cert-file", h.tls_cert_file, "PEM certificate chain: serve HTTPS only (reloaded on change)");
  cmd->add_option("--tls-key-file", h.tls_key_file, "PEM private key of --tls-cert-file (reloaded on change)");
  cmd->add_option("--tls-client-ca-file", h.tls_client_ca_file,
                  "PEM CA: extender clients must present a certificate it signed");
  cmd->add_option("--token-file", h.token_file,
                  "file holding a bearer token required on the verbs and /metrics (reloaded on change)");
  cmd->add_option("--assume", flags->assume,
                  "assume each pod on its top-scored node at prioritize until a bind, the API or a new filter "
                  "says otherwise (auto = on without an API server)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->add_option("--assume-timeout", flags->assume_timeout_s, "seconds an unconfirmed assumption is kept")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  cmd->add_option("--scheduler-name", flags->scheduler_names,
                  "serve pods with this spec.schedulerName (repeat for several; * = any); others get an Error and "
                  "change nothing")
      ->capture_default_str();
  cmd->add_flag("--accept-request-nodes", flags->accept_request_nodes,
                "add full Node objects from requests that the API or --nodes does not list (off: they are "
                "unresolvable)");
  cmd->add_option("--gang-timeout", flags->gang_timeout_s,
                  "seconds a planned gang keeps its GPUs without a member's bind before it is released (keep it "
                  "below the scheduler's extender httpTimeout)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--gang-bind-wait", flags->gang_bind_wait_s,
                  "seconds a gang member's bind call is held before it is answered (the member stays ready and is "
                  "bound with its gang); keep it below the scheduler's extender httpTimeout")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 3600.0));
  cmd->add_option("--metrics-max-nodes", flags->metrics_max_nodes,
                  "/metrics: per-node and per-GPU series only while the cluster has at most this many GPU nodes "
                  "(pool and cluster series always)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--score-threads", flags->score_threads,
                  "threads scoring one request's nodes when it has thousands of distinct ones (hardware requests, "
                  "Nodes mode over many node classes); answers are the same for any count")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_option("--restart-grace", flags->restart_grace_s,
                  "API mode: seconds to wait before serving when pending pods carry gpupack's assignment (binds "
                  "of a previous process may still land)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 600.0));
  cmd->add_option("--topology-label", flags->topology_labels,
                  "node label naming a gang locality domain (a rack, a switch); repeat, narrowest first");
  cmd->add_option("--pod-groups", flags->pod_groups,
                  "with --pods: `kubectl get podgroups -A -o json` (their spec.minMember); the API is listed "
                  "otherwise");
  cmd->add_flag("--legacy-failed-nodes", flags->legacy_failed_nodes,
                "list unresolvable nodes in FailedNodes (kube-scheduler before v1.21)");
  cmd->callback([flags] { run_serve(*flags); });
}

}  // namespace gpupack::cli
