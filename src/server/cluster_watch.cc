#include "server/cluster_watch.h"

#include "io/pod_resources.h"
#include "util/log.h"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace gpupack {

namespace {

using nlohmann::json;

using Kind = ClusterWatch::Kind;

const char* path_of(Kind kind) {
  switch (kind) {
    case Kind::kNodes:
      return "/api/v1/nodes";
    case Kind::kPods:
      return "/api/v1/pods";
    case Kind::kClaims:
      break;
  }
  return "/apis/resource.k8s.io/v1/resourceclaims";
}

const char* kind_name(Kind kind) {
  return kind == Kind::kNodes ? "nodes" : kind == Kind::kPods ? "pods" : "resourceclaims";
}

std::string resource_version(const json& object) {
  if (!object.is_object()) return "";
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto rv = meta->find("resourceVersion");
  return rv != meta->end() && rv->is_string() ? rv->get<std::string>() : "";
}

// The store key of a node ("name"), pod or claim ("namespace/name") object,
// or "" when its metadata has no name.
std::string key_of(Kind kind, const json& object) {
  const bool nodes = kind == Kind::kNodes;
  if (!object.is_object()) return "";
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto name = meta->find("name");
  if (name == meta->end() || !name->is_string() || name->get_ref<const std::string&>().empty()) return "";
  if (nodes) return name->get<std::string>();
  auto ns = meta->find("namespace");
  const std::string space = ns != meta->end() && ns->is_string() && !ns->get_ref<const std::string&>().empty()
                                ? ns->get<std::string>()
                                : "default";
  return space + "/" + name->get<std::string>();
}

// The part of a node, pod or claim object that parse_node / parse_pod /
// parse_resource_claim read: an event that leaves it unchanged (a heartbeat,
// a status condition) changes nothing in the model.
json gpupack_view(Kind kind, const json& object) {
  if (!object.is_object()) return object;
  const bool nodes = kind == Kind::kNodes;
  json view = json::object();
  auto copy = [](const json& from, json& to, std::initializer_list<const char*> keys) {
    if (!from.is_object()) return;
    for (const char* k : keys)
      if (auto it = from.find(k); it != from.end()) to[k] = *it;
  };
  if (auto meta = object.find("metadata"); meta != object.end()) {
    json m = json::object();
    if (nodes)
      copy(*meta, m, {"name", "labels", "annotations"});
    else
      copy(*meta, m, {"name", "namespace", "uid", "labels", "annotations"});
    view["metadata"] = meta->is_object() ? m : *meta;
  }
  if (auto spec = object.find("spec"); spec != object.end()) view["spec"] = *spec;
  if (auto status = object.find("status"); status != object.end()) {
    json st = json::object();
    if (nodes) {
      copy(*status, st, {"capacity", "allocatable"});
      if (status->is_object())
        if (auto conds = status->find("conditions"); conds != status->end()) {
          json c = json::array();
          if (conds->is_array()) {
            for (const json& cond : *conds) {
              json kept = cond.is_object() ? json::object() : cond;
              copy(cond, kept, {"type", "status"});
              c.push_back(std::move(kept));
            }
          } else {
            c = *conds;
          }
          st["conditions"] = std::move(c);
        }
    } else if (kind == Kind::kPods) {
      copy(*status, st, {"phase", "resourceClaimStatuses", "extendedResourceClaimStatus"});
    } else {
      copy(*status, st, {"allocation", "reservedFor"});
    }
    view["status"] = status->is_object() ? st : *status;
  }
  return view;
}

}  // namespace

// Reads `object` as a node or a pod into `e` and returns its store key
// ("name", or "namespace/name"); throws std::invalid_argument when it does
// not parse.
std::string ClusterWatch::read_entry(Kind kind, const nlohmann::json& object, Entry& e) {
  if (kind == Kind::kNodes) {
    e.node = parse_node(object);
    return e.node.spec.name;
  }
  if (kind == Kind::kClaims) {
    e.claim = parse_resource_claim(object);
    return e.claim.key();
  }
  e.pod = parse_pod(object);
  return e.pod.key();
}

ClusterWatch::ClusterWatch(const KubeClient& client, ExtenderService& service, WatchOptions options)
    : client_(client), service_(service), options_(options) {}

ClusterWatch::~ClusterWatch() { stop(); }

void ClusterWatch::note_error(const std::string& message) {
  std::lock_guard lock(mu_);
  stats_.last_error = message;
}

