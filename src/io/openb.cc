#include "io/openb.h"

#include <fmt/format.h>

#include <limits>
#include <stdexcept>
#include <unordered_map>

#include "io/csv.h"
#include "io/input_error.h"
#include "util/strings.h"

namespace gpupack {

ModelMask parse_model_list(const std::string& spec) {
  ModelMask mask = 0;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find('|', start);
    if (end == std::string::npos) end = spec.size();
    std::string name = spec.substr(start, end - start);
    if (name.empty()) throw std::invalid_argument("empty model name in list");
    auto id = GpuCatalog::builtin().find(name);
    if (!id)
      throw std::invalid_argument(
          fmt::format("unknown GPU model '{}' (known: {})", excerpt(name), GpuCatalog::builtin().known_names()));
    mask |= model_bit(*id);
    start = end + 1;
  }
  return mask;
}

std::vector<NodeSpec> read_openb_nodes(const std::string& path) {
  const CsvTable t = CsvTable::read(path);
  const int c_name = t.column("sn"), c_cpu = t.column("cpu_milli"), c_mem = t.column("memory_mib"),
            c_gpu = t.column("gpu"), c_model = t.column("model");
  std::vector<NodeSpec> nodes;
  nodes.reserve(t.rows().size());
  for (const auto& row : t.rows()) {
    NodeSpec n;
    n.name = t.field(row, c_name);
    if (n.name.empty()) t.fail(row, c_name, "empty node name");
    n.cpu_milli = t.int_field(row, c_cpu, 0, std::numeric_limits<int32_t>::max());
    n.memory_mib = t.int_field(row, c_mem, 0, int64_t{1} << 40);
    n.gpu_count = static_cast<int32_t>(t.int_field(row, c_gpu, 0, kMaxGpusPerNode));
    const std::string& model = t.field(row, c_model);
    if (n.gpu_count > 0) {
      auto id = GpuCatalog::builtin().find(model);
      if (!id) t.fail(row, c_model, fmt::format("unknown GPU model (known: {})", GpuCatalog::builtin().known_names()));
      n.gpu_model = *id;
    } else if (!model.empty() && !GpuCatalog::builtin().find(model)) {
      t.fail(row, c_model, "unknown GPU model");
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

std::vector<TracePod> read_openb_pods(const std::string& path) {
  const CsvTable t = CsvTable::read(path);
  const int c_name = t.column("name"), c_cpu = t.column("cpu_milli"), c_mem = t.column("memory_mib"),
            c_ngpu = t.column("num_gpu"), c_milli = t.column("gpu_milli");
  const auto c_spec = t.find_column("gpu_spec"), c_qos = t.find_column("qos"), c_phase = t.find_column("pod_phase"),
             c_create = t.find_column("creation_time"), c_delete = t.find_column("deletion_time"),
             c_sched = t.find_column("scheduled_time"), c_gang = t.find_column("gang"),
             c_gang_min = t.find_column("gang_min_member");
  auto time_field = [&](const CsvTable::Row& row, std::optional<int> c) -> int64_t {
    if (!c || t.field(row, *c).empty()) return -1;
    return t.int_field(row, *c, 0, std::numeric_limits<int64_t>::max() / 2);
  };
  std::vector<TracePod> pods;
  pods.reserve(t.rows().size());
  std::unordered_map<std::string, int> first_line;  // pod name -> line
  for (const auto& row : t.rows()) {
    TracePod p;
    p.name = t.field(row, c_name);
    if (p.name.empty()) t.fail(row, c_name, "empty pod name");
    if (auto [it, fresh] = first_line.emplace(p.name, row.line); !fresh)
      t.fail(row, c_name, fmt::format("pod name given twice (first on line {})", it->second));
    p.request.cpu_milli = t.int_field(row, c_cpu, 0, std::numeric_limits<int32_t>::max());
    p.request.memory_mib = t.int_field(row, c_mem, 0, int64_t{1} << 40);
    p.request.gpu_count = static_cast<int32_t>(t.int_field(row, c_ngpu, 0, kMaxGpusPerNode));
    p.request.gpu_milli = static_cast<int32_t>(t.int_field(row, c_milli, 0, kGpuMilliPerGpu));
    if (p.request.gpu_count > 0 && p.request.gpu_milli == 0) t.fail(row, c_milli, "0 milli for a GPU pod");
    if (p.request.gpu_count == 0 && p.request.gpu_milli != 0) t.fail(row, c_milli, "GPU milli for a CPU-only pod");
    if (c_spec) {
      p.gpu_spec = t.field(row, *c_spec);
      if (!p.gpu_spec.empty()) {
        try {
          p.request.allowed_models = parse_model_list(p.gpu_spec);
        } catch (const std::invalid_argument& e) {
          t.fail(row, *c_spec, e.what());
        }
      }
    }
    if (c_qos) p.qos = t.field(row, *c_qos);
    if (c_phase) p.phase = t.field(row, *c_phase);
    p.creation_time_s = time_field(row, c_create);
    p.deletion_time_s = time_field(row, c_delete);
    p.scheduled_time_s = time_field(row, c_sched);
    if (c_gang) p.gang = t.field(row, *c_gang);
    if (c_gang_min && !t.field(row, *c_gang_min).empty()) {
      if (p.gang.empty()) t.fail(row, *c_gang_min, "gang_min_member without a gang");
      p.gang_min_member = static_cast<int>(t.int_field(row, *c_gang_min, 0, 100000));
    }
    pods.push_back(std::move(p));
  }
  return pods;
}

Workload to_workload(const std::vector<TracePod>& pods) {
  Workload w;
  for (const TracePod& p : pods) {
    w.names.push_back(p.name);
    w.requests.push_back(p.request);
    w.model_keys.push_back(p.gpu_spec);
  }
  return w;
}

std::vector<std::string> read_arrival_order(const std::string& path) {
  const CsvTable t = CsvTable::read(path);
  const int c_idx = t.column("idx"), c_pod = t.column("pod");
  std::vector<std::string> order;
  order.reserve(t.rows().size());
  for (const auto& row : t.rows()) {
    const int64_t idx = t.int_field(row, c_idx, 0, std::numeric_limits<int32_t>::max());
    if (idx != static_cast<int64_t>(order.size())) t.fail(row, c_idx, fmt::format("expected idx {}", order.size()));
    if (t.field(row, c_pod).empty()) t.fail(row, c_pod, "empty pod name");
    order.push_back(t.field(row, c_pod));
  }
  return order;
}

std::vector<NodeRank> read_node_rank(const std::string& path) {
  const CsvTable t = CsvTable::read(path);
  const int c_node = t.column("node"), c_rank = t.column("rank");
  std::vector<NodeRank> out;
  out.reserve(t.rows().size());
  for (const auto& row : t.rows())
    out.push_back({t.field(row, c_node), t.int_field(row, c_rank, 0, std::numeric_limits<int32_t>::max())});
  return out;
}

}  // namespace gpupack
