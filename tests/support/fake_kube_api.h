// Test support: an in-process Kubernetes API for the defrag executor's
// tests. It serves nodes, pods and PodDisruptionBudgets, node annotation
// patches, Events and the Eviction API, and plays the cluster's
// controllers and scheduler:
// - an eviction checks the UID precondition (409), then every budget that
//   selects the pod against the pods running now (429 when one more
//   disruption would break minAvailable); an evicted pod is removed and, if
//   a ReplicaSet owns it, a replacement "<owner>-r<n>" is created pending;
// - a scheduler thread places pending pods with whole GPUs every 10 ms: on
//   the node whose reservation (reservation.gpupack.io/...) is for the pod's
//   controller or the pod itself, on the reserved GPUs (while they are still
//   in use the pod waits, as the extender holds it); else first fit on GPUs
//   neither used nor reserved. A placed pod runs after `start_delay`.
// - workloads (add_replicaset()): a ReplicaSet, optionally owned by a
//   Deployment, served under apps/v1 with its scale subresource (GET, and
//   PATCH as a JSON patch whose "test" op fails with 422), and
//   HorizontalPodAutoscalers (autoscaling/v2). Its controller runs every
//   10 ms: fewer live pods than the replicas (the Deployment's, when it has
//   one) creates pending copies "<rs>-s<n>"; more marks the first by the
//   ReplicaSet's order (unscheduled, pending, lowest
//   controller.kubernetes.io/pod-deletion-cost, newest) as terminating, gone
//   `delete_delay` later. Pod annotation merge patches are served
//   (dryRun=All changes nothing; set_forbid_pod_patch() answers 403). An
//   evicted pod of such a ReplicaSet is replaced by this controller.
//   set_owner_tamper() edits each ReplicaSet and Deployment before it is
//   served (a malformed reply).
// Everything is recorded for the assertions (evictions, 429s, events, the
// fewest running pods each budget saw, the fewest Running and the most live
// pods each workload had at any point the fake saw, scale patches).
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/httplib_config.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "io/kubectl.h"

namespace gpupack::testing {

class FakeKubeApi {
 public:
  struct Pdb {
    std::string ns, name;
    std::map<std::string, std::string> match_labels;
    int min_available = 0;
    int status_allowed = -1;  // what status.disruptionsAllowed says; -1 = computed now
  };

  // The budget as the API shows it, with `allowed` as status.disruptionsAllowed.
  static nlohmann::json pdb_json(const Pdb& b, int allowed) {
    return {{"apiVersion", "policy/v1"},
            {"kind", "PodDisruptionBudget"},
            {"metadata", {{"name", b.name}, {"namespace", b.ns}}},
            {"spec", {{"minAvailable", b.min_available}, {"selector", {{"matchLabels", b.match_labels}}}}},
            {"status", {{"disruptionsAllowed", allowed}}}};
  }

  // A workload's ReplicaSet: pods whose controller is ReplicaSet `rs`.
  struct Workload {
    std::string ns, rs, deployment;  // deployment "" = a bare ReplicaSet
    int replicas = 0;
    bool paused = false, rolling_out = false;
    nlohmann::json template_pod;  // copied for new pods
    int min_running = 1 << 30, max_live = 0;
  };

