#include "io/kubectl.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <ctime>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "io/quantity.h"
#include "util/files.h"
#include "util/nesting.h"
#include "util/strings.h"

namespace gpupack {
namespace {

using nlohmann::json;

constexpr std::string_view kGpuResource = "nvidia.com/gpu";
constexpr std::string_view kGpuSharedResource = "nvidia.com/gpu.shared";
constexpr std::string_view kMigPrefix = "nvidia.com/mig-";
constexpr int64_t kMiB = 1024 * 1024;
constexpr std::string_view kGpuProductLabel = "nvidia.com/gpu.product";
constexpr std::string_view kGpuMemoryLabel = "nvidia.com/gpu.memory";

[[noreturn]] void fail(const std::string& object, std::string_view path, std::string_view msg) {
  throw std::invalid_argument(fmt::format("{}: {}: {}", object, path, msg));
}

// What an error says about a value of the wrong type: its kind and size, or
// an excerpt of a scalar. Never dumps the value (a large or deep one would be
// copied whole, or recursed into).
std::string short_dump(const json& v) {
  if (v.is_object()) return fmt::format("an object of {} members", v.size());
  if (v.is_array()) return fmt::format("an array of {} elements", v.size());
  if (v.is_string()) return "\"" + excerpt(v.get_ref<const std::string&>()) + "\"";
  return v.dump();  // number, boolean or null: short
}

// The member `key` of object `j`, or nullptr when absent or null.
const json* member(const json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

const json* object_member(const std::string& obj, const json& j, std::string_view key, const std::string& path) {
  const json* v = member(j, key);
  if (v != nullptr && !v->is_object()) fail(obj, path, fmt::format("expected an object, got {}", short_dump(*v)));
  return v;
}

const json* array_member(const std::string& obj, const json& j, std::string_view key, const std::string& path) {
  const json* v = member(j, key);
  if (v != nullptr && !v->is_array()) fail(obj, path, fmt::format("expected an array, got {}", short_dump(*v)));
  return v;
}

std::string string_member(const std::string& obj, const json& j, std::string_view key, const std::string& path) {
  const json* v = member(j, key);
  if (v == nullptr) return {};
  if (!v->is_string()) fail(obj, path, fmt::format("expected a string, got {}", short_dump(*v)));
  return v->get<std::string>();
}

bool bool_member(const std::string& obj, const json& j, std::string_view key, const std::string& path) {
  const json* v = member(j, key);
  if (v == nullptr) return false;
  if (!v->is_boolean()) fail(obj, path, fmt::format("expected a boolean, got {}", short_dump(*v)));
  return v->get<bool>();
}

std::map<std::string, std::string> string_map(const std::string& obj, const json& j, std::string_view key,
                                              const std::string& path) {
  std::map<std::string, std::string> out;
  const json* m = object_member(obj, j, key, path);
  if (m == nullptr) return out;
  for (auto it = m->begin(); it != m->end(); ++it) {
    if (!it->is_string()) {
      fail(obj, fmt::format("{}[\"{}\"]", path, excerpt(it.key())),
           fmt::format("expected a string, got {}", short_dump(*it)));
    }
    out.emplace(it.key(), it->get<std::string>());
  }
  return out;
}

// Resource lists hold quantities; Kubernetes also accepts plain JSON numbers.
std::map<std::string, std::string> quantity_map(const std::string& obj, const json& j, std::string_view key,
                                                const std::string& path) {
  std::map<std::string, std::string> out;
  const json* m = object_member(obj, j, key, path);
  if (m == nullptr) return out;
  for (auto it = m->begin(); it != m->end(); ++it) {
    std::string field = fmt::format("{}[\"{}\"]", path, excerpt(it.key()));
    if (it->is_string()) {
      out.emplace(it.key(), it->get<std::string>());
    } else if (it->is_number_integer()) {
      out.emplace(it.key(), it->dump());
    } else {
      fail(obj, field, fmt::format("expected a quantity string, got {}", short_dump(*it)));
    }
  }
  return out;
}

Quantity quantity_at(const std::string& obj, const std::string& field, const std::string& text) {
  try {
    return parse_quantity(text);
  } catch (const std::exception& e) {
    fail(obj, field, e.what());
  }
}

// Integer value of a count-like resource ("2", "2k"); fractions are an error.
int64_t count_at(const std::string& obj, const std::string& field, const std::string& text) {
  Quantity q = quantity_at(obj, field, text);
  try {
    if (!quantity_is_integer(q)) fail(obj, field, fmt::format("\"{}\" is not a whole number", excerpt(text)));
    int64_t v = quantity_value(q);
    if (v < 0) fail(obj, field, fmt::format("\"{}\" is negative", excerpt(text)));
    return v;
  } catch (const std::out_of_range&) {
    fail(obj, field, fmt::format("\"{}\" is out of range", excerpt(text)));
  }
}

int64_t strict_int(const std::string& obj, const std::string& field, std::string_view text, int64_t lo, int64_t hi) {
  bool ok = !text.empty() && text.size() <= 18;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      ok = false;
      break;
    }
    v = v * 10 + (c - '0');
  }
  if (!ok || v < lo || v > hi) {
    fail(obj, field, fmt::format("\"{}\" is not an integer in {}..{}", excerpt(text), lo, hi));
  }
  return v;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Refuses input nested deeper than kMaxInputDepth before building the tree
// (copies and comparisons of a deeper tree would recurse per level); errors
// quote an excerpt of the input, never a whole token.
json parse_document(std::string_view text, std::string_view source) {
  try {
    check_json_depth(text, source);
  } catch (const std::exception& e) {
    throw std::invalid_argument(e.what());
  }
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    throw std::invalid_argument(fmt::format("{}: not valid JSON: {} (near: '{}')", source, error_text(e.what()),
                                            excerpt_around(text, e.byte > 0 ? e.byte - 1 : 0)));
  } catch (const json::exception& e) {  // out_of_range for numbers too large
    throw std::invalid_argument(fmt::format("{}: not valid JSON: {}", source, error_text(e.what())));
  }
}

const json& items_of(const json& doc, std::string_view source) {
  if (!doc.is_object()) throw std::invalid_argument(fmt::format("{}: expected a JSON object with \"items\"", source));
  auto it = doc.find("items");
  if (it == doc.end() || !it->is_array()) {
    throw std::invalid_argument(fmt::format("{}: \"items\" is missing or not an array", source));
  }
  return *it;
}

std::string read_file(const std::string& path) {
  try {
    return read_file_bounded(path);
  } catch (const std::exception& e) {
    throw std::invalid_argument(e.what());
  }
}

template <class T, class F>
std::vector<T> parse_items(std::string_view text, std::string_view source, std::vector<std::string>* rejected,
                           F parse_one) {
  json doc = parse_document(text, source);
  const json& items = items_of(doc, source);
  std::vector<T> out;
  out.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    try {
      out.push_back(parse_one(items[i]));
    } catch (const std::invalid_argument& e) {
      std::string msg = fmt::format("{}: items[{}]: {}", source, i, e.what());
      if (rejected == nullptr) throw std::invalid_argument(msg);
      rejected->push_back(std::move(msg));
    }
  }
  return out;
}

// --- pods ---------------------------------------------------------------

// Per-resource totals: cpu in milli, memory in bytes, everything else in units.
using ResourceTotals = std::map<std::string, int64_t>;

int64_t resource_amount(const std::string& obj, const std::string& field, const std::string& name,
                        const std::string& text) {
  Quantity q = quantity_at(obj, field, text);
  try {
    if (name == "cpu") return quantity_milli(q);
    if (name == "memory" || name == "ephemeral-storage" || starts_with(name, "hugepages-")) return quantity_value(q);
  } catch (const std::out_of_range&) {
    fail(obj, field, fmt::format("\"{}\" is out of range", excerpt(text)));
  }
  return count_at(obj, field, text);
}

