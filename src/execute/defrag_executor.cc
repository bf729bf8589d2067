#include "execute/defrag_executor.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <thread>

#include "server/bind_journal.h"
#include "util/files.h"
#include "util/log.h"

namespace gpupack {

namespace {

using nlohmann::json;
using std::chrono::system_clock;

const K8sPod* find_pod(const std::vector<K8sPod>& pods, const std::string& ns, const std::string& name) {
  for (const K8sPod& p : pods)
    if (p.namespace_name == ns && p.name == name) return &p;
  return nullptr;
}

std::string str_at(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  if (!it->is_string()) throw std::runtime_error(fmt::format("{}: field '{}' is not a string", where, key));
  return it->get<std::string>();
}

int64_t int_at(const json& j, const char* key, const std::string& where, int64_t absent = 0) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return absent;
  if (!it->is_number_integer()) throw std::runtime_error(fmt::format("{}: field '{}' is not an integer", where, key));
  return it->get<int64_t>();
}

std::string scale_path(const ExecStep& s) {
  return fmt::format("/apis/apps/v1/namespaces/{}/{}/{}/scale", s.ns,
                     s.scale_kind == "Deployment" ? "deployments" : "replicasets", s.scale_name);
}

bool owned_by_step(const K8sPod& p, const ExecStep& s) {
  return p.namespace_name == s.ns && p.controller_kind == s.owner_kind && p.controller_name == s.owner_name &&
         (s.owner_uid.empty() || p.controller_uid == s.owner_uid);
}

bool known(const ExecStep& s, const std::string& uid) {
  return std::find(s.known_uids.begin(), s.known_uids.end(), uid) != s.known_uids.end();
}

const K8sPod* find_uid(const std::vector<K8sPod>& pods, const std::string& ns, const std::string& uid) {
  if (uid.empty()) return nullptr;
  for (const K8sPod& p : pods)
    if (p.namespace_name == ns && p.uid == uid) return &p;
  return nullptr;
}

std::string annotation(const json& obj, const char* key) {
  const json ann = obj.value("metadata", json::object()).value("annotations", json::object());
  auto it = ann.find(key);
  return it != ann.end() && it->is_string() ? it->get<std::string>() : "";
}

int64_t number_at(const json& obj, const char* a, const char* b, int64_t absent) {
  auto x = obj.find(a);
  if (x == obj.end() || !x->is_object()) return absent;
  auto y = x->find(b);
  return y != x->end() && y->is_number_integer() ? y->get<int64_t>() : absent;
}

}  // namespace

std::string ExecStep::reservation_key(const std::string& plan_id) const {
  return fmt::format("{}{}.{}", kReservationPrefix, plan_id, index);
}

int ExecJournal::count(std::string_view s) const {
  int n = 0;
  for (const ExecStep& step : steps) n += step.state == s;
  return n;
}

ExecJournal make_journal(const DefragPlan& plan, const std::vector<K8sPod>& pods, const ClusterState& state,
                         const std::string& plan_id, const std::string& server) {
  ExecJournal j;
  j.plan_id = plan_id;
  j.server = server;
  j.created = format_rfc3339(system_clock::now());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& ps = plan.steps[i];
    const size_t pi = index(ps.pod);
    if (pi >= pods.size()) throw std::invalid_argument(fmt::format("plan step {}: pod {} is unknown", i + 1, pi));
    const K8sPod& p = pods[pi];
    ExecStep s;
    s.index = static_cast<int>(i + 1);
    s.kind = move_kind_name(ps.kind);
    s.parked = ps.parked;
    s.ns = p.namespace_name;
    s.pod = p.name;
    s.uid = p.uid;
    s.owner_kind = p.controller_kind;
    s.owner_name = p.controller_name;
    s.owner_uid = p.controller_uid;
    if (s.kind != "admit") {
      if (p.controller_kind.empty())
        throw std::invalid_argument(
            fmt::format("plan step {}: {} has no controller; nothing would recreate it", s.index, p.key()));
      if (valid(ps.from.node)) s.from = state.spec(ps.from.node).name;
    }
    s.to = state.spec(ps.to.node).name;
    s.gpus = assigned_gpus_annotation(s.to, ps.to);
    s.request = ps.request;
    j.steps.push_back(std::move(s));
  }
  return j;
}

json journal_to_json(const ExecJournal& j) {
  json steps = json::array();
  for (const ExecStep& s : j.steps) {
    steps.push_back({{"index", s.index},
                     {"kind", s.kind},
                     {"namespace", s.ns},
                     {"pod", s.pod},
                     {"uid", s.uid},
                     {"owner", {{"kind", s.owner_kind}, {"name", s.owner_name}, {"uid", s.owner_uid}}},
                     {"from", s.from},
                     {"to", s.to},
                     {"gpus", s.gpus},
                     {"request",
                      {{"gpuCount", s.request.gpu_count},
                       {"gpuMilli", s.request.gpu_milli},
                       {"cpuMilli", s.request.cpu_milli},
                       {"memoryMiB", s.request.memory_mib}}},
                     {"state", s.state},
                     {"path", s.path},
                     {"pathNote", s.path_note},
                     {"scale",
                      {{"kind", s.scale_kind},
                       {"name", s.scale_name},
                       {"replicasBefore", s.replicas_before},
                       {"replicasSurge", s.replicas_surge}}},
                     {"newUid", s.new_uid},
                     {"detail", s.detail},
                     {"replacement", s.replacement},
                     {"evictAttempts", s.evict_attempts},
                     {"reserved", s.reserved},
                     {"parked", s.parked},
                     {"knownUids", s.known_uids}});
  }
  return {{"apiVersion", "gpupack.io/defrag-journal/v1"},
          {"plan", j.plan_id},
          {"server", j.server},
          {"created", j.created},
          {"status", j.status},
          {"counts",
           {{"done", j.count("done")},
            {"skipped", j.count("skipped")},
            {"failed", j.count("failed")},
            {"steps", j.steps.size()}}},
          {"steps", steps}};
}

