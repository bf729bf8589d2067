// Load test of `gpupack serve`'s HTTP extender: 5,000 GPU nodes, several
// keep-alive HTTP client threads posting filter + prioritize for a bounded
// number of pods, in both node-cache modes. Reports the server-side latency
// (from the complete body to the serialised reply, as recorded in
// gpupack_decision_duration_seconds) p50/p99 per verb, and the client-side
// throughput.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "io/kubectl.h"
#include "server/extender_args_fast.h"
#include "server/extender_service.h"
#include "server/http_server.h"
#include "server/httplib_config.h"
#include "server/metrics.h"

namespace gpupack {
namespace {

using nlohmann::json;

constexpr int kNodes = 5000;

json node_object(int i) {
  json alloc = {{"cpu", "96"}, {"memory", "512Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", "gpu-node-" + std::to_string(i)},
            {"labels",
             {{"nvidia.com/gpu.product", i % 2 ? "NVIDIA-A100-SXM4-80GB" : "NVIDIA-H100-80GB-HBM3"},
              {"kubernetes.io/hostname", "gpu-node-" + std::to_string(i)}}}}},
          {"spec", json::object()},
          {"status", {{"capacity", alloc}, {"allocatable", alloc}}}};
}

json pod_object(const std::string& name, const std::string& node, const std::string& assigned, int milli) {
  json ann = {{"gpupack.io/gpu-milli", std::to_string(milli)}};
  if (!assigned.empty()) ann["gpupack.io/assigned-gpus"] = assigned;
  json spec = {{"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "4"}, {"memory", "16Gi"}}}}}}}}};
  if (!node.empty()) spec["nodeName"] = node;
  return {{"metadata", {{"name", name}, {"namespace", "bench"}, {"uid", "u-" + name}, {"annotations", ann}}},
          {"spec", spec},
          {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
}

// The benchmark cluster: 5,000 nodes, a third of them carrying fractional
// pods so that scores differ, and the pending pod's request body.
struct LoadCluster {
  std::vector<json> node_objects;
  std::vector<K8sNode> nodes;
  std::vector<std::string> names;
  std::vector<K8sPod> pods;

  LoadCluster() {
    for (int i = 0; i < kNodes; ++i) {
      node_objects.push_back(node_object(i));
      nodes.push_back(parse_node(node_objects.back()));
      names.push_back(nodes.back().spec.name);
    }
    for (int i = 0; i < kNodes; i += 3)
      for (int g = 0; g < 3; ++g)
        pods.push_back(parse_pod(pod_object("run-" + std::to_string(i) + "-" + std::to_string(g), names[i],
                                            names[i] + ":" + std::to_string(g) + "@" + std::to_string(250 * (g + 1)),
                                            250 * (g + 1))));
  }
  std::string body(bool cache_mode) const {
    json args = {{"Pod", pod_object("pending", "", "", 500)}};
    if (cache_mode) {
      args["NodeNames"] = names;
      args["Nodes"] = nullptr;
    } else {
      args["Nodes"] = {{"metadata", json::object()}, {"items", node_objects}};
      args["NodeNames"] = nullptr;
    }
    return args.dump();
  }
};

const LoadCluster& load_cluster() {
  static const LoadCluster c;
  return c;
}

void run_load(benchmark::State& state, bool cache_mode) {
  const LoadCluster& c = load_cluster();
  const std::vector<K8sNode>& nodes = c.nodes;
  const std::vector<K8sPod>& pods = c.pods;
  ExtenderService service("fgd");
  service.set_cluster(nodes, pods);
  LatencyHistogram latency;
  RequestCounters counters;
  HttpOptions o;
  o.port = 0;
  o.threads = 4;
  HttpServer server(service, o, latency, counters);
  const int port = server.start();

  const std::string body = c.body(cache_mode);
  // GPUPACK_LOAD_CLIENTS / GPUPACK_LOAD_REQUESTS override the load shape.
  const char* env_clients = std::getenv("GPUPACK_LOAD_CLIENTS");
  const char* env_requests = std::getenv("GPUPACK_LOAD_REQUESTS");
  const int clients = env_clients ? std::max(1, std::atoi(env_clients)) : 4;
  const int per_client = env_requests ? std::max(1, std::atoi(env_requests)) : (cache_mode ? 200 : 40);
  const char* env_reload = std::getenv("GPUPACK_LOAD_RELOAD_MS");
  const int reload_ms = env_reload ? std::max(0, std::atoi(env_reload)) : 0;
  // Each client first sends kWarmup pairs (the server's per-thread parsers
  // and buffers reach their size), then all measure together.
  constexpr int kWarmup = 3;
  std::atomic<int> failures{0};
  for (auto _ : state) {
    std::barrier warm(clients + 1);
    std::barrier go(clients + 1);
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c)
      threads.emplace_back([&] {
        httplib::Client cli("127.0.0.1", port);
        cli.set_keep_alive(true);
        cli.set_read_timeout(30, 0);
        for (int k = 0; k < kWarmup + per_client; ++k) {
          if (k == kWarmup) {
            warm.arrive_and_wait();
            go.arrive_and_wait();
          }
          auto f = cli.Post("/filter", body, "application/json");
          auto p = cli.Post("/prioritize", body, "application/json");
          if (!f || f->status != 200 || !p || p->status != 200) ++failures;
        }
      });
    warm.arrive_and_wait();
    // The slowest warm-up request: a worker's first large body (cold buffers).
    state.counters["warmup_filter_max_ms"] = 1e3 * latency.quantile("filter", 1.0);
    latency.reset();
    const auto t0 = std::chrono::steady_clock::now();
    // GPUPACK_LOAD_RELOAD_MS: reload the whole cluster that often while the
    // clients run, as a watch flush does in API mode.
    std::atomic<bool> clients_done{false};
    std::thread reloader;
    if (reload_ms > 0)
      reloader = std::thread([&] {
        while (!clients_done) {
          service.set_cluster(nodes, pods);
          std::this_thread::sleep_for(std::chrono::milliseconds(reload_ms));
        }
      });
    go.arrive_and_wait();
    for (auto& t : threads) t.join();
    clients_done = true;
    if (reloader.joinable()) reloader.join();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.counters["requests_per_s"] = 2.0 * clients * per_client / wall;
  }
  state.counters["body_bytes"] = static_cast<double>(body.size());
  state.counters["filter_p50_ms"] = 1e3 * latency.quantile("filter", 0.50);
  state.counters["filter_p99_ms"] = 1e3 * latency.quantile("filter", 0.99);
  state.counters["prioritize_p50_ms"] = 1e3 * latency.quantile("prioritize", 0.50);
  state.counters["prioritize_p99_ms"] = 1e3 * latency.quantile("prioritize", 0.99);
  state.counters["samples"] = static_cast<double>(latency.count("filter") + latency.count("prioritize"));
  state.counters["failures"] = failures.load();
  server.stop();
}

// The server-side stages of one full-Nodes request, without HTTP: reading
// the body, the service's filter / prioritize, and writing the reply.
void BM_Stage_ParseFullNodes(benchmark::State& state) {
  const std::string body = load_cluster().body(false);
  for (auto _ : state) {
    auto args = parse_extender_args_fast(body);
    if (!args) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(args);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}

// The same read with the body as kube-scheduler's Go client writes it (the
// Pod first, a different Pod each call, the same node list): arg 0 = the
// node list as in the last body (read by its head), 1 = a list that ends
// differently each call over the same, known node items (one On-Demand
// pass), 2 = the thorough walk (malformed or unusual bodies).
void BM_Stage_ParseGoBody(benchmark::State& state) {
  const LoadCluster& c = load_cluster();
  std::string items;
  for (const json& n : c.node_objects) items += (items.empty() ? "" : ",") + n.dump();
  const auto body = [&](int k, bool same_tail) {
    return R"({"Pod":)" + pod_object("pending-" + std::to_string(k), "", "", 500).dump() +
           R"(,"Nodes":{"metadata":{},"items":[)" + items + "]}," +
           (same_tail || k % 2 ? R"("NodeNames":null})" : R"("NodeNames":[]})");
  };
  const std::vector<std::string> bodies = {body(0, state.range(0) == 0), body(1, state.range(0) == 0)};
  size_t k = 0;
  for (auto _ : state) {
    const std::string& b = bodies[k++ % 2];
    state.PauseTiming();  // the body as the HTTP listener hands it over
    std::string owned;
    owned.reserve(b.size() + kExtenderBodyPadding);
    owned = b;
    state.ResumeTiming();
    auto args = state.range(0) == 2 ? parse_extender_args_thorough(b) : parse_extender_args_fast(std::move(owned));
    if (!args) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(args);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bodies[0].size()));
}

void BM_Stage_FilterService(benchmark::State& state) {
  const LoadCluster& c = load_cluster();
  ExtenderService service("fgd");
  service.set_cluster(c.nodes, c.pods);
  auto args = parse_extender_args_fast(c.body(false));
  for (auto _ : state) benchmark::DoNotOptimize(service.filter(args.value()));
}

void BM_Stage_PrioritizeService(benchmark::State& state) {
  const LoadCluster& c = load_cluster();
  ExtenderService service("fgd");
  service.set_cluster(c.nodes, c.pods);
  auto args = parse_extender_args_fast(c.body(false));
  std::string error;
  for (auto _ : state) benchmark::DoNotOptimize(service.prioritize(args.value(), &error));
}

void BM_Stage_WriteFilterReply(benchmark::State& state) {
  const LoadCluster& c = load_cluster();
  ExtenderService service("fgd");
  service.set_cluster(c.nodes, c.pods);
  auto args = parse_extender_args_fast(c.body(false));
  const ExtenderFilterResult r = service.filter(args.value());
  for (auto _ : state) benchmark::DoNotOptimize(to_json_text(r));
}

// One whole full-Nodes filter request in process (read, filter, write), no
// HTTP: the server-side floor, with p50/p99 over the iterations.
void BM_Stage_WholeFilterRequest(benchmark::State& state) {
  const LoadCluster& c = load_cluster();
  ExtenderService service("fgd");
  service.set_cluster(c.nodes, c.pods);
  const std::string body = c.body(false);
  std::vector<double> ms;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto args = parse_extender_args_fast(body);
    std::string reply = to_json_text(service.filter(args.value()));
    benchmark::DoNotOptimize(reply);
    ms.push_back(1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  state.counters["p50_ms"] = ms[ms.size() / 2];
  state.counters["p99_ms"] = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
}

// Loading the whole cluster into the service (what every watch flush does):
// 5,000 nodes, 5,001 bound pods rebuilt from their annotations.
void BM_Stage_SetCluster(benchmark::State& state) {
  const LoadCluster& c = load_cluster();
  ExtenderService service("fgd");
  for (auto _ : state) service.set_cluster(c.nodes, c.pods);
  state.counters["pods"] = static_cast<double>(c.pods.size());
}

// A whole rebuild at scale (a relist, a node change): N nodes with 30 more
// labels each (node-feature-discovery and GPU feature discovery put a few
// dozen on a GPU node), no pods; the time from the objects to the new model
// in place.
void BM_Stage_SetClusterAtScale(benchmark::State& state) {
  std::vector<K8sNode> nodes;
  for (int i = 0; i < state.range(0); ++i) {
    json object = node_object(i);
    for (int k = 0; k < 30; ++k)
      object["metadata"]["labels"]["feature.node.kubernetes.io/feature-" + std::to_string(k)] =
          "value-" + std::to_string(k * i);
    nodes.push_back(parse_node(object));
  }
  ExtenderService service("fgd");
  for (auto _ : state) service.set_cluster(nodes, {});
  state.counters["nodes"] = static_cast<double>(nodes.size());
}

// kube-scheduler's NodeNames requests at scale, in process (read, filter or
// prioritize, write; no HTTP): N empty 8-GPU nodes, 5,000 names a call in a
// window that moves on by 5,000 each call (percentageOfNodesToScore with
// its rotating start), a filter then a prioritize per window. p50/p99 per
// verb and of the pair over the iterations.
void BM_Stage_NodeNamesAtScale(benchmark::State& state) {
  constexpr int kWindow = 5000;
  const int n = static_cast<int>(state.range(0));
  std::vector<K8sNode> nodes;
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    nodes.push_back(parse_node(node_object(i)));
    names.push_back(nodes.back().spec.name);
  }
  ExtenderService service("fgd");
  service.set_cluster(nodes, {});
  const json pod = pod_object("pending", "", "", 500);
  std::vector<std::string> bodies;
  for (int start = 0; start + kWindow <= n; start += kWindow) {
    json args = {{"Pod", pod}, {"Nodes", nullptr}};
    args["NodeNames"] = std::vector<std::string>(names.begin() + start, names.begin() + start + kWindow);
    bodies.push_back(args.dump());
  }
  std::vector<double> filter_ms, prioritize_ms, pair_ms;
  size_t k = 0;
  for (auto _ : state) {
    const std::string& body = bodies[k++ % bodies.size()];
    const auto t0 = std::chrono::steady_clock::now();
    auto args = parse_extender_args_fast(body);
    std::string reply = to_json_text(service.filter(args.value()));
    benchmark::DoNotOptimize(reply);
    const auto t1 = std::chrono::steady_clock::now();
    auto args2 = parse_extender_args_fast(body);
    std::string error;
    std::string scores = to_json_text(service.prioritize(args2.value(), &error));
    benchmark::DoNotOptimize(scores);
    const auto t2 = std::chrono::steady_clock::now();
    filter_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    prioritize_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    pair_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t0).count());
  }
  auto quantile = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
  };
  state.counters["filter_p50_ms"] = quantile(filter_ms, 0.5);
  state.counters["filter_p99_ms"] = quantile(filter_ms, 0.99);
  state.counters["prioritize_p50_ms"] = quantile(prioritize_ms, 0.5);
  state.counters["prioritize_p99_ms"] = quantile(prioritize_ms, 0.99);
  state.counters["pair_p50_ms"] = quantile(pair_ms, 0.5);
  state.counters["pair_p99_ms"] = quantile(pair_ms, 0.99);
}