int64_t checked_add(const std::string& obj, const std::string& field, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail(obj, field, "sum of requests overflows");
  return r;
}

ResourceTotals container_requests(const std::string& obj, const json& c, const std::string& path) {
  ResourceTotals out;
  const json* res = object_member(obj, c, "resources", path + ".resources");
  if (res == nullptr) return out;
  auto requests = quantity_map(obj, *res, "requests", path + ".resources.requests");
  auto limits = quantity_map(obj, *res, "limits", path + ".resources.limits");
  for (const auto& [name, text] : requests) {
    out[name] = resource_amount(obj, fmt::format("{}.resources.requests[\"{}\"]", path, name), name, text);
  }
  for (const auto& [name, text] : limits) {
    if (requests.count(name) != 0) continue;
    out[name] = resource_amount(obj, fmt::format("{}.resources.limits[\"{}\"]", path, name), name, text);
  }
  return out;
}

ResourceTotals effective_requests(const std::string& obj, const json& spec) {
  ResourceTotals sum;
  const json* containers = array_member(obj, spec, "containers", "spec.containers");
  if (containers == nullptr) fail(obj, "spec.containers", "missing");
  for (size_t i = 0; i < containers->size(); ++i) {
    std::string path = fmt::format("spec.containers[{}]", i);
    if (!(*containers)[i].is_object()) fail(obj, path, "expected an object");
    for (const auto& [name, v] : container_requests(obj, (*containers)[i], path)) {
      sum[name] = checked_add(obj, path, sum[name], v);
    }
  }
  if (const json* inits = array_member(obj, spec, "initContainers", "spec.initContainers")) {
    for (size_t i = 0; i < inits->size(); ++i) {
      std::string path = fmt::format("spec.initContainers[{}]", i);
      if (!(*inits)[i].is_object()) fail(obj, path, "expected an object");
      for (const auto& [name, v] : container_requests(obj, (*inits)[i], path)) {
        sum[name] = std::max(sum[name], v);
      }
    }
  }
  for (const auto& [name, text] : quantity_map(obj, spec, "overhead", "spec.overhead")) {
    std::string field = fmt::format("spec.overhead[\"{}\"]", name);
    sum[name] = checked_add(obj, field, sum[name], resource_amount(obj, field, name, text));
  }
  return sum;
}

std::string annotation_field(std::string_view key) { return fmt::format("metadata.annotations[\"{}\"]", key); }

const std::string* find_annotation(const K8sPod& pod, std::string_view key) {
  auto it = pod.annotations.find(std::string(key));
  return it == pod.annotations.end() ? nullptr : &it->second;
}

void apply_gpu_request(const std::string& obj, K8sPod& pod, const ResourceTotals& totals) {
  int64_t whole = 0;
  for (const auto& [name, amount] : totals) {
    if (name == "cpu" || name == "memory") continue;
    if (name == kGpuResource) {
      whole = amount;
    } else if (name == kGpuSharedResource) {
      pod.shared_replicas = amount;
    } else if (starts_with(name, kMigPrefix)) {
      if (amount > 0) pod.mig_devices[name.substr(kMigPrefix.size())] = amount;
    } else {
      pod.extended[name] = amount;
    }
  }
  if (whole > 0 && pod.shared_replicas > 0) {
    fail(
        obj, "spec.containers[*].resources",
        fmt::format("asks for both {} ({}) and {} ({})", kGpuResource, whole, kGpuSharedResource, pod.shared_replicas));
  }

  int64_t milli = 0;
  std::string milli_key;
  for (std::string_view key : {annotations::kGpuMilli, annotations::kAlibabaGpuMilli}) {
    if (const std::string* v = find_annotation(pod, key)) {
      // The trace convention writes 0 for "no GPU"; gpupack's own key needs 1..1000.
      int64_t lo = key == annotations::kGpuMilli ? 1 : 0;
      milli = strict_int(obj, annotation_field(key), *v, lo, kGpuMilliPerGpu);
      milli_key = std::string(key);
      break;
    }
  }
  int64_t alibaba_count = 0;
  if (const std::string* v = find_annotation(pod, annotations::kAlibabaGpuCount)) {
    alibaba_count = strict_int(obj, annotation_field(annotations::kAlibabaGpuCount), *v, 0, kMaxGpusPerNode);
  }

  Request& r = pod.request;
  if (whole > 0) {
    r.gpu_count = static_cast<int32_t>(std::min<int64_t>(whole, std::numeric_limits<int32_t>::max()));
  } else if (pod.shared_replicas > 0) {
    r.gpu_count = 1;
  } else if (alibaba_count > 0) {
    r.gpu_count = static_cast<int32_t>(alibaba_count);
  } else if (milli > 0) {
    r.gpu_count = 1;
  }
  if (r.gpu_count > 0) {
    r.gpu_milli = milli > 0 ? static_cast<int32_t>(milli) : kGpuMilliPerGpu;
    pod.gpu_milli_given = milli > 0;
  } else if (milli > 0 && alibaba_count == 0 && !pod.mig_devices.empty()) {
    fail(obj, annotation_field(milli_key), "a GPU share cannot apply to MIG devices");
  }
}

// A model list as pods write it: names joined by ',' or '|' (openb writes
// "V100M16|V100M32"), each a catalog name or a GPU product string. Every
// name must be a built-in model: an unknown one is an error, never "any".
ModelMask parse_model_constraint(const std::string& obj, std::string_view key, const std::string& value) {
  const std::string field = annotation_field(key);
  if (value.size() > 1024) fail(obj, field, fmt::format("{} characters; at most 1024", value.size()));
  ModelMask mask = 0;
  std::string_view rest = value;
  while (true) {
    const size_t sep = rest.find_first_of(",|");
    const std::string name(trim(rest.substr(0, sep)));
    if (name.empty()) fail(obj, field, fmt::format("\"{}\" has an empty model name", value));
    const auto id = find_gpu_model(name);
    if (!id) {
      fail(obj, field,
           fmt::format("unknown GPU model \"{}\" in \"{}\" (known: {})", name, value,
                       GpuCatalog::builtin().known_names()));
    }
    mask |= model_bit(*id);
    if (sep == std::string_view::npos) break;
    rest = rest.substr(sep + 1);
  }
  return mask;
}

// gpupack.io/gpu-models and openb's alibabacloud.com/gpu-card-model: a pod
// that gives both must satisfy both.
void apply_model_constraints(const std::string& obj, K8sPod& pod) {
  const std::string* ours = find_annotation(pod, annotations::kGpuModels);
  const std::string* openb = find_annotation(pod, annotations::kAlibabaGpuCardModel);
  if (ours == nullptr && openb == nullptr) return;
  ModelMask mask = ~ModelMask{0};
  if (ours != nullptr) mask &= parse_model_constraint(obj, annotations::kGpuModels, *ours);
  if (openb != nullptr) mask &= parse_model_constraint(obj, annotations::kAlibabaGpuCardModel, *openb);
  if (mask == 0) {
    fail(
        obj, annotation_field(annotations::kGpuModels),
        fmt::format("\"{}\" and {} \"{}\" allow no model in common", *ours, annotations::kAlibabaGpuCardModel, *openb));
  }
  pod.request.allowed_models = mask;
}