ExecJournal journal_from_json(const json& j, const std::string& where) {
  if (!j.is_object() || str_at(j, "apiVersion", where) != "gpupack.io/defrag-journal/v1")
    throw std::runtime_error(where + ": not a gpupack defrag journal (apiVersion gpupack.io/defrag-journal/v1)");
  ExecJournal out;
  out.plan_id = str_at(j, "plan", where);
  out.server = str_at(j, "server", where);
  out.created = str_at(j, "created", where);
  out.status = str_at(j, "status", where);
  if (out.plan_id.empty()) throw std::runtime_error(where + ": field 'plan' is missing");
  static const std::set<std::string> kStatuses = {"new", "running", "finished", "aborted", "released"};
  if (!kStatuses.count(out.status)) throw std::runtime_error(fmt::format("{}: unknown status '{}'", where, out.status));
  auto steps = j.find("steps");
  if (steps == j.end() || !steps->is_array()) throw std::runtime_error(where + ": field 'steps' is not a list");
  static const std::set<std::string> kStates = {"planned", "reserved", "evicted", "scaled-up", "scaled-down",
                                                "parked",  "done",     "skipped", "failed"};
  static const std::set<std::string> kPaths = {"", "evict", "surge"};
  static const std::set<std::string> kKinds = {"remap", "migrate", "evict", "admit", "land"};
  for (size_t i = 0; i < steps->size(); ++i) {
    const json& e = (*steps)[i];
    const std::string at = fmt::format("{}: steps[{}]", where, i);
    if (!e.is_object()) throw std::runtime_error(at + ": not an object");
    ExecStep s;
    s.index = static_cast<int>(int_at(e, "index", at));
    s.kind = str_at(e, "kind", at);
    s.ns = str_at(e, "namespace", at);
    s.pod = str_at(e, "pod", at);
    s.uid = str_at(e, "uid", at);
    if (auto o = e.find("owner"); o != e.end() && o->is_object()) {
      s.owner_kind = str_at(*o, "kind", at + ".owner");
      s.owner_name = str_at(*o, "name", at + ".owner");
      s.owner_uid = str_at(*o, "uid", at + ".owner");
    }
    s.from = str_at(e, "from", at);
    s.to = str_at(e, "to", at);
    s.gpus = str_at(e, "gpus", at);
    if (auto r = e.find("request"); r != e.end() && r->is_object()) {
      s.request.gpu_count = static_cast<int32_t>(int_at(*r, "gpuCount", at + ".request"));
      s.request.gpu_milli = static_cast<int32_t>(int_at(*r, "gpuMilli", at + ".request"));
      s.request.cpu_milli = int_at(*r, "cpuMilli", at + ".request");
      s.request.memory_mib = int_at(*r, "memoryMiB", at + ".request");
    }
    s.state = str_at(e, "state", at);
    // Journals from before make-before-break have none of these: path ""
    // (chosen on resume; a step "reserved" checks for its eviction first).
    s.path = str_at(e, "path", at);
    s.path_note = str_at(e, "pathNote", at);
    if (auto sc = e.find("scale"); sc != e.end() && sc->is_object()) {
      s.scale_kind = str_at(*sc, "kind", at + ".scale");
      s.scale_name = str_at(*sc, "name", at + ".scale");
      s.replicas_before = static_cast<int>(int_at(*sc, "replicasBefore", at + ".scale", -1));
      s.replicas_surge = static_cast<int>(int_at(*sc, "replicasSurge", at + ".scale", -1));
    }
    s.new_uid = str_at(e, "newUid", at);
    s.detail = str_at(e, "detail", at);
    s.replacement = str_at(e, "replacement", at);
    s.evict_attempts = static_cast<int>(int_at(e, "evictAttempts", at));
    if (auto r = e.find("reserved"); r != e.end() && r->is_boolean()) s.reserved = r->get<bool>();
    if (auto r = e.find("parked"); r != e.end() && r->is_boolean()) s.parked = r->get<bool>();
    if (auto k = e.find("knownUids"); k != e.end() && k->is_array())
      for (const json& u : *k)
        if (u.is_string()) s.known_uids.push_back(u.get<std::string>());
    if (!kStates.count(s.state)) throw std::runtime_error(fmt::format("{}: unknown state '{}'", at, s.state));
    if (!kKinds.count(s.kind)) throw std::runtime_error(fmt::format("{}: unknown kind '{}'", at, s.kind));
    if (!kPaths.count(s.path)) throw std::runtime_error(fmt::format("{}: unknown path '{}'", at, s.path));
    if (s.path == "surge" && (s.scale_kind.empty() || s.scale_name.empty()))
      throw std::runtime_error(at + ": a surge step needs scale.kind and scale.name");
    if (!s.scale_kind.empty() && s.scale_kind != "Deployment" && s.scale_kind != "ReplicaSet")
      throw std::runtime_error(fmt::format("{}.scale: unknown kind '{}' (Deployment or ReplicaSet)", at, s.scale_kind));
    if (!s.scale_name.empty())  // it goes into the scale call's path
      if (std::string bad = KubeClient::check_object_path(at + ".scale", s.ns, s.scale_name, s.scale_kind);
          !bad.empty())
        throw std::runtime_error(bad);
    if (s.replicas_before >= 0 && s.replicas_surge != s.replicas_before + 1)
      throw std::runtime_error(at + ": scale.replicasSurge must be scale.replicasBefore + 1");
    if (s.ns.empty() || s.pod.empty() || s.to.empty())
      throw std::runtime_error(at + ": namespace, pod and to are required");
    out.steps.push_back(std::move(s));
  }
  return out;
}

