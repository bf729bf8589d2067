#include "defrag/snapshot.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "io/input_error.h"
#include "util/files.h"
#include "util/nesting.h"
#include "util/strings.h"

namespace gpupack {

namespace {

constexpr const char* kFormat = "gpupack-state/v1";
using json = nlohmann::json;

json pod_json(const std::string& name, const PodMoveInfo& info, const Request& r) {
  json j = {{"name", name},
            {"namespace", info.ns},
            {"cpu_milli", r.cpu_milli},
            {"memory_mib", r.memory_mib},
            {"gpu_count", r.gpu_count},
            {"gpu_milli", r.gpu_milli}};
  if (r.allowed_models != 0) {
    json models = json::array();
    for (size_t m = 0; m < GpuCatalog::builtin().size(); ++m)
      if (model_allowed(r.allowed_models, static_cast<GpuModelId>(m)))
        models.push_back(GpuCatalog::builtin().spec(static_cast<GpuModelId>(m)).name);
    j["allowed_models"] = models;
  }
  if (info.immovable) j["immovable"] = true;
  if (info.checkpointable) j["checkpointable"] = true;
  if (info.restart_cost != 1.0) j["restart_cost"] = info.restart_cost;
  if (!info.group.empty()) j["group"] = info.group;
  return j;
}

// What an error quotes of a value: a scalar's excerpt, or the kind and size of
// a container (never a dump: that copies the value whole).
std::string value_excerpt(const json& v) {
  if (v.is_object()) return fmt::format("an object of {} members", v.size());
  if (v.is_array()) return fmt::format("an array of {} elements", v.size());
  if (v.is_string()) return "\"" + excerpt(v.get_ref<const std::string&>()) + "\"";
  return v.dump();  // number, boolean or null: short
}

// Typed field access with errors that name the file and JSON path.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw InputError(fmt::format("{}: {}: {}", source_, where, what));
  }
  const json& need(const json& obj, const std::string& where, const char* key) const {
    if (!obj.is_object()) fail(where, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end()) fail(where, fmt::format("missing field '{}'", key));
    return *it;
  }
  int64_t integer(const json& obj, const std::string& where, const char* key, int64_t lo, int64_t hi) const {
    const json& v = need(obj, where, key);
    if (!v.is_number_integer())
      fail(where + "." + key, fmt::format("expected an integer (value {})", value_excerpt(v)));
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) fail(where + "." + key, fmt::format("value {} is outside {}..{}", x, lo, hi));
    return x;
  }
  std::string string(const json& obj, const std::string& where, const char* key) const {
    const json& v = need(obj, where, key);
    if (!v.is_string() || v.get<std::string>().empty())
      fail(where + "." + key, fmt::format("expected a non-empty string (value {})", value_excerpt(v)));
    return v.get<std::string>();
  }
  template <class T>
  T optional(const json& obj, const std::string& where, const char* key, T fallback) const {
    auto it = obj.find(key);
    if (it == obj.end()) return fallback;
    try {
      return it->get<T>();
    } catch (const json::exception&) {
      fail(where + "." + key, fmt::format("wrong type (value {})", value_excerpt(*it)));
    }
  }
  GpuModelId model(const std::string& name, const std::string& where) const {
    auto id = GpuCatalog::builtin().find(name);
    if (!id)
      fail(where,
           fmt::format("unknown GPU model '{}' (known: {})", excerpt(name), GpuCatalog::builtin().known_names()));
    return *id;
  }

 private:
  std::string source_;
};

struct ParsedPod {
  PodMoveInfo info;
  Request request;
};