void apply_gpupack_annotations(const std::string& obj, K8sPod& pod) {
  if (const std::string* v = find_annotation(pod, annotations::kGpuMemoryMib)) {
    pod.gpu_memory_mib = strict_int(obj, annotation_field(annotations::kGpuMemoryMib), *v, 1, int64_t{1} << 40);
  }
  apply_model_constraints(obj, pod);
  const std::string* gang_name = find_annotation(pod, annotations::kGangName);
  const std::string* gang_size = find_annotation(pod, annotations::kGangSize);
  const std::string* gang_min = find_annotation(pod, annotations::kGangMinMember);
  if (gang_name != nullptr) {
    GangSpec g;
    g.name = trim(*gang_name);
    if (g.name.empty()) fail(obj, annotation_field(annotations::kGangName), "empty gang name");
    if (gang_size != nullptr) {
      g.size = static_cast<int32_t>(strict_int(obj, annotation_field(annotations::kGangSize), *gang_size, 1, 100000));
    }
    if (gang_min != nullptr) {
      int64_t hi = g.size > 0 ? g.size : 100000;
      g.min_member =
          static_cast<int32_t>(strict_int(obj, annotation_field(annotations::kGangMinMember), *gang_min, 1, hi));
    } else {
      g.min_member = g.size;
    }
    pod.gang = g;
  } else if (gang_size != nullptr || gang_min != nullptr) {
    fail(obj, annotation_field(gang_size ? annotations::kGangSize : annotations::kGangMinMember),
         fmt::format("given without {}", annotations::kGangName));
  }
  if (gang_name != nullptr) pod.gang->source = std::string(annotations::kGangName);
  // The forms of other gang schedulers: the group's minimum is its PodGroup's.
  if (!pod.gang) {
    const std::string* group = nullptr;
    std::string source, field;
    if (auto l = pod.labels.find(std::string(annotations::kPodGroupLabel)); l != pod.labels.end()) {
      group = &l->second;
      source = std::string(annotations::kPodGroupLabel);
      field = fmt::format("metadata.labels[\"{}\"]", source);
    } else if ((group = find_annotation(pod, annotations::kVolcanoGroupName)) != nullptr) {
      source = std::string(annotations::kVolcanoGroupName);
      field = annotation_field(source);
    } else if ((group = find_annotation(pod, annotations::kKaiPodGroupName)) != nullptr) {
      source = std::string(annotations::kKaiPodGroupName);
      field = annotation_field(source);
    }
    if (group != nullptr) {
      GangSpec g;
      g.name = trim(*group);
      if (g.name.empty()) fail(obj, field, "empty pod group name");
      g.source = source;
      pod.gang = g;
    }
  }
  if (const std::string* v = find_annotation(pod, annotations::kAssignedGpus)) {
    try {
      pod.assigned = parse_assigned_gpus(*v);
    } catch (const std::invalid_argument& e) {
      fail(obj, annotation_field(annotations::kAssignedGpus), e.what());
    }
  }
  const std::string* scope = find_annotation(pod, annotations::kGpuScope);
  const std::string* policy = find_annotation(pod, annotations::kGpuScopePolicy);
  if (scope != nullptr) {
    const std::string field = annotation_field(annotations::kGpuScope);
    GpuScope s = GpuScope::kAny;
    const std::string text(trim(*scope));
    if (text.empty() || !parse_gpu_scope(text, &s) || s == GpuScope::kAny) {
      fail(obj, field, fmt::format("\"{}\" is not nvlink, pcie-switch or numa", excerpt(*scope)));
    }
    if (pod.request.gpu_count == 0) {
      fail(obj, field,
           fmt::format("applies to pods that request GPUs ({} or {}); this pod requests none", kGpuResource,
                       annotations::kGpuMilli));
    }
    pod.request.gpu_scope = s;
    pod.request.scope_required = true;
    if (policy != nullptr) {
      const std::string p(trim(*policy));
      if (p == "preferred") {
        pod.request.scope_required = false;
      } else if (p != "required") {
        fail(obj, annotation_field(annotations::kGpuScopePolicy),
             fmt::format("\"{}\" is not required or preferred", excerpt(*policy)));
      }
    }
  } else if (policy != nullptr) {
    fail(obj, annotation_field(annotations::kGpuScopePolicy), fmt::format("given without {}", annotations::kGpuScope));
  }
}

// Applies gpupack.io/gpu-topology (when present) to the node's GPU setup.
void apply_gpu_topology(const std::string& obj, K8sNode& n) {
  auto it = n.annotations.find(std::string(annotations::kGpuTopology));
  // No GPUs reported right now (e.g. the device plugin restarting): the
  // node stays usable for everything else; the groups apply once GPUs return.
  if (it == n.annotations.end() || n.spec.gpu_count == 0) return;
  GpuTopology t;
  try {
    t = parse_gpu_topology(it->second, n.spec.gpu_count);
  } catch (const std::invalid_argument& e) {
    fail(obj, annotation_field(annotations::kGpuTopology), e.what());
  }
  n.gpu_topology_scopes = t.scopes;
  n.spec.gpus.assign(static_cast<size_t>(n.spec.gpu_count), GpuSetup{});
  for (size_t g = 0; g < n.spec.gpus.size(); ++g) {
    GpuSetup& gpu = n.spec.gpus[g];
    if (!t.nvlink.empty()) gpu.nvlink_domain = t.nvlink[g];
    if (!t.pcie_switch.empty()) gpu.pcie_switch = t.pcie_switch[g];
    if (!t.numa.empty()) gpu.numa = t.numa[g];
  }
  // Kubernetes does not report CPUs and memory per NUMA node: the node's are
  // split evenly (the first NUMA node takes the remainder). Only NUMA-pinned
  // requests read the split, and pods from the API are never pinned.
  if (t.numa_nodes > 0) {
    const int k = t.numa_nodes;
    n.spec.numa.assign(static_cast<size_t>(k), NumaSpec{n.spec.cpu_milli / k, n.spec.memory_mib / k});
    n.spec.numa[0].cpu_milli += n.spec.cpu_milli % k;
    n.spec.numa[0].memory_mib += n.spec.memory_mib % k;
  }
}

// A node whose GPU product the catalog lacks (or that names none) gets its
// own pool, named by the label: never another model's figures or bit.
void assign_unknown_pool(const std::string& obj, const std::string& field, K8sNode& n) {
  const std::string label =
      n.gpu_product.empty() ? std::string(kUnlabeledGpuPool) : std::string(gpu_product_pool_label(n.gpu_product));
  GpuCatalog::Registration r;
  try {
    r = GpuCatalog::builtin_mutable().register_unknown(label, n.gpu_memory_mib);
  } catch (const std::exception& e) {  // invalid_argument (bad label), length_error (catalog full)
    fail(obj, field, e.what());
  }
  n.spec.gpu_model = r.id;
  std::string what = n.gpu_product.empty()
                         ? fmt::format("no GPU product label ({} or {}) on a node with {} GPUs", kGpuProductLabel,
                                       annotations::kAlibabaGpuCardModel, n.spec.gpu_count)
                         : fmt::format("GPU product \"{}\" is not in the catalog", n.gpu_product);
  std::string memory = n.gpu_memory_mib > 0 ? fmt::format("{} MiB per GPU from {}", n.gpu_memory_mib, kGpuMemoryLabel)
                                            : fmt::format("GPU memory unknown (no {} label)", kGpuMemoryLabel);
  std::string msg = fmt::format("{}: {}: {}; scheduled as its own pool \"{}\" ({}), matching no other model", obj,
                                field, what, label, memory);
  if (!r.created && r.memory_mib != n.gpu_memory_mib) {
    msg += fmt::format("; the pool keeps the {} MiB of the node that created it", r.memory_mib);
  }
  n.warnings.push_back(std::move(msg));
}

}  // namespace

// --- GPU model names ----------------------------------------------------

std::string_view gpu_product_pool_label(std::string_view product) {
  constexpr std::string_view kShared = "-SHARED";
  while (!product.empty() && std::isspace(static_cast<unsigned char>(product.back()))) product.remove_suffix(1);
  if (product.size() > kShared.size() && iequals(product.substr(product.size() - kShared.size()), kShared)) {
    product.remove_suffix(kShared.size());
  }
  return product;
}

std::optional<GpuModelId> find_gpu_model(std::string_view product, const GpuCatalog& catalog) {
  std::string p = normalize_product_name(gpu_product_pool_label(product));
  if (size_t mig = p.find("-mig-"); mig != std::string::npos) p.resize(mig);
  return catalog.find_product(p);
}

// --- nodes --------------------------------------------------------------

