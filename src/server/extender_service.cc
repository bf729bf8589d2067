#include "server/extender_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <future>
#include <set>
#include <stdexcept>

#include "analyze/cluster_model.h"
#include "analyze/gpu_map.h"
#include "frag/packing_prices.h"
#include "io/pod_resources.h"
#include "policy/registry.h"
#include "sched/filter.h"
#include "sched/gang.h"
#include "util/log.h"
#include "util/strings.h"

namespace gpupack {

namespace {

constexpr std::string_view kNvidiaPrefix = "nvidia.com/";

std::string unknown_resource(const K8sPod& pod) {
  for (const auto& [name, amount] : pod.extended) {
    if (name.compare(0, kNvidiaPrefix.size(), kNvidiaPrefix) == 0 && amount > 0)
      return fmt::format(
          "Pod {}: unknown GPU resource \"{}\" (gpupack understands nvidia.com/gpu, "
          "nvidia.com/gpu.shared and nvidia.com/mig-<profile>)",
          pod.key(), name);
  }
  return "";
}

// Unknown node names a filter reply lists in FailedAndUnresolvableNodes.
constexpr size_t kMaxUnknownListed = 100;

bool node_dependent(const K8sPod& pod) { return pod.shared_replicas > 0 && !pod.gpu_milli_given; }

// gpupack.io/gang-commit = "<id>@<node>".
std::string gang_commit_id(const K8sPod& pod) {
  auto it = pod.annotations.find(std::string(annotations::kGangCommit));
  if (it == pod.annotations.end() || !pod.gang) return "";
  const size_t at = it->second.rfind('@');
  return at == std::string::npos || at == 0 || at + 1 == it->second.size()
             ? ""
             : gang_key(pod) + "#" + it->second.substr(0, at);
}
std::string gang_commit_node(const K8sPod& pod) {
  const std::string& v = pod.annotations.at(std::string(annotations::kGangCommit));
  return v.substr(v.rfind('@') + 1);
}

}  // namespace

std::string dimension_label(Dimension d) { return std::string(to_string(d)); }

std::string gang_key(const K8sPod& pod) { return pod.gang ? pod.namespace_name + "/" + pod.gang->name : ""; }

std::vector<std::string> Binder::bind_gang(const std::vector<Item>& items, const std::string& /*commit_id*/) {
  std::vector<std::string> errors;
  errors.reserve(items.size());
  for (const Item& i : items) errors.push_back(bind(i.pod, i.node, i.assigned_gpus));
  return errors;
}

ExtenderService::ExtenderService(std::string policy_name, uint64_t seed)
    : ExtenderService(ServiceOptions{std::move(policy_name), seed}) {}

ExtenderService::ExtenderService(ServiceOptions options) : options_(std::move(options)) {
  target_ = expected_workload({}, {}, {});
  policy_ = make_policy(options_.policy, {options_.seed, target_});
  if (options_.score_threads > 1) score_pool_ = std::make_unique<WorkPool>(options_.score_threads);
  new_scheduler_locked();
  state_ = std::make_unique<ClusterState>(std::vector<NodeSpec>{});
}

ExtenderService::~ExtenderService() = default;

void ExtenderService::set_binder(Binder* binder) {
  std::lock_guard lock(mu_);
  binder_ = binder;
}

uint64_t ExtenderService::parallel_walks() const {
  std::lock_guard lock(mu_);
  return scheduler_->parallel_walks();
}

bool ExtenderService::ready() const {
  std::lock_guard lock(mu_);
  return ready_;
}

std::vector<std::string> ExtenderService::unattributed() const {
  std::lock_guard lock(mu_);
  return unattributed_;
}

void ExtenderService::retarget_locked() {
  target_ = tally_.target();
  policy_ = make_policy(options_.policy, {options_.seed, target_});
  new_scheduler_locked();
}

void ExtenderService::new_scheduler_locked() {
  scheduler_ = std::make_unique<Scheduler>(*policy_);
  scheduler_->set_work_pool(score_pool_.get());
}

GpuChooser ExtenderService::gpu_chooser_locked() {
  return [this](const ClusterState& state, NodeId node, const Request& req) {
    const NodeId only[] = {node};
    const Decision d = scheduler_->evaluate(state, req, only, nullptr);
    Placement p;
    if (d.placed()) {
      p.assignment = d.assignment;
    } else {
      p = choose_placement(state, node, req);  // names the dimension that failed
    }
    return p;
  };
}

ExtenderService::Carried ExtenderService::carry_locked() const {
  Carried c;
  c.now = std::chrono::steady_clock::now();
  c.consumed_reservations = consumed_reservations_;
  for (size_t i = 0; i < pods_.size(); ++i) {
    const PodEntry& e = pods_[i];
    const PodId pid{static_cast<int32_t>(i)};
    if (e.reservation) continue;  // rebuilt from the node annotations
    c.first_seen[e.pod.key()] = e.first_seen;
    if (auto f = inflight_.find(e.pod.key()); f != inflight_.end()) c.inflight[f->first] = f->second;
    if (e.learned == Learned::kAssumed && state_->is_bound(pid)) {
      const Assignment& a = state_->assignment(pid);
      c.guesses[e.pod.key()] =
          Carried::Guess{e.pod.uid, nodes_[index(a.node)].spec.name, state_->request(pid), a, e.assumed_at};
    }
    if (e.learned == Learned::kReserved && state_->is_bound(pid)) {
      const Assignment& a = state_->assignment(pid);
      c.reserved[e.pod.key()] =
          Carried::Guess{e.pod.uid, nodes_[index(a.node)].spec.name, state_->request(pid), a, c.now};
    }
    if (e.learned == Learned::kObjects && e.gpus_chosen && state_->is_bound(pid)) {
      const Assignment& a = state_->assignment(pid);
      c.chosen[e.pod.key()] =
          Carried::Guess{e.pod.uid, nodes_[index(a.node)].spec.name, state_->request(pid), a, c.now};
    }
    const bool bound = state_->is_bound(pid) && e.learned != Learned::kAssumed && e.learned != Learned::kReserved;
    if (bound && e.bound_here_at && c.now - *e.bound_here_at < std::chrono::seconds(kAssumeBindS)) {
      auto a = e.pod.annotations.find(std::string(annotations::kAssignedGpus));
      c.assumed[e.pod.key()] =
          Carried::Assumed{e.pod.uid, e.pod.node_name, a == e.pod.annotations.end() ? "" : a->second, *e.bound_here_at};
    }
    if (!e.from_call_at) continue;
    const bool recent_bind =
        bound && e.bound_here_at && c.now - *e.bound_here_at < std::chrono::seconds(kKeepAbsentBoundS);
    const bool recent_call = !bound && c.now - *e.from_call_at < std::chrono::seconds(kKeepAbsentPendingS);
    if (recent_bind || recent_call) c.recent.push_back({e.pod, e.object, e.bound_here_at, e.from_call_at});
  }
  return c;
}

void ExtenderService::swap_model_locked(ExtenderService& other) {
  std::swap(policy_, other.policy_);
  std::swap(scheduler_, other.scheduler_);
  scheduler_->set_work_pool(score_pool_.get());  // each service keeps its own pool
  other.scheduler_->set_work_pool(other.score_pool_.get());
  std::swap(target_, other.target_);
  std::swap(tally_, other.tally_);
  std::swap(next_seq_, other.next_seq_);
  std::swap(nodes_, other.nodes_);
  std::swap(node_index_, other.node_index_);
  recent_names_.clear();  // positions of the old node table
  recent_index_.clear();
  std::swap(pods_, other.pods_);
  std::swap(pod_index_, other.pod_index_);
  std::swap(state_, other.state_);
  std::swap(unattributed_, other.unattributed_);
  std::swap(conflicts_on_node_, other.conflicts_on_node_);
  std::swap(ready_, other.ready_);
  std::swap(assumed_now_, other.assumed_now_);
  std::swap(reservation_ids_, other.reservation_ids_);
  std::swap(consumed_reservations_, other.consumed_reservations_);
  roll_forward_.insert(roll_forward_.end(), other.roll_forward_.begin(), other.roll_forward_.end());
  other.roll_forward_.clear();
  // What the load counted (conflicts, confirmations) adds to this service's totals.
  counters_.assumed += other.counters_.assumed;
  counters_.confirmed += other.counters_.confirmed;
  counters_.expired += other.counters_.expired;
  counters_.conflicts += other.counters_.conflicts;
  other.counters_ = {};
}

std::vector<std::string> ExtenderService::set_cluster(std::vector<K8sNode> nodes, std::vector<K8sPod> pods,
                                                      std::vector<nlohmann::json> pod_objects) {
  // The new model is built on the side and swapped in, so that filter and
  // prioritize wait only for the swap. A bind that lands meanwhile is
  // carried over by building again; under a stream of binds the last try
  // holds the lock.
  const auto started = std::chrono::steady_clock::now();
  auto count_reload = [&] {  // under mu_
    ++counters_.reloads;
    counters_.reload_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  for (int attempt = 0; attempt < 2; ++attempt) {
    Carried carried;
    uint64_t before = 0;
    {
      std::lock_guard lock(mu_);
      carried = carry_locked();
      before = mutations_;
    }
    ServiceOptions fresh_options = options_;
    fresh_options.score_threads = 1;  // the load scores on this thread; the pool stays here
    ExtenderService fresh(fresh_options);
    {
      std::lock_guard fresh_lock(fresh.mu_);
      fresh.load_locked(nodes, pods, pod_objects, carried);
    }
    std::lock_guard lock(mu_);
    if (mutations_ == before) {
      swap_model_locked(fresh);
      ++mutations_;
      count_reload();
      return unattributed_;
    }
  }
  std::lock_guard lock(mu_);
  load_locked(std::move(nodes), std::move(pods), std::move(pod_objects), carry_locked());
  ++mutations_;
  count_reload();
  return unattributed_;
}

void ExtenderService::load_locked(std::vector<K8sNode> nodes, std::vector<K8sPod> pods,
                                  std::vector<nlohmann::json> pod_objects, const Carried& carried) {
  const auto now = carried.now;
  nodes_ = std::move(nodes);
  node_index_.clear();
  node_index_.reserve(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) node_index_.assign(nodes_[i].spec.name, static_cast<int>(i));
  recent_names_.clear();
  recent_index_.clear();
  pods_.clear();
  pod_index_.clear();
  unattributed_.clear();
  assumed_now_ = 0;
  std::vector<K8sPod> kept;
  std::vector<nlohmann::json> kept_objects;
  std::vector<std::optional<std::chrono::steady_clock::time_point>> kept_bound_here, kept_from_call;
  // Gang commits that reached the API: ids on members already bound.
  std::set<std::string> committed_ids;
  for (const K8sPod& p : pods)
    if (!p.node_name.empty() && !p.terminal() && !gang_commit_id(p).empty()) committed_ids.insert(gang_commit_id(p));
  for (size_t i = 0; i < pods.size(); ++i) {
    K8sPod& p = pods[i];
    if (p.terminal() || pod_index_.count(p.key())) continue;
    nlohmann::json object = i < pod_objects.size() ? std::move(pod_objects[i]) : nlohmann::json();
    std::optional<std::chrono::steady_clock::time_point> bound_here;
    auto a = carried.assumed.find(p.key());
    if (a != carried.assumed.end() && p.node_name.empty() && (p.uid.empty() || p.uid == a->second.uid)) {
      // The API has not caught up with a bind made here: keep it.
      p.node_name = a->second.node;
      if (object.is_object()) object["spec"]["nodeName"] = a->second.node;
      if (!a->second.annotation.empty()) {
        p.annotations[std::string(annotations::kAssignedGpus)] = a->second.annotation;
        p.assigned = parse_assigned_gpus(a->second.annotation);
        if (object.is_object())
          object["metadata"]["annotations"][std::string(annotations::kAssignedGpus)] = a->second.annotation;
      }
      bound_here = a->second.at;
    }
    if (p.node_name.empty() && committed_ids.count(gang_commit_id(p))) {
      // A gang whose commit reached the API (a member is bound with this
      // commit id) before a crash: its other members are bound here too.
      const std::string intent = gang_commit_node(p);
      p.node_name = intent;
      if (object.is_object()) object["spec"]["nodeName"] = intent;
      auto g = p.annotations.find(std::string(annotations::kAssignedGpus));
      roll_forward_.push_back({p, intent, g == p.annotations.end() ? "" : g->second});
      bound_here = now;
    }
    pod_index_[p.key()] = static_cast<int>(kept.size());
    kept.push_back(std::move(p));
    kept_objects.push_back(std::move(object));
    kept_bound_here.push_back(bound_here);
    kept_from_call.push_back(std::nullopt);
  }
  for (const Carried::Recent& r : carried.recent) {
    if (pod_index_.count(r.pod.key())) continue;
    pod_index_[r.pod.key()] = static_cast<int>(kept.size());
    kept.push_back(r.pod);
    kept_objects.push_back(r.object);
    kept_bound_here.push_back(r.bound_here_at);
    kept_from_call.push_back(r.from_call_at);
  }
  // Defragmentation reservations (docs/DEFRAG.md "Applying a plan"): a
  // placeholder charged on the reserved GPUs like a running pod, until a pod
  // it is for binds there (consumed) or it expires.
  std::vector<std::optional<GpuReservation>> kept_reservation(kept.size());
  reservation_ids_.clear();
  consumed_reservations_.clear();
  const int64_t now_unix_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (const K8sNode& n : nodes_) {
    if (n.annotations.empty()) continue;
    std::vector<std::string> errors;
    for (GpuReservation& r : node_reservations(n, &errors)) {
      if (carried.consumed_reservations.count(r.key)) {
        consumed_reservations_.insert(r.key);
        continue;
      }
      if (r.expires_unix_s <= now_unix_s) continue;
      K8sPod holder;
      holder.namespace_name = r.for_namespace;
      holder.name = "gpupack-reservation." + r.key.substr(kReservationPrefix.size());
      holder.uid = r.key;
      holder.node_name = n.spec.name;
      holder.phase = "Running";
      holder.request = r.request;
      holder.assigned = r.gpus;
      holder.annotations[std::string(annotations::kAssignedGpus)] = format_assigned_gpus(r.gpus);
      if (pod_index_.count(holder.key())) continue;
      reservation_ids_.push_back(static_cast<int>(kept.size()));
      pod_index_[holder.key()] = static_cast<int>(kept.size());
      kept.push_back(std::move(holder));
      kept_objects.emplace_back();
      kept_bound_here.push_back(std::nullopt);
      kept_from_call.push_back(std::nullopt);
      kept_reservation.push_back(std::move(r));
    }
    for (const std::string& e : errors) log_warn("reservation ignored", {{"why", e}});
  }
  pods_.resize(kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    auto seen = carried.first_seen.find(kept[i].key());
    PodEntry& e = pods_[i];
    e.reservation = std::move(kept_reservation[i]);
    e.first_seen = seen == carried.first_seen.end() ? now : seen->second;
    e.bound_here_at = kept_bound_here[i];
    e.from_call_at = kept_from_call[i];
  }
  // The one ledger: nodes translated once, every running pod charged.
  std::vector<NodeSpec> specs;
  specs.reserve(nodes_.size());
  for (const K8sNode& n : nodes_) specs.push_back(model_node(n));
  state_ = std::make_unique<ClusterState>(std::move(specs));
  // An assumed pod the objects now show on the assumed node without saying
  // which GPUs keeps the engine's GPUs (confirmed below).
  for (size_t i = 0; i < kept.size(); ++i) {
    auto g = carried.guesses.find(kept[i].key());
    if (g == carried.guesses.end() || kept[i].node_name != g->second.node || kept[i].assigned) continue;
    if (!kept[i].uid.empty() && kept[i].uid != g->second.uid) continue;
    (void)state_->bind(PodId{static_cast<int32_t>(i)}, g->second.request, g->second.assignment);
  }
  // A bind waiting on the API keeps its GPUs reserved.
  for (size_t i = 0; i < kept.size(); ++i) {
    auto f = carried.inflight.find(kept[i].key());
    if (f == carried.inflight.end() || (!kept[i].node_name.empty() && kept[i].node_name != f->second.node)) continue;
    if (!kept[i].uid.empty() && kept[i].uid != f->second.uid) continue;
    const PodId pid{static_cast<int32_t>(i)};
    if (!state_->is_bound(pid)) (void)state_->bind(pid, f->second.request, f->second.assignment);
  }
  // Planned gang members keep their reservation while pending.
  std::vector<uint8_t> reserved_now(kept.size(), 0);
  for (size_t i = 0; i < kept.size(); ++i) {
    auto r = carried.reserved.find(kept[i].key());
    if (r == carried.reserved.end() || !kept[i].node_name.empty() || kept[i].uid != r->second.uid) continue;
    const PodId pid{static_cast<int32_t>(i)};
    if (!state_->is_bound(pid) && state_->bind(pid, r->second.request, r->second.assignment).is_ok())
      reserved_now[i] = 1;
  }
  // A pod another scheduler placed keeps the GPUs gpupack chose for it when
  // it was first seen there, so that its GPUs do not move between reloads.
  std::vector<uint8_t> chosen_before(kept.size(), 0);
  std::vector<std::string> chosen_notes;
  for (size_t i = 0; i < kept.size(); ++i) {
    auto c = carried.chosen.find(kept[i].key());
    if (c == carried.chosen.end() || kept[i].node_name != c->second.node) continue;
    if (kept[i].uid != c->second.uid) continue;
    const int n = node_index_.find(kept[i].node_name);
    if (n < 0) continue;
    // Unless the pod now names its GPUs (an unusable annotation does not).
    const K8sNode& node = nodes_[static_cast<size_t>(n)];
    const Request req = model_request(kept[i], node);
    const HeldGpus held = held_gpus(kept[i], node, req);
    if (req != c->second.request || held.kind == HeldGpus::Kind::kKnown) continue;
    const PodId pid{static_cast<int32_t>(i)};
    if (!state_->is_bound(pid) && state_->bind(pid, c->second.request, c->second.assignment).is_ok()) {
      chosen_before[i] = 1;
      if (!held.why.empty()) chosen_notes.push_back(chosen_gpus_note(kept[i], held.why));
    }
  }
  // The policy of this model (its FGD target from these pods) also chooses
  // the GPUs of pods whose ids the objects do not give, as it would have
  // when it placed them.
  // Reservation placeholders are neither workload nor running pods: they
  // are charged after every pod, and only where their GPUs are free now
  // (an admit step's GPUs stay in use until the plan's moves free them;
  // that is not a conflict).
  std::vector<uint8_t> placeholder(kept.size(), 0);
  for (int i : reservation_ids_) placeholder[static_cast<size_t>(i)] = 1;
  tally_ = WorkloadTally{};
  for (size_t i = 0; i < kept.size(); ++i) {
    pods_[i].seq = i;
    if (!placeholder[i]) pods_[i].counted = workload_request(kept[i], node_index_, nodes_);
    if (pods_[i].counted) tally_.add(i, *pods_[i].counted);
  }
  next_seq_ = kept.size();
  retarget_locked();
  ChargeResult charged = charge_running_pods(*state_, nodes_, node_index_, kept, placeholder, gpu_chooser_locked());
  for (int i : reservation_ids_) {
    const K8sPod& holder = kept[static_cast<size_t>(i)];
    const int n = node_index_.at(holder.node_name);
    const Assignment where{NodeId{n}, holder.assigned->gpu_mask,
                           holder.request.gpu_count > 0 ? holder.request.gpu_milli : 0};
    (void)state_->bind(PodId{i}, model_request(holder, nodes_[static_cast<size_t>(n)]), where);
  }
  std::vector<uint8_t> chosen_now(kept.size(), 0);
  for (PodId p : charged.unknown_ids) chosen_now[index(p)] = 1;
  unattributed_ = std::move(chosen_notes);
  unattributed_.insert(unattributed_.end(), charged.messages.begin(), charged.messages.end());
  counters_.conflicts += static_cast<uint64_t>(charged.conflicts);
  conflicts_on_node_.clear();
  for (size_t i = 0; i < kept.size(); ++i)
    if (!kept[i].node_name.empty() && !kept[i].terminal() && !state_->is_bound(PodId{static_cast<int32_t>(i)}))
      if (const int n = node_index_.find(kept[i].node_name); n >= 0) ++conflicts_on_node_[n];
  for (size_t i = 0; i < kept.size(); ++i) {
    PodEntry& e = pods_[i];
    const PodId pid{static_cast<int32_t>(i)};
    if (state_->is_bound(pid)) e.learned = e.bound_here_at ? Learned::kBoundHere : Learned::kObjects;
    if (reserved_now[i]) e.learned = Learned::kReserved;
    e.gpus_chosen = chosen_before[i] != 0 || chosen_now[i] != 0;
    auto g = carried.guesses.find(kept[i].key());
    if (g != carried.guesses.end() && (kept[i].uid.empty() || kept[i].uid == g->second.uid)) {
      if (!kept[i].node_name.empty()) {
        // The objects now say where the assumed pod went.
        (kept[i].node_name == g->second.node ? counters_.confirmed : counters_.expired) += 1;
      } else if (now - g->second.at <= options_.assume_timeout &&
                 state_->bind(pid, g->second.request, g->second.assignment).is_ok()) {
        e.learned = Learned::kAssumed;
        e.assumed_at = g->second.at;
        ++assumed_now_;
      } else {
        ++counters_.expired;
      }
    }
    e.pod = std::move(kept[i]);
    e.object = std::move(kept_objects[i]);
  }
  state_->commit();
  ready_ = true;
}

// ---- watch events in place ---------------------------------------------------

std::optional<ExtenderService::ChangeAct> ExtenderService::classify_change_locked(const PodChange& c) const {
  // Anything whose rebuild rules reach beyond the pod itself goes to the
  // rebuild: gangs (plans, commits, roll-forward), DRA claims (shared
  // claims charge the first pod), binds on the Binder, reservations.
  const bool gone = c.deleted || c.pod.terminal();
  if (!c.deleted && (c.pod.gang || !gang_commit_id(c.pod).empty() || !c.pod.resource_claims.empty() ||
                     !c.pod.extended_resource_claim.empty() || c.pod.key() != c.key))
    return std::nullopt;
  if (inflight_.count(c.key)) return std::nullopt;
  auto chargeable = [&](const K8sPod& p) {
    const int n = node_index_.find(p.node_name);
    if (n < 0 || conflicts_on_node_.count(n)) return false;  // the rebuild names the conflict
    for (int r : reservation_ids_)                           // placeholders are charged after every pod
      if (pods_[static_cast<size_t>(r)].pod.node_name == p.node_name) return false;
    // A conflict is the rebuild's to judge: it charges the pods naming their
    // GPUs first, in list order, whatever order they came in.
    return charge_fits(*state_, nodes_, node_index_, p);
  };
  auto it = pod_index_.find(c.key);
  if (it == pod_index_.end()) {
    if (gone) return ChangeAct::kSkip;
    if (c.pod.node_name.empty()) return ChangeAct::kAdd;
    if (!chargeable(c.pod)) return std::nullopt;
    return ChangeAct::kAdd;
  }
  const PodEntry& e = pods_[static_cast<size_t>(it->second)];
  const PodId pid{it->second};
  if (e.reservation || e.pod.gang || !e.pod.resource_claims.empty() || !e.pod.extended_resource_claim.empty())
    return std::nullopt;
  if (e.learned == Learned::kAssumed || e.learned == Learned::kReserved) {
    // Still pending, the same pod: the assumption stands.
    if (!gone && c.pod.node_name.empty() && c.pod.uid == e.pod.uid && c.pod.request == e.pod.request)
      return ChangeAct::kUpdatePending;
    return std::nullopt;
  }
  if (gone) {
    // A pod only calls showed is kept a while by the rebuild (carry_locked);
    // capacity freed where a pod could not be charged lets the rebuild
    // charge it.
    if (e.from_call_at) return std::nullopt;
    if (const int n = node_index_locked(e.pod.node_name); n >= 0 && conflicts_on_node_.count(n)) return std::nullopt;
    return ChangeAct::kRemove;
  }
  if (!state_->is_bound(pid)) {
    if (c.pod.node_name.empty()) return ChangeAct::kUpdatePending;
    if (!chargeable(c.pod)) return std::nullopt;
    return ChangeAct::kCharge;
  }
  // Bound in the model (kObjects or kBoundHere).
  if (c.pod.uid != e.pod.uid) return std::nullopt;
  if (e.learned == Learned::kBoundHere && c.pod.node_name.empty()) {
    // The API has not caught up with a bind made here (carry_locked keeps it
    // for kAssumeBindS).
    if (!e.bound_here_at || std::chrono::steady_clock::now() - *e.bound_here_at >= std::chrono::seconds(kAssumeBindS))
      return std::nullopt;
    return ChangeAct::kKeepHere;
  }
  if (c.pod.node_name != e.pod.node_name) return std::nullopt;
  // The same node: the object's charge must be what the model holds.
  const int n = node_index_locked(c.pod.node_name);
  if (n < 0) return std::nullopt;
  const K8sNode& node = nodes_[static_cast<size_t>(n)];
  const Request req = model_request(c.pod, node);
  if (!(req == state_->request(pid))) return std::nullopt;
  const HeldGpus held = held_gpus(c.pod, node, req);
  const uint32_t mask = state_->assignment(pid).gpu_mask;
  const bool same = held.kind == HeldGpus::Kind::kKnown ? held.gpu_mask == mask
                    : held.kind == HeldGpus::Kind::kNone && !req.is_gpu() && req.mig_devices.empty()
                        ? true
                        : e.gpus_chosen && !c.pod.assigned;  // the rebuild keeps the GPUs chosen for it
  return same ? std::optional(ChangeAct::kUpdateBound) : std::nullopt;
}

bool ExtenderService::recount_locked(int i) {
  PodEntry& e = pods_[static_cast<size_t>(i)];
  std::optional<Request> now = e.reservation ? std::nullopt : workload_request(e.pod, node_index_, nodes_);
  if (now == e.counted) return false;
  if (e.counted) tally_.remove(e.seq, *e.counted);
  if (!e.counted) e.seq = next_seq_++;
  e.counted = std::move(now);
  if (e.counted) tally_.add(e.seq, *e.counted);
  return true;
}

void ExtenderService::remove_pod_locked(int i) {
  const std::string key = pods_[static_cast<size_t>(i)].pod.key();
  PodEntry& e = pods_[static_cast<size_t>(i)];
  if (state_->is_bound(PodId{i})) (void)state_->unbind(PodId{i});
  if (e.counted) tally_.remove(e.seq, *e.counted);
  const std::string prefix = key + ": ";
  std::erase_if(unattributed_, [&](const std::string& m) { return m.rfind(prefix, 0) == 0; });
  pod_index_.erase(key);
  const int last = static_cast<int>(pods_.size()) - 1;
  if (i != last) {
    // The last pod takes the freed id, on the same GPUs.
    const PodId from{last}, to{i};
    if (state_->is_bound(from)) {
      const Request req = state_->request(from);
      const Assignment where = state_->assignment(from);
      (void)state_->unbind(from);
      if (Status st = state_->bind(to, req, where); !st.is_ok())
        throw std::logic_error("moving a pod to a freed id failed: " + st.message);
    }
    pods_[static_cast<size_t>(i)] = std::move(pods_[static_cast<size_t>(last)]);
    pod_index_[pods_[static_cast<size_t>(i)].pod.key()] = i;
    for (int& r : reservation_ids_)
      if (r == last) r = i;
  }
  pods_.pop_back();
}

bool ExtenderService::update_pods(std::vector<PodChange> changes) {
  std::lock_guard lock(mu_);
  if (!ready_) return false;
  std::vector<ChangeAct> acts;
  acts.reserve(changes.size());
  std::set<std::string_view> keys;
  for (const PodChange& c : changes) {
    std::optional<ChangeAct> act = classify_change_locked(c);
    if (!act || !keys.insert(c.key).second) return false;
    acts.push_back(*act);
  }
  // charge_fits() judged each charge against the model as it is: so at most
  // one per node, and none where a removal frees capacity in the same batch.
  std::set<std::string_view> charged_nodes, freed_nodes;
  for (size_t k = 0; k < changes.size(); ++k) {
    if (acts[k] == ChangeAct::kCharge || (acts[k] == ChangeAct::kAdd && !changes[k].pod.node_name.empty()))
      if (!charged_nodes.insert(changes[k].pod.node_name).second) return false;
    if (acts[k] == ChangeAct::kRemove)
      freed_nodes.insert(pods_[static_cast<size_t>(pod_index_.at(changes[k].key))].pod.node_name);
  }
  for (std::string_view n : charged_nodes)
    if (freed_nodes.count(n)) return false;
  // Removals first (they renumber), then updates and additions (appended),
  // then the FGD target, then the charges (with the new target's policy, as
  // a rebuild charges them).
  bool retarget = false;
  for (size_t k = 0; k < changes.size(); ++k)
    if (acts[k] == ChangeAct::kRemove) {
      remove_pod_locked(pod_index_.at(changes[k].key));
      retarget = true;
    }
  const auto now = std::chrono::steady_clock::now();
  std::vector<int> to_charge;
  for (size_t k = 0; k < changes.size(); ++k) {
    PodChange& c = changes[k];
    if (acts[k] == ChangeAct::kSkip || acts[k] == ChangeAct::kRemove) continue;
    int i = 0;
    if (acts[k] == ChangeAct::kAdd) {
      i = static_cast<int>(pods_.size());
      pod_index_[c.key] = i;
      PodEntry& e = pods_.emplace_back();
      e.first_seen = now;
      if (!c.pod.node_name.empty()) to_charge.push_back(i);
    } else {
      i = pod_index_.at(c.key);
    }
    PodEntry& e = pods_[static_cast<size_t>(i)];
    if (acts[k] == ChangeAct::kKeepHere) {
      // As the rebuild does: the service's node and GPUs on the newer object.
      c.pod.node_name = e.pod.node_name;
      if (c.object.is_object()) c.object["spec"]["nodeName"] = e.pod.node_name;
      auto a = e.pod.annotations.find(std::string(annotations::kAssignedGpus));
      if (a != e.pod.annotations.end() && !a->second.empty()) {
        c.pod.annotations[std::string(annotations::kAssignedGpus)] = a->second;
        c.pod.assigned = parse_assigned_gpus(a->second);
        if (c.object.is_object())
          c.object["metadata"]["annotations"][std::string(annotations::kAssignedGpus)] = a->second;
      }
    }
    if (acts[k] == ChangeAct::kUpdateBound) {
      // The API shows the pod where the model has it: the object's version wins.
      e.learned = Learned::kObjects;
      e.bound_here_at.reset();
    }
    if (acts[k] == ChangeAct::kCharge) to_charge.push_back(i);
    e.from_call_at.reset();  // the objects show it now
    e.pod = std::move(c.pod);
    e.object = std::move(c.object);
    retarget = recount_locked(i) || retarget;
  }
  if (retarget) retarget_locked();
  if (!to_charge.empty()) {
    std::vector<std::pair<PodId, const K8sPod*>> listed;
    listed.reserve(to_charge.size());
    for (int i : to_charge) listed.emplace_back(PodId{i}, &pods_[static_cast<size_t>(i)].pod);
    ChargeResult charged = charge_pods(*state_, nodes_, node_index_, listed, gpu_chooser_locked());
    for (int i : to_charge) {
      PodEntry& e = pods_[static_cast<size_t>(i)];
      if (state_->is_bound(PodId{i}))
        e.learned = Learned::kObjects;
      else
        ++conflicts_on_node_[node_index_.at(e.pod.node_name)];
    }
    for (PodId p : charged.unknown_ids) pods_[index(p)].gpus_chosen = true;
    unattributed_.insert(unattributed_.end(), charged.messages.begin(), charged.messages.end());
    counters_.conflicts += static_cast<uint64_t>(charged.conflicts);
  }
  state_->commit();
  ++mutations_;
  ++counters_.pod_updates;
  return true;
}

void ExtenderService::rebuild_state_locked() {
  // New nodes are appended, so node and pod ids stay; the bound pods move over.
  std::vector<NodeSpec> specs;
  specs.reserve(nodes_.size());
  for (const K8sNode& n : nodes_) specs.push_back(model_node(n));
  auto next = std::make_unique<ClusterState>(std::move(specs));
  for (PodId p : state_->bound_pods()) {
    const Status st = next->bind(p, state_->request(p), state_->assignment(p));
    if (!st.is_ok()) throw std::logic_error("adding nodes lost a bound pod: " + st.message);
  }
  next->commit();
  state_ = std::move(next);
}

int ExtenderService::candidate_index_locked(const std::string& name, size_t k) {
  // kube-scheduler sends its candidates in the same order call after call:
  // the name at position k is most likely the one seen there last time,
  // and one string compare is cheaper than a hash lookup (a third of a
  // 5,000-name filter's time went to the hash table).
  if (k < recent_names_.size() && recent_names_[k] == name) return recent_index_[k];
  const int i = node_index_locked(name);
  if (i >= 0 && k < kRecentCandidates) {
    if (k >= recent_names_.size()) {
      recent_names_.resize(k + 1);
      recent_index_.resize(k + 1, -1);
    }
    recent_names_[k] = name;
    recent_index_[k] = i;
  }
  return i;
}

int ExtenderService::node_index_locked(const std::string& name) const { return node_index_.find(name); }

int ExtenderService::add_node_locked(const nlohmann::json& object, std::string* error) {
  if (!options_.accept_request_nodes) {
    *error =
        "not in gpupack's node list (the API or --nodes is its source; --accept-request-nodes takes nodes "
        "from requests)";
    return -1;
  }
  try {
    K8sNode node = parse_node(object);
    (void)model_node(node);
    const int idx = static_cast<int>(nodes_.size());
    node_index_.assign(node.spec.name, idx);
    recent_names_.clear();
    recent_index_.clear();
    nodes_.push_back(std::move(node));
    return idx;
  } catch (const std::exception& e) {
    *error = e.what();
    return -1;
  }
}

int ExtenderService::pod_index_locked(const K8sPod& pod, const nlohmann::json& object) {
  auto it = pod_index_.find(pod.key());
  if (it != pod_index_.end()) {
    PodEntry& e = pods_[it->second];
    if (!state_->is_bound(PodId{it->second}) || e.learned == Learned::kAssumed ||
        e.learned == Learned::kReserved) {  // newest object while pending
      e.pod = pod;
      e.object = object;
    }
    return it->second;
  }
  const int idx = static_cast<int>(pods_.size());
  pod_index_[pod.key()] = idx;
  PodEntry& e = pods_.emplace_back();
  e.pod = pod;
  e.object = object;
  e.first_seen = std::chrono::steady_clock::now();
  e.from_call_at = e.first_seen;
  return idx;
}

std::string ExtenderService::scheduler_refused(const K8sPod& pod) const {
  if (options_.scheduler_names.empty() || options_.scheduler_names.count(pod.scheduler_name)) return "";
  std::string served;
  for (const std::string& n : options_.scheduler_names) served += (served.empty() ? "" : ", ") + n;
  return fmt::format("pod {} has schedulerName \"{}\"; this extender serves {} (--scheduler-name)", pod.key(),
                     excerpt(pod.scheduler_name), served);
}

std::optional<K8sPod> ExtenderService::parse_args_pod(const nlohmann::json& pod, std::string* error) const {
  try {
    K8sPod p = parse_pod(pod);
    if (std::string why = unknown_resource(p); !why.empty()) {
      *error = why;
      return std::nullopt;
    }
    if (std::string why = scheduler_refused(p); !why.empty()) {
      *error = why;
      return std::nullopt;
    }
    return p;
  } catch (const std::exception& e) {
    *error = e.what();
    return std::nullopt;
  }
}

bool ExtenderService::release_locked(int i) {
  PodEntry& e = pods_[static_cast<size_t>(i)];
  // A pod whose bind waits on the Binder keeps its GPUs until it is answered.
  if (e.learned != Learned::kAssumed || inflight_.count(e.pod.key())) return false;
  (void)state_->unbind(PodId{i});
  state_->commit();
  e.learned = Learned::kNone;
  --assumed_now_;
  return true;
}

void ExtenderService::expire_assumed_locked() {
  if (assumed_now_ == 0) return;
  const auto now = std::chrono::steady_clock::now();
  for (size_t i = 0; i < pods_.size(); ++i) {
    if (pods_[i].learned == Learned::kAssumed && now - pods_[i].assumed_at > options_.assume_timeout &&
        release_locked(static_cast<int>(i)))
      ++counters_.expired;
  }
}

std::pair<std::string, bool> ExtenderService::explain_locked(int n, const K8sPod& pod) const {
  const K8sNode& node = nodes_[static_cast<size_t>(n)];
  if (std::string gate = node_gate(node, pod); !gate.empty()) return {gate, true};
  const Status st = explain_fit(*state_, NodeId{n}, model_request(pod, node));
  if (st.is_ok()) return {fmt::format("node {}: not chosen", node.spec.name), false};
  return {fmt::format("{}: {}", to_string(st.dimension), st.message),
          st.code == Status::Code::kUnschedulableAndUnresolvable};
}

std::vector<int> ExtenderService::claims_locked(const K8sPod& pod) const {
  std::vector<int> out;
  for (int i : reservation_ids_) {
    const PodEntry& e = pods_[static_cast<size_t>(i)];
    if (e.reservation && e.reservation->for_pod(pod) && state_->is_bound(PodId{i})) out.push_back(i);
  }
  return out;
}

std::string ExtenderService::waiting_on_locked(const K8sPod& pod) const {
  for (int i : reservation_ids_) {
    const PodEntry& e = pods_[static_cast<size_t>(i)];
    if (e.reservation && e.reservation->for_pod(pod) && !state_->is_bound(PodId{i})) return e.pod.node_name;
  }
  return "";
}

Decision ExtenderService::evaluate_locked(const K8sPod& pod, const std::vector<int>& nodes,
                                          std::vector<ScoredNode>* scored) {
  if (reservation_ids_.empty()) return evaluate_groups_locked(pod, nodes, scored);
  const std::vector<int> claims = claims_locked(pod);
  // Reserved GPUs still in use (a swap's parked pod, an admission whose
  // moves have not run yet): the pod waits for them, nowhere else.
  if (claims.empty() && !waiting_on_locked(pod).empty()) return Decision{};
  if (claims.empty()) return evaluate_groups_locked(pod, nodes, scored);
  // A pod a reservation is for goes where it was reserved, onto its GPUs:
  // only those nodes, evaluated with the placeholders lifted.
  std::vector<int> only;
  for (int n : nodes)
    for (int c : claims)
      if (index(state_->assignment(PodId{c}).node) == static_cast<size_t>(n)) {
        only.push_back(n);
        break;
      }
  const ClusterState::Checkpoint mark = state_->checkpoint();
  for (int c : claims) (void)state_->unbind(PodId{c});
  const Decision d = evaluate_groups_locked(pod, only, scored);
  state_->rollback(mark);
  return d;
}

Decision ExtenderService::evaluate_groups_locked(const K8sPod& pod, const std::vector<int>& nodes,
                                                 std::vector<ScoredNode>* scored) {
  Decision best;
  best_request_ = Request{};
  if (nodes.empty()) return best;
  // One request for all candidates, unless shared replicas depend on the node.
  std::vector<std::pair<Request, std::vector<NodeId>>> groups;
  for (int n : nodes) {
    if (groups.empty() || node_dependent(pod)) {
      Request req = model_request(pod, nodes_[static_cast<size_t>(n)]);
      auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == req; });
      if (g != groups.end()) {
        g->second.push_back(NodeId{n});
        continue;
      }
      groups.emplace_back(std::move(req), std::vector<NodeId>{NodeId{n}});
    } else {
      groups.front().second.push_back(NodeId{n});
    }
  }
  for (const auto& [req, cands] : groups) {
    const Decision d = scheduler_->evaluate(*state_, req, cands, scored);
    best.feasible_nodes += d.feasible_nodes;
    if (!d.placed()) continue;
    if (!best.placed() || d.score > best.score ||
        (d.score == best.score && index(d.assignment.node) < index(best.assignment.node))) {
      const int feasible = best.feasible_nodes;
      best = d;
      best.feasible_nodes = feasible;
      best_request_ = req;
    }
  }
  return best;
}