// A /metrics scrape at scale: the snapshot under the service lock plus its
// rendering. Arg 1: per-node and per-GPU series kept (metrics_max_nodes
// above the node count, as before the limit), 0: the default limit. Arg 2:
// running pods per node (250 milli each, one per GPU), read from their
// assignment annotations; their GPU items for the repack bound are collected
// under the lock (its LP runs outside it, once: the pods do not change).
void BM_Stage_MetricsAtScale(benchmark::State& state) {
  std::vector<K8sNode> nodes;
  std::vector<K8sPod> pods;
  for (int i = 0; i < state.range(0); ++i) {
    nodes.push_back(parse_node(node_object(i)));
    const std::string& name = nodes.back().spec.name;
    for (int k = 0; k < state.range(2); ++k)
      pods.push_back(parse_pod(pod_object("run-" + std::to_string(i) + "-" + std::to_string(k), name,
                                          name + ":" + std::to_string(k % 8) + "@250", 250)));
  }
  ServiceOptions o;
  if (state.range(1) != 0) o.metrics_max_nodes = static_cast<int>(state.range(0));
  ExtenderService service(o);
  service.set_cluster(nodes, pods);
  LatencyHistogram latency;
  RequestCounters requests;
  size_t bytes = 0;
  double snapshot_ms = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const ServiceMetrics m = service.metrics();
    snapshot_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    bytes = render_metrics(m, latency, requests).size();
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["locked_ms"] = snapshot_ms / static_cast<double>(state.iterations());
}