namespace {

// The steps of parse_node(), in order; `obj` names the node in errors.
void read_node_spec(const std::string& obj, const json& j, K8sNode& n) {
  const json* spec = object_member(obj, j, "spec", "spec");
  if (spec == nullptr) return;
  n.unschedulable = bool_member(obj, *spec, "unschedulable", "spec.unschedulable");
  const json* taints = array_member(obj, *spec, "taints", "spec.taints");
  if (taints == nullptr) return;
  for (size_t i = 0; i < taints->size(); ++i) {
    std::string path = fmt::format("spec.taints[{}]", i);
    const json& t = (*taints)[i];
    if (!t.is_object()) fail(obj, path, "expected an object");
    K8sTaint taint{string_member(obj, t, "key", path + ".key"), string_member(obj, t, "value", path + ".value"),
                   string_member(obj, t, "effect", path + ".effect")};
    if (taint.key.empty()) fail(obj, path + ".key", "missing or empty");
    n.taints.push_back(std::move(taint));
  }
}

void read_node_status(const std::string& obj, const json& j, K8sNode& n) {
  const json* status = object_member(obj, j, "status", "status");
  if (status == nullptr) return;
  n.capacity = quantity_map(obj, *status, "capacity", "status.capacity");
  n.allocatable = quantity_map(obj, *status, "allocatable", "status.allocatable");
  const json* conds = array_member(obj, *status, "conditions", "status.conditions");
  if (conds == nullptr) return;
  for (size_t i = 0; i < conds->size(); ++i) {
    const json& c = (*conds)[i];
    std::string path = fmt::format("status.conditions[{}]", i);
    if (!c.is_object()) fail(obj, path, "expected an object");
    if (string_member(obj, c, "type", path + ".type") == "Ready") {
      n.ready = string_member(obj, c, "status", path + ".status") == "True";
    }
  }
}

// A resource from allocatable, or from capacity when allocatable lacks it:
// (field path for errors, quantity text), or ("", nullptr).
std::pair<std::string, const std::string*> node_resource(const K8sNode& n, std::string_view name) {
  if (auto it = n.allocatable.find(std::string(name)); it != n.allocatable.end()) {
    return {fmt::format("status.allocatable[\"{}\"]", name), &it->second};
  }
  if (auto it = n.capacity.find(std::string(name)); it != n.capacity.end()) {
    return {fmt::format("status.capacity[\"{}\"]", name), &it->second};
  }
  return {"", nullptr};
}

void read_node_cpu_memory(const std::string& obj, K8sNode& n) {
  if (auto [field, text] = node_resource(n, "cpu"); text != nullptr) {
    try {
      n.spec.cpu_milli = quantity_milli(quantity_at(obj, field, *text));
    } catch (const std::out_of_range&) {
      fail(obj, field, fmt::format("\"{}\" is out of range", excerpt(*text)));
    }
  }
  if (auto [field, text] = node_resource(n, "memory"); text != nullptr) {
    try {
      n.spec.memory_mib = quantity_mib(quantity_at(obj, field, *text), Round::kDown);
    } catch (const std::out_of_range&) {
      fail(obj, field, fmt::format("\"{}\" is out of range", excerpt(*text)));
    }
  }
  if (n.spec.cpu_milli < 0 || n.spec.memory_mib < 0) fail(obj, "status.allocatable", "negative cpu or memory");
}

const std::string* node_label(const K8sNode& n, std::string_view key) {
  auto it = n.labels.find(std::string(key));
  return it == n.labels.end() ? nullptr : &it->second;
}
std::string label_field(std::string_view key) { return fmt::format("metadata.labels[\"{}\"]", key); }

// Device-plugin labels: replicas, sharing and MIG strategy, GPU memory.
void read_node_gpu_labels(const std::string& obj, K8sNode& n) {
  if (const std::string* v = node_label(n, "nvidia.com/gpu.replicas")) {
    int64_t r = strict_int(obj, label_field("nvidia.com/gpu.replicas"), *v, 0, 100000);
    n.gpu_replicas = static_cast<int32_t>(std::max<int64_t>(r, 1));
  }
  if (const std::string* v = node_label(n, "nvidia.com/gpu.sharing-strategy")) n.sharing_strategy = *v;
  if (const std::string* v = node_label(n, "nvidia.com/mig.strategy")) n.mig_strategy = *v;
  if (const std::string* v = node_label(n, "nvidia.com/gpu.memory")) {
    n.gpu_memory_mib = strict_int(obj, label_field("nvidia.com/gpu.memory"), *v, 0, int64_t{1} << 40);
  }
}

// GPU resources (whole, shared replicas, MIG devices) and the physical GPU count.
void read_node_gpus(const std::string& obj, K8sNode& n) {
  std::map<std::string, std::string> gpu_resources;
  for (const auto* m : {&n.capacity, &n.allocatable}) {
    for (const auto& [k, v] : *m) gpu_resources[k] = v;  // allocatable wins
  }
  for (const auto& [name, text] : gpu_resources) {
    auto [field, t] = node_resource(n, name);
    if (name == kGpuResource) {
      n.gpu_resource = count_at(obj, field, *t);
    } else if (name == kGpuSharedResource) {
      n.gpu_shared_resource = count_at(obj, field, *t);
    } else if (starts_with(name, kMigPrefix)) {
      int64_t c = count_at(obj, field, *t);
      if (c > 0) n.mig_devices[name.substr(kMigPrefix.size())] = c;
    }
  }
  int64_t physical = 0;
  if (n.gpu_shared_resource > 0 || (n.gpu_resource > 0 && n.gpu_replicas > 1)) {
    int64_t advertised = n.gpu_shared_resource > 0 ? n.gpu_shared_resource : n.gpu_resource;
    if (advertised % n.gpu_replicas != 0) {
      fail(obj, "status.allocatable",
           fmt::format("{} shared GPU replicas are not a multiple of nvidia.com/gpu.replicas={}", advertised,
                       n.gpu_replicas));
    }
    physical = advertised / n.gpu_replicas;
  } else if (n.gpu_resource > 0) {
    physical = n.gpu_resource;
  } else if (auto [field, text] = node_resource(n, "alibabacloud.com/gpu-count"); text != nullptr) {
    physical = count_at(obj, field, *text);
  }
  if (physical > kMaxGpusPerNode) {
    fail(obj, "status.allocatable",
         fmt::format("{} GPUs exceed the {} GPUs per node gpupack supports", physical, kMaxGpusPerNode));
  }
  n.spec.gpu_count = static_cast<int32_t>(physical);
}

// The GPU model from the product label; returns the label's field path.
std::string read_node_product(K8sNode& n) {
  std::string product_field = label_field(kGpuProductLabel);
  for (std::string_view key : {kGpuProductLabel, annotations::kAlibabaGpuCardModel}) {
    if (const std::string* v = node_label(n, key)) {
      n.gpu_product = *v;
      if (auto id = find_gpu_model(*v)) {
        n.gpu_model_known = true;
        n.spec.gpu_model = *id;
      }
      product_field = label_field(key);
      break;
    }
  }
  if (n.gpu_memory_mib == 0 && n.gpu_model_known) {
    n.gpu_memory_mib = GpuCatalog::builtin().spec(n.spec.gpu_model).memory_mib;
  }
  return product_field;
}

}  // namespace

K8sNode parse_node(const json& j) {
  if (!j.is_object()) throw std::invalid_argument(fmt::format("Node: expected an object, got {}", short_dump(j)));
  std::string obj = "Node";
  const json* meta = object_member(obj, j, "metadata", "metadata");
  if (meta == nullptr) fail(obj, "metadata", "missing");
  K8sNode n;
  n.spec.name = string_member(obj, *meta, "name", "metadata.name");
  if (n.spec.name.empty()) fail(obj, "metadata.name", "missing or empty");
  obj = "Node " + excerpt(n.spec.name);
  n.labels = string_map(obj, *meta, "labels", "metadata.labels");
  n.annotations = string_map(obj, *meta, "annotations", "metadata.annotations");
  read_node_spec(obj, j, n);
  read_node_status(obj, j, n);
  read_node_cpu_memory(obj, n);
  read_node_gpu_labels(obj, n);
  read_node_gpus(obj, n);
  const std::string product_field = read_node_product(n);
  apply_gpu_topology(obj, n);
  // Last, so that a node rejected above registers nothing.
  if (n.spec.gpu_count > 0 && !n.gpu_model_known) {
    assign_unknown_pool(obj, product_field, n);
  }
  return n;
}