std::vector<int> ExtenderService::resolve_candidates_locked(const ExtenderArgs& args, std::vector<std::string>& names,
                                                            std::map<std::string, std::string>& unresolvable,
                                                            std::vector<size_t>* positions) {
  std::vector<int> idx;
  bool added = false;
  if (args.node_texts) {
    names.reserve(args.node_texts->size());
    idx.reserve(args.node_texts->size());
    if (positions) positions->reserve(args.node_texts->size());
    for (size_t k = 0; k < args.node_texts->size(); ++k) {
      const NodeText& node = (*args.node_texts)[k];
      int i = candidate_index_locked(node.name, k);
      if (i < 0) {  // a new node: read its object (rare, off the hot path)
        std::string err;
        i = add_node_locked(nlohmann::json::parse(node.json.begin(), node.json.end()), &err);
        if (i < 0) {
          unresolvable[node.name] = "node object rejected: " + err;
          continue;
        }
        added = true;
      }
      names.push_back(node.name);
      idx.push_back(i);
      if (positions) positions->push_back(k);
    }
  } else if (args.nodes) {
    names.reserve(args.nodes->size());
    for (const nlohmann::json& obj : *args.nodes) {
      std::string name = obj.at("metadata").at("name").get<std::string>();
      int i = node_index_locked(name);
      if (i < 0) {
        std::string err;
        i = add_node_locked(obj, &err);
        if (i < 0) {
          unresolvable[name] = "node object rejected: " + err;
          continue;
        }
        added = true;
      }
      names.push_back(std::move(name));
      idx.push_back(i);
    }
  } else if (args.node_names) {
    const std::vector<std::string>& list = *args.node_names;
    names.reserve(list.size());
    idx.resize(list.size());
    // One batch: the table's memory latency overlaps across names (a
    // 5,000-name window new to the table was most of a filter's time).
    node_index_.find_many(list, idx);
    size_t unknown = 0, kept = 0;
    for (size_t k = 0; k < list.size(); ++k) {
      const std::string& name = list[k];
      const int i = idx[k];
      if (i < 0) {
        // Named with a short reason, the first kMaxUnknownListed only: the
        // reply stays small whatever a caller sends (a node left out of
        // NodeNames is filtered out either way).
        if (++unknown <= kMaxUnknownListed) unresolvable[name] = "unknown to gpupack";
        continue;
      }
      names.push_back(name);
      idx[kept++] = i;
    }
    idx.resize(kept);
  }
  if (added) rebuild_state_locked();
  return idx;
}