ParsedPod parse_pod(const Reader& rd, const json& j, const std::string& where) {
  ParsedPod p;
  p.info.name = rd.string(j, where, "name");
  p.info.ns = rd.optional<std::string>(j, where, "namespace", "default");
  p.info.immovable = rd.optional<bool>(j, where, "immovable", false);
  p.info.checkpointable = rd.optional<bool>(j, where, "checkpointable", false);
  p.info.restart_cost = rd.optional<double>(j, where, "restart_cost", 1.0);
  if (!(p.info.restart_cost >= 0))
    rd.fail(where + ".restart_cost", fmt::format("must be >= 0 (value {})", p.info.restart_cost));
  p.info.group = rd.optional<std::string>(j, where, "group", "");
  p.request.cpu_milli = rd.integer(j, where, "cpu_milli", 0, int64_t{1} << 40);
  p.request.memory_mib = rd.integer(j, where, "memory_mib", 0, int64_t{1} << 40);
  p.request.gpu_count = static_cast<int32_t>(rd.integer(j, where, "gpu_count", 0, kMaxGpusPerNode));
  p.request.gpu_milli = p.request.gpu_count == 0
                            ? static_cast<int32_t>(rd.optional<int64_t>(j, where, "gpu_milli", 0))
                            : static_cast<int32_t>(rd.integer(j, where, "gpu_milli", 1, kGpuMilliPerGpu));
  if (p.request.gpu_count == 0 && p.request.gpu_milli != 0)
    rd.fail(where + ".gpu_milli", fmt::format("must be 0 for a pod of 0 GPUs (value {})", p.request.gpu_milli));
  if (auto it = j.find("allowed_models"); it != j.end()) {
    if (!it->is_array()) rd.fail(where + ".allowed_models", "expected an array of GPU model names");
    for (size_t k = 0; k < it->size(); ++k) {
      const json& m = (*it)[k];
      const std::string at = fmt::format("{}.allowed_models[{}]", where, k);
      if (!m.is_string()) rd.fail(at, fmt::format("expected a string (value {})", value_excerpt(m)));
      p.request.allowed_models |= model_bit(rd.model(m.get<std::string>(), at));
    }
  }
  return p;
}

}  // namespace

void write_snapshot(const std::string& path, const ClusterState& state, const PodMoveInfos& infos,
                    const std::vector<PendingPod>& pending, const std::map<std::string, int>& max_unavailable) {
  json j;
  j["format"] = kFormat;
  auto& nodes = j["nodes"] = json::array();
  for (int i = 0; i < state.node_count(); ++i) {
    const NodeSpec& s = state.spec(NodeId{i});
    json n = {{"name", s.name}, {"cpu_milli", s.cpu_milli}, {"memory_mib", s.memory_mib}, {"gpus", s.gpu_count}};
    if (s.gpu_count > 0) n["gpu_model"] = GpuCatalog::builtin().spec(s.gpu_model).name;
    nodes.push_back(n);
  }
  auto& pods = j["pods"] = json::array();
  for (PodId p : state.bound_pods()) {
    json pj = pod_json(pod_display_name(infos, p), move_info(infos, p), state.request(p));
    const Assignment& a = state.assignment(p);
    pj["node"] = state.node_name(a.node);
    json gpus = json::array();
    for (int g = 0; g < kMaxGpusPerNode; ++g)
      if (a.gpu_mask & (1u << g)) gpus.push_back(g);
    pj["gpus"] = gpus;
    pods.push_back(pj);
  }
  auto& pend = j["pending"] = json::array();
  for (const PendingPod& p : pending)
    pend.push_back(pod_json(pod_display_name(infos, p.id), move_info(infos, p.id), p.request));
  j["disruption_budgets"] = max_unavailable;
  std::ofstream out(path);
  out << j.dump(1) << "\n";
  out.flush();
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path));
}

Snapshot read_snapshot(const std::string& path) { return parse_snapshot(read_file_bounded(path), path); }