// --- GPU topology annotation ----------------------------------------------

GpuTopology parse_gpu_topology(std::string_view value, int gpu_count) {
  auto bad = [&](std::string_view why) -> std::invalid_argument {
    return std::invalid_argument(fmt::format("\"{}\": {}", excerpt(value), why));
  };
  auto split = [](std::string_view text, char sep) {
    std::vector<std::string_view> parts;
    while (true) {
      const size_t at = text.find(sep);
      parts.push_back(text.substr(0, at));
      if (at == std::string_view::npos) break;
      text = text.substr(at + 1);
    }
    return parts;
  };
  auto index = [&](std::string_view level, const std::string& tok) -> int {
    if (tok.empty() || tok.size() > 2 || tok.find_first_not_of("0123456789") != std::string::npos) {
      throw bad(fmt::format("{}: \"{}\" is not a GPU index", level, excerpt(tok)));
    }
    const int g = std::stoi(tok);
    if (g >= gpu_count) {
      throw bad(gpu_count == 0 ? fmt::format("{}: GPU {} given but the node has no GPUs", level, g)
                               : fmt::format("{}: GPU {} is beyond the node's {} GPUs (0..{})", level, g, gpu_count,
                                             gpu_count - 1));
    }
    return g;
  };
  GpuTopology t;
  if (trim(value).empty()) throw bad("empty; expected <level>=<group>|<group>... (levels nvlink, pcie-switch, numa)");
  for (std::string_view item : split(value, ';')) {
    const size_t eq = item.find('=');
    if (trim(item).empty()) throw bad("an empty item between ';'");
    if (eq == std::string_view::npos) throw bad(fmt::format("\"{}\" is not <level>=<groups>", excerpt(trim(item))));
    const std::string level(trim(item.substr(0, eq)));
    GpuScope scope = GpuScope::kAny;
    if (!parse_gpu_scope(level, &scope) || scope == GpuScope::kAny || level != to_string(scope)) {
      throw bad(fmt::format("unknown level \"{}\" (known: nvlink, pcie-switch, numa)", excerpt(level)));
    }
    std::vector<int8_t>* ids = scope == GpuScope::kNvlink       ? &t.nvlink
                               : scope == GpuScope::kPcieSwitch ? &t.pcie_switch
                                                                : &t.numa;
    const uint8_t bit = static_cast<uint8_t>(1u << static_cast<unsigned>(scope));
    if (t.scopes & bit) throw bad(fmt::format("level {} given twice", level));
    t.scopes |= bit;
    ids->assign(static_cast<size_t>(gpu_count), -1);
    const std::string_view groups = item.substr(eq + 1);
    if (trim(groups).empty()) throw bad(fmt::format("{}: no groups", level));
    int group = 0;
    for (std::string_view grp : split(groups, '|')) {
      if (trim(grp).empty()) throw bad(fmt::format("{}: an empty group", level));
      for (std::string_view tok : split(grp, ',')) {
        const std::string part(trim(tok));
        const size_t dash = part.find('-');
        int lo = 0, hi = 0;
        if (dash == std::string::npos) {
          lo = hi = index(level, part);
        } else {
          lo = index(level, std::string(trim(std::string_view(part).substr(0, dash))));
          hi = index(level, std::string(trim(std::string_view(part).substr(dash + 1))));
          if (lo > hi) throw bad(fmt::format("{}: range {} runs backwards", level, part));
        }
        for (int g = lo; g <= hi; ++g) {
          int8_t& id = (*ids)[static_cast<size_t>(g)];
          if (id >= 0) throw bad(fmt::format("{}: GPU {} is in more than one group", level, g));
          id = static_cast<int8_t>(group);
        }
      }
      ++group;
    }
    if (scope == GpuScope::kNuma) {
      t.numa_nodes = group;
      for (int g = 0; g < gpu_count; ++g) {
        if (t.numa[static_cast<size_t>(g)] < 0) throw bad(fmt::format("numa: GPU {} is on no NUMA node", g));
      }
    }
  }
  return t;
}

// --- pods ---------------------------------------------------------------

namespace {

// spec.resourceClaims names each claim directly (resourceClaimName) or
// through a template, whose generated claim name status.resourceClaimStatuses
// gives once the API has made it.
void read_pod_claims(const std::string& obj, const json& j, K8sPod& p) {
  std::map<std::string, std::string> generated;
  const json* status = object_member(obj, j, "status", "status");
  if (status != nullptr) {
    if (const json* st = array_member(obj, *status, "resourceClaimStatuses", "status.resourceClaimStatuses")) {
      for (size_t i = 0; i < st->size(); ++i) {
        const std::string path = fmt::format("status.resourceClaimStatuses[{}]", i);
        const json& s = (*st)[i];
        if (!s.is_object()) fail(obj, path, fmt::format("expected an object, got {}", short_dump(s)));
        generated[string_member(obj, s, "name", path + ".name")] =
            string_member(obj, s, "resourceClaimName", path + ".resourceClaimName");
      }
    }
    if (const json* ext =
            object_member(obj, *status, "extendedResourceClaimStatus", "status.extendedResourceClaimStatus")) {
      p.extended_resource_claim =
          string_member(obj, *ext, "resourceClaimName", "status.extendedResourceClaimStatus.resourceClaimName");
    }
  }
  const json* spec = object_member(obj, j, "spec", "spec");
  const json* claims = spec ? array_member(obj, *spec, "resourceClaims", "spec.resourceClaims") : nullptr;
  if (claims == nullptr) return;
  for (size_t i = 0; i < claims->size(); ++i) {
    const std::string path = fmt::format("spec.resourceClaims[{}]", i);
    const json& c = (*claims)[i];
    if (!c.is_object()) fail(obj, path, fmt::format("expected an object, got {}", short_dump(c)));
    std::string name = string_member(obj, c, "resourceClaimName", path + ".resourceClaimName");
    if (name.empty()) {
      auto it = generated.find(string_member(obj, c, "name", path + ".name"));
      if (it != generated.end()) name = it->second;  // "" until the API made the claim
    }
    if (!name.empty()) p.resource_claims.push_back(std::move(name));
  }
}

}  // namespace

// The opening every namespaced object shares: an object with metadata, a
// non-empty name, the namespace ("default" when absent). Sets `name`, `ns`
// and `obj` (the object's label for later errors, "Kind ns/name"); returns
// the metadata. Errors name the kind.
static const json& read_namespaced_identity(const json& j, const std::string& kind, std::string& ns, std::string& name,
                                            std::string& obj) {
  if (!j.is_object()) throw std::invalid_argument(fmt::format("{}: expected an object, got {}", kind, short_dump(j)));
  obj = kind;
  const json* meta = object_member(obj, j, "metadata", "metadata");
  if (meta == nullptr) fail(obj, "metadata", "missing");
  name = string_member(obj, *meta, "name", "metadata.name");
  if (name.empty()) fail(obj, "metadata.name", "missing or empty");
  ns = string_member(obj, *meta, "namespace", "metadata.namespace");
  if (ns.empty()) ns = "default";
  obj = kind + " " + excerpt(ns + "/" + name);
  return *meta;
}