ExtenderFilterResult ExtenderService::filter(const ExtenderArgs& args) {
  std::lock_guard lock(mu_);
  expire_assumed_locked();
  std::string error;
  std::optional<K8sPod> pod = parse_args_pod(args.pod, &error);
  if (!pod) {
    ExtenderFilterResult r;
    r.error = error;
    return r;
  }
  const int pi = pod_index_locked(*pod, args.pod);
  if (pods_[static_cast<size_t>(pi)].learned == Learned::kAssumed) {
    // Filtered again: the scheduler did not place it where it was assumed.
    if (release_locked(pi)) ++counters_.expired;
  }
  std::vector<std::string> names;
  std::map<std::string, std::string> failed, unresolvable;
  std::vector<size_t> positions;  // index in args.node_texts of each candidate
  std::vector<int> idx = resolve_candidates_locked(args, names, unresolvable, &positions);
  const size_t candidates = idx.size() + unresolvable.size();  // unknown names are unresolvable
  // A pod group is one decision: planned whole at its first member, every
  // planned member steered to its node.
  std::string gang_why;
  const Gang* gang = nullptr;
  if (pod->gang) {
    if (!gangs_.count(gang_key(*pod)) && pods_[static_cast<size_t>(pi)].learned != Learned::kReserved &&
        !state_->is_bound(PodId{pi}))
      gang_why = plan_gang_locked(pi);
    gang = gang_of_locked(pi);
    if (gang != nullptr && !gang->node_of.count(pod->key()))
      gang_why = fmt::format("gang {}: planned without this member; it is retried once the gang is bound or released",
                             gang->key);
  }
  std::vector<uint8_t> feasible(nodes_.size(), 0);
  if (!gang_why.empty()) {
    // Nothing passes; the reason is the gang's.
  } else if (gang != nullptr) {
    const int planned = node_index_locked(gang->node_of.at(pod->key()));
    if (planned >= 0 && node_gate(nodes_[static_cast<size_t>(planned)], *pod).empty())
      feasible[static_cast<size_t>(planned)] = 1;
  } else {
    std::vector<int> open;
    open.reserve(idx.size());
    for (size_t k = 0; k < idx.size(); ++k)
      if (node_gate(nodes_[static_cast<size_t>(idx[k])], *pod).empty()) open.push_back(idx[k]);
    std::vector<ScoredNode> scored;
    evaluate_locked(*pod, open, &scored);
    for (const ScoredNode& s : scored) feasible[index(s.node)] = 1;
  }
  std::vector<size_t> passed;  // positions in names/idx
  std::array<int, kDimensionCount> counts{};
  bool gang_failed = false;
  std::string reserved_on;  // a defragmentation reservation steers this pod there
  for (int c : claims_locked(*pod)) reserved_on = nodes_[index(state_->assignment(PodId{c}).node)].spec.name;
  const std::string waiting_on = reserved_on.empty() ? waiting_on_locked(*pod) : "";
  for (size_t k = 0; k < idx.size(); ++k) {
    if (feasible[static_cast<size_t>(idx[k])]) {
      passed.push_back(k);
      continue;
    }
    if (!reserved_on.empty() && names[k] != reserved_on) {
      failed[names[k]] = fmt::format("defrag: GPUs are reserved for this pod on node {}", reserved_on);
      continue;
    }
    if (!waiting_on.empty()) {
      failed[names[k]] =
          fmt::format("defrag: waiting for the GPUs reserved for this pod on node {} (still in use)", waiting_on);
      continue;
    }
    if (!gang_why.empty() || gang != nullptr) {
      failed[names[k]] = gang_why.empty() ? fmt::format("gang {}: this member is planned on node {}", gang->key,
                                                        gang->node_of.at(pod->key()))
                                          : gang_why;
      gang_failed = true;
      continue;
    }
    auto [message, never] = explain_locked(idx[k], *pod);
    const Dimension d =
        message.rfind("model:", 0) == 0 ? Dimension::kModel
        : message.rfind("topology:", 0) == 0
            ? Dimension::kTopology
            : failed_dimension(*state_, NodeId{idx[k]}, model_request(*pod, nodes_[static_cast<size_t>(idx[k])]));
    ++counts[static_cast<size_t>(d)];
    (never ? unresolvable : failed)[names[k]] = std::move(message);
  }
  PodEntry& e = pods_[static_cast<size_t>(pi)];
  if (!state_->is_bound(PodId{pi})) {
    if (!passed.empty()) {
      e.pending_reason = "schedulable";
    } else if (gang_failed) {
      e.pending_reason = "gang";
    } else {
      size_t best = 1;
      for (size_t d = 1; d < counts.size(); ++d)
        if (counts[d] > counts[best]) best = d;
      e.pending_reason = counts[best] > 0 ? dimension_label(static_cast<Dimension>(best)) : "no_nodes";
    }
  }
  if (options_.legacy_failed_nodes) {
    failed.merge(unresolvable);
    unresolvable.clear();
  }
  // The reply in the request's form, survivors in request order (what
  // make_filter_result() does, without its name set: this is the hot path).
  ExtenderFilterResult out;
  if (args.node_texts) {
    std::vector<std::string_view> items;
    items.reserve(passed.size());
    for (size_t k : passed) items.push_back((*args.node_texts)[positions[k]].json);
    out.node_texts = std::move(items);
    out.source = args.source;
  } else if (args.nodes) {
    std::unordered_map<std::string_view, const nlohmann::json*> objects;
    objects.reserve(args.nodes->size());
    for (const nlohmann::json& obj : *args.nodes)
      objects.emplace(obj["metadata"]["name"].get_ref<const std::string&>(), &obj);
    std::vector<nlohmann::json> items;
    items.reserve(passed.size());
    for (size_t k : passed) items.push_back(*objects.at(names[k]));
    out.nodes = std::move(items);
  } else {
    std::vector<std::string> survivors;
    survivors.reserve(passed.size());
    for (size_t k : passed) survivors.push_back(names[k]);
    out.node_names = std::move(survivors);
  }
  if (log_enabled(LogLevel::kDebug)) {
    std::string first_failure;
    if (!failed.empty()) first_failure = failed.begin()->first + ": " + failed.begin()->second;
    log_debug("filter", {{"pod", pod->key()},
                         {"candidates", std::to_string(candidates)},
                         {"passed", std::to_string(passed.size())},
                         {"failed", std::to_string(failed.size())},
                         {"unresolvable", std::to_string(unresolvable.size())},
                         {"reason", e.pending_reason},
                         {"first_failure", first_failure}});
  }
  out.failed_nodes = std::move(failed);
  out.failed_and_unresolvable_nodes = std::move(unresolvable);
  return out;
}