  // `scheduling` false: no scheduler thread (pending pods stay pending).
  FakeKubeApi(std::vector<nlohmann::json> nodes, std::vector<nlohmann::json> pods, std::vector<Pdb> pdbs = {},
              std::chrono::milliseconds start_delay = std::chrono::milliseconds(50), bool scheduling = true)
      : nodes_(std::move(nodes)), pdbs_(std::move(pdbs)), start_delay_(start_delay) {
    for (auto& p : pods) pods_.push_back({std::move(p), {}, {}, ++seq_});
    for (const Pdb& b : pdbs_) min_running_[b.ns + "/" + b.name] = running_selected(b);
    using httplib::Request;
    using httplib::Response;
    srv_.Get("/api/v1/nodes", [this](const Request&, Response& res) {
      std::lock_guard lock(mu_);
      res.set_content(list(nodes_).dump(), "application/json");
    });
    srv_.Get("/api/v1/pods", [this](const Request&, Response& res) {
      std::lock_guard lock(mu_);
      std::vector<nlohmann::json> items;
      for (const auto& p : pods_) items.push_back(p.object);
      res.set_content(list(items).dump(), "application/json");
    });
    srv_.Get("/apis/policy/v1/poddisruptionbudgets", [this](const Request&, Response& res) {
      std::lock_guard lock(mu_);
      std::vector<nlohmann::json> items;
      for (const Pdb& b : pdbs_) {
        const int allowed =
            b.status_allowed >= 0 ? b.status_allowed : std::max(0, running_selected(b) - b.min_available);
        items.push_back(pdb_json(b, allowed));
      }
      res.set_content(list(items).dump(), "application/json");
    });
    srv_.Patch(R"(/api/v1/nodes/([^/]+))", [this](const Request& req, Response& res) {
      std::lock_guard lock(mu_);
      const nlohmann::json patch = nlohmann::json::parse(req.body, nullptr, false);
      nlohmann::json* node = find_node(req.matches[1]);
      if (node == nullptr || patch.is_discarded()) {
        res.status = node == nullptr ? 404 : 400;
        return;
      }
      auto& ann = (*node)["metadata"]["annotations"];
      if (!ann.is_object()) ann = nlohmann::json::object();
      for (const auto& [k, v] : patch["metadata"]["annotations"].items()) {
        if (v.is_null()) {
          ann.erase(k);
        } else {
          ann[k] = v;
          ++reservations_written_;
        }
      }
      res.set_content(node->dump(), "application/json");
    });
    srv_.Post(R"(/api/v1/namespaces/([^/]+)/events)", [this](const Request& req, Response& res) {
      std::lock_guard lock(mu_);
      events_.push_back(nlohmann::json::parse(req.body, nullptr, false));
      res.status = 201;
      res.set_content("{}", "application/json");
    });
    srv_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/eviction)",
              [this](const Request& req, Response& res) { evict(req, res); });
    srv_.Delete(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](const Request&, Response& res) {
      ++deletes_;  // the executor must never delete a pod directly
      res.status = 405;
    });
    srv_.Patch(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](const Request& req, Response& res) {
      std::lock_guard lock(mu_);
      const nlohmann::json patch = nlohmann::json::parse(req.body, nullptr, false);
      PodRec* p = find_pod(req.matches[1], req.matches[2]);
      if (forbid_pod_patch_) {
        res.status = 403;
        res.set_content(R"({"kind":"Status","message":"pods is forbidden: cannot patch"})", "application/json");
        return;
      }
      if (p == nullptr || patch.is_discarded() ||
          req.get_header_value("Content-Type") != "application/merge-patch+json") {
        res.status = p == nullptr ? 404 : 415;
        return;
      }
      if (req.get_param_value("dryRun") == "All") {
        res.set_content(p->object.dump(), "application/json");
        return;
      }
      auto& ann = p->object["metadata"]["annotations"];
      if (!ann.is_object()) ann = nlohmann::json::object();
      for (const auto& [k, v] : patch["metadata"]["annotations"].items()) {
        if (v.is_null()) {
          ann.erase(k);
        } else {
          ann[k] = v;
        }
      }
      res.set_content(p->object.dump(), "application/json");
    });
    srv_.Get(R"(/apis/apps/v1/namespaces/([^/]+)/replicasets/([^/]+))", [this](const Request& req, Response& res) {
      std::lock_guard lock(mu_);
      Workload* w = workload_by_rs(req.matches[1], req.matches[2]);
      if (w == nullptr) return not_found(res);
      nlohmann::json meta = {{"name", w->rs},
                             {"namespace", w->ns},
                             {"uid", "uid-" + w->rs},
                             {"annotations", {{"deployment.kubernetes.io/revision", "1"}}}};
      if (!w->deployment.empty())
        meta["ownerReferences"] = nlohmann::json::array({{{"apiVersion", "apps/v1"},
                                                          {"kind", "Deployment"},
                                                          {"name", w->deployment},
                                                          {"uid", "uid-" + w->deployment},
                                                          {"controller", true}}});
      nlohmann::json rs = {{"apiVersion", "apps/v1"},
                           {"kind", "ReplicaSet"},
                           {"metadata", meta},
                           {"spec", {{"replicas", w->replicas}}},
                           {"status", {{"replicas", live(*w)}}}};
      if (owner_tamper_) owner_tamper_(rs);
      res.set_content(rs.dump(), "application/json");
    });
    srv_.Get(R"(/apis/apps/v1/namespaces/([^/]+)/deployments/([^/]+))", [this](const Request& req, Response& res) {
      std::lock_guard lock(mu_);
      Workload* w = workload_by_deployment(req.matches[1], req.matches[2]);
      if (w == nullptr) return not_found(res);
      const int status_replicas = w->rolling_out ? w->replicas + 1 : w->replicas;
      nlohmann::json dep(
          {{"apiVersion", "apps/v1"},
           {"kind", "Deployment"},
           {"metadata",
            {{"name", w->deployment},
             {"namespace", w->ns},
             {"uid", "uid-" + w->deployment},
             {"generation", 3},
             {"annotations", {{"deployment.kubernetes.io/revision", "1"}}}}},
           {"spec", {{"replicas", w->replicas}, {"paused", w->paused}}},
           {"status", {{"observedGeneration", 3}, {"replicas", status_replicas}, {"updatedReplicas", w->replicas}}}});
      if (owner_tamper_) owner_tamper_(dep);
      res.set_content(dep.dump(), "application/json");
    });
    srv_.Get(R"(/apis/apps/v1/namespaces/([^/]+)/(deployments|replicasets)/([^/]+)/scale)",
             [this](const Request& req, Response& res) {
               std::lock_guard lock(mu_);
               Workload* w = scaled(req.matches[1], req.matches[2], req.matches[3]);
               if (w == nullptr) return not_found(res);
               res.set_content(scale_json(*w).dump(), "application/json");
             });
    srv_.Patch(R"(/apis/apps/v1/namespaces/([^/]+)/(deployments|replicasets)/([^/]+)/scale)", [this](const Request& req,
                                                                                                     Response& res) {
      std::lock_guard lock(mu_);
      Workload* w = scaled(req.matches[1], req.matches[2], req.matches[3]);
      if (w == nullptr) return not_found(res);
      const nlohmann::json patch = nlohmann::json::parse(req.body, nullptr, false);
      if (req.get_header_value("Content-Type") != "application/json-patch+json" || !patch.is_array()) {
        res.status = 415;
        return;
      }
      int replicas = w->replicas;
      for (const auto& op : patch) {
        if (op.value("path", "") != "/spec/replicas" || !op.contains("value")) {
          res.status = 422;
          return;
        }
        if (op["op"] == "test" && op["value"] != replicas) {
          ++scale_conflicts_;
          res.status = 422;
          res.set_content(R"({"kind":"Status","message":"Testing value /spec/replicas failed"})", "application/json");
          return;
        }
        if (op["op"] == "replace") replicas = op["value"].get<int>();
      }
      w->replicas = replicas;
      scale_patches_.push_back(replicas);
      res.set_content(scale_json(*w).dump(), "application/json");
    });
    srv_.Get(R"(/apis/autoscaling/v2/namespaces/([^/]+)/horizontalpodautoscalers)",
             [this](const Request& req, Response& res) {
               std::lock_guard lock(mu_);
               std::vector<nlohmann::json> items;
               for (const auto& h : hpas_)
                 if (h["metadata"]["namespace"] == req.matches[1]) items.push_back(h);
               res.set_content(list(items).dump(), "application/json");
             });
    port_ = srv_.bind_to_any_port("127.0.0.1");
    server_ = std::thread([this] { srv_.listen_after_bind(); });
    for (int i = 0; i < 500 && !srv_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    scheduler_ = std::thread([this, scheduling] {
      while (!stop_) {
        if (scheduling) schedule();
        reconcile();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  }

  ~FakeKubeApi() {
    stop_ = true;
    scheduler_.join();
    srv_.stop();
    server_.join();
  }

  std::string kubeconfig(const std::string& dir) const {
    const std::string path = dir + "/kubeconfig";
    std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: fake\nclusters:\n- name: fake\n"
                           "  cluster: {server: \"http://127.0.0.1:"
                        << port_
                        << "\"}\ncontexts:\n- name: fake\n  context: {cluster: fake, user: u}\nusers:\n- name: u\n"
                           "  user: {token: t}\n";
    return path;
  }

  // What the assertions read.
  std::vector<nlohmann::json> pods() const {
    std::lock_guard lock(mu_);
    std::vector<nlohmann::json> out;
    for (const auto& p : pods_) out.push_back(p.object);
    return out;
  }
  std::vector<nlohmann::json> nodes() const {
    std::lock_guard lock(mu_);
    return nodes_;
  }
  std::vector<nlohmann::json> evicted() const {
    std::lock_guard lock(mu_);
    return evicted_;
  }
  std::vector<nlohmann::json> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }
  int refused_429() const { return refused_429_; }
  int deletes() const { return deletes_; }
  int reservations_written() const { return reservations_written_; }
  // false: a pod whose reserved GPUs are in use is placed elsewhere (a
  // scheduler that does not hold it, as the extender does).
  void set_hold_reserved(bool hold) { hold_reserved_ = hold; }
  std::map<std::string, int> min_running() const {
    std::lock_guard lock(mu_);
    return min_running_;
  }
  // Reservation annotations on every node now.
  int reservations_now() const {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& node : nodes_) {
      const nlohmann::json ann_node = node["metadata"].value("annotations", nlohmann::json::object());
      for (const auto& [k, v] : ann_node.items()) n += k.rfind("reservation.gpupack.io/", 0) == 0;
    }
    return n;
  }
  // Whole GPUs in use per node by the pods there now.
  std::map<std::string, int> gpus_used() const {
    std::lock_guard lock(mu_);
    std::map<std::string, int> used;
    for (const auto& node : nodes_) used[node["metadata"]["name"]] = 0;
    for (const auto& p : pods_) {
      const std::string node = p.object["spec"].value("nodeName", "");
      if (!node.empty()) used[node] += gpus_of(p.object);
    }
    return used;
  }
  void set_start_delay(std::chrono::milliseconds d) { start_delay_ = d; }
  std::string server() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Registers ReplicaSet `rs` (and Deployment `deployment` owning it) with
  // `replicas`; its pods must exist (the first is the template).
  void add_replicaset(const std::string& ns, const std::string& rs, int replicas, const std::string& deployment = "",
                      bool paused = false, bool rolling_out = false) {
    std::lock_guard lock(mu_);
    Workload w{ns, rs, deployment, replicas, paused, rolling_out, nullptr};
    for (const auto& p : pods_)
      if (owner_rs(p.object) == rs && p.object["metadata"]["namespace"] == ns) {
        w.template_pod = p.object;
        break;
      }
    workloads_.push_back(std::move(w));
    note_workloads();
  }
  // A HorizontalPodAutoscaler in `ns` scaling kind/name.
  void add_hpa(const std::string& ns, const std::string& name, const std::string& kind, const std::string& target) {
    std::lock_guard lock(mu_);
    hpas_.push_back({{"apiVersion", "autoscaling/v2"},
                     {"kind", "HorizontalPodAutoscaler"},
                     {"metadata", {{"name", name}, {"namespace", ns}}},
                     {"spec", {{"scaleTargetRef", {{"apiVersion", "apps/v1"}, {"kind", kind}, {"name", target}}}}}});
  }
  // The workload of ReplicaSet `rs` as it is now (replicas, and the fewest
  // Running / most live pods it ever had).
  Workload workload(const std::string& rs) const {
    std::lock_guard lock(mu_);
    for (const Workload& w : workloads_)
      if (w.rs == rs) return w;
    return {};
  }
  // Live (not terminating) pods of ReplicaSet `rs` now.
  std::vector<nlohmann::json> pods_of(const std::string& rs) const {
    std::lock_guard lock(mu_);
    std::vector<nlohmann::json> out;
    for (const auto& p : pods_)
      if (owner_rs(p.object) == rs && !p.object["metadata"].contains("deletionTimestamp")) out.push_back(p.object);
    return out;
  }
  std::vector<int> scale_patches() const {
    std::lock_guard lock(mu_);
    return scale_patches_;
  }
  int scale_conflicts() const { return scale_conflicts_; }
  // Pods the ReplicaSet controller removed on a scale-down, in order.
  std::vector<std::string> deleted_by_controller() const {
    std::lock_guard lock(mu_);
    return deleted_by_controller_;
  }
  void set_delete_delay(std::chrono::milliseconds d) { delete_delay_ = d; }
  // Pod patches answered 403 (credentials without `patch pods`).
  void set_forbid_pod_patch(bool forbid) { forbid_pod_patch_ = forbid; }
  // Called (under the fake's lock) on each ReplicaSet and Deployment served.
  void set_owner_tamper(std::function<void(nlohmann::json&)> f) {
    std::lock_guard lock(mu_);
    owner_tamper_ = std::move(f);
  }
  // Sets replicas as someone else would (an operator, an autoscaler).
  void set_replicas(const std::string& rs, int replicas) {
    std::lock_guard lock(mu_);
    for (Workload& w : workloads_)
      if (w.rs == rs) w.replicas = replicas;
  }

 private:
  struct PodRec {
    nlohmann::json object;
    std::chrono::steady_clock::time_point runs_at;
    std::chrono::steady_clock::time_point gone_at = {};  // terminating pods: removed then
    int seq = 0;                                         // creation order (higher = newer)
  };

  static void not_found(httplib::Response& res) {
    res.status = 404;
    res.set_content(R"({"kind":"Status","message":"not found"})", "application/json");
  }
  static std::string owner_rs(const nlohmann::json& pod) {
    for (const auto& o : pod["metadata"].value("ownerReferences", nlohmann::json::array()))
      if (o.value("controller", false) && o.value("kind", "") == "ReplicaSet") return o.value("name", "");
    return "";
  }
  static bool terminating(const nlohmann::json& pod) { return pod["metadata"].contains("deletionTimestamp"); }
  static nlohmann::json scale_json(const Workload& w) {
    return {{"apiVersion", "autoscaling/v1"},
            {"kind", "Scale"},
            {"metadata", {{"name", w.deployment.empty() ? w.rs : w.deployment}, {"namespace", w.ns}}},
            {"spec", {{"replicas", w.replicas}}}};
  }
  PodRec* find_pod(const std::string& ns, const std::string& name) {
    for (auto& p : pods_)
      if (p.object["metadata"]["namespace"] == ns && p.object["metadata"]["name"] == name) return &p;
    return nullptr;
  }
  Workload* workload_by_rs(const std::string& ns, const std::string& rs) {
    for (Workload& w : workloads_)
      if (w.ns == ns && w.rs == rs) return &w;
    return nullptr;
  }
  Workload* workload_by_deployment(const std::string& ns, const std::string& d) {
    for (Workload& w : workloads_)
      if (w.ns == ns && !w.deployment.empty() && w.deployment == d) return &w;
    return nullptr;
  }
  // The workload a scale request names: a Deployment, or a bare ReplicaSet.
  Workload* scaled(const std::string& ns, const std::string& resource, const std::string& name) {
    if (resource == "deployments") return workload_by_deployment(ns, name);
    Workload* w = workload_by_rs(ns, name);
    return w != nullptr && w->deployment.empty() ? w : nullptr;
  }
  int live(const Workload& w) const {
    int n = 0;
    for (const auto& p : pods_) n += owner_rs(p.object) == w.rs && !terminating(p.object);
    return n;
  }
  void note_workloads() {
    for (Workload& w : workloads_) {
      int running = 0;
      for (const auto& p : pods_)
        running += owner_rs(p.object) == w.rs && !terminating(p.object) && p.object["status"]["phase"] == "Running";
      w.min_running = std::min(w.min_running, running);
      w.max_live = std::max(w.max_live, live(w));
    }
  }
  static int64_t deletion_cost(const nlohmann::json& pod) {
    const std::string c = pod["metadata"]
                              .value("annotations", nlohmann::json::object())
                              .value("controller.kubernetes.io/pod-deletion-cost", "0");
    return std::stoll(c);
  }
  // The ReplicaSet controller (see the header comment).
  void reconcile() {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(pods_, [&](const PodRec& p) { return terminating(p.object) && now >= p.gone_at; });
    for (Workload& w : workloads_) {
      std::vector<PodRec*> mine;
      for (auto& p : pods_)
        if (owner_rs(p.object) == w.rs && p.object["metadata"]["namespace"] == w.ns && !terminating(p.object))
          mine.push_back(&p);
      for (int n = static_cast<int>(mine.size()); n < w.replicas; ++n) {
        nlohmann::json fresh = w.template_pod;
        const std::string fresh_name = w.rs + "-s" + std::to_string(++created_);
        fresh["metadata"]["name"] = fresh_name;
        fresh["metadata"]["uid"] = "uid-" + fresh_name;
        fresh["metadata"]["annotations"] = nlohmann::json::object();
        fresh["spec"].erase("nodeName");
        fresh["status"] = {{"phase", "Pending"}};
        pods_.push_back({fresh, {}, {}, ++seq_});
      }
      if (static_cast<int>(mine.size()) > w.replicas) {
        auto rank = [](const PodRec* p) {
          const auto& o = p->object;
          return std::make_tuple(o["spec"].contains("nodeName") ? 1 : 0, o["status"]["phase"] == "Running" ? 1 : 0,
                                 deletion_cost(o), -p->seq);
        };
        std::sort(mine.begin(), mine.end(), [&](const PodRec* a, const PodRec* b) { return rank(a) < rank(b); });
        for (size_t k = 0; k < mine.size() - static_cast<size_t>(w.replicas); ++k) {
          mine[k]->object["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
          mine[k]->gone_at = now + delete_delay_.load();
          deleted_by_controller_.push_back(mine[k]->object["metadata"]["name"].get<std::string>());
        }
      }
    }
    note_workloads();
  }

  static nlohmann::json list(const std::vector<nlohmann::json>& items) {
    return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
  }
  static int gpus_of(const nlohmann::json& pod) {
    const auto& lim = pod["spec"]["containers"][0]["resources"]["limits"];
    return lim.contains("nvidia.com/gpu") ? std::stoi(lim["nvidia.com/gpu"].get<std::string>()) : 0;
  }
  nlohmann::json* find_node(const std::string& name) {
    for (auto& n : nodes_)
      if (n["metadata"]["name"] == name) return &n;
    return nullptr;
  }
  static bool selects(const Pdb& b, const nlohmann::json& pod) {
    if (pod["metadata"]["namespace"] != b.ns) return false;
    const auto labels = pod["metadata"].value("labels", nlohmann::json::object());
    for (const auto& [k, v] : b.match_labels)
      if (!labels.contains(k) || labels[k] != v) return false;
    return true;
  }
  int running_selected(const Pdb& b) const {
    int n = 0;
    for (const auto& p : pods_)
      n += selects(b, p.object) && p.object["status"]["phase"] == "Running" &&
           !p.object["metadata"].contains("deletionTimestamp");
    return n;
  }
  void note_budgets() {
    for (const Pdb& b : pdbs_) {
      int& m = min_running_[b.ns + "/" + b.name];
      m = std::min(m, running_selected(b));
    }
  }

  void evict(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    const std::string ns = req.matches[1], name = req.matches[2];
    const nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
    if (body.is_discarded() || body.value("kind", "") != "Eviction") {
      res.status = 400;
      return;
    }
    auto it = std::find_if(pods_.begin(), pods_.end(), [&](const PodRec& p) {
      return p.object["metadata"]["namespace"] == ns && p.object["metadata"]["name"] == name;
    });
    if (it == pods_.end()) {
      res.status = 404;
      res.set_content(R"({"kind":"Status","message":"pods not found"})", "application/json");
      return;
    }
    const std::string uid = body["deleteOptions"]["preconditions"].value("uid", "");
    if (!uid.empty() && uid != it->object["metadata"]["uid"]) {
      res.status = 409;
      res.set_content(R"({"kind":"Status","message":"Precondition failed: UID"})", "application/json");
      return;
    }
    for (const Pdb& b : pdbs_) {
      if (selects(b, it->object) && running_selected(b) - 1 < b.min_available) {
        ++refused_429_;
        res.status = 429;
        res.set_content(
            R"({"kind":"Status","message":"Cannot evict pod as it would violate the pod's disruption budget."})",
            "application/json");
        return;
      }
    }
    nlohmann::json gone = it->object;
    evicted_.push_back(gone);
    pods_.erase(it);
    note_budgets();
    note_workloads();
    if (workload_by_rs(ns, owner_rs(gone)) != nullptr) {  // its controller replaces it
      res.status = 201;
      res.set_content(R"({"kind":"Status","status":"Success"})", "application/json");
      return;
    }
    // The ReplicaSet controller: a new pending pod in its place (a
    // StatefulSet's: the same name, another UID).
    const auto owners = gone["metadata"].value("ownerReferences", nlohmann::json::array());
    for (const auto& o : owners) {
      const std::string kind = o.value("kind", "");
      if (!o.value("controller", false) || (kind != "ReplicaSet" && kind != "StatefulSet")) continue;
      nlohmann::json fresh = gone;
      const std::string fresh_name =
          kind == "StatefulSet" ? name : o["name"].get<std::string>() + "-r" + std::to_string(++created_);
      if (kind == "StatefulSet") ++created_;
      fresh["metadata"]["name"] = fresh_name;
      fresh["metadata"]["uid"] = "uid-" + fresh_name + (kind == "StatefulSet" ? "-" + std::to_string(created_) : "");
      fresh["metadata"]["annotations"].erase("gpupack.io/assigned-gpus");
      fresh["spec"].erase("nodeName");
      fresh["status"] = {{"phase", "Pending"}};
      pods_.push_back({fresh, {}, {}, ++seq_});
    }
    res.status = 201;
    res.set_content(R"({"kind":"Status","status":"Success"})", "application/json");
  }

  // GPUs of `node` the pods there use.
  uint32_t used(const std::string& node) const {
    uint32_t mask = 0;
    for (const auto& p : pods_) {
      if (p.object["spec"].value("nodeName", "") != node) continue;
      const std::string a =
          p.object["metadata"].value("annotations", nlohmann::json::object()).value("gpupack.io/assigned-gpus", "");
      if (!a.empty()) mask |= parse_assigned_gpus(a).gpu_mask;
    }
    return mask;
  }
  // GPUs of `node` in use or reserved (reserved ones not for `for_uid`).
  uint32_t taken(const std::string& node, const std::string& for_uid) const {
    uint32_t mask = used(node);
    for (const auto& n : nodes_) {
      if (n["metadata"]["name"] != node) continue;
      const nlohmann::json ann_n = n["metadata"].value("annotations", nlohmann::json::object());
      for (const auto& [k, v] : ann_n.items()) {
        if (k.rfind("reservation.gpupack.io/", 0) != 0) continue;
        const nlohmann::json r = nlohmann::json::parse(v.get<std::string>());
        if (r["for"]["uid"] != for_uid) mask |= parse_assigned_gpus(r["gpus"].get<std::string>()).gpu_mask;
      }
    }
    return mask;
  }

  void schedule() {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    for (auto& p : pods_) {
      auto& o = p.object;
      if (o["spec"].contains("nodeName")) {
        if (o["status"]["phase"] == "Pending" && now >= p.runs_at && !terminating(o)) {
          o["status"]["phase"] = "Running";
          note_budgets();
          note_workloads();
        }
        continue;
      }
      const int want = gpus_of(o);
      if (want == 0 || terminating(o)) continue;
      std::string owner_uid;
      for (const auto& r : o["metadata"].value("ownerReferences", nlohmann::json::array()))
        if (r.value("controller", false)) owner_uid = r.value("uid", "");
      const std::string pod_uid = o["metadata"]["uid"];
      std::string node, gpus;
      bool waits = false;  // reserved GPUs still in use: the pod waits for them (as the extender holds it)
      // A reservation for this pod's controller or for the pod itself.
      for (const auto& n : nodes_) {
        const nlohmann::json ann_n = n["metadata"].value("annotations", nlohmann::json::object());
        for (const auto& [k, v] : ann_n.items()) {
          if (k.rfind("reservation.gpupack.io/", 0) != 0) continue;
          const nlohmann::json r = nlohmann::json::parse(v.get<std::string>());
          const std::string for_uid = r["for"]["uid"];
          if ((!owner_uid.empty() && for_uid == owner_uid) || for_uid == pod_uid) {
            // Only once the pods there have left the reserved GPUs.
            const std::string name = n["metadata"]["name"];
            if (used(name) & parse_assigned_gpus(r["gpus"].get<std::string>()).gpu_mask) {
              waits = true;
              continue;
            }
            node = name;
            gpus = r["gpus"];
          }
        }
      }
      if (node.empty() && waits && hold_reserved_) continue;
      if (node.empty()) {
        for (const auto& n : nodes_) {
          const std::string name = n["metadata"]["name"];
          const int count = std::stoi(n["status"]["allocatable"]["nvidia.com/gpu"].get<std::string>());
          const uint32_t busy = taken(name, owner_uid.empty() ? pod_uid : owner_uid);
          uint32_t mask = 0;
          for (int g = 0; g < count && std::popcount(mask) < want; ++g)
            if (!(busy >> g & 1u)) mask |= 1u << g;
          if (std::popcount(mask) == want) {
            node = name;
            gpus = format_assigned_gpus({name, mask, 0});
            break;
          }
        }
      }
      if (node.empty()) continue;
      o["spec"]["nodeName"] = node;
      o["metadata"]["annotations"]["gpupack.io/assigned-gpus"] = gpus;
      p.runs_at = now + start_delay_.load();
    }
  }

  mutable std::mutex mu_;
  std::vector<nlohmann::json> nodes_;
  std::vector<PodRec> pods_;
  std::vector<Pdb> pdbs_;
  std::atomic<std::chrono::milliseconds> start_delay_;
  std::vector<nlohmann::json> evicted_, events_;
  std::map<std::string, int> min_running_;
  std::atomic<int> refused_429_{0}, deletes_{0}, reservations_written_{0};
  std::atomic<bool> hold_reserved_{true};
  int created_ = 0, seq_ = 0;
  std::vector<Workload> workloads_;
  std::vector<nlohmann::json> hpas_;
  std::vector<int> scale_patches_;
  std::vector<std::string> deleted_by_controller_;
  std::atomic<int> scale_conflicts_{0};
  std::atomic<bool> forbid_pod_patch_{false};
  std::function<void(nlohmann::json&)> owner_tamper_;
  std::atomic<std::chrono::milliseconds> delete_delay_{std::chrono::milliseconds(30)};
  httplib::Server srv_;
  int port_ = 0;
  std::thread server_, scheduler_;
  std::atomic<bool> stop_{false};
};

}  // namespace gpupack::testing
