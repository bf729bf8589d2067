#include "sim/dynamic_sim.h"

#include <chrono>
#include <queue>
#include <stdexcept>

#include "defrag/planner.h"
#include "model/cluster_state.h"
#include "sched/backfill.h"
#include "sched/filter.h"
#include "sched/preemption.h"
#include "sched/scheduler.h"

namespace gpupack {
namespace {

struct Event {
  int64_t time_s;
  int kind;  // 0 = completion, 1 = arrival, 2 = defragmentation tick (in that order)
  int64_t seq;
  int32_t job;
  int epoch;
  friend bool operator>(const Event& a, const Event& b) {
    if (a.time_s != b.time_s) return a.time_s > b.time_s;
    if (a.kind != b.kind) return a.kind > b.kind;
    return a.seq > b.seq;
  }
};

struct JobState {
  GangRequest gang;
  std::vector<PodId> pods;
  std::vector<PodId> bound;  // pods bound while running
  int64_t gpu_milli = 0;
  int64_t seq = 0;
  bool running = false;
  int epoch = 0;
  int64_t tried_at = -1;          // freed-log size at the last unrestricted failed try
  int64_t preempt_tried_at = -1;  // change counter at the last preemption try
  int64_t started_at = 0;
  int position = -1;  // in the running list
};

class Simulation {
 public:
  Simulation(const std::vector<NodeSpec>& nodes, const DynamicWorkload& w, Policy& policy,
             std::vector<int64_t> node_rank, const TargetWorkload& target, const DynamicOptions& o)
      : w_(w),
        o_(o),
        state_(nodes),
        scheduler_(policy, std::move(node_rank)),
        placer_(scheduler_, state_.node_count(), o.levels, &target),
        planner_(placer_, &target),
        frag_(target, state_) {
    scheduler_.set_explain_failures(false);
    // The scheduler's rank as the state's tie order: decisions by node class.
    state_.set_tie_order({scheduler_.node_rank().begin(), scheduler_.node_rank().end()});
    for (const auto& [queue, milli] : o.quota_gpu_milli) quota_.set_quota(queue, milli);
    jobs_.resize(w.jobs.size());
    int32_t next_pod = 0;
    for (size_t i = 0; i < w.jobs.size(); ++i) {
      const DynamicJob& d = w.jobs[i];
      JobState& j = jobs_[i];
      j.gang = {d.name, d.members, d.min_member};
      for (size_t m = 0; m < d.members.size(); ++m) j.pods.push_back(PodId{next_pod++});
      next_pod_ = next_pod;
      j.gpu_milli = j.gang.total_gpu_milli();
      j.seq = static_cast<int64_t>(i);
      events_.push({d.submit_s, 1, event_seq_++, static_cast<int32_t>(i), 0});
    }
    out_.jobs.resize(w.jobs.size());
    out_.policy = std::string(policy.name());
    out_.capacity_milli = state_.gpu_capacity_milli();
    for (const NodeSpec& n : nodes) out_.node_names.push_back(n.name);
  }

  DynamicRunResult run() {
    const auto wall = std::chrono::steady_clock::now();
    bool first = true;
    int64_t last_t = 0, last_used = 0;
    double area = 0;
    while (!events_.empty()) {
      const int64_t now = events_.top().time_s;
      if (first) {
        out_.start_s = now;
        last_t = now;
        first = false;
      }
      now_ = now;
      bool defrag_due = false;
      while (!events_.empty() && events_.top().time_s == now) {
        const Event e = events_.top();
        events_.pop();
        if (e.kind == 2) {
          tick_pending_ = false;
          defrag_due = true;
        } else if (e.kind == 0) {
          complete(e.job, e.epoch, now);
        } else {
          JobState& j = jobs_[static_cast<size_t>(e.job)];
          out_.jobs[static_cast<size_t>(e.job)].submit_s = now;
          enqueue(e.job);
          (void)j;
        }
      }
      pass(now);
      if (defrag_due) {
        defragment(now);
        arm_defrag_tick();
      }
      state_.commit();
      for (NodeId n : touched_) frag_.refresh(state_, n);
      touched_.clear();
      area += static_cast<double>(last_used) * static_cast<double>(now - last_t);
      last_t = now;
      last_used = state_.gpu_used_milli();
      out_.samples.push_back({now, state_.gpu_used_milli(), frag_.total_milli(), static_cast<int>(queue_.size()),
                              pending_milli_, static_cast<int>(running_.size())});
    }
    out_.end_s = last_t;
    const double span = static_cast<double>(out_.end_s - out_.start_s);
    out_.mean_alloc_pct = span > 0 && out_.capacity_milli > 0
                              ? 100.0 * area / (span * static_cast<double>(out_.capacity_milli))
                              : (out_.capacity_milli ? 100.0 * last_used / out_.capacity_milli : 0);
    for (const JobOutcome& j : out_.jobs) out_.never_ran += j.start_s < 0;
    if (!state_.check_invariants().empty()) throw std::logic_error("dynamic simulation broke a state invariant");
    out_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
    return std::move(out_);
  }