HostPriorityList ExtenderService::prioritize(const ExtenderArgs& args, std::string* /*error*/) {
  std::lock_guard lock(mu_);
  expire_assumed_locked();
  std::string why;
  std::optional<K8sPod> pod = parse_args_pod(args.pod, &why);
  if (!pod) {
    // A pod-level problem: filter has already answered it as Error; the
    // scheduler ignores prioritize errors, so every node scores 0 (HTTP 200).
    log_warn("prioritize: pod not scored", {{"error", why}});
    HostPriorityList out;
    for (const std::string& name : args.candidate_names()) out.push_back({name, 0});
    return out;
  }
  const int pi = pod_index_locked(*pod, args.pod);
  release_locked(pi);  // an assumption is re-made from the state without it
  std::vector<std::string> names;
  std::map<std::string, std::string> unresolvable;
  std::vector<int> idx = resolve_candidates_locked(args, names, unresolvable);
  if (const Gang* gang = pod->gang ? gang_of_locked(pi) : nullptr) {
    // A planned member: its node is the only 10; the others (and members
    // outside the plan) score 0.
    auto planned = gang->node_of.find(pod->key());
    HostPriorityList out;
    out.reserve(names.size() + unresolvable.size());
    for (const std::string& name : names)
      out.push_back({name, planned != gang->node_of.end() && planned->second == name ? kMaxExtenderPriority : 0});
    for (const auto& [name, why] : unresolvable) out.push_back({name, 0});
    return out;
  }
  std::vector<int> open;
  for (int n : idx)
    if (node_gate(nodes_[static_cast<size_t>(n)], *pod).empty()) open.push_back(n);
  std::vector<ScoredNode> scored;
  const Decision d = evaluate_locked(*pod, open, &scored);
  const Request chosen_request = best_request_;
  // The engine's choice is the only 10; the others 1..9 by engine score.
  int64_t lo = 0, hi = 0;
  for (size_t k = 0; k < scored.size(); ++k) {
    if (k == 0 || scored[k].score < lo) lo = scored[k].score;
    if (k == 0 || scored[k].score > hi) hi = scored[k].score;
  }
  std::vector<int64_t> score_of(nodes_.size(), 0);
  for (const ScoredNode& s : scored)
    score_of[index(s.node)] =
        hi > lo ? 1 + (s.score - lo) * (kMaxExtenderPriority - 2) / (hi - lo) : kMaxExtenderPriority - 1;
  if (d.placed()) score_of[index(d.assignment.node)] = kMaxExtenderPriority;
  HostPriorityList out;
  out.reserve(names.size() + unresolvable.size());
  for (size_t k = 0; k < idx.size(); ++k) out.push_back({names[k], score_of[static_cast<size_t>(idx[k])]});
  for (const auto& [name, why] : unresolvable) out.push_back({name, 0});
  bool assumed = false;
  if (options_.assume_on_prioritize && d.placed() && !state_->is_bound(PodId{pi}) &&
      state_->bind(PodId{pi}, chosen_request, d.assignment).is_ok()) {
    state_->commit();
    PodEntry& e = pods_[static_cast<size_t>(pi)];
    e.learned = Learned::kAssumed;
    e.assumed_at = std::chrono::steady_clock::now();
    ++assumed_now_;
    ++counters_.assumed;
    assumed = true;
  }
  if (log_enabled(LogLevel::kDebug)) {
    log_debug("prioritize",
              {{"pod", pod->key()},
               {"candidates", std::to_string(names.size() + unresolvable.size())},
               {"feasible", std::to_string(scored.size())},
               {"chosen", d.placed() ? nodes_[index(d.assignment.node)].spec.name : ""},
               {"gpus", d.placed() && chosen_request.is_gpu()
                            ? assigned_gpus_annotation(nodes_[index(d.assignment.node)].spec.name, d.assignment)
                            : ""},
               {"assumed", assumed ? "true" : "false"}});
  }
  return out;
}