// The controller, node-local volumes and priority class (K8sPod).
static void read_pod_mobility(const std::string& obj, const json& meta, const json& spec, K8sPod& p) {
  const ControllerRef c = read_controller_ref(obj, meta);
  p.controller_kind = c.kind;
  p.controller_name = c.name;
  p.controller_uid = c.uid;
  if (const json* volumes = array_member(obj, spec, "volumes", "spec.volumes")) {
    for (size_t i = 0; i < volumes->size(); ++i) {
      const json& v = (*volumes)[i];
      if (!v.is_object()) fail(obj, fmt::format("spec.volumes[{}]", i), "expected an object");
      if (member(v, "emptyDir") != nullptr || member(v, "hostPath") != nullptr)
        p.local_volumes.push_back(string_member(obj, v, "name", fmt::format("spec.volumes[{}].name", i)));
    }
  }
  p.priority_class_name = string_member(obj, spec, "priorityClassName", "spec.priorityClassName");
}

ControllerRef read_controller_ref(const std::string& object, const json& metadata) {
  ControllerRef c;
  const json* owners = array_member(object, metadata, "ownerReferences", "metadata.ownerReferences");
  if (owners == nullptr) return c;
  for (size_t i = 0; i < owners->size(); ++i) {
    const std::string path = fmt::format("metadata.ownerReferences[{}]", i);
    const json& o = (*owners)[i];
    if (!o.is_object()) fail(object, path, fmt::format("expected an object, got {}", short_dump(o)));
    if (!bool_member(object, o, "controller", path + ".controller")) continue;
    if (!c.kind.empty()) fail(object, path, "a second controller (an object has at most one)");
    c.kind = string_member(object, o, "kind", path + ".kind");
    c.name = string_member(object, o, "name", path + ".name");
    c.uid = string_member(object, o, "uid", path + ".uid");
    if (c.kind.empty()) fail(object, path + ".kind", "missing or empty");
    if (c.name.empty()) fail(object, path + ".name", "missing or empty");
  }
  return c;
}

K8sPod parse_pod(const json& j) {
  K8sPod p;
  std::string obj;
  const json& meta = read_namespaced_identity(j, "Pod", p.namespace_name, p.name, obj);
  p.uid = string_member(obj, meta, "uid", "metadata.uid");
  p.labels = string_map(obj, meta, "labels", "metadata.labels");
  p.annotations = string_map(obj, meta, "annotations", "metadata.annotations");

  const json* spec = object_member(obj, j, "spec", "spec");
  if (spec == nullptr) fail(obj, "spec", "missing");
  p.node_name = string_member(obj, *spec, "nodeName", "spec.nodeName");
  p.scheduler_name = string_member(obj, *spec, "schedulerName", "spec.schedulerName");
  if (const json* status = object_member(obj, j, "status", "status")) {
    p.phase = string_member(obj, *status, "phase", "status.phase");
  }
  read_pod_claims(obj, j, p);
  read_pod_mobility(obj, meta, *spec, p);
  if (const json* created = member(meta, "creationTimestamp"); created != nullptr && created->is_string()) {
    const auto t = parse_rfc3339(created->get_ref<const std::string&>());
    if (!t)
      fail(obj, "metadata.creationTimestamp",
           fmt::format("\"{}\" is not an RFC 3339 time", excerpt(created->get_ref<const std::string&>())));
    p.created_unix_s = std::chrono::duration_cast<std::chrono::seconds>(t->time_since_epoch()).count();
  }
  const json* deletion = member(meta, "deletionTimestamp");
  p.deleting = deletion != nullptr && !deletion->is_null();

  ResourceTotals totals = effective_requests(obj, *spec);
  p.request.cpu_milli = totals.count("cpu") ? totals["cpu"] : 0;
  int64_t bytes = totals.count("memory") ? totals["memory"] : 0;
  p.request.memory_mib = bytes / kMiB + (bytes % kMiB > 0 ? 1 : 0);
  apply_gpu_request(obj, p, totals);
  apply_gpupack_annotations(obj, p);
  if (std::string why = p.request.validate(); !why.empty()) fail(obj, "spec.containers[*].resources", why);
  return p;
}

K8sResourceClaim parse_resource_claim(const json& j) {
  K8sResourceClaim c;
  std::string obj;
  (void)read_namespaced_identity(j, "ResourceClaim", c.namespace_name, c.name, obj);
  const json* status = object_member(obj, j, "status", "status");
  if (status == nullptr) return c;
  if (const json* alloc = object_member(obj, *status, "allocation", "status.allocation")) {
    c.allocated = true;
    const json* devices = object_member(obj, *alloc, "devices", "status.allocation.devices");
    const json* results =
        devices ? array_member(obj, *devices, "results", "status.allocation.devices.results") : nullptr;
    if (results != nullptr) {
      for (size_t i = 0; i < results->size(); ++i) {
        const std::string path = fmt::format("status.allocation.devices.results[{}]", i);
        const json& r = (*results)[i];
        if (!r.is_object()) fail(obj, path, fmt::format("expected an object, got {}", short_dump(r)));
        K8sClaimDevice d{
            string_member(obj, r, "request", path + ".request"), string_member(obj, r, "driver", path + ".driver"),
            string_member(obj, r, "pool", path + ".pool"), string_member(obj, r, "device", path + ".device")};
        if (d.driver.empty() || d.device.empty()) fail(obj, path, "driver and device are required");
        c.devices.push_back(std::move(d));
      }
    }
  }
  if (const json* reserved = array_member(obj, *status, "reservedFor", "status.reservedFor")) {
    for (size_t i = 0; i < reserved->size(); ++i) {
      const std::string path = fmt::format("status.reservedFor[{}]", i);
      const json& r = (*reserved)[i];
      if (!r.is_object()) fail(obj, path, fmt::format("expected an object, got {}", short_dump(r)));
      if (string_member(obj, r, "resource", path + ".resource") != "pods") continue;
      c.reserved_for.push_back(string_member(obj, r, "name", path + ".name"));
    }
  }
  return c;
}

std::vector<K8sNode> parse_node_list(std::string_view text, std::string_view source, std::vector<std::string>* rejected,
                                     std::vector<std::string>* warnings) {
  std::vector<K8sNode> nodes =
      parse_items<K8sNode>(text, source, rejected, [](const json& j) { return parse_node(j); });
  if (warnings != nullptr) {
    for (const K8sNode& n : nodes) {
      for (const std::string& w : n.warnings) warnings->push_back(fmt::format("{}: {}", source, w));
    }
  }
  return nodes;
}

std::vector<K8sPod> parse_pod_list(std::string_view text, std::string_view source, std::vector<std::string>* rejected) {
  return parse_items<K8sPod>(text, source, rejected, [](const json& j) { return parse_pod(j); });
}

std::vector<K8sResourceClaim> parse_resource_claim_list(std::string_view text, std::string_view source,
                                                        std::vector<std::string>* rejected) {
  return parse_items<K8sResourceClaim>(text, source, rejected, [](const json& j) { return parse_resource_claim(j); });
}

K8sPodGroup parse_pod_group(const json& j) {
  K8sPodGroup g;
  std::string obj;
  (void)read_namespaced_identity(j, "PodGroup", g.namespace_name, g.name, obj);
  const json* spec = object_member(obj, j, "spec", "spec");
  if (spec == nullptr || !spec->contains("minMember")) fail(obj, "spec.minMember", "missing");
  const json& m = (*spec)["minMember"];
  if (!m.is_number_integer() || m.get<int64_t>() < 1 || m.get<int64_t>() > 100000)
    fail(obj, "spec.minMember", fmt::format("expected an integer in [1, 100000], got {}", short_dump(m)));
  g.min_member = static_cast<int32_t>(m.get<int64_t>());
  return g;
}

std::vector<K8sPodGroup> parse_pod_group_list(std::string_view text, std::string_view source,
                                              std::vector<std::string>* rejected) {
  return parse_items<K8sPodGroup>(text, source, rejected, [](const json& j) { return parse_pod_group(j); });
}

std::vector<K8sPodGroup> read_pod_group_list_file(const std::string& path, std::vector<std::string>* rejected) {
  return parse_pod_group_list(read_file(path), path, rejected);
}