 private:
  const DynamicJob& spec(int32_t id) const { return w_.jobs[static_cast<size_t>(id)]; }

  void enqueue(int32_t id) {
    JobState& j = jobs_[static_cast<size_t>(id)];
    queue_.push(id, spec(id).priority, j.seq);
    pending_milli_ += j.gpu_milli;
    arm_defrag_tick();
  }

  // Defragmentation runs on a fixed period while jobs wait; the tick stops
  // when the queue is empty (so the run still ends) and restarts with it.
  void arm_defrag_tick() {
    if (o_.defrag_every_s <= 0 || tick_pending_ || queue_.size() == 0) return;
    const int64_t next = now_ - now_ % o_.defrag_every_s + o_.defrag_every_s;
    events_.push({next, 2, event_seq_++, -1, 0});
    tick_pending_ = true;
  }

  void dequeue(int32_t id) {
    if (queue_.remove(id)) pending_milli_ -= jobs_[static_cast<size_t>(id)].gpu_milli;
  }

  bool could_fit_on_freed(const JobState& j) const {
    for (size_t k = static_cast<size_t>(j.tried_at); k < freed_.size(); ++k) {
      const NodeId n = freed_[k];
      const Request* last = nullptr;
      for (const Request& m : j.gang.members) {
        if (last && *last == m) continue;
        last = &m;
        if (fits(state_, n, m)) return true;
      }
    }
    return false;
  }

  std::vector<RunningJob> running_view() const {
    std::vector<RunningJob> v;
    v.reserve(running_.size());
    for (int32_t id : running_) {
      const JobState& j = jobs_[static_cast<size_t>(id)];
      const auto& est = spec(id).estimate_s;
      int64_t end = kNoEstimate;
      if (est && *est <= kNoEstimate - j.started_at) end = j.started_at + *est;
      v.push_back({id, spec(id).priority, end, j.bound});
    }
    return v;
  }

  void start(int32_t id, const GangPlacement& p, int64_t now, bool backfilled) {
    JobState& j = jobs_[static_cast<size_t>(id)];
    dequeue(id);
    j.running = true;
    j.started_at = now;
    j.bound.clear();
    for (size_t m = 0; m < p.assignments.size(); ++m) {
      if (!valid(p.assignments[m].node)) continue;
      j.bound.push_back(j.pods[m]);
      touched_.push_back(p.assignments[m].node);
    }
    quota_.charge(spec(id).queue, j.gpu_milli);
    j.position = static_cast<int>(running_.size());
    running_.push_back(id);
    ++changes_;
    JobOutcome& o = out_.jobs[static_cast<size_t>(id)];
    o.start_s = now;
    if (o.first_start_s < 0) o.first_placement = p.assignments;
    if (o.first_start_s < 0) o.first_start_s = now;
    if (backfilled && !o.backfilled) {
      o.backfilled = true;
      ++out_.backfilled_jobs;
    }
    const int64_t runtime = spec(id).runtime_s;
    if (runtime != kRunsForever) events_.push({now + runtime, 0, event_seq_++, id, j.epoch});
  }

  void release(int32_t id) {
    JobState& j = jobs_[static_cast<size_t>(id)];
    for (PodId pod : j.bound) {
      const NodeId n = state_.assignment(pod).node;
      const Status st = state_.unbind(pod);
      if (!st.is_ok()) throw std::logic_error("dynamic simulation: unbind failed: " + st.message);
      freed_.push_back(n);
      touched_.push_back(n);
    }
    j.bound.clear();
    j.running = false;
    quota_.release(spec(id).queue, j.gpu_milli);
    const int32_t moved = running_.back();
    running_[static_cast<size_t>(j.position)] = moved;
    jobs_[static_cast<size_t>(moved)].position = j.position;
    running_.pop_back();
    j.position = -1;
    ++changes_;
  }