ExecJournal read_journal(const std::string& path) {
  const std::string text = read_file_bounded(path);
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) throw std::runtime_error(path + ": not JSON");
  return journal_from_json(j, path);
}

void write_journal(const std::string& path, const ExecJournal& j) {
  write_file_atomically(path, journal_to_json(j).dump(2) + "\n");
}

std::string reservation_value(const ExecJournal& j, const ExecStep& s, system_clock::time_point expires) {
  const bool admit = s.kind == "admit";
  GpuReservation r;
  r.key = s.reservation_key(j.plan_id);
  r.for_kind = admit ? "Pod" : s.owner_kind;
  r.for_namespace = s.ns;
  r.for_name = admit ? s.pod : s.owner_name;
  r.for_uid = admit ? s.uid : s.owner_uid;
  r.gpus = parse_assigned_gpus(s.gpus);
  r.request = s.request;
  r.expires_unix_s = std::chrono::duration_cast<std::chrono::seconds>(expires.time_since_epoch()).count();
  return reservation_annotation_value(r);
}

DefragExecutor::DefragExecutor(const KubeClient& client, ExecOptions options)
    : client_(client), options_(std::move(options)) {}

void DefragExecutor::save(ExecJournal& j, ExecStep* s) {
  if (!options_.journal_path.empty()) write_journal(options_.journal_path, j);
  if (s != nullptr) options_.on_step(*s);
}

bool DefragExecutor::sleep_for(std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  // In slices of at most 50 ms, so that a stop is seen soon.
  for (auto now = std::chrono::steady_clock::now(); now < until && !options_.stop();
       now = std::chrono::steady_clock::now())
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(50), until - now));
  return !options_.stop();
}

std::vector<K8sPod> DefragExecutor::read_pods(const ExecJournal& j) {
  const KubeResponse r = client_.list_pods();
  if (!r.error.empty()) throw std::runtime_error(r.error);
  return parse_pod_list(r.body, "GET " + j.server + "/api/v1/pods");
}

void DefragExecutor::event(const ExecStep& s, const std::string& reason, const std::string& message, bool warning) {
  const std::string now = format_rfc3339(system_clock::now());
  json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata", {{"generateName", s.pod + ".gpupack-defrag-"}, {"namespace", s.ns}}},
             {"involvedObject", {{"apiVersion", "v1"}, {"kind", "Pod"}, {"namespace", s.ns}, {"name", s.pod}}},
             {"reason", reason},
             {"message", message},
             {"type", warning ? "Warning" : "Normal"},
             {"source", {{"component", "gpupack-defrag"}}},
             {"reportingComponent", "gpupack-defrag"},
             {"firstTimestamp", now},
             {"lastTimestamp", now},
             {"count", 1}};
  if (!s.uid.empty()) ev["involvedObject"]["uid"] = s.uid;
  // An Event is for people; failing to write one does not stop the plan.
  if (std::string err = client_.create_event(s.ns, ev); !err.empty())
    log_warn("defrag: cannot write an Event", {{"pod", s.ns + "/" + s.pod}, {"error", err}});
}

bool DefragExecutor::reserve(ExecJournal& j, ExecStep& s) {
  const std::string value = reservation_value(j, s, system_clock::now() + options_.reservation_ttl);
  if (std::string err = client_.patch_node_annotations(s.to, {{s.reservation_key(j.plan_id), value}}); !err.empty()) {
    s.state = "failed";
    s.detail = "reserving the target GPUs: " + err;
    return false;
  }
  s.state = "reserved";
  s.reserved = true;
  save(j, &s);
  return true;
}

void DefragExecutor::release(const ExecJournal& j, ExecStep& s, bool always) {
  if (!s.reserved && !always) return;
  s.reserved = false;
  if (std::string err = client_.patch_node_annotations(s.to, {{s.reservation_key(j.plan_id), std::nullopt}});
      !err.empty()) {
    // It expires by itself; say so rather than fail the plan.
    log_warn("defrag: cannot release a reservation (it expires by itself)",
             {{"node", s.to}, {"reservation", s.reservation_key(j.plan_id)}, {"error", err}});
  }
}