ExtenderBindingResult ExtenderService::bind(const ExtenderBindingArgs& args) {
  std::promise<ExtenderBindingResult> result;
  std::future<ExtenderBindingResult> ready = result.get_future();
  bind_async(args, [&result](ExtenderBindingResult r) { result.set_value(std::move(r)); });
  return ready.get();
}

void ExtenderService::bind_async(const ExtenderBindingArgs& args, BindDone done) {
  std::unique_lock lock(mu_);
  expire_assumed_locked();
  Answers answers;
  expire_gangs_locked(answers);
  const std::string key =
      (args.pod_namespace.empty() ? std::string("default") : args.pod_namespace) + "/" + args.pod_name;
  auto it = pod_index_.find(key);
  Gang* gang = nullptr;
  if (it != pod_index_.end() && pods_[static_cast<size_t>(it->second)].learned == Learned::kReserved) {
    auto g = gangs_.find(gang_key(pods_[static_cast<size_t>(it->second)].pod));
    if (g != gangs_.end() && g->second.node_of.count(key)) gang = &g->second;
  }
  if (gang == nullptr) {
    ExtenderBindingResult r = bind_one(lock, args);
    lock.unlock();
    answer(answers);
    done(std::move(r));
    return;
  }
  // A planned gang member: held until the gang's minimum has asked.
  const PodEntry& e = pods_[static_cast<size_t>(it->second)];
  ExtenderBindingResult r;
  if (!args.pod_uid.empty() && !e.pod.uid.empty() && args.pod_uid != e.pod.uid) {
    r.error = fmt::format("pod {} has UID {}, bind asked for UID {}", key, e.pod.uid, args.pod_uid);
  } else if (gang->node_of.at(key) != args.node) {
    r.error = fmt::format("pod {} is planned on node {} with its gang {}, not on node {}", key, gang->node_of.at(key),
                          gang->key, args.node);
  }
  auto asked = std::find_if(gang->held.begin(), gang->held.end(), [&](const Gang::Held& h) { return h.key == key; });
  if (r.error.empty() && (inflight_.count(key) || (asked != gang->held.end() && asked->done))) {
    r.error = fmt::format("pod {}: a bind of this pod is in progress", key);
  }
  if (!r.error.empty()) {
    lock.unlock();
    answer(answers);
    done(std::move(r));
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (asked != gang->held.end()) {
    asked->done = std::move(done);  // asked again after its call was answered
    asked->since = now;
  } else {
    gang->held.push_back({key, std::move(done), now});
  }
  gang->deadline = now + options_.gang_timeout;
  if (log_enabled(LogLevel::kDebug))
    log_debug("bind held", {{"pod", key},
                            {"gang", gang->key},
                            {"held", std::to_string(gang->held.size())},
                            {"needed", std::to_string(gang->required - gang->committed)}});
  if (!gang->committing && static_cast<int>(gang->held.size()) + gang->committed >= gang->required)
    commit_gang(lock, gang->key, answers);
  lock.unlock();
  answer(answers);
}

ExtenderBindingResult ExtenderService::bind_one(std::unique_lock<std::mutex>& lock, const ExtenderBindingArgs& args) {
  ExtenderBindingResult r;
  const std::string key =
      (args.pod_namespace.empty() ? std::string("default") : args.pod_namespace) + "/" + args.pod_name;
  auto it = pod_index_.find(key);
  if (it == pod_index_.end()) {
    r.error = fmt::format("pod {} is unknown to gpupack (no filter call or cluster list has shown it)", key);
    return r;
  }
  if (inflight_.count(key)) {
    r.error = fmt::format("pod {}: a bind of this pod is in progress", key);
    return r;
  }
  int pi = it->second;
  PodEntry* ep = &pods_[static_cast<size_t>(pi)];
  PodEntry& e = *ep;
  if (std::string why = scheduler_refused(e.pod); !why.empty()) {
    r.error = why;  // another scheduler's pod: never bound from here
    return r;
  }
  if (!args.pod_uid.empty() && !e.pod.uid.empty() && args.pod_uid != e.pod.uid) {
    r.error = fmt::format("pod {} has UID {}, bind asked for UID {}", key, e.pod.uid, args.pod_uid);
    return r;
  }
  const int n = node_index_locked(args.node);
  if (n < 0) {
    r.error = fmt::format("node {} is unknown to gpupack", args.node);
    return r;
  }
  PodId pid{pi};
  bool confirmed = false;
  if (state_->is_bound(pid)) {
    const bool same = index(state_->assignment(pid).node) == static_cast<size_t>(n);
    if (e.learned == Learned::kAssumed) {
      if (same) {
        confirmed = true;
      } else {
        release_locked(pi);
        ++counters_.expired;
      }
    } else {
      if (same) return r;  // retry: already done
      r.error =
          fmt::format("pod {} is already bound to node {}", key, nodes_[index(state_->assignment(pid).node)].spec.name);
      return r;
    }
  }
  if (!confirmed) {
    if (std::string gate = node_gate(nodes_[static_cast<size_t>(n)], e.pod); !gate.empty()) {
      r.error = fmt::format("pod {} does not fit node {}: {}", key, args.node, gate);
      return r;
    }
    const Decision d = evaluate_locked(e.pod, {n}, nullptr);
    if (!d.placed()) {
      r.error = fmt::format("pod {} does not fit node {}: {}", key, args.node, explain_locked(n, e.pod).first);
      return r;
    }
    // The reservations it takes on this node are consumed.
    const ClusterState::Checkpoint mark = state_->checkpoint();
    std::vector<std::string> taken;
    for (int c : claims_locked(e.pod)) {
      if (index(state_->assignment(PodId{c}).node) != static_cast<size_t>(n)) continue;
      (void)state_->unbind(PodId{c});
      taken.push_back(pods_[static_cast<size_t>(c)].reservation->key);
    }
    const Status s = state_->bind(pid, best_request_, d.assignment);
    if (!s.is_ok()) {
      state_->rollback(mark);
      r.error = fmt::format("pod {} on node {}: {}", key, args.node, s.message);
      return r;
    }
    consumed_reservations_.insert(taken.begin(), taken.end());
    state_->commit();
  }
  const Assignment where = state_->assignment(pid);
  const Request req = state_->request(pid);
  const std::string annotation = req.is_gpu() ? assigned_gpus_annotation(args.node, where) : "";
  if (binder_) {
    // The API round trip (or the journal's fsync) happens outside the lock:
    // filter and prioritize go on meanwhile. The GPUs stay reserved in the
    // state, and a reload in between carries the reservation (inflight_).
    Binder* binder = binder_;
    const K8sPod pod = e.pod;
    inflight_[key] = Carried::Guess{pod.uid, args.node, req, where, std::chrono::steady_clock::now()};
    ++mutations_;  // a reload built before the reservation is built again
    lock.unlock();
    const std::string err = binder->bind(pod, args.node, annotation);
    lock.lock();
    inflight_.erase(key);
    auto again = pod_index_.find(key);  // the model may have been swapped meanwhile
    if (again == pod_index_.end()) {
      r.error = err;  // deleted meanwhile: nothing left to keep or undo
      return r;
    }
    pi = again->second;
    ep = &pods_[static_cast<size_t>(pi)];
    pid = PodId{pi};
    if (!err.empty()) {
      if (state_->is_bound(pid) && ep->learned != Learned::kBoundHere && ep->pod.node_name.empty()) {
        (void)state_->unbind(pid);
        state_->commit();
        if (ep->learned == Learned::kAssumed) --assumed_now_;
        ep->learned = Learned::kNone;
      }
      r.error = err;
      return r;
    }
  }
  finish_bind_locked(*ep, pid, args.node, annotation, confirmed);
  if (log_enabled(LogLevel::kDebug))
    log_debug("bind", {{"pod", key},
                       {"node", args.node},
                       {"gpus", annotation},
                       {"was_assumed", confirmed ? "true" : "false"},
                       {"api", binder_ ? "true" : "false"}});
  return r;
}

void ExtenderService::finish_bind_locked(PodEntry& e, PodId pid, const std::string& node, const std::string& annotation,
                                         bool confirmed) {
  if (const int n = node_index_locked(node); !state_->is_bound(pid) && n >= 0) {
    // Only if a reload dropped the reservation (it carries it): bind again.
    const Decision d = evaluate_locked(e.pod, {n}, nullptr);
    if (d.placed()) (void)state_->bind(pid, best_request_, d.assignment);
    state_->commit();
  }
  if (confirmed && e.learned == Learned::kAssumed) {
    --assumed_now_;
    ++counters_.confirmed;
  }
  e.learned = Learned::kBoundHere;
  ++mutations_;
  e.bound_here_at = std::chrono::steady_clock::now();
  e.pod.node_name = node;
  e.pending_reason.clear();
  if (e.object.is_object()) {
    e.object["spec"]["nodeName"] = node;
    if (!annotation.empty()) e.object["metadata"]["annotations"][std::string(annotations::kAssignedGpus)] = annotation;
  }
  if (!annotation.empty()) {
    e.pod.annotations[std::string(annotations::kAssignedGpus)] = annotation;
    e.pod.assigned = parse_assigned_gpus(annotation);
  }
}

// ---- gangs ------------------------------------------------------------------

const ExtenderService::Gang* ExtenderService::gang_of_locked(int pi) const {
  const K8sPod& pod = pods_[static_cast<size_t>(pi)].pod;
  if (!pod.gang) return nullptr;
  auto it = gangs_.find(gang_key(pod));
  return it == gangs_.end() ? nullptr : &it->second;
}

std::string ExtenderService::plan_gang_locked(int pi) {
  const K8sPod& pod = pods_[static_cast<size_t>(pi)].pod;
  const std::string key = gang_key(pod);
  // The members the objects (and calls) have shown: pending ones to plan,
  // running ones counted against the minimum.
  std::vector<int> members;
  int running = 0;
  for (size_t i = 0; i < pods_.size(); ++i) {
    const PodEntry& e = pods_[i];
    if (e.pod.terminal() || !e.pod.gang || gang_key(e.pod) != key) continue;
    const PodId p{static_cast<int32_t>(i)};
    if (!e.pod.node_name.empty() || (state_->is_bound(p) && e.learned != Learned::kAssumed)) {
      ++running;
    } else {
      if (e.learned == Learned::kAssumed) release_locked(static_cast<int>(i));
      members.push_back(static_cast<int>(i));
    }
  }
  int minimum = pod.gang->min_member > 0 ? pod.gang->min_member : pod.gang->size;
  if (minimum <= 0) {
    auto g = pod_group_min_.find(key);
    if (g != pod_group_min_.end()) minimum = g->second;
  }
  const int known = static_cast<int>(members.size()) + running;
  if (minimum > 0 && running >= minimum) return "";  // the gang runs: its other members are plain pods
  if (minimum > 0 && known < minimum)
    return fmt::format("gang {}: {} of its {} members known; waiting for the others", key, known, minimum);
  if (nodes_.empty()) return fmt::format("gang {}: no nodes", key);
  GangRequest request;
  request.name = key;
  request.min_member = minimum > 0 ? minimum - running : static_cast<int>(members.size());
  std::vector<PodId> pids;
  for (int m : members) {
    request.members.push_back(model_request(pods_[static_cast<size_t>(m)].pod, nodes_.front()));
    pids.push_back(PodId{m});
  }
  std::vector<uint8_t> mask(nodes_.size(), 0);
  for (size_t n = 0; n < nodes_.size(); ++n) mask[n] = node_gate(nodes_[n], pod).empty() ? 1 : 0;
  std::vector<TopologyLevel> levels;
  for (const std::string& label : options_.topology_labels) {
    TopologyLevel level{label, std::vector<std::string>(nodes_.size())};
    for (size_t n = 0; n < nodes_.size(); ++n) {
      auto it = nodes_[n].labels.find(label);
      if (it != nodes_[n].labels.end()) level.domain_of_node[n] = it->second;
    }
    levels.push_back(std::move(level));
  }
  GangPlacer placer(*scheduler_, static_cast<int>(nodes_.size()), std::move(levels), target_.get());
  const GangPlacement plan = placer.place(*state_, pids, request, mask);
  if (!plan.placed) {
    state_->commit();
    return fmt::format("gang {}: its {} members (at least {}) do not fit together; short of {}", key, members.size(),
                       request.required(), dimension_label(plan.reason));
  }
  Gang g;
  g.key = key;
  g.required = request.required();
  g.deadline = std::chrono::steady_clock::now() + options_.gang_timeout;
  for (size_t k = 0; k < members.size(); ++k) {
    if (plan.assignments[k].node == kNoNode) continue;
    PodEntry& e = pods_[static_cast<size_t>(members[k])];
    e.learned = Learned::kReserved;
    e.pending_reason = "gang";
    g.members.push_back(e.pod.key());
    g.node_of[e.pod.key()] = nodes_[index(plan.assignments[k].node)].spec.name;
  }
  state_->commit();
  ++mutations_;
  if (log_enabled(LogLevel::kDebug))
    log_debug("gang planned", {{"gang", key},
                               {"members", std::to_string(g.members.size())},
                               {"required", std::to_string(g.required)},
                               {"level", plan.level},
                               {"domain", plan.domain}});
  gangs_[key] = std::move(g);
  return "";
}

void ExtenderService::release_gang_locked(Gang& g, const std::string& why, Answers& answers) {
  for (const std::string& key : g.members) {
    auto it = pod_index_.find(key);
    if (it == pod_index_.end() || inflight_.count(key)) continue;
    PodEntry& e = pods_[static_cast<size_t>(it->second)];
    if (e.learned != Learned::kReserved) continue;
    (void)state_->unbind(PodId{it->second});
    e.learned = Learned::kNone;
    e.pending_reason = "gang";
  }
  state_->commit();
  ++mutations_;
  for (Gang::Held& h : g.held) {
    if (!h.done) continue;
    ExtenderBindingResult r;
    r.error = why;
    answers.emplace_back(std::move(h.done), std::move(r));
  }
  g.held.clear();
}

void ExtenderService::expire_gangs_locked(Answers& answers) {
  if (gangs_.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  for (auto it = gangs_.begin(); it != gangs_.end();) {
    Gang& g = it->second;
    if (g.committing) {
      ++it;
      continue;
    }
    if (now <= g.deadline) {
      // A call held this long is answered before the scheduler gives up on
      // it; the member stays ready.
      for (Gang::Held& h : g.held) {
        if (!h.done || now - h.since <= options_.gang_bind_wait) continue;
        ExtenderBindingResult r;
        r.error = fmt::format(
            "gang {}: {} of the {} members it needs are ready; gpupack binds this pod itself once the rest are "
            "(the pod is reserved on node {})",
            g.key, g.held.size() + static_cast<size_t>(g.committed), g.required, g.node_of.at(h.key));
        answers.emplace_back(std::move(h.done), std::move(r));
        h.done = nullptr;
      }
      ++it;
      continue;
    }
    const bool placed = g.committed >= g.required;
    const std::string why =
        placed ? fmt::format("gang {}: bound without this member; its reservation is released", g.key)
               : fmt::format(
                     "gang {}: {} of the {} binds it needs arrived within {} ms; its reservation is released and "
                     "the gang will be planned again",
                     g.key, g.held.size(), g.required, options_.gang_timeout.count());
    if (!placed) ++counters_.gangs_timed_out;
    log_info(placed ? "gang plan closed" : "gang timed out",
             {{"gang", g.key}, {"held", std::to_string(g.held.size())}, {"required", std::to_string(g.required)}});
    release_gang_locked(g, why, answers);
    it = gangs_.erase(it);
  }
}

void ExtenderService::commit_gang(std::unique_lock<std::mutex>& lock, const std::string& gang, Answers& answers) {
  for (;;) {
    auto git = gangs_.find(gang);
    if (git == gangs_.end() || git->second.held.empty()) return;
    Gang& g = git->second;
    std::vector<Gang::Held> held = std::move(g.held);
    g.held.clear();
    std::vector<Binder::Item> items;
    std::vector<BindDone> dones;
    for (Gang::Held& h : held) {
      const std::string& key = h.key;
      BindDone& done = h.done;
      auto it = pod_index_.find(key);
      ExtenderBindingResult r;
      if (it == pod_index_.end() || pods_[static_cast<size_t>(it->second)].learned != Learned::kReserved) {
        r.error = fmt::format("pod {}: its gang reservation was lost (the pod changed meanwhile)", key);
        if (done) answers.emplace_back(std::move(done), std::move(r));
        continue;
      }
      const PodId pid{it->second};
      const std::string& node = g.node_of.at(key);
      const Request req = state_->request(pid);
      const Assignment where = state_->assignment(pid);
      const PodEntry& e = pods_[static_cast<size_t>(it->second)];
      items.push_back({e.pod, node, req.is_gpu() ? assigned_gpus_annotation(node, where) : ""});
      inflight_[key] = Carried::Guess{e.pod.uid, node, req, where, std::chrono::steady_clock::now()};
      dones.push_back(std::move(done));
    }
    if (items.empty()) continue;
    g.committing = true;
    const std::string commit_id =
        fmt::format("{:x}-{}", std::chrono::system_clock::now().time_since_epoch().count() & 0xffffffffffffULL,
                    ++counters_.commits);
    ++mutations_;
    Binder* binder = binder_;
    lock.unlock();
    std::vector<std::string> errors =
        binder ? binder->bind_gang(items, commit_id) : std::vector<std::string>(items.size());
    errors.resize(items.size());
    lock.lock();
    int bound = 0;
    for (size_t k = 0; k < items.size(); ++k) {
      const std::string key = items[k].pod.key();
      inflight_.erase(key);
      ExtenderBindingResult r;
      auto it = pod_index_.find(key);
      if (!errors[k].empty()) {
        if (it != pod_index_.end() && pods_[static_cast<size_t>(it->second)].learned == Learned::kReserved) {
          (void)state_->unbind(PodId{it->second});
          state_->commit();
          pods_[static_cast<size_t>(it->second)].learned = Learned::kNone;
        }
        r.error = errors[k];
      } else if (it != pod_index_.end()) {
        PodEntry& e = pods_[static_cast<size_t>(it->second)];
        e.pod.annotations[std::string(annotations::kGangCommit)] = commit_id + "@" + items[k].node;
        finish_bind_locked(e, PodId{it->second}, items[k].node, items[k].assigned_gpus, false);
        ++bound;
      }
      if (dones[k]) answers.emplace_back(std::move(dones[k]), std::move(r));
    }
    git = gangs_.find(gang);
    if (git == gangs_.end()) return;
    Gang& after = git->second;
    after.committing = false;
    const bool was_placed = after.committed >= after.required;
    after.committed += bound;
    if (!was_placed && after.committed >= after.required) {
      ++counters_.gangs_placed;
      log_info("gang bound", {{"gang", gang}, {"members", std::to_string(after.committed)}});
    }
    if (after.committed >= static_cast<int>(after.members.size())) {
      gangs_.erase(git);  // every planned member bound
      return;
    }
    if (after.committed < after.required && after.held.empty()) {
      // A member's Binding failed below the minimum: the gang is not placed.
      ++counters_.gangs_timed_out;
      release_gang_locked(after, fmt::format("gang {}: a member's bind failed; the gang is released", gang), answers);
      gangs_.erase(git);
      return;
    }
  }
}

void ExtenderService::answer(Answers& answers) {
  for (auto& [done, result] : answers) done(std::move(result));
  answers.clear();
}

void ExtenderService::set_pod_groups(std::map<std::string, int> min_member) {
  std::lock_guard lock(mu_);
  pod_group_min_ = std::move(min_member);
}

void ExtenderService::tick() {
  Answers answers;
  std::vector<Binder::Item> roll;
  Binder* binder = nullptr;
  {
    std::lock_guard lock(mu_);
    expire_assumed_locked();
    expire_gangs_locked(answers);
    expire_reservations_locked();
    if (binder_ != nullptr) {
      roll.swap(roll_forward_);
      binder = binder_;
    }
  }
  answer(answers);
  for (const Binder::Item& item : roll) {
    const std::string err = binder->bind(item.pod, item.node, item.assigned_gpus);
    if (err.empty()) {
      log_info("gang member bound after a restart", {{"pod", item.pod.key()}, {"node", item.node}});
    } else {
      log_warn("gang member not bound after a restart", {{"pod", item.pod.key()}, {"error", err}});
    }
  }
}

void ExtenderService::expire_reservations_locked() {
  if (reservation_ids_.empty()) return;
  const int64_t now_unix_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  bool changed = false;
  for (int i : reservation_ids_) {
    const PodEntry& e = pods_[static_cast<size_t>(i)];
    if (!e.reservation || e.reservation->expires_unix_s > now_unix_s || !state_->is_bound(PodId{i})) continue;
    (void)state_->unbind(PodId{i});
    changed = true;
    log_info("defrag reservation expired", {{"reservation", e.reservation->key}, {"node", e.pod.node_name}});
  }
  if (changed) {
    state_->commit();
    ++mutations_;
  }
}

void ExtenderService::stop_gangs(const std::string& why) {
  Answers answers;
  {
    std::lock_guard lock(mu_);
    for (auto& [key, g] : gangs_)
      if (!g.committing) release_gang_locked(g, why, answers);
    for (auto it = gangs_.begin(); it != gangs_.end();) it = it->second.committing ? std::next(it) : gangs_.erase(it);
  }
  answer(answers);
}

ExtenderPreemptionResult ExtenderService::preempt(const ExtenderPreemptionArgs& args, std::string* /*error*/) {
  std::lock_guard lock(mu_);
  ExtenderPreemptionResult out;
  std::string why;
  std::optional<K8sPod> pod = parse_args_pod(args.pod, &why);
  if (!pod) {  // a pod-level problem: no node would help (HTTP 200, empty)
    log_warn("preempt: pod not considered", {{"error", why}});
    return out;
  }
  pod_index_locked(*pod, args.pod);
  std::map<std::string, MetaVictims> proposed;
  if (args.node_name_to_meta_victims) proposed = *args.node_name_to_meta_victims;
  if (args.node_name_to_victims) {
    for (const auto& [node, v] : *args.node_name_to_victims) {
      MetaVictims m;
      m.num_pdb_violations = v.num_pdb_violations;
      for (const nlohmann::json& p : v.pods) {
        const nlohmann::json* meta = p.contains("metadata") ? &p["metadata"] : nullptr;
        if (meta && meta->contains("uid") && (*meta)["uid"].is_string())
          m.pod_uids.push_back((*meta)["uid"].get<std::string>());
      }
      proposed[node] = std::move(m);
    }
  }
  std::unordered_map<std::string, int> by_uid;
  for (size_t i = 0; i < pods_.size(); ++i)
    if (state_->is_bound(PodId{static_cast<int32_t>(i)}) && !pods_[i].pod.uid.empty())
      by_uid[pods_[i].pod.uid] = static_cast<int>(i);
  for (auto& [node, victims] : proposed) {
    const int n = node_index_locked(node);
    if (n < 0 || !node_gate(nodes_[static_cast<size_t>(n)], *pod).empty()) continue;
    const ClusterState::Checkpoint mark = state_->checkpoint();
    for (const std::string& uid : victims.pod_uids) {
      auto it = by_uid.find(uid);
      if (it == by_uid.end()) continue;
      const PodId v{it->second};
      if (static_cast<int>(index(state_->assignment(v).node)) != n) continue;
      (void)state_->unbind(v);
    }
    const bool fits_after = evaluate_locked(*pod, {n}, nullptr).placed();
    state_->rollback(mark);
    if (fits_after) out.node_name_to_meta_victims[node] = victims;
  }
  state_->commit();
  return out;
}

std::map<std::string, std::string> ExtenderService::assignments() const {
  std::lock_guard lock(mu_);
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < pods_.size(); ++i) {
    const PodId p{static_cast<int32_t>(i)};
    if (!state_->is_bound(p) || pods_[i].learned == Learned::kAssumed || pods_[i].learned == Learned::kReserved ||
        pods_[i].reservation || !state_->request(p).is_gpu())
      continue;
    out[pods_[i].pod.key()] =
        assigned_gpus_annotation(nodes_[index(state_->assignment(p).node)].spec.name, state_->assignment(p));
  }
  return out;
}

std::map<std::string, std::string> ExtenderService::placements() const {
  std::lock_guard lock(mu_);
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < pods_.size(); ++i) {
    const PodId p{static_cast<int32_t>(i)};
    if (state_->is_bound(p) && !pods_[i].reservation)
      out[pods_[i].pod.key()] = nodes_[index(state_->assignment(p).node)].spec.name;
  }
  return out;
}