bool ClusterWatch::list(Kind kind) {
  const std::string what = fmt::format("GET {}", path_of(kind));
  KubeResponse r = kind == Kind::kNodes  ? client_.list_nodes()
                   : kind == Kind::kPods ? client_.list_pods()
                                         : client_.list_resource_claims();
  if (kind == Kind::kClaims && r.status == 404) {
    // The cluster does not serve resource.k8s.io/v1: no claims to charge.
    std::lock_guard lock(mu_);
    if (!claims_.items.empty()) dirty_ = full_ = true;
    claims_ = Store{};
    stats_.claims = "not served";
    return false;
  }
  if (!r.error.empty()) {
    note_error(fmt::format("listing {}: {}{}", kind_name(kind), r.error,
                           kind == Kind::kClaims ? " (GPUs allocated through DRA are not charged)" : ""));
    if (kind == Kind::kClaims) {
      std::lock_guard lock(mu_);
      stats_.claims = "failed";
    }
    return false;
  }
  json doc = json::parse(r.body, nullptr, false);
  if (!doc.is_object() || !doc.contains("items") || !doc["items"].is_array()) {
    note_error(what + ": not a Kubernetes List with an items array");
    return false;
  }
  Store fresh;
  fresh.resource_version = resource_version(doc);
  uint64_t rejected = 0;
  std::string first_rejected;
  for (json& item : doc["items"]) {
    try {
      Entry e;
      const std::string key = read_entry(kind, item, e);
      e.view = gpupack_view(kind, item);
      e.object = std::move(item);
      fresh.items[key] = std::move(e);
    } catch (const std::exception& ex) {
      if (rejected++ == 0) first_rejected = ex.what();
    }
  }
  if (kind == Kind::kNodes) {
    for (const auto& [key, e] : fresh.items)
      for (const std::string& w : e.node.warnings) log_warn("node", {{"detail", w}});
  }
  std::lock_guard lock(mu_);
  store(kind) = std::move(fresh);
  dirty_ = full_ = true;
  ++stats_.lists;
  if (kind == Kind::kClaims) stats_.claims = "watched";
  stats_.rejected += rejected;
  stats_.last_error = rejected == 0 ? ""
                                    : fmt::format("{}: skipped {} object(s) gpupack cannot read; the first: {}", what,
                                                  rejected, first_rejected);
  return true;
}

bool ClusterWatch::apply_event(Kind kind, std::string_view line, bool* relist) {
  json event = json::parse(line, nullptr, false);
  if (!event.is_object() || !event.contains("type") || !event["type"].is_string() || !event.contains("object")) {
    note_error(fmt::format("watch {}: not a watch event: {}", path_of(kind), line.substr(0, 120)));
    *relist = true;  // the stream cannot be trusted any more
    return false;
  }
  const std::string type = event["type"];
  json& object = event["object"];
  if (type == "ERROR") {
    // A Status; 410 Gone means our resourceVersion is too old.
    const int code = object.is_object() && object.contains("code") && object["code"].is_number_integer()
                         ? object["code"].get<int>()
                         : 0;
    std::string msg = object.is_object() && object.contains("message") && object["message"].is_string()
                          ? object["message"].get<std::string>()
                          : object.dump();
    note_error(fmt::format("watch {}: error {}: {}", path_of(kind), code, msg));
    *relist = true;
    return false;
  }
  const std::string rv = resource_version(object);
  std::lock_guard lock(mu_);
  Store& s = store(kind);
  if (!rv.empty()) s.resource_version = rv;
  if (type == "BOOKMARK") return true;
  if (type != "ADDED" && type != "MODIFIED" && type != "DELETED") return true;  // future event types
  ++stats_.events;
  json view;
  if (type != "DELETED") {
    view = gpupack_view(kind, object);
    auto known = s.items.find(key_of(kind, object));
    if (known != s.items.end() && known->second.view == view) {
      known->second.object = std::move(object);  // nothing gpupack reads changed
      ++stats_.unchanged;
      return true;
    }
  }
  // What the next flush must push: the pod, or the whole store.
  auto changed = [&](const std::string& key) {
    dirty_ = true;
    if (kind == Kind::kPods)
      changed_pods_.insert(key);
    else
      full_ = true;
  };
  Entry e;
  std::string key;
  try {
    key = read_entry(kind, object, e);
  } catch (const std::exception& ex) {
    // An object gpupack cannot read: forget any earlier version of it.
    ++stats_.rejected;
    stats_.last_error = fmt::format("watch {}: {}", path_of(kind), ex.what());
    const std::string known = key_of(kind, object);
    if (s.items.erase(known) > 0) changed(known);
    return true;
  }
  if (type == "DELETED") {
    s.items.erase(key);
  } else {
    e.object = std::move(object);
    e.view = std::move(view);
    s.items[key] = std::move(e);
  }
  changed(key);
  return true;
}