void DefragExecutor::evict(ExecJournal& j, ExecStep& s) {
  for (;;) {
    if (options_.stop()) return;
    ++s.evict_attempts;
    const KubeResponse r = client_.evict_pod(s.ns, s.pod, s.uid);
    if (r.error.empty() || r.status == 404) {
      s.state = "evicted";
      save(j, &s);
      return;
    }
    if (r.status == 429) {
      if (s.evict_attempts > options_.max_429_retries) {
        s.state = "skipped";
        s.detail = fmt::format("eviction refused {} times (HTTP 429: a PodDisruptionBudget allows no disruption now)",
                               s.evict_attempts);
        return;
      }
      log_info("defrag: eviction refused for now (HTTP 429), retrying",
               {{"pod", s.ns + "/" + s.pod}, {"attempt", std::to_string(s.evict_attempts)}});
      save(j, nullptr);
      if (!sleep_for(options_.retry_429)) return;
      continue;
    }
    s.state = "failed";
    s.detail = "eviction: " + r.error;
    return;
  }
}

void DefragExecutor::wait_running(ExecJournal& j, ExecStep& s) {
  const auto deadline = std::chrono::steady_clock::now() + options_.step_timeout;
  const bool admit = s.kind == "admit";
  for (;;) {
    const std::vector<K8sPod> pods = read_pods(j);
    for (const K8sPod& p : pods) {
      if (p.namespace_name != s.ns || p.deleting || p.phase != "Running" || p.node_name.empty()) continue;
      const bool ours = admit ? (p.name == s.pod && (s.uid.empty() || p.uid == s.uid))
                              : (p.controller_kind == s.owner_kind && p.controller_name == s.owner_name &&
                                 (s.owner_uid.empty() || p.controller_uid == s.owner_uid) &&
                                 std::find(s.known_uids.begin(), s.known_uids.end(), p.uid) == s.known_uids.end());
      if (!ours) continue;
      s.replacement = p.name;
      if (p.node_name == s.to) {
        s.state = "done";
        s.detail = fmt::format("{} runs on {}", p.name, s.to);
      } else {
        s.state = "failed";
        s.detail = fmt::format("{} started on {}, not on {} (the scheduler did not honour the reservation)", p.name,
                               p.node_name, s.to);
      }
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      s.state = "failed";
      s.detail = fmt::format("no {} running on {} within {} s", admit ? "pod" : "replacement", s.to,
                             std::chrono::duration_cast<std::chrono::seconds>(options_.step_timeout).count());
      return;
    }
    if (!sleep_for(options_.poll)) return;
  }
}

void DefragExecutor::check_and_reserve(ExecJournal& j, ExecStep& s) {
  const bool admit = s.kind == "admit";
  {
    const std::vector<K8sPod> pods = read_pods(j);
    const K8sPod* p = find_pod(pods, s.ns, s.pod);
    std::string why;
    if (p == nullptr) {
      why = "the pod is gone";
    } else if (!s.uid.empty() && p->uid != s.uid) {
      why = "the pod was recreated since the plan (another UID)";
    } else if (p->deleting || p->terminal()) {
      why = "the pod is terminating";
    } else if (admit && p->node_name == s.to) {
      s.state = "done";  // placed where the plan said before its turn came
      s.detail = fmt::format("{} runs on {}", p->name, s.to);
      return;
    } else if (admit && !p->node_name.empty()) {
      why = fmt::format("the pod already runs on {}", p->node_name);
    } else if (!admit && p->node_name != s.from) {
      why = fmt::format("the pod is on {}, not {}", p->node_name.empty() ? "no node" : p->node_name, s.from);
    }
    if (!why.empty()) {
      s.state = "skipped";
      s.detail = why;
      return;
    }
    s.known_uids.clear();
    for (const K8sPod& q : pods)
      if (!admit && q.namespace_name == s.ns && q.controller_kind == s.owner_kind && q.controller_name == s.owner_name)
        s.known_uids.push_back(q.uid);
    reserve(j, s);
  }
}

void DefragExecutor::run_step(ExecJournal& j, ExecStep& s) {
  if (s.kind == "land") {
    land(j, s);
    return;
  }
  const bool admit = s.kind == "admit";
  const bool fresh = s.state == "planned";
  if (fresh) check_and_reserve(j, s);
  if (options_.stop() || s.final()) return;
  if (s.state == "reserved") {
    if (admit) {
      s.state = "evicted";  // nothing to evict: wait for the pending pod
    } else {
      if (!fresh && s.path != "surge") {
        // Resumed after a kill: the eviction may have gone out already
        // (path "evict", or a journal written before paths existed).
        const std::vector<K8sPod> pods = read_pods(j);
        const K8sPod* p = find_pod(pods, s.ns, s.pod);
        if (p == nullptr || p->uid != s.uid || p->deleting) {
          if (s.path.empty()) s.path = "evict";
          s.state = "evicted";
          save(j, &s);
        }
      }
      if (s.state == "reserved" && s.path.empty()) choose_path(j, s);
      if (s.state == "reserved" && s.path == "surge") scale_up(j, s);
      if (s.state == "reserved" && s.path == "evict" && !options_.stop()) evict(j, s);
    }
  }
  if (options_.stop() || s.final()) return;
  if (s.state == "evicted" && s.parked) {
    s.state = "parked";  // its target frees later in the cycle; the land step waits
    s.detail = "evicted; its replacement waits for the GPUs its cycle frees";
    save(j, &s);
    return;
  }
  if (s.state == "evicted") wait_running(j, s);
  if (s.state == "scaled-up") wait_surged(j, s);
  if (options_.stop() || s.final()) return;
  if (s.state == "scaled-down") wait_old_gone(j, s);
}

