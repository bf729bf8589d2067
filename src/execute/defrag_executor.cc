#include "execute/defrag_executor.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
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

int64_t int_at(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return 0;
  if (!it->is_number_integer()) throw std::runtime_error(fmt::format("{}: field '{}' is not an integer", where, key));
  return it->get<int64_t>();
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
    s.kind = ps.kind == MoveKind::kAdmit ? "admit" : move_kind_name(ps.kind);
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
      s.from = state.spec(ps.from.node).name;
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
                     {"detail", s.detail},
                     {"replacement", s.replacement},
                     {"evictAttempts", s.evict_attempts},
                     {"reserved", s.reserved},
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
  static const std::set<std::string> kStates = {"planned", "reserved", "evicted", "done", "skipped", "failed"};
  static const std::set<std::string> kKinds = {"remap", "migrate", "evict", "admit"};
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
    s.detail = str_at(e, "detail", at);
    s.replacement = str_at(e, "replacement", at);
    s.evict_attempts = static_cast<int>(int_at(e, "evictAttempts", at));
    if (auto r = e.find("reserved"); r != e.end() && r->is_boolean()) s.reserved = r->get<bool>();
    if (auto k = e.find("knownUids"); k != e.end() && k->is_array())
      for (const json& u : *k)
        if (u.is_string()) s.known_uids.push_back(u.get<std::string>());
    if (!kStates.count(s.state)) throw std::runtime_error(fmt::format("{}: unknown state '{}'", at, s.state));
    if (!kKinds.count(s.kind)) throw std::runtime_error(fmt::format("{}: unknown kind '{}'", at, s.kind));
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
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out = open_output(tmp);
    out << journal_to_json(j).dump(2) << "\n";
    close_output(out, tmp);
  }
  sync_file_and_dir(tmp);
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw std::runtime_error(fmt::format("{}: cannot replace the journal: {}", path, ec.message()));
  sync_file_and_dir(path);
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
  const bool admit = s.kind == "admit";
  if (s.state == "planned") check_and_reserve(j, s);
  if (options_.stop() || s.final()) return;
  if (s.state == "reserved") {
    if (admit) {
      s.state = "evicted";  // nothing to evict: wait for the pending pod
    } else {
      // Resumed after a kill: the eviction may have gone out already.
      const std::vector<K8sPod> pods = read_pods(j);
      const K8sPod* p = find_pod(pods, s.ns, s.pod);
      if (p == nullptr || p->uid != s.uid || p->deleting) {
        s.state = "evicted";
        save(j, &s);
      } else {
        evict(j, s);
      }
    }
  }
  if (options_.stop() || s.final()) return;
  if (s.state == "evicted") wait_running(j, s);
}

void DefragExecutor::finish(ExecJournal& j, ExecStep& s) {
  release(j, s);
  const std::string who = s.ns + "/" + s.pod;
  if (s.state == "done") {
    event(s, "GpupackDefragMoved",
          s.kind == "admit" ? fmt::format("admitted on {} ({}) by gpupack defrag plan {}", s.to, s.gpus, j.plan_id)
                            : fmt::format("evicted from {} to free GPUs; replacement {} runs on {} (plan {})", s.from,
                                          s.replacement, s.to, j.plan_id),
          false);
  } else if (s.state == "failed" || (s.state == "skipped" && s.evict_attempts > 0)) {
    event(s, s.state == "failed" ? "GpupackDefragFailed" : "GpupackDefragSkipped", s.detail, true);
  }
  log_info(fmt::format("defrag: step {} {}", s.index, s.state),
           {{"plan", j.plan_id}, {"kind", s.kind}, {"pod", who}, {"from", s.from}, {"to", s.to}, {"detail", s.detail}});
  save(j, &s);
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
    finish(j, s);
  }
  bool all_final = true;
  for (const ExecStep& s : j.steps) all_final = all_final && s.final();
  if (all_final) {
    j.status = "finished";
  } else {
    // Aborted: nothing of the unfinished steps stays reserved.
    for (ExecStep& s : j.steps) release(j, s);
    j.status = "aborted";
  }
  save(j, nullptr);
  return j;
}

ExecJournal DefragExecutor::release_all(ExecJournal j) {
  // Every step, whatever its flag says: a kill between writing an
  // annotation and the journal leaves a reservation the journal missed.
  for (ExecStep& s : j.steps)
    if (!s.final() || s.reserved) release(j, s, true);
  j.status = "released";
  save(j, nullptr);
  return j;
}

}  // namespace gpupack