bool K8sPdb::selects(const K8sPod& pod) const {
  if (!has_selector || pod.namespace_name != namespace_name) return false;
  for (const auto& [k, v] : match_labels) {
    auto it = pod.labels.find(k);
    if (it == pod.labels.end() || it->second != v) return false;
  }
  for (const K8sLabelRequirement& r : match_expressions) {
    auto it = pod.labels.find(r.key);
    const bool has = it != pod.labels.end();
    const bool in = has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    if ((r.op == "In" && !in) || (r.op == "NotIn" && in) || (r.op == "Exists" && !has) ||
        (r.op == "DoesNotExist" && has))
      return false;
  }
  return true;
}

K8sPdb parse_pdb(const json& j) {
  K8sPdb b;
  std::string obj;
  (void)read_namespaced_identity(j, "PodDisruptionBudget", b.namespace_name, b.name, obj);
  if (const json* spec = object_member(obj, j, "spec", "spec")) {
    if (const json* sel = object_member(obj, *spec, "selector", "spec.selector")) {
      b.has_selector = true;
      b.match_labels = string_map(obj, *sel, "matchLabels", "spec.selector.matchLabels");
      if (const json* exprs = array_member(obj, *sel, "matchExpressions", "spec.selector.matchExpressions")) {
        for (size_t i = 0; i < exprs->size(); ++i) {
          const std::string path = fmt::format("spec.selector.matchExpressions[{}]", i);
          const json& e = (*exprs)[i];
          if (!e.is_object()) fail(obj, path, fmt::format("expected an object, got {}", short_dump(e)));
          K8sLabelRequirement r{
              string_member(obj, e, "key", path + ".key"), string_member(obj, e, "operator", path + ".operator"), {}};
          if (r.op != "In" && r.op != "NotIn" && r.op != "Exists" && r.op != "DoesNotExist")
            fail(obj, path + ".operator",
                 fmt::format("\"{}\": expected In, NotIn, Exists or DoesNotExist", excerpt(r.op)));
          if (const json* values = array_member(obj, e, "values", path + ".values")) {
            for (size_t k = 0; k < values->size(); ++k) {
              if (!(*values)[k].is_string()) fail(obj, fmt::format("{}.values[{}]", path, k), "expected a string");
              r.values.push_back((*values)[k].get<std::string>());
            }
          }
          b.match_expressions.push_back(std::move(r));
        }
      }
    }
  }
  if (const json* status = object_member(obj, j, "status", "status")) {
    if (const json* a = member(*status, "disruptionsAllowed")) {
      if (!a->is_number_integer() || a->get<int64_t>() < 0 || a->get<int64_t>() > 1000000)
        fail(obj, "status.disruptionsAllowed", fmt::format("expected a non-negative integer, got {}", short_dump(*a)));
      b.disruptions_allowed = static_cast<int32_t>(a->get<int64_t>());
    }
  }
  return b;
}

std::vector<K8sPdb> parse_pdb_list(std::string_view text, std::string_view source, std::vector<std::string>* rejected) {
  return parse_items<K8sPdb>(text, source, rejected, [](const json& j) { return parse_pdb(j); });
}

std::vector<K8sPdb> read_pdb_list_file(const std::string& path, std::vector<std::string>* rejected) {
  return parse_pdb_list(read_file(path), path, rejected);
}

std::vector<K8sResourceClaim> read_resource_claim_list_file(const std::string& path,
                                                            std::vector<std::string>* rejected) {
  return parse_resource_claim_list(read_file(path), path, rejected);
}

std::vector<K8sNode> read_node_list_file(const std::string& path, std::vector<std::string>* rejected,
                                         std::vector<std::string>* warnings) {
  return parse_node_list(read_file(path), path, rejected, warnings);
}

std::vector<K8sPod> read_pod_list_file(const std::string& path, std::vector<std::string>* rejected) {
  return parse_pod_list(read_file(path), path, rejected);
}

Request request_on(const K8sPod& pod, const K8sNode& node) {
  Request r = pod.request;
  if (pod.shared_replicas > 0 && !pod.gpu_milli_given && node.gpu_replicas > 1) {
    int64_t milli = (pod.shared_replicas * kGpuMilliPerGpu + node.gpu_replicas - 1) / node.gpu_replicas;
    r.gpu_milli = static_cast<int32_t>(std::min<int64_t>(milli, kGpuMilliPerGpu));
  }
  return r;
}

// --- assignment annotation ------------------------------------------------

std::string format_assigned_gpus(const GpuAssignmentAnnotation& a) {
  std::string out = a.node + ":";
  bool first = true;
  for (int i = 0; i < 32; ++i) {
    if ((a.gpu_mask >> i) & 1u) {
      if (!first) out += ",";
      out += std::to_string(i);
      first = false;
    }
  }
  if (a.gpu_milli > 0 && a.gpu_milli < kGpuMilliPerGpu) out += "@" + std::to_string(a.gpu_milli);
  return out;
}

GpuAssignmentAnnotation parse_assigned_gpus(std::string_view value) {
  auto bad = [&](std::string_view why) -> std::invalid_argument {
    return std::invalid_argument(fmt::format("invalid assignment \"{}\": {}", excerpt(value), why));
  };
  size_t colon = value.rfind(':');
  if (colon == std::string_view::npos) throw bad("expected <node>:<gpu>[,<gpu>...][@<milli>]");
  GpuAssignmentAnnotation a;
  a.node = std::string(value.substr(0, colon));
  if (a.node.empty()) throw bad("empty node name");
  for (char c : a.node) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) {
      throw bad("node name has a character outside [A-Za-z0-9-._]");
    }
  }
  std::string_view rest = value.substr(colon + 1);
  if (size_t at = rest.find('@'); at != std::string_view::npos) {
    std::string_view m = rest.substr(at + 1);
    rest = rest.substr(0, at);
    int64_t milli = 0;
    if (m.empty() || m.size() > 4) throw bad("milli must be 1..1000");
    for (char c : m) {
      if (c < '0' || c > '9') throw bad("milli must be 1..1000");
      milli = milli * 10 + (c - '0');
    }
    if (milli < 1 || milli > kGpuMilliPerGpu) throw bad("milli must be 1..1000");
    a.gpu_milli = static_cast<int32_t>(milli);
  }
  if (rest.empty()) throw bad("no GPU indices");
  while (true) {
    size_t comma = rest.find(',');
    std::string_view tok = rest.substr(0, comma);
    if (tok.empty() || tok.size() > 2) throw bad("GPU index must be 0..31");
    int idx = 0;
    for (char c : tok) {
      if (c < '0' || c > '9') throw bad("GPU index must be 0..31");
      idx = idx * 10 + (c - '0');
    }
    if (idx >= kMaxGpusPerNode) throw bad("GPU index must be 0..31");
    if ((a.gpu_mask >> idx) & 1u) throw bad(fmt::format("GPU {} listed twice", idx));
    a.gpu_mask |= 1u << idx;
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return a;
}

std::string assigned_gpus_annotation(std::string_view node_name, const Assignment& where) {
  GpuAssignmentAnnotation a{std::string(node_name), where.gpu_mask, where.gpu_milli};
  return format_assigned_gpus(a);
}