void DefragExecutor::choose_path(ExecJournal& j, ExecStep& s) {
  if (s.parked) {
    s.path = "evict";  // the target is still taken: no new pod could start there first
    s.path_note = "parked: its target frees later in the plan";
  } else if (options_.surge == SurgeMode::kNever) {
    s.path = "evict";
  } else if (std::string why = surge_owner_checked(s); why.empty()) {
    s.path = "surge";
  } else {
    s.path = "evict";
    s.path_note = "no surge: " + why;
    log_info("defrag: evicting (the owner cannot surge)", {{"pod", s.ns + "/" + s.pod}, {"why", why}});
  }
  save(j, nullptr);
}

// A reply of the API that is JSON but not of the expected shape (a field of
// another type, say) is a reason not to surge, never a crash of the run.
std::string DefragExecutor::surge_owner_checked(ExecStep& s) {
  try {
    return surge_owner(s);
  } catch (const std::exception& e) {
    return std::string("an owner object the API returned is malformed: ") + e.what();
  }
}

std::string DefragExecutor::surge_owner(ExecStep& s) {
  if (s.owner_kind != "ReplicaSet") return s.owner_kind + " pods are replaced only after they stop";
  if (s.from == s.to) return "a move within one node (the new pod may need the old one's GPUs)";
  if (std::string bad = KubeClient::check_object_path("GET replicaset", s.ns, s.owner_name, "ReplicaSet"); !bad.empty())
    return bad;
  const KubeResponse rs =
      client_.request("GET", fmt::format("/apis/apps/v1/namespaces/{}/replicasets/{}", s.ns, s.owner_name), "", "");
  if (!rs.error.empty()) return "reading the ReplicaSet: " + rs.error;
  const json rs_obj = json::parse(rs.body, nullptr, false);
  if (!rs_obj.is_object()) return "the ReplicaSet is not JSON";
  const json rs_meta = rs_obj.value("metadata", json::object());
  if (!s.owner_uid.empty() && rs_meta.value("uid", "") != s.owner_uid)
    return "the ReplicaSet was recreated since the plan (another UID)";
  const ControllerRef owner = read_controller_ref("ReplicaSet " + s.ns + "/" + s.owner_name, rs_meta);
  const std::string& kind = owner.kind;
  const std::string& name = owner.name;
  std::string scale_kind = "ReplicaSet", scale_name = s.owner_name;
  if (kind == "Deployment") {
    if (std::string bad = KubeClient::check_object_path("GET deployment", s.ns, name, "Deployment"); !bad.empty())
      return bad;
    const KubeResponse d =
        client_.request("GET", fmt::format("/apis/apps/v1/namespaces/{}/deployments/{}", s.ns, name), "", "");
    if (!d.error.empty()) return "reading the Deployment: " + d.error;
    const json dep = json::parse(d.body, nullptr, false);
    if (!dep.is_object()) return "the Deployment is not JSON";
    const json spec = dep.value("spec", json::object());
    const int64_t want = number_at(dep, "spec", "replicas", 1);
    if (spec.value("paused", false)) return fmt::format("Deployment {} is paused", name);
    if (number_at(dep, "metadata", "generation", 0) != number_at(dep, "status", "observedGeneration", 0) ||
        number_at(dep, "status", "replicas", 0) != want || number_at(dep, "status", "updatedReplicas", 0) != want ||
        annotation(dep, "deployment.kubernetes.io/revision") != annotation(rs_obj, "deployment.kubernetes.io/revision"))
      return fmt::format("Deployment {} is being rolled out", name);
    scale_kind = "Deployment";
    scale_name = name;
  } else if (!kind.empty()) {
    return fmt::format("the ReplicaSet is owned by {} {}", kind, name);
  } else if (number_at(rs_obj, "status", "replicas", -1) != number_at(rs_obj, "spec", "replicas", 1)) {
    return "the ReplicaSet is scaling";
  }
  // An autoscaler would fight the change of replicas.
  const KubeResponse h =
      client_.request("GET", fmt::format("/apis/autoscaling/v2/namespaces/{}/horizontalpodautoscalers", s.ns), "", "");
  if (h.status != 404) {
    if (!h.error.empty()) return "listing HorizontalPodAutoscalers: " + h.error;
    const json list = json::parse(h.body, nullptr, false);
    if (!list.is_object()) return "the HorizontalPodAutoscaler list is not JSON";
    for (const json& hpa : list.value("items", json::array())) {
      if (!hpa.is_object()) continue;
      const json ref = hpa.value("spec", json::object()).value("scaleTargetRef", json::object());
      if (ref.value("kind", "") == scale_kind && ref.value("name", "") == scale_name)
        return fmt::format("HorizontalPodAutoscaler {} scales {} {}",
                           hpa.value("metadata", json::object()).value("name", "?"), scale_kind, scale_name);
    }
  }
  // The old pod's deletion cost is written only once the new pod runs: a
  // dry run now finds a missing permission before anything is scaled.
  if (std::string err = set_deletion_cost(s, s.pod, true, true); !err.empty())
    return "cannot set the old pod's " + std::string(kPodDeletionCost) + ": " + err;
  s.scale_kind = scale_kind;
  s.scale_name = scale_name;
  return "";
}