void ClusterWatch::watch_loop(Kind kind, bool listed) {
  const int k = static_cast<int>(kind);
  bool relist = !listed;
  while (!stop_) {
    if (relist_wanted_[k].exchange(false)) relist = true;
    interrupt_[k] = stop_.load();
    if (relist) {
      if (!list(kind)) {
        // Claims the API does not serve (or may not be read) are asked for
        // again rarely: DRA may be turned on, RBAC granted, later.
        const int wait_ms = kind == Kind::kClaims ? options_.claims_retry_s * 1000 : options_.retry_ms;
        for (int waited = 0; waited < wait_ms && !stop_ && !relist_wanted_[k]; waited += 50)
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      relist = false;
    }
    std::string rv;
    {
      std::lock_guard lock(mu_);
      rv = store(kind).resource_version;
    }
    const std::string path = fmt::format("{}?watch=1&allowWatchBookmarks=true&timeoutSeconds={}{}", path_of(kind),
                                         options_.watch_timeout_s, rv.empty() ? "" : "&resourceVersion=" + rv);
    const auto opened = std::chrono::steady_clock::now();
    KubeResponse r = client_.stream_lines(
        path, [&](std::string_view line) { return apply_event(kind, line, &relist); }, interrupt_[k],
        options_.watch_timeout_s + 30);
    if (relist_wanted_[k]) continue;  // interrupted for a periodic relist
    if (!r.error.empty()) {
      note_error(r.error);
      relist = true;  // after a failure, start again from a fresh list
    }
    // A failure, or a watch the server ended at once: wait before the next
    // try rather than spin against the API.
    if (!r.error.empty() || std::chrono::steady_clock::now() - opened < std::chrono::seconds(1))
      for (int waited = 0; waited < options_.retry_ms && !stop_; waited += 50)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void ClusterWatch::flush() {
  std::vector<ExtenderService::PodChange> changes;
  bool full = false;
  {
    std::lock_guard lock(mu_);
    if (!dirty_) return;
    dirty_ = false;
    full = full_ || !options_.pod_updates_in_place || changed_pods_.size() > kMaxPodChanges;
    if (!full) {
      changes.reserve(changed_pods_.size());
      for (const std::string& key : changed_pods_) {
        auto it = pods_.items.find(key);
        if (it == pods_.items.end())
          changes.push_back({key, {}, {}, true});
        else
          changes.push_back({key, it->second.pod, it->second.object, false});
      }
    }
    changed_pods_.clear();
    full_ = false;
    ++stats_.flushes;
  }
  if (!full) {
    if (service_.update_pods(std::move(changes))) {
      std::lock_guard lock(mu_);
      ++stats_.pod_updates;
      return;
    }
  }
  std::vector<K8sNode> nodes;
  std::vector<K8sPod> pods;
  std::vector<json> objects;
  std::vector<K8sResourceClaim> claims;
  {
    std::lock_guard lock(mu_);
    nodes.reserve(nodes_.items.size());
    for (const auto& [key, e] : nodes_.items) nodes.push_back(e.node);
    pods.reserve(pods_.items.size());
    objects.reserve(pods_.items.size());
    for (const auto& [key, e] : pods_.items) {
      pods.push_back(e.pod);
      objects.push_back(e.object);
    }
    claims.reserve(claims_.items.size());
    for (const auto& [key, e] : claims_.items) claims.push_back(e.claim);
  }
  std::vector<std::string> notes = apply_resource_claims(pods, claims);
  {
    std::lock_guard lock(mu_);
    stats_.claim_notes = std::move(notes);
  }
  for (const std::string& u : service_.set_cluster(std::move(nodes), std::move(pods), std::move(objects)))
    note_error("not attributed: " + u);
}

void ClusterWatch::flush_loop() {
  auto last_relist = std::chrono::steady_clock::now();
  while (!stop_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.flush_ms));
    if (options_.relist_s > 0 &&
        std::chrono::steady_clock::now() - last_relist > std::chrono::seconds(options_.relist_s)) {
      last_relist = std::chrono::steady_clock::now();
      // Each watch thread relists its kind and reopens its watch from the
      // new version (a list applied under a running watch could be undone
      // by older events still in flight).
      for (int k = 0; k < kKinds; ++k) {
        relist_wanted_[k] = true;
        interrupt_[k] = true;
      }
    }
    flush();
  }
}

void ClusterWatch::start() {
  if (!list(Kind::kNodes) || !list(Kind::kPods)) throw std::runtime_error(stats().last_error);
  // Claims are optional: a cluster without DRA, or a role without the
  // grant, still schedules (the watch thread asks again now and then).
  const bool claims_listed = list(Kind::kClaims);
  {
    std::lock_guard lock(mu_);
    dirty_ = full_ = true;
  }
  flush();
  {
    std::lock_guard lock(mu_);
    stats_.flushes = 0;
  }
  stop_ = false;
  threads_.emplace_back([this] { watch_loop(Kind::kNodes, true); });
  threads_.emplace_back([this] { watch_loop(Kind::kPods, true); });
  threads_.emplace_back([this, claims_listed] { watch_loop(Kind::kClaims, claims_listed); });
  threads_.emplace_back([this] { flush_loop(); });
}

void ClusterWatch::stop() {
  stop_ = true;
  for (auto& i : interrupt_) i = true;
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

ClusterWatch::Stats ClusterWatch::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace gpupack