Snapshot parse_snapshot(const std::string& text, const std::string& source) {
  const Reader rd(source);
  json j;
  check_json_depth(text, source);  // a deeper tree would be recursed into
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(fmt::format("{}: malformed JSON at byte {}: {} (near: '{}')", source, e.byte, error_text(e.what()),
                                 excerpt_around(text, e.byte > 0 ? e.byte - 1 : 0)));
  } catch (const json::exception& e) {  // out_of_range: a number too large
    throw InputError(fmt::format("{}: malformed JSON: {}", source, error_text(e.what())));
  }
  if (!j.is_object()) rd.fail("(top level)", "expected an object");
  const std::string format = rd.string(j, "(top level)", "format");
  if (format != kFormat)
    rd.fail("format", fmt::format("unknown format '{}' (expected '{}')", excerpt(format), kFormat));

  std::vector<NodeSpec> nodes;
  std::unordered_map<std::string, int> node_index;
  const json& jn = rd.need(j, "(top level)", "nodes");
  if (!jn.is_array()) rd.fail("nodes", "expected an array");
  for (size_t i = 0; i < jn.size(); ++i) {
    const std::string where = fmt::format("nodes[{}]", i);
    NodeSpec s;
    s.name = rd.string(jn[i], where, "name");
    s.cpu_milli = rd.integer(jn[i], where, "cpu_milli", 0, int64_t{1} << 40);
    s.memory_mib = rd.integer(jn[i], where, "memory_mib", 0, int64_t{1} << 40);
    s.gpu_count = static_cast<int32_t>(rd.integer(jn[i], where, "gpus", 0, kMaxGpusPerNode));
    if (s.gpu_count > 0) s.gpu_model = rd.model(rd.string(jn[i], where, "gpu_model"), where + ".gpu_model");
    if (!node_index.emplace(s.name, static_cast<int>(i)).second)
      rd.fail(where + ".name", fmt::format("duplicate node name '{}'", excerpt(s.name)));
    nodes.push_back(std::move(s));
  }
  Snapshot out{ClusterState(nodes), {}, {}, {}};
  std::set<std::pair<std::string, std::string>> pod_names;
  auto check_name = [&](const PodMoveInfo& info, const std::string& where) {
    if (!pod_names.emplace(info.ns, info.name).second)
      rd.fail(where + ".name", fmt::format("duplicate pod '{}/{}'", excerpt(info.ns), excerpt(info.name)));
  };
  const json& jp = rd.need(j, "(top level)", "pods");
  if (!jp.is_array()) rd.fail("pods", "expected an array");
  for (size_t i = 0; i < jp.size(); ++i) {
    const std::string where = fmt::format("pods[{}]", i);
    ParsedPod p = parse_pod(rd, jp[i], where);
    check_name(p.info, where);
    const std::string node = rd.string(jp[i], where, "node");
    auto it = node_index.find(node);
    if (it == node_index.end()) rd.fail(where + ".node", fmt::format("unknown node '{}'", excerpt(node)));
    Assignment a{NodeId{it->second}, 0, p.request.gpu_count > 0 ? p.request.gpu_milli : 0};
    const json& gpus = rd.need(jp[i], where, "gpus");
    if (!gpus.is_array()) rd.fail(where + ".gpus", "expected an array of GPU indices");
    for (size_t k = 0; k < gpus.size(); ++k) {
      const std::string at = fmt::format("{}.gpus[{}]", where, k);
      if (!gpus[k].is_number_integer())
        rd.fail(at, fmt::format("expected an integer (value {})", value_excerpt(gpus[k])));
      const int64_t g = gpus[k].get<int64_t>();
      if (g < 0 || g >= nodes[it->second].gpu_count)
        rd.fail(at, fmt::format("GPU {} does not exist on node '{}' ({} GPUs)", g, excerpt(node),
                                nodes[it->second].gpu_count));
      if (a.gpu_mask & (1u << g)) rd.fail(at, fmt::format("GPU {} listed twice", g));
      a.gpu_mask |= 1u << g;
    }
    if (a.gpu_count() != p.request.gpu_count)
      rd.fail(where + ".gpus",
              fmt::format("{} GPUs listed for a pod of gpu_count {}", a.gpu_count(), p.request.gpu_count));
    const PodId id{static_cast<int32_t>(i)};
    Status st = out.state.bind(id, p.request, a);
    if (!st.is_ok())
      rd.fail(where, fmt::format("pod '{}' does not fit where it is bound: {}", excerpt(p.info.name), st.message));
    out.infos.push_back(std::move(p.info));
  }
  if (auto it = j.find("pending"); it != j.end()) {
    if (!it->is_array()) rd.fail("pending", "expected an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string where = fmt::format("pending[{}]", i);
      ParsedPod p = parse_pod(rd, (*it)[i], where);
      check_name(p.info, where);
      const PodId id{static_cast<int32_t>(out.infos.size())};
      out.pending.push_back({id, p.request});
      out.infos.push_back(std::move(p.info));
    }
  }
  if (auto it = j.find("disruption_budgets"); it != j.end()) {
    if (!it->is_object()) rd.fail("disruption_budgets", "expected an object of group: max_unavailable");
    for (auto& [group, v] : it->items()) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0)
        rd.fail("disruption_budgets." + excerpt(group),
                fmt::format("expected a non-negative integer (value {})", value_excerpt(v)));
      out.max_unavailable[group] = static_cast<int>(v.get<int64_t>());
    }
  }
  out.state.commit();
  return out;
}

std::shared_ptr<const TargetWorkload> snapshot_target(const Snapshot& snap) {
  std::vector<Request> all;
  for (PodId p : snap.state.bound_pods()) all.push_back(snap.state.request(p));
  for (const PendingPod& p : snap.pending) all.push_back(p.request);
  return std::make_shared<const TargetWorkload>(TargetWorkload::from_requests(all));
}

}  // namespace gpupack