std::vector<K8sPod> ExtenderService::pods() const {
  std::lock_guard lock(mu_);
  std::vector<K8sPod> out;
  out.reserve(pods_.size());
  for (const PodEntry& e : pods_)
    if (!e.reservation) out.push_back(e.pod);
  return out;
}

nlohmann::json ExtenderService::pod_list_json() const {
  std::lock_guard lock(mu_);
  nlohmann::json items = nlohmann::json::array();
  for (const PodEntry& e : pods_)
    if (e.object.is_object()) items.push_back(e.object);
  return nlohmann::json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}};
}

uint64_t ExtenderService::mutation_count() const {
  std::lock_guard lock(mu_);
  return mutations_;
}

ServiceMetrics ExtenderService::metrics() const {
  ServiceMetrics m;
  {
    std::lock_guard lock(mu_);
    m = metrics_locked();
  }
  // The repack bound's LP (about 10 ms with hundreds of pod sizes) runs
  // outside the lock, and again only when the pods' sizes change.
  if (!m.bound_gpu_items) return m;
  std::lock_guard lock(repack_mu_);
  if (repack_items_ != *m.bound_gpu_items) {  // none yet: no items, 0 GPUs
    repack_fluid_gpus_ = fluid_packing_gpus(*m.bound_gpu_items);
    repack_items_ = *m.bound_gpu_items;
  }
  m.repack = repack_of(m, repack_fluid_gpus_);
  return m;
}