int DefragExecutor::read_replicas(const ExecStep& s, std::string* error) {
  const KubeResponse r = client_.request("GET", scale_path(s), "", "");
  if (!r.error.empty()) {
    *error = r.error;
    return -1;
  }
  const json scale = json::parse(r.body, nullptr, false);
  if (!scale.is_object()) {
    *error = "GET " + scale_path(s) + ": not JSON";
    return -1;
  }
  return static_cast<int>(number_at(scale, "spec", "replicas", 0));  // omitted when 0
}

KubeResponse DefragExecutor::patch_replicas(const ExecStep& s, int from, int to) {
  const json patch = json::array({{{"op", "test"}, {"path", "/spec/replicas"}, {"value", from}},
                                  {{"op", "replace"}, {"path", "/spec/replicas"}, {"value", to}}});
  return client_.request("PATCH", scale_path(s), patch.dump(), "application/json-patch+json");
}

std::string DefragExecutor::set_deletion_cost(const ExecStep& s, const std::string& pod, bool lowest, bool dry_run) {
  if (std::string bad = KubeClient::check_object_path("PATCH pod", s.ns, pod); !bad.empty()) return bad;
  json value = lowest ? json(std::string(kLowestDeletionCost)) : json(nullptr);
  const json patch = {{"metadata", {{"annotations", {{std::string(kPodDeletionCost), value}}}}}};
  const KubeResponse r =
      client_.request("PATCH", fmt::format("/api/v1/namespaces/{}/pods/{}{}", s.ns, pod, dry_run ? "?dryRun=All" : ""),
                      patch.dump(), "application/merge-patch+json");
  return r.status == 404 ? "" : r.error;  // a pod that is gone needs no cost
}

void DefragExecutor::scale_up(ExecJournal& j, ExecStep& s) {
  auto fall_back = [&](const std::string& why) {
    s.path = "evict";
    s.path_note = "no surge: " + why;
    s.replicas_before = s.replicas_surge = -1;
    log_info("defrag: evicting instead of surging", {{"pod", s.ns + "/" + s.pod}, {"why", why}});
    save(j, nullptr);
  };
  std::string err;
  const int now = read_replicas(s, &err);
  if (now < 0) {
    // Resumed with a scale-up that may have gone out: unknowable now.
    if (s.replicas_before >= 0) throw std::runtime_error(fmt::format("step {}: reading replicas: {}", s.index, err));
    return fall_back("reading the scale: " + err);
  }
  if (s.replicas_before >= 0 && now == s.replicas_surge) {
    s.state = "scaled-up";  // resumed: the scale-up went out before the kill
    save(j, &s);
    return;
  }
  if (s.replicas_before < 0 && now < 1)
    return fall_back(fmt::format("{} {} is scaled to 0", s.scale_kind, s.scale_name));
  if (s.replicas_before >= 0 && now != s.replicas_before)
    return fall_back(
        fmt::format("replicas are {}, not {} as recorded (changed by someone else)", now, s.replicas_before));
  // The original count is durable before the scale changes.
  s.replicas_before = now;
  s.replicas_surge = now + 1;
  save(j, nullptr);
  const KubeResponse r = patch_replicas(s, s.replicas_before, s.replicas_surge);
  if (!r.error.empty()) {
    // A reply lost in transit may hide a scale that went out.
    const int after = read_replicas(s, &err);
    if (after != s.replicas_surge) return fall_back("scaling up: " + r.error);
  }
  s.state = "scaled-up";
  log_info("defrag: surge", {{"pod", s.ns + "/" + s.pod},
                             {"owner", s.scale_kind + "/" + s.scale_name},
                             {"replicas", fmt::format("{} -> {}", s.replicas_before, s.replicas_surge)}});
  save(j, &s);
}

