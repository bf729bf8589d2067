// ClusterWatch: keeps an ExtenderService's cluster model in step with the
// Kubernetes API by list + watch, the way an informer does.
//
// Contract:
// - start() lists nodes and pods (GET /api/v1/nodes, /api/v1/pods) and DRA
//   ResourceClaims (GET /apis/resource.k8s.io/v1/resourceclaims), loads
//   them into the service with set_cluster(), then watches each kind from
//   its list's resourceVersion on its own thread; it throws
//   std::runtime_error naming the call when a first list of nodes or pods
//   fails (the server should not start on no data). Claims are optional: a
//   cluster that does not serve them (404) or a role without the grant
//   leaves DRA GPUs uncharged (stats().claims says which; a refusal is
//   also last_error) and the claims list is tried again every
//   `claims_retry_s`.
// - Before each set_cluster() the claims' GPUs are charged to their pods
//   (io/pod_resources.h apply_resource_claims); what could not be used is
//   in stats().claim_notes.
// - Watch events (ADDED, MODIFIED, DELETED, BOOKMARK) update a private store
//   of objects keyed by name (nodes) and namespace/name (pods); the store is
//   pushed into the service at most every `flush_ms` while something
//   changed: when only pods changed (at most kMaxPodChanges of them, and
//   WatchOptions::pod_updates_in_place), as
//   those pods (ExtenderService::update_pods, the model changed in place);
//   otherwise, or when the service asks for it, the whole store with
//   set_cluster(), in the API's list order (sorted keys). An
//   event that changes none of the fields gpupack reads (a heartbeat, a
//   status condition, a resourceVersion) updates the stored object only. Objects
//   that do not parse as nodes / pods are left out and counted (stats()).
//   A bind made by the service in between is not lost (set_cluster keeps
//   binds the API has not shown yet).
// - A watch that ends (server timeout, `watch_timeout_s`) is reopened from
//   the last resourceVersion seen; an ERROR event with code 410 (Gone, the
//   version is too old) or any failure to reopen leads to a fresh list of
//   that kind, retried every `retry_ms` until it succeeds. `relist_s` > 0
//   also relists both kinds that often, as a safety net (each watch thread
//   ends its watch, relists, and watches again from the new version).
// - stop() (and the destructor) ends the threads within about a second.
//   Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/kubectl.h"
#include "server/extender_service.h"
#include "server/kube_client.h"

namespace gpupack {

struct WatchOptions {
  int flush_ms = 100;
  int watch_timeout_s = 300;  // asked of the server (timeoutSeconds)
  int retry_ms = 1000;
  int relist_s = 0;                  // 0 = only when the watch needs it
  int claims_retry_s = 60;           // while ResourceClaims cannot be listed
  bool pod_updates_in_place = true;  // false: every flush rebuilds the whole model
};

class ClusterWatch {
 public:
  struct Stats {
    uint64_t events = 0;                   // watch events applied
    uint64_t unchanged = 0;                // of those, events that changed nothing gpupack reads
    uint64_t lists = 0;                    // successful lists (both kinds; the first two included)
    uint64_t flushes = 0;                  // pushes into the service after start()
    uint64_t pod_updates = 0;              // of those, pod changes applied in place (no rebuild)
    uint64_t rejected = 0;                 // objects that did not parse
    std::string last_error;                // "" = none since the last success (a list names what it skipped)
    std::string claims = "not listed";     // "watched", "not served" (404) or "failed"
    std::vector<std::string> claim_notes;  // claims not charged at the last flush, and why
  };
  enum class Kind { kNodes, kPods, kClaims };
  static constexpr int kKinds = 3;
  // More pod changes than this in one flush rebuild the whole model.
  static constexpr size_t kMaxPodChanges = 4096;

  ClusterWatch(const KubeClient& client, ExtenderService& service, WatchOptions options = {});
  ~ClusterWatch();
  ClusterWatch(const ClusterWatch&) = delete;
  ClusterWatch& operator=(const ClusterWatch&) = delete;

  void start();
  void stop();
  Stats stats() const;

 private:
  struct Entry {
    nlohmann::json object;
    nlohmann::json view;     // the fields gpupack reads (see gpupack_view)
    K8sNode node;            // kNodes
    K8sPod pod;              // kPods
    K8sResourceClaim claim;  // kClaims
  };
  struct Store {
    std::map<std::string, Entry> items;
    std::string resource_version;
  };

  static std::string read_entry(Kind kind, const nlohmann::json& object, Entry& e);
  bool list(Kind kind);  // replaces the kind's store; false on failure
  void watch_loop(Kind kind, bool listed);
  bool apply_event(Kind kind, std::string_view line, bool* relist);  // false = end this watch
  void flush_loop();
  void flush();
  void note_error(const std::string& message);
  Store& store(Kind kind) { return kind == Kind::kNodes ? nodes_ : kind == Kind::kPods ? pods_ : claims_; }

  const KubeClient& client_;
  ExtenderService& service_;
  WatchOptions options_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> interrupt_[kKinds] = {false, false, false};      // per kind: end the open watch
  std::atomic<bool> relist_wanted_[kKinds] = {false, false, false};  // per kind: relist before watching again
  mutable std::mutex mu_;                                            // guards the stores, dirty_ and stats_
  Store nodes_, pods_, claims_;
  bool dirty_ = false;
  bool full_ = false;                   // nodes or claims changed (or listed): rebuild
  std::set<std::string> changed_pods_;  // pod keys changed since the last flush
  Stats stats_;
  std::vector<std::thread> threads_;
};

}  // namespace gpupack