nlohmann::json ExtenderService::gpu_map() const {
  // Under the lock only what /metrics computes and a copy of the state;
  // the map's JSON (megabytes at 5,000 nodes) is built outside it.
  ServiceMetrics m;
  std::optional<ClusterState> state;
  std::vector<std::string> names;
  std::map<std::string, int> reasons;
  {
    std::lock_guard lock(mu_);
    m = metrics_locked();
    for (const ServiceMetrics::Pending& p : m.pending) ++reasons[p.reason];
    // Totals only (no node to draw): no copy of the state needed.
    if (m.metrics_nodes_omitted > 0) return gpu_map_json(*state_, m, {}, reasons);
    state.emplace(*state_);
    names.reserve(pods_.size());
    for (const PodEntry& e : pods_)
      names.push_back(e.pod.key() + (e.learned == Learned::kAssumed    ? " (assumed)"
                                     : e.learned == Learned::kReserved ? " (reserved for its gang)"
                                                                       : ""));
  }
  return gpu_map_json(*state, m, names, reasons);
}

ServiceMetrics ExtenderService::metrics_locked() const {
  const auto now = std::chrono::steady_clock::now();
  // Pending pods and their reasons (the engine's failed dimension).
  std::vector<size_t> pending;
  for (size_t i = 0; i < pods_.size(); ++i) {
    const PodEntry& e = pods_[i];
    if (!state_->is_bound(PodId{static_cast<int32_t>(i)}) && e.pod.node_name.empty() && !e.pod.terminal() &&
        (e.pod.request.is_gpu() || e.pod.is_mig()))
      pending.push_back(i);
  }
  std::vector<const K8sPod*> pending_pods;
  for (size_t i : pending) pending_pods.push_back(&pods_[i].pod);
  const std::vector<Request> probes = probe_requests(nodes_, pending_pods, *target_);
  ServiceMetrics m;
  int gpu_nodes = 0;
  for (int n = 0; n < state_->node_count(); ++n)
    gpu_nodes += state_->gpu_count(NodeId{n}) > 0 || !state_->spec(NodeId{n}).mig_devices.empty();
  const bool per_node = gpu_nodes <= options_.metrics_max_nodes;
  static_cast<ClusterMetrics&>(m) = cluster_metrics(*state_, *target_, probes, per_node);
  m.metrics_nodes_omitted = per_node ? 0 : gpu_nodes;
  m.bound_pods = 0;
  for (size_t i = 0; i < pods_.size(); ++i)
    m.bound_pods += state_->is_bound(PodId{static_cast<int32_t>(i)}) && pods_[i].learned != Learned::kAssumed &&
                    pods_[i].learned != Learned::kReserved;
  for (size_t i = 0; i < pods_.size(); ++i)
    if (pods_[i].learned == Learned::kReserved && state_->is_bound(PodId{static_cast<int32_t>(i)}))
      m.gang_reserved_gpu_milli += state_->request(PodId{static_cast<int32_t>(i)}).total_gpu_milli();
  for (const auto& [key, g] : gangs_) {
    m.gangs_waiting += g.committed < g.required;
    for (const Gang::Held& h : g.held) m.gang_binds_held += h.done ? 1 : 0;
  }
  m.gangs_placed = counters_.gangs_placed;
  m.gangs_timed_out = counters_.gangs_timed_out;
  m.model_reloads = counters_.reloads;
  m.model_pod_updates = counters_.pod_updates;
  m.model_reload_seconds = counters_.reload_seconds;
  constexpr size_t kMaxExplained = 1000;
  for (size_t k = 0; k < pending.size(); ++k) {
    const PodEntry& e = pods_[pending[k]];
    std::string reason = e.pending_reason;
    if (reason.empty() && k < kMaxExplained) {
      reason = pending_reason(*state_, nodes_, e.pod);
      e.pending_reason = reason;
    }
    if (reason.empty()) reason = "unknown";
    m.pending.push_back(
        {e.pod.namespace_name, e.pod.name, reason, std::chrono::duration<double>(now - e.first_seen).count()});
  }
  m.placements_assumed = counters_.assumed;
  m.placements_confirmed = counters_.confirmed;
  m.placements_expired = counters_.expired;
  m.assumed_now = assumed_now_;
  m.charge_conflicts = counters_.conflicts;
  for (const K8sNode& n : nodes_)
    if (n.spec.gpu_count > 0 && !n.gpu_model_known) ++m.unknown_gpu_products[n.gpu_product];
  return m;
}

}  // namespace gpupack