void DefragExecutor::wait_surged(ExecJournal& j, ExecStep& s) {
  {
    std::string err;
    const int now = read_replicas(s, &err);
    if (now < 0) throw std::runtime_error(fmt::format("step {}: reading replicas: {}", s.index, err));
    if (now == s.replicas_before && !s.new_uid.empty()) {
      // Resumed: the scale-down went out before the kill.
      s.state = "scaled-down";
      save(j, &s);
      return;
    }
    if (now == s.replicas_before) {
      // Back at N before any new pod ran (a rollback cut short by a kill,
      // or someone else): nothing of this surge is left to undo.
      s.state = "failed";
      s.detail = fmt::format("{} {} is back at {} replicas before a new pod ran on {}; {} left in place", s.scale_kind,
                             s.scale_name, now, s.to, s.pod);
      return;
    }
    if (now != s.replicas_surge) {
      s.state = "failed";
      s.detail = fmt::format("{} {} has {} replicas, neither {} nor {} (changed by someone else); left as they are",
                             s.scale_kind, s.scale_name, now, s.replicas_before, s.replicas_surge);
      return;
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.step_timeout;
  auto fail = [&](std::string why) {
    const std::string err = roll_back_surge(j, s);
    s.state = "failed";
    s.detail =
        why + (err.empty() ? fmt::format("; {} {} back to {} replicas", s.scale_kind, s.scale_name, s.replicas_before)
                           : "; rolling back: " + err);
  };
  for (;;) {
    const std::vector<K8sPod> pods = read_pods(j);
    for (const K8sPod& p : pods) {
      if (!owned_by_step(p, s) || known(s, p.uid) || p.deleting || p.phase != "Running" || p.node_name.empty())
        continue;
      s.replacement = p.name;
      if (p.node_name != s.to)
        return fail(fmt::format("{} started on {}, not on {} (the scheduler did not honour the reservation)", p.name,
                                p.node_name, s.to));
      s.new_uid = p.uid;
      save(j, nullptr);
      return scale_down(j, s);
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return fail(fmt::format("no new pod running on {} within {} s", s.to,
                              std::chrono::duration_cast<std::chrono::seconds>(options_.step_timeout).count()));
    if (!sleep_for(options_.poll)) return;
  }
}

void DefragExecutor::scale_down(ExecJournal& j, ExecStep& s) {
  if (std::string err = set_deletion_cost(s, s.pod, true); !err.empty()) {
    // Without the cost the ReplicaSet would remove the newest pod: undo.
    const std::string back = roll_back_surge(j, s);
    s.state = "failed";
    s.detail = "marking the old pod for deletion: " + err + (back.empty() ? "; replicas restored" : "; " + back);
    return;
  }
  const KubeResponse r = patch_replicas(s, s.replicas_surge, s.replicas_before);
  if (!r.error.empty()) {
    std::string err;
    const int now = read_replicas(s, &err);
    if (now != s.replicas_before) {
      (void)set_deletion_cost(s, s.pod, false);
      s.state = "failed";
      s.detail = fmt::format("scaling {} {} back to {}: {}; left as it is", s.scale_kind, s.scale_name,
                             s.replicas_before, r.error);
      return;
    }
  }
  s.state = "scaled-down";
  save(j, &s);
}

void DefragExecutor::wait_old_gone(ExecJournal& j, ExecStep& s) {
  const auto deadline = std::chrono::steady_clock::now() + options_.step_timeout;
  const std::string surge = fmt::format("surge: {} {} at {} replicas, then {}", s.scale_kind, s.scale_name,
                                        s.replicas_surge, s.replicas_before);
  for (;;) {
    const std::vector<K8sPod> pods = read_pods(j);
    const K8sPod* old = find_uid(pods, s.ns, s.uid);
    const K8sPod* neu = find_uid(pods, s.ns, s.new_uid);
    if (old == nullptr) {
      s.state = "done";
      s.detail = fmt::format("{} runs on {}; {} stopped after it ran ({})", s.replacement, s.to, s.pod, surge);
      return;
    }
    if (!old->deleting && !s.new_uid.empty() && (neu == nullptr || neu->deleting)) {
      s.state = "failed";
      s.detail = fmt::format("the controller removed {} instead of {} ({})", s.replacement, s.pod, surge);
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      s.state = old->deleting ? "done" : "failed";
      s.detail =
          old->deleting
              ? fmt::format("{} runs on {}; {} still terminating ({})", s.replacement, s.to, s.pod, surge)
              : fmt::format("{} still runs {} s after the scale-down ({})", s.pod,
                            std::chrono::duration_cast<std::chrono::seconds>(options_.step_timeout).count(), surge);
      return;
    }
    if (!sleep_for(options_.poll)) return;
  }
}

std::string DefragExecutor::roll_back_surge(ExecJournal& j, ExecStep& s) {
  if (s.path != "surge" || s.replicas_before < 0) return "";
  std::string err;
  const int now = read_replicas(s, &err);
  if (now < 0) return "reading replicas: " + err;
  if (now == s.replicas_before) return "";  // the scale-up never went out, or was undone
  if (now != s.replicas_surge)
    return fmt::format("{} {} has {} replicas, neither {} nor {} (changed by someone else); left as they are",
                       s.scale_kind, s.scale_name, now, s.replicas_before, s.replicas_surge);
  // The surged pods go first on the scale-down, and never count as a
  // replacement later; the old pod loses the cost a scale-down that did
  // not happen may have given it.
  if (!s.new_uid.empty()) {
    if (std::string e = set_deletion_cost(s, s.pod, false); !e.empty())
      log_warn("defrag: cannot clear the old pod's deletion cost", {{"pod", s.ns + "/" + s.pod}, {"error", e}});
  }
  for (const K8sPod& p : read_pods(j)) {
    if (!owned_by_step(p, s) || known(s, p.uid) || p.deleting) continue;
    if (std::string e = set_deletion_cost(s, p.name, true); !e.empty())
      log_warn("defrag: cannot mark a surged pod for deletion", {{"pod", s.ns + "/" + p.name}, {"error", e}});
    s.known_uids.push_back(p.uid);
  }
  save(j, nullptr);
  const KubeResponse r = patch_replicas(s, s.replicas_surge, s.replicas_before);
  if (!r.error.empty() && read_replicas(s, &err) != s.replicas_before)
    return fmt::format("scaling {} {} back to {}: {}", s.scale_kind, s.scale_name, s.replicas_before, r.error);
  log_info("defrag: surge rolled back", {{"pod", s.ns + "/" + s.pod},
                                         {"owner", s.scale_kind + "/" + s.scale_name},
                                         {"replicas", std::to_string(s.replicas_before)}});
  return "";
}

// Stopped (or released) mid-surge: the owner back at its count and the
// step "planned" anew (re-checked and reserved again on resume).
void DefragExecutor::abort_surge(ExecJournal& j, ExecStep& s) {
  if (!s.surge_pending()) return;
  if (std::string err = roll_back_surge(j, s); !err.empty()) {
    log_warn("defrag: cannot undo a surge", {{"pod", s.ns + "/" + s.pod}, {"error", err}});
    return;  // the journal keeps the record: resume or release retries
  }
  s.state = "planned";
  s.path.clear();
  s.scale_kind.clear();
  s.scale_name.clear();
  s.replicas_before = s.replicas_surge = -1;
  s.new_uid.clear();
  s.replacement.clear();
  save(j, &s);
}

void DefragExecutor::finish(ExecJournal& j, ExecStep& s) {
  release(j, s);
  const std::string who = s.ns + "/" + s.pod;
  if (s.state == "done") {
    event(s, "GpupackDefragMoved",
          s.kind == "admit"   ? fmt::format("admitted on {} ({}) by gpupack defrag plan {}", s.to, s.gpus, j.plan_id)
          : s.path == "surge" ? fmt::format("replaced from {} to free GPUs; {} ran on {} before this pod stopped "
                                            "({} {} surged by one; plan {})",
                                            s.from, s.replacement, s.to, s.scale_kind, s.scale_name, j.plan_id)
                              : fmt::format("evicted from {} to free GPUs; replacement {} runs on {} (plan {})", s.from,
                                            s.replacement, s.to, j.plan_id),
          false);
  } else if (s.state == "failed" || (s.state == "skipped" && s.evict_attempts > 0)) {
    event(s, s.state == "failed" ? "GpupackDefragFailed" : "GpupackDefragSkipped", s.detail, true);
  }
  log_info(fmt::format("defrag: step {} {}", s.index, s.state), {{"plan", j.plan_id},
                                                                 {"kind", s.kind},
                                                                 {"pod", who},
                                                                 {"from", s.from},
                                                                 {"to", s.to},
                                                                 {"path", s.path},
                                                                 {"detail", s.detail}});
  save(j, &s);
}

ExecStep* DefragExecutor::park_of(ExecJournal& j, const ExecStep& land) {
  ExecStep* park = nullptr;
  for (ExecStep& s : j.steps)
    if (s.parked && s.index < land.index && s.ns == land.ns && s.pod == land.pod) park = &s;
  return park;
}

void DefragExecutor::land(ExecJournal& j, ExecStep& s) {
  ExecStep* park = park_of(j, s);
  if (park == nullptr || park->state != "parked") {
    s.state = "skipped";
    s.detail = park == nullptr ? "no parked move of this pod earlier in the plan" : "its park step did not evict";
    return;
  }
  s.owner_kind = park->owner_kind, s.owner_name = park->owner_name, s.owner_uid = park->owner_uid;
  s.known_uids = park->known_uids;
  s.from = park->from;
  s.state = "evicted";  // waiting, as an evicted move's replacement
  wait_running(j, s);
  if (!s.final()) return;  // stopped
  park->state = s.state;
  park->detail = s.detail;
  park->replacement = s.replacement;
  finish(j, *park);  // releases the park's reservation, writes its Event
}

// After a parked move that did not evict, the rest of its cycle cannot fit.
void DefragExecutor::skip_cycle(ExecJournal& j, const ExecStep& park) {
  if (!park.parked || park.state == "parked") return;
  for (ExecStep& s : j.steps) {
    if (s.index <= park.index || s.final()) continue;
    if (s.kind == "admit") continue;
    s.state = "skipped";
    s.detail = fmt::format("step {} (the parked move of its cycle) was {}", park.index, park.state);
    finish(j, s);
    if (s.kind == "land" && s.pod == park.pod && s.ns == park.ns) break;
  }
}

ExecJournal DefragExecutor::run(ExecJournal j) {
  j.status = "running";
  save(j, nullptr);
  // The pending pods' GPUs are reserved first: the moves free them, and
  // nothing else may take them meanwhile.
  for (ExecStep& s : j.steps) {
    if (s.kind != "admit" || s.state != "planned" || options_.stop()) continue;
    check_and_reserve(j, s);
    if (s.final()) finish(j, s);
  }
  bool first_move = true;
  for (ExecStep& s : j.steps) {
    if (s.final()) continue;
    if (options_.stop()) break;
    if (!first_move && s.state == "planned" && !sleep_for(options_.interval)) break;
    first_move = false;
    run_step(j, s);
    if (!s.final()) break;  // stopped mid-step
    if (s.state == "parked") {
      log_info(fmt::format("defrag: step {} parked", s.index),
               {{"plan", j.plan_id}, {"pod", s.ns + "/" + s.pod}, {"from", s.from}, {"to", s.to}});
      continue;  // keeps its reservation until its land step
    }
    finish(j, s);
    skip_cycle(j, s);
  }
  bool all_final = true;
  for (const ExecStep& s : j.steps) all_final = all_final && s.final();
  if (all_final) {
    j.status = "finished";
  } else {
    // Aborted: nothing of the unfinished steps stays reserved or surged.
    for (ExecStep& s : j.steps) {
      abort_surge(j, s);
      release(j, s);
    }
    j.status = "aborted";
  }
  save(j, nullptr);
  return j;
}

ExecJournal DefragExecutor::release_all(ExecJournal j) {
  // Every step, whatever its flag says: a kill between writing an
  // annotation and the journal leaves a reservation the journal missed.
  for (ExecStep& s : j.steps) {
    abort_surge(j, s);  // the owner back at its count
    if (!s.final() || s.reserved) release(j, s, true);
  }
  j.status = "released";
  save(j, nullptr);
  return j;
}

}  // namespace gpupack