// One watch flush applied in place (ExtenderService::update_pods) on the
// same cluster: a pod another scheduler placed appears, then is deleted.
void BM_Stage_PodUpdate(benchmark::State& state) {
  const LoadCluster& c = load_cluster();
  ExtenderService service("fgd");
  service.set_cluster(c.nodes, c.pods);
  const json object = pod_object("event", c.names[1], c.names[1] + ":7@250", 250);
  const K8sPod pod = parse_pod(object);
  int refused = 0;
  for (auto _ : state) {
    refused += !service.update_pods({{pod.key(), pod, object, false}});
    refused += !service.update_pods({{pod.key(), {}, {}, true}});
  }
  if (refused > 0) state.SkipWithError("update_pods refused the event (a rebuild was needed)");
  state.counters["events"] =
      benchmark::Counter(2.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// A watch flush that changes the pods' tally, then a prioritize call, per
// policy (Arg 0: fgd, 1: dualfrag): the flush remakes the policy from the
// new target (dualfrag solves its packing LP there, under the model's lock)
// and the call after it scores with cold caches. Arg 1 = 0 leaves the flush
// out (the warm call alone), for the difference.
void BM_Stage_TallyChangeThenPrioritize(benchmark::State& state) {
  const LoadCluster& c = load_cluster();
  const char* policy = state.range(0) == 0 ? "fgd" : "dualfrag";
  ExtenderService service(policy);
  service.set_cluster(c.nodes, c.pods);
  auto args = parse_extender_args_fast(c.body(false));
  const json object = pod_object("event", c.names[1], c.names[1] + ":7@250", 250);
  const K8sPod pod = parse_pod(object);
  std::string error;
  bool present = false;
  int refused = 0;
  for (auto _ : state) {
    if (state.range(1) == 1) {
      refused += present ? !service.update_pods({{pod.key(), {}, {}, true}})
                         : !service.update_pods({{pod.key(), pod, object, false}});
      present = !present;
    }
    benchmark::DoNotOptimize(service.prioritize(args.value(), &error));
  }
  if (refused > 0) state.SkipWithError("update_pods refused the event (a rebuild was needed)");
  state.SetLabel(policy);
}

BENCHMARK(BM_Stage_ParseFullNodes)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Stage_ParseGoBody)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Stage_FilterService)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Stage_PrioritizeService)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Stage_WriteFilterReply)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Stage_WholeFilterRequest)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Stage_SetCluster)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Stage_PodUpdate)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Stage_TallyChangeThenPrioritize)->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Stage_SetClusterAtScale)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Stage_NodeNamesAtScale)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Stage_MetricsAtScale)
    ->Args({100000, 0, 0})
    ->Args({100000, 1, 0})
    ->Args({20000, 0, 0})
    ->Args({20000, 0, 8})
    ->Unit(benchmark::kMillisecond);

void BM_ExtenderLoad_NodeNames(benchmark::State& state) { run_load(state, true); }
void BM_ExtenderLoad_FullNodes(benchmark::State& state) { run_load(state, false); }
BENCHMARK(BM_ExtenderLoad_NodeNames)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ExtenderLoad_FullNodes)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace gpupack

BENCHMARK_MAIN();