RebuiltState rebuild_assignments(const std::vector<K8sNode>& nodes, const std::vector<K8sPod>& pods) {
  std::map<std::string, size_t, std::less<>> by_name;
  for (size_t i = 0; i < nodes.size(); ++i) by_name.emplace(nodes[i].spec.name, i);
  RebuiltState out;
  for (size_t i = 0; i < pods.size(); ++i) {
    const K8sPod& pod = pods[i];
    if (pod.node_name.empty() || pod.terminal()) continue;
    auto skip = [&](std::string why) { out.unattributed.push_back(fmt::format("{}: {}", pod.key(), why)); };
    auto it = by_name.find(pod.node_name);
    if (it == by_name.end()) {
      skip(fmt::format("node {} is not in the node list", pod.node_name));
      continue;
    }
    const K8sNode& node = nodes[it->second];
    NodeId nid = static_cast<NodeId>(it->second);
    Request req = request_on(pod, node);
    if (pod.is_mig()) {
      skip("MIG devices are not tracked as GPU shares");
      continue;
    }
    if (!req.is_gpu()) {
      out.bound.push_back({i, req, Assignment{nid, 0, 0}});
      continue;
    }
    if (!pod.assigned) {
      skip(fmt::format("no {} annotation", annotations::kAssignedGpus));
      continue;
    }
    const GpuAssignmentAnnotation& a = *pod.assigned;
    if (a.node != pod.node_name) {
      skip(fmt::format("annotation names node {} but the pod is bound to {}", a.node, pod.node_name));
      continue;
    }
    if (node.spec.gpu_count < 32 && (a.gpu_mask >> node.spec.gpu_count) != 0) {
      skip(fmt::format("annotation \"{}\" names a GPU beyond the node's {} GPUs", format_assigned_gpus(a),
                       node.spec.gpu_count));
      continue;
    }
    if (std::popcount(a.gpu_mask) != req.gpu_count) {
      skip(fmt::format("annotation names {} GPUs, the pod requests {}", std::popcount(a.gpu_mask), req.gpu_count));
      continue;
    }
    int32_t milli = a.gpu_milli > 0 ? a.gpu_milli : kGpuMilliPerGpu;
    if (milli != req.gpu_milli) {
      skip(fmt::format("annotation charges {} milli per GPU, the pod requests {}", milli, req.gpu_milli));
      continue;
    }
    out.bound.push_back({i, req, Assignment{nid, a.gpu_mask, req.gpu_milli}});
  }
  return out;
}

std::vector<std::string> apply_rebuilt(ClusterState& state, const std::vector<K8sPod>& pods,
                                       const RebuiltState& rebuilt) {
  std::vector<std::string> failed;
  for (const RebuiltPod& b : rebuilt.bound) {
    Status s = state.bind(static_cast<PodId>(b.pod_index), b.request, b.assignment);
    if (!s.is_ok()) failed.push_back(fmt::format("{}: {}", pods[b.pod_index].key(), s.message));
  }
  return failed;
}

std::optional<std::chrono::system_clock::time_point> parse_rfc3339(const std::string& t) {
  auto digits = [&](size_t pos, size_t n, int& out) {
    if (pos + n > t.size()) return false;
    out = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      out = out * 10 + (t[i] - '0');
    }
    return true;
  };
  int year, mon, day, hour, min, sec;
  if (!digits(0, 4, year) || t.size() < 20 || t[4] != '-' || !digits(5, 2, mon) || t[7] != '-' || !digits(8, 2, day) ||
      (t[10] != 'T' && t[10] != 't' && t[10] != ' ') || !digits(11, 2, hour) || t[13] != ':' || !digits(14, 2, min) ||
      t[16] != ':' || !digits(17, 2, sec))
    return std::nullopt;
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60) return std::nullopt;
  size_t pos = 19;
  long long nanos = 0;
  if (pos < t.size() && t[pos] == '.') {
    size_t n = 0;
    for (++pos; pos < t.size() && t[pos] >= '0' && t[pos] <= '9'; ++pos, ++n)
      if (n < 9) nanos = nanos * 10 + (t[pos] - '0');
    if (n == 0) return std::nullopt;
    for (; n < 9; ++n) nanos *= 10;
  }
  long offset_s = 0;
  if (pos < t.size() && (t[pos] == 'Z' || t[pos] == 'z')) {
    ++pos;
  } else if (pos < t.size() && (t[pos] == '+' || t[pos] == '-')) {
    int oh, om;
    if (!digits(pos + 1, 2, oh) || pos + 3 >= t.size() || t[pos + 3] != ':' || !digits(pos + 4, 2, om) || oh > 23 ||
        om > 59)
      return std::nullopt;
    offset_s = (t[pos] == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != t.size()) return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  const long long secs = static_cast<long long>(timegm(&tm)) - offset_s;
  // system_clock counts nanoseconds (years 1678..2262): times beyond are clamped.
  using Sys = std::chrono::system_clock;
  const long long max_s =
      std::chrono::duration_cast<std::chrono::seconds>(Sys::time_point::max().time_since_epoch()).count() - 1;
  if (secs >= max_s) return Sys::time_point::max();
  if (secs <= -max_s) return Sys::time_point::min();
  return Sys::time_point(
      std::chrono::duration_cast<Sys::duration>(std::chrono::seconds(secs) + std::chrono::nanoseconds(nanos)));
}

std::string format_rfc3339(std::chrono::system_clock::time_point t) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", std::chrono::floor<std::chrono::seconds>(t));
}

std::string reservation_annotation_value(const GpuReservation& r) {
  const json who = {{"kind", r.for_kind}, {"namespace", r.for_namespace}, {"name", r.for_name}, {"uid", r.for_uid}};
  return json{
      {"for", who},
      {"gpus", format_assigned_gpus(r.gpus)},
      {"gpuCount", r.request.gpu_count},
      {"gpuMilli", r.request.gpu_milli},
      {"cpuMilli", r.request.cpu_milli},
      {"memoryMiB", r.request.memory_mib},
      {"expires", format_rfc3339(std::chrono::system_clock::time_point(std::chrono::seconds(r.expires_unix_s)))}}
      .dump();
}

bool GpuReservation::for_pod(const K8sPod& pod) const {
  if (pod.namespace_name != for_namespace || for_uid.empty()) return false;
  if (for_kind == "Pod") return pod.uid == for_uid;
  return pod.controller_uid == for_uid && pod.controller_kind == for_kind;
}

std::vector<GpuReservation> node_reservations(const K8sNode& node, std::vector<std::string>* errors) {
  std::vector<GpuReservation> out;
  for (auto it = node.annotations.lower_bound(std::string(kReservationPrefix));
       it != node.annotations.end() && it->first.rfind(kReservationPrefix, 0) == 0; ++it) {
    auto bad = [&](std::string_view why) {
      if (errors != nullptr)
        errors->push_back(fmt::format("node {} annotation {}: {}", node.spec.name, it->first, why));
    };
    const json v = json::parse(it->second, nullptr, false);
    if (!v.is_object()) {
      bad("not a JSON object");
      continue;
    }
    try {
      GpuReservation r;
      r.key = it->first;
      const json& who = v.at("for");
      r.for_kind = who.at("kind").get<std::string>();
      r.for_namespace = who.at("namespace").get<std::string>();
      r.for_name = who.at("name").get<std::string>();
      r.for_uid = who.at("uid").get<std::string>();
      r.gpus = parse_assigned_gpus(v.at("gpus").get<std::string>());
      if (r.gpus.node != node.spec.name) throw std::invalid_argument("GPUs of node " + r.gpus.node);
      r.request.gpu_count = v.at("gpuCount").get<int32_t>();
      r.request.gpu_milli = v.at("gpuMilli").get<int32_t>();
      r.request.cpu_milli = v.at("cpuMilli").get<int64_t>();
      r.request.memory_mib = v.at("memoryMiB").get<int64_t>();
      const std::string exp = v.at("expires").get<std::string>();
      const auto at = parse_rfc3339(exp);
      if (!at) throw std::invalid_argument("expires \"" + excerpt(exp) + "\" is not an RFC 3339 time");
      r.expires_unix_s = std::chrono::duration_cast<std::chrono::seconds>(at->time_since_epoch()).count();
      if (r.request.gpu_count != std::popcount(r.gpus.gpu_mask))
        throw std::invalid_argument("gpuCount differs from the GPUs named");
      out.push_back(std::move(r));
    } catch (const std::exception& e) {
      bad(e.what());
    }
  }
  return out;
}

}  // namespace gpupack