  void complete(int32_t id, int epoch, int64_t now) {
    JobState& j = jobs_[static_cast<size_t>(id)];
    if (!j.running || j.epoch != epoch) return;  // evicted since
    release(id);
    out_.jobs[static_cast<size_t>(id)].end_s = now;
  }

  void evict(int32_t id) {
    JobState& j = jobs_[static_cast<size_t>(id)];
    out_.evicted_pods += static_cast<int>(j.bound.size());
    release(id);
    ++j.epoch;
    j.tried_at = -1;
    ++out_.jobs[static_cast<size_t>(id)].evictions;
    out_.jobs[static_cast<size_t>(id)].start_s = -1;
    enqueue(id);
  }

  bool try_preempt(int32_t id, int64_t now) {
    JobState& j = jobs_[static_cast<size_t>(id)];
    if (j.preempt_tried_at == changes_) return false;
    j.preempt_tried_at = changes_;
    bool any_lower = false;
    for (int32_t r : running_) any_lower |= spec(r).priority < spec(id).priority;
    if (!any_lower) return false;
    const std::vector<RunningJob> view = running_view();
    const PreemptionPlan plan = planner_.plan(state_, view, j.gang, j.pods, spec(id).priority);
    if (!plan.feasible || plan.victims.empty()) return false;
    for (const Victim& v : plan.victims) evict(v.job);
    const GangPlacement p = placer_.place(state_, j.pods, j.gang);
    if (!p.placed) throw std::logic_error("dynamic simulation: preemption plan did not make room");
    ++out_.preemptions;
    start(id, p, now, false);
    return true;
  }

  // Does the cluster hold, summed over nodes, the free GPU milli, CPU and
  // memory that job `id` needs? Then only the layout of the free room (which
  // moves may change) keeps it waiting. Asked once per job and cluster
  // change. O(nodes).
  bool has_room(int32_t id) {
    if (room_asked_ == std::make_pair(id, changes_)) return false;
    room_asked_ = {id, changes_};
    int64_t need_cpu = 0, need_mem = 0;
    for (const Request& m : jobs_[static_cast<size_t>(id)].gang.members) {
      need_cpu += m.cpu_milli;
      need_mem += m.memory_mib;
    }
    int64_t gpu = 0, cpu = 0, mem = 0;
    for (int i = 0; i < state_.node_count(); ++i) {
      const NodeId n{i};
      gpu += state_.gpu_free_total_milli(n);
      cpu += state_.cpu_free_milli(n);
      mem += state_.memory_free_mib(n);
    }
    return gpu >= jobs_[static_cast<size_t>(id)].gpu_milli && cpu >= need_cpu && mem >= need_mem;
  }

  // Plans moves of running single-pod jobs (pods of multi-pod gangs never
  // move) after which every pod of job `id` fits at once, within the budget;
  // applies the moves (not the admission) and returns whether any was made.
  bool make_room(int32_t id) {
    if (running_.empty()) return false;
    PodMoveInfos infos(static_cast<size_t>(next_pod_));
    int running_pods = 0;
    for (int32_t r : running_) {
      const JobState& j = jobs_[static_cast<size_t>(r)];
      running_pods += static_cast<int>(j.bound.size());
      if (j.pods.size() > 1)
        for (PodId pod : j.pods) infos[index(pod)].immovable = true;
    }
    DefragBudget budget;
    budget.max_moves = static_cast<int>(o_.defrag_budget_fraction * running_pods);
    if (budget.max_moves <= 0) return false;
    const JobState& job = jobs_[static_cast<size_t>(id)];
    DefragGoal goal;
    goal.kind = GoalKind::kAdmitPending;
    for (size_t m = 0; m < job.pods.size() && m < job.gang.members.size(); ++m)
      goal.pending.push_back({job.pods[m], job.gang.members[m]});
    goal.gang = goal.pending.size() > 1;
    PlannerOptions options;
    options.time_limit_s = 0.5;
    DefragPlan plan = plan_defrag(state_, goal, budget, infos, options);
    ++out_.defrag_runs;
    std::erase_if(plan.steps, [](const PlanStep& step) { return step.kind == MoveKind::kAdmit; });
    apply_plan(state_, plan);
    state_.commit();
    if (plan.moves() == 0) return false;
    out_.defrag_moves += plan.moves();
    for (const PlanStep& step : plan.steps) {
      if (valid(step.from.node)) {
        freed_.push_back(step.from.node);
        touched_.push_back(step.from.node);
      }
      if (valid(step.to.node)) touched_.push_back(step.to.node);
    }
    ++changes_;
    return true;
  }

