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
//   controller or the pod itself, on the reserved GPUs; else first fit on
//   GPUs neither used nor reserved. A placed pod runs after `start_delay`.
// Everything is recorded for the assertions (evictions, 429s, events, the
// fewest running pods each budget saw).
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/httplib_config.h"

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
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

  // `scheduling` false: no scheduler thread (pending pods stay pending).
  FakeKubeApi(std::vector<nlohmann::json> nodes, std::vector<nlohmann::json> pods, std::vector<Pdb> pdbs = {},
              std::chrono::milliseconds start_delay = std::chrono::milliseconds(50), bool scheduling = true)
      : nodes_(std::move(nodes)), pdbs_(std::move(pdbs)), start_delay_(start_delay) {
    for (auto& p : pods) pods_.push_back({std::move(p), {}});
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
    port_ = srv_.bind_to_any_port("127.0.0.1");
    server_ = std::thread([this] { srv_.listen_after_bind(); });
    for (int i = 0; i < 500 && !srv_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    scheduler_ = std::thread([this, scheduling] {
      while (!stop_ && scheduling) {
        schedule();
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

 private:
  struct PodRec {
    nlohmann::json object;
    std::chrono::steady_clock::time_point runs_at;
  };

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
    // The ReplicaSet controller: a new pending pod in its place.
    const auto owners = gone["metadata"].value("ownerReferences", nlohmann::json::array());
    for (const auto& o : owners) {
      if (!o.value("controller", false) || o.value("kind", "") != "ReplicaSet") continue;
      nlohmann::json fresh = gone;
      const std::string fresh_name = o["name"].get<std::string>() + "-r" + std::to_string(++created_);
      fresh["metadata"]["name"] = fresh_name;
      fresh["metadata"]["uid"] = "uid-" + fresh_name;
      fresh["metadata"]["annotations"].erase("gpupack.io/assigned-gpus");
      fresh["spec"].erase("nodeName");
      fresh["status"] = {{"phase", "Pending"}};
      pods_.push_back({fresh, {}});
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
        if (o["status"]["phase"] == "Pending" && now >= p.runs_at) {
          o["status"]["phase"] = "Running";
          note_budgets();
        }
        continue;
      }
      const int want = gpus_of(o);
      if (want == 0) continue;
      std::string owner_uid;
      for (const auto& r : o["metadata"].value("ownerReferences", nlohmann::json::array()))
        if (r.value("controller", false)) owner_uid = r.value("uid", "");
      const std::string pod_uid = o["metadata"]["uid"];
      std::string node, gpus;
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
            if (used(name) & parse_assigned_gpus(r["gpus"].get<std::string>()).gpu_mask) continue;
            node = name;
            gpus = r["gpus"];
          }
        }
      }
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
  int created_ = 0;
  httplib::Server srv_;
  int port_ = 0;
  std::thread server_, scheduler_;
  std::atomic<bool> stop_{false};
};

}  // namespace gpupack::testing