  // The periodic tick: room for the job at the head of the queue (the one
  // that has waited longest by the queue's order), then a pass, so that it
  // starts through the usual path (reservations, bookkeeping).
  void defragment(int64_t now) {
    const std::vector<int32_t> order = queue_.ordered();
    if (!order.empty() && make_room(order.front())) pass(now);
  }

  void pass(int64_t now) {
    Reservation resv;
    bool head = true;  // the first job this pass tries
    const std::vector<int32_t> order = queue_.ordered();
    for (int32_t id : order) {
      if (!queue_.contains(id)) continue;  // started or moved by a preemption in this pass
      JobState& j = jobs_[static_cast<size_t>(id)];
      const DynamicJob& d = spec(id);
      if (!quota_.admits(d.queue, j.gpu_milli)) continue;
      const bool restricted = resv.valid && !resv.ends_before(now, d.estimate_s);
      bool placed = false;
      if (restricted || j.tried_at < 0 || could_fit_on_freed(j)) {
        const GangPlacement p =
            placer_.place(state_, j.pods, j.gang,
                          restricted ? std::span<const uint8_t>(resv.allowed_mask) : std::span<const uint8_t>());
        if (p.placed) {
          start(id, p, now, resv.valid);
          placed = true;
        }
      }
      if (!placed && head && o_.defrag_on_room && !restricted && has_room(id) && make_room(id)) {
        const GangPlacement p = placer_.place(state_, j.pods, j.gang);
        if (p.placed) {
          start(id, p, now, false);
          placed = true;
        }
      }
      head = false;
      if (placed) continue;
      if (!restricted) j.tried_at = static_cast<int64_t>(freed_.size());
      if (o_.preemption && try_preempt(id, now)) continue;
      if (o_.mode == QueueMode::kStrictFifo) break;
      if (o_.mode == QueueMode::kBackfill && !resv.valid && !restricted) {
        resv = compute_reservation(state_, placer_, running_view(), id, j.gang, j.pods, now);
        if (resv.valid) {
          JobOutcome& o = out_.jobs[static_cast<size_t>(id)];
          if (o.reservations++ == 0) o.reserved_start_s = resv.start_s;
        }
      }
    }
  }

  const DynamicWorkload& w_;
  const DynamicOptions& o_;
  ClusterState state_;
  Scheduler scheduler_;
  GangPlacer placer_;
  PreemptionPlanner planner_;
  FragTracker frag_;
  QuotaBook quota_;
  JobQueue queue_;
  std::vector<JobState> jobs_;
  std::vector<int32_t> running_;
  std::vector<NodeId> freed_;
  std::vector<NodeId> touched_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  int64_t event_seq_ = 0;
  int64_t changes_ = 0;
  int64_t pending_milli_ = 0;
  int32_t next_pod_ = 0;
  int64_t now_ = 0;
  bool tick_pending_ = false;
  std::pair<int32_t, int64_t> room_asked_{-1, -1};  // head and change counter of the last room check
  DynamicRunResult out_;
};

}  // namespace

DynamicRunResult run_dynamic(const std::vector<NodeSpec>& nodes, const DynamicWorkload& workload, Policy& policy,
                             std::vector<int64_t> node_rank, const TargetWorkload& frag_target,
                             const DynamicOptions& options) {
  for (const DynamicJob& j : workload.jobs) {
    if (j.members.empty()) throw std::invalid_argument("job '" + j.name + "' has no member");
    if (j.runtime_s < 0) throw std::invalid_argument("job '" + j.name + "' has a negative runtime");
  }
  Simulation sim(nodes, workload, policy, std::move(node_rank), frag_target, options);
  return sim.run();
}

}  // namespace gpupack
