// gpupack defrag: plan the moves that defragment a cluster (a saved state, a
// live cluster read from the API, or kubectl JSON files) and print the plan
// (table, JSON or a Kubernetes eviction list).
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <thread>

#include "analyze/defrag_input.h"
#include "cli/commands.h"
#include "defrag/bound_lagrangian.h"
#include "defrag/methods.h"
#include "defrag/plan_writers.h"
#include "defrag/snapshot.h"
#include "execute/defrag_executor.h"
#include "execute/defrag_trigger.h"
#include "policy/registry.h"
#include "server/kube_client.h"
#include "server/kubeconfig.h"
#include "util/files.h"

namespace gpupack::cli {
namespace {

struct DefragFlags {
  std::string state, goal = "admit", format = "table", out, method = "planner", policy = "bestfit";
  std::string kubeconfig, context, nodes, pods, pdbs, exempt_label = "gpupack.io/defrag=never";
  bool live = false;
  int max_moves = -1;
  double max_moves_pct = -1;
  int64_t max_moved_gpus = -1;
  double max_cost = -1;
  double frag_below = -1;  // -1 = not given
  double time_limit = 0;
  int threads = 2;
  bool no_refine = false;
  bool no_swaps = false;
  bool no_chains = false;
  double max_moves_per_gpu = -1;
  bool gang = false;
  bool no_local_search = false;
  bool bound = false;
  // --apply: the executor (execute/defrag_executor.h).
  bool apply = false, resume = false, release = false;
  std::string journal = "gpupack-defrag-journal.json", metrics_file;
  double interval_s = 10, poll_s = 1, step_timeout_s = 600, retry_429_s = 5, reservation_ttl_s = 1800;
  int max_429_retries = 5;
  std::string surge = "auto";  // auto (make-before-break where the owner can surge) or never
  // --every: periodic mode (execute/defrag_trigger.h).
  std::string every, wait_bound;
  int rounds = 0, large_gpus = 2, max_moves_per_hour = -1;
  double frag_above = -1;
};

std::atomic<bool> g_stop_requested{false};
extern "C" void on_stop_signal(int) { g_stop_requested = true; }

std::chrono::milliseconds ms(double seconds) { return std::chrono::milliseconds(std::llround(seconds * 1000.0)); }

void write_exec_metrics(const std::string& path, const ExecJournal& j) {
  if (path.empty()) return;
  std::string text =
      "# HELP gpupack_defrag_steps Steps of the defrag plan being applied, by state.\n"
      "# TYPE gpupack_defrag_steps gauge\n";
  for (const char* st : {"planned", "reserved", "evicted", "scaled-up", "scaled-down", "done", "skipped", "failed"})
    text += fmt::format("gpupack_defrag_steps{{plan=\"{}\",state=\"{}\"}} {}\n", j.plan_id, st, j.count(st));
  const std::string tmp = path + ".tmp";
  std::ofstream out = open_output(tmp);
  out << text;
  close_output(out, tmp);
  std::filesystem::rename(tmp, path);
}

// --apply, --resume, --release: carry a plan out on the live cluster.
ExecJournal run_executor(const DefragFlags& f, const KubeClient& client, const std::string& server,
                         std::optional<ExecJournal> fresh, bool periodic = false) {
  ExecJournal journal;
  if (fresh) {
    journal = std::move(*fresh);
  } else {
    journal = read_journal(f.journal);
    if (journal.server != server)
      throw std::invalid_argument(
          fmt::format("journal {} is for the cluster at {}, not {}", f.journal, journal.server, server));
  }
  ExecOptions opt;
  opt.journal_path = f.journal;
  opt.interval = ms(f.interval_s);
  opt.poll = ms(f.poll_s);
  opt.step_timeout = ms(f.step_timeout_s);
  opt.retry_429 = ms(f.retry_429_s);
  opt.max_429_retries = f.max_429_retries;
  opt.surge = f.surge == "never" ? SurgeMode::kNever : SurgeMode::kAuto;
  opt.reservation_ttl = std::chrono::seconds(static_cast<int64_t>(f.reservation_ttl_s));
  opt.stop = [] { return g_stop_requested.load(); };
  const size_t total = journal.steps.size();
  opt.on_step = [total](const ExecStep& s) {
    fmt::print("step {}/{} {} {}/{} {}{}: {}{}\n", s.index, total, s.kind, s.ns, s.pod,
               s.from.empty() ? "" : s.from + " -> ", s.to, s.state, s.detail.empty() ? "" : " (" + s.detail + ")");
    std::fflush(stdout);
  };
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  DefragExecutor exec(client, opt);
  if (f.release) {
    journal = exec.release_all(std::move(journal));
    fmt::print("plan {}: reservations released ({} steps not carried out); journal {}\n", journal.plan_id,
               total - static_cast<size_t>(journal.count("done") + journal.count("skipped") + journal.count("failed")),
               f.journal);
    write_exec_metrics(f.metrics_file, journal);
    return journal;
  }
  journal = exec.run(std::move(journal));
  write_exec_metrics(f.metrics_file, journal);
  fmt::print("plan {}: {} done, {} skipped, {} failed of {} steps ({}); journal {}\n", journal.plan_id,
             journal.count("done"), journal.count("skipped"), journal.count("failed"), total, journal.status,
             f.journal);
  if (journal.status == "aborted")
    throw std::runtime_error(fmt::format(
        "stopped before the plan ended; its reservations are released. `gpupack defrag --resume --journal {}` "
        "continues it",
        f.journal));
  if (journal.count("failed") > 0 && !periodic)
    throw std::runtime_error(fmt::format("{} steps failed (see the journal {})", journal.count("failed"), f.journal));
  return journal;
}

// The live cluster (--kubeconfig/--context/--live): its config and one client
// for every read and write of a run.
struct LiveCluster {
  KubeConfig config;
  std::unique_ptr<KubeClient> client;
};

bool live_source(const DefragFlags& f) { return f.live || !f.kubeconfig.empty() || !f.context.empty(); }

LiveCluster connect(const DefragFlags& f) {
  LiveCluster c;
  c.config = resolve_kube_config({.kubeconfig_path = f.kubeconfig, .context = f.context});
  c.client = std::make_unique<KubeClient>(c.config, 60);
  return c;
}

// The planner's input from exactly one source: --state, kubectl JSON files
// (--nodes/--pods[/--pdbs]) or the live API (--kubeconfig/--context/--live).
LiveDefragInput load_input(const DefragFlags& f, const LiveCluster* live) {
  const bool files = !f.nodes.empty() || !f.pods.empty() || !f.pdbs.empty();
  const bool api = live_source(f);
  if (int(!f.state.empty()) + int(files) + int(api) != 1)
    throw std::invalid_argument(
        "give one source: --state FILE, --nodes/--pods [--pdbs] files, or the live cluster (--kubeconfig, "
        "--context or --live)");
  if (!f.state.empty()) return {read_snapshot(f.state), {}, {}, {}};
  LiveDefragOptions opt;
  const size_t eq = f.exempt_label.find('=');
  if (!f.exempt_label.empty() && (eq == std::string::npos || eq == 0))
    throw std::invalid_argument(fmt::format("--exempt-label '{}': expected KEY=VALUE", f.exempt_label));
  opt.exempt_label_key = f.exempt_label.empty() ? "" : f.exempt_label.substr(0, eq);
  opt.exempt_label_value = f.exempt_label.empty() ? "" : f.exempt_label.substr(eq + 1);
  if (files) {
    if (f.nodes.empty() || f.pods.empty()) throw std::invalid_argument("--nodes and --pods go together");
    return live_defrag_input(read_node_list_file(f.nodes), read_pod_list_file(f.pods),
                             f.pdbs.empty() ? std::vector<K8sPdb>{} : read_pdb_list_file(f.pdbs), opt);
  }
  if (live == nullptr) throw std::logic_error("load_input: the live cluster is not connected");
  const KubeConfig& cfg = live->config;
  const KubeClient& client = *live->client;
  auto body = [](const KubeResponse& r) {
    if (!r.error.empty()) throw std::runtime_error(r.error);
    return r.body;
  };
  std::vector<K8sNode> nodes = parse_node_list(body(client.list_nodes()), "GET " + cfg.server + "/api/v1/nodes");
  std::vector<K8sPod> pods = parse_pod_list(body(client.list_pods()), "GET " + cfg.server + "/api/v1/pods");
  // Budgets are what keep a plan safe: a cluster that will not list them
  // gets no plan (unlike DRA claims, they are core API).
  std::vector<K8sPdb> pdbs =
      parse_pdb_list(body(client.list_pdbs()), "GET " + cfg.server + "/apis/policy/v1/poddisruptionbudgets");
  return live_defrag_input(nodes, pods, pdbs, opt);
}

// Both bounds (defrag/bound_lagrangian.h defrag_bounds()); the Lagrangian
// aims at what `plan` admits.
DefragBounds bounds_for(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                        const PodMoveInfos& infos, const DefragPlan& plan) {
  if (goal.kind != GoalKind::kAdmitPending) throw std::invalid_argument("--bound needs --goal admit");
  fmt::print(stderr, "bound: solving the LP, then searching the Lagrangian's prices ...\n");
  return defrag_bounds(state, goal, budget, infos, static_cast<double>(plan.after.admitted_gpu_milli));
}

nlohmann::json bound_json(const DefragBounds& both) {
  const DefragBound& b = both.lp;
  const LagrangianBound& lb = both.lagrangian;
  const auto or_null = [&](double v) { return b.solved ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j = {{"solved", b.solved},
                      {"admitted_gpu_milli", or_null(b.admitted_milli)},
                      {"certified_gpu_milli", or_null(b.certified_milli)},
                      {"moves", b.moves_used},
                      {"gpu_milli_per_extra_move", b.move_value_milli},
                      {"rows", b.rows},
                      {"columns", b.columns},
                      {"seconds", b.seconds}};
  for (const DefragBound::Binding& fam : b.binding)
    j["binding"][fam.family] = {{"rows", fam.rows}, {"value_gpu_milli", fam.value_milli}};
  j["lagrangian"] = {{"admitted_gpu_milli", lb.bound_milli},
                     {"start_gpu_milli", lb.start_milli},
                     {"priced_gpu_milli", lb.priced_milli},
                     {"iterations", lb.iterations},
                     {"seconds", lb.seconds},
                     {"gpu_milli_per_extra_move", lb.move_value_milli},
                     {"cpu_priced_nodes", lb.cpu_priced_nodes},
                     {"memory_priced_nodes", lb.memory_priced_nodes}};
  j["bound_gpu_milli"] = both.bound_milli;  // the smaller of the two
  j["used_gpu_milli_before"] = b.used_milli_before;
  j["capacity_gpu_milli"] = b.capacity_milli;
  return j;
}

// Both bounds beside the plan, and the LP with each constraint family
// dropped: the family whose removal raises it most binds.
std::string bound_report(const ClusterState& state, const DefragGoal& goal, const DefragBudget& budget,
                         const PodMoveInfos& infos, const DefragPlan& plan) {
  const DefragBounds both = bounds_for(state, goal, budget, infos, plan);
  const DefragBound& b = both.lp;
  const LagrangianBound& lb = both.lagrangian;
  auto pct = [&](double admitted) { return 100.0 * (lb.used_milli_before + admitted) / lb.capacity_milli; };
  std::string out;
  if (b.solved) {
    out += fmt::format(
        "bound: at most {:.0f} GPU milli admitted by any plan within the budget (GPU allocation {:.2f}% -> at most "
        "{:.2f}%; certificate {:.0f}; LP {} rows x {} columns, {:.2f} s, {:.0f} moves in the LP's solution, {:.0f} "
        "milli per extra move)\n",
        both.lp_milli, pct(0), pct(both.lp_milli), b.certified_milli, b.rows, b.columns, b.seconds, b.moves_used,
        b.move_value_milli);
    out += "bound: rows the optimum prices, by family:";
    for (const DefragBound::Binding& fam : b.binding)
      out += fmt::format(" {} {} ({:.0f} milli)", fam.family, fam.rows, fam.value_milli);
    out += "\n";
  } else {
    out += fmt::format("bound: the LP was not solved ({:.1f} s)\n", b.seconds);
  }
  out += fmt::format(
      "bound (Lagrangian, whole pods per GPU, each node's cores whole): at most {:.0f} GPU milli ({:.2f}%); {:.0f} "
      "at the start, {:.0f} with CPU priced only, {} iterations, {:.2f} s; {:.0f} milli per extra move, CPU priced on "
      "{} nodes, memory on {}\n",
      lb.bound_milli, pct(lb.bound_milli), lb.start_milli, lb.priced_milli, lb.iterations, lb.seconds,
      lb.move_value_milli, lb.cpu_priced_nodes, lb.memory_priced_nodes);
  const double gained = static_cast<double>(plan.after.admitted_gpu_milli);
  const double bound = both.bound_milli;
  out +=
      fmt::format("bound: {:.0f} GPU milli ({:.2f}%), the smaller of the two; the plan admits {:.0f}, {:.1f}% of it\n",
                  bound, pct(bound), gained, bound > 0 ? 100.0 * gained / bound : 100.0);
  const struct {
    const char* name;
    bool BoundOptions::*flag;
  } families[] = {{"cpu", &BoundOptions::cpu},
                  {"memory", &BoundOptions::memory},
                  {"gpu packing", &BoundOptions::gpu_packing},
                  {"move budget", &BoundOptions::budget}};
  for (const auto& fam : families) {
    BoundOptions o;
    o.*(fam.flag) = false;
    fmt::print(stderr, "bound: the LP without {} ...\n", fam.name);
    const DefragBound w = defrag_bound(state, goal, budget, infos, o);
    if (w.solved)
      out += fmt::format("bound without {}: {:.0f} GPU milli ({:.2f}%)\n", fam.name, w.admitted_milli,
                         pct(w.admitted_milli));
  }
  return out;
}

std::string new_plan_id() {
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  return fmt::format("{:%Y%m%d-%H%M%S}-{:x}", now, static_cast<unsigned>(::getpid()) & 0xffffu);
}

// One plan and, with --apply, its execution. `moves_cap` (-1 = none) caps
// the budget further (periodic mode's rolling budget); with `trigger`
// (periodic mode) the round does nothing unless it fires. Returns the moves
// carried out (--apply) or planned.
int plan_round(const DefragFlags& f, int moves_cap, const TriggerOptions* trigger, const LiveCluster* live) {
  DefragGoal goal;
  goal.kind = parse_goal_kind(f.goal);
  goal.gang = f.gang;
  if (f.max_moves_per_gpu >= 0 && (goal.kind != GoalKind::kAdmitPending || goal.gang))
    throw std::invalid_argument(
        "--max-moves-per-gpu needs --goal admit without --gang (it weighs moves against GPUs admitted)");
  LiveDefragInput in = load_input(f, live);
  Snapshot& snap = in.snapshot;
  if (trigger != nullptr) {
    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    const TriggerDecision d = should_defrag(snap.state, in.pods, now, *trigger);
    if (!d.fire) {
      fmt::print("nothing to do: fragmentation {:.2f}%, longest wait of a {}+ GPU pending pod {} s\n", d.frag_pct,
                 trigger->large_gpus, d.longest_wait_s);
      return 0;
    }
    fmt::print("planning: {}\n", d.why);
  }
  goal.frag_threshold_pct = std::max(0.0, f.frag_below);
  if (goal.kind == GoalKind::kAdmitPending) goal.pending = snap.pending;
  goal.target = snapshot_target(snap);

  DefragBudget budget;
  budget.max_moves = f.max_moves;
  if (f.max_moves_pct >= 0) {
    const int by_pct = static_cast<int>(f.max_moves_pct / 100.0 * snap.state.bound_pod_count() + 1e-9);
    budget.max_moves = budget.max_moves < 0 ? by_pct : std::min(budget.max_moves, by_pct);
  }
  if (moves_cap >= 0) budget.max_moves = budget.max_moves < 0 ? moves_cap : std::min(budget.max_moves, moves_cap);
  budget.max_moved_gpu_milli = f.max_moved_gpus < 0 ? -1 : f.max_moved_gpus * kGpuMilliPerGpu;
  budget.max_cost = f.max_cost;
  budget.max_unavailable = snap.max_unavailable;

  PlannerOptions opt;
  opt.time_limit_s = f.time_limit;
  opt.refine = !f.no_refine;
  opt.swaps = !f.no_swaps;
  opt.chains = !f.no_chains;
  opt.max_moves_per_gpu = f.max_moves_per_gpu;
  opt.local_search = !f.no_local_search;
  opt.threads = f.threads;
  auto policy = make_policy(f.policy, {42, goal.target});
  const DefragPlan plan = plan_by_method(f.method, snap.state, goal, budget, snap.infos, *policy, {}, opt);
  if (f.apply) {
    fmt::print("{}{}", format_plan_table(plan, snap.state, snap.infos), held_summary(in.held));
    if (plan.steps.empty()) {
      fmt::print("nothing to apply\n");
      return 0;
    }
    ExecJournal journal = make_journal(plan, in.pods, snap.state, new_plan_id(), live->config.server);
    write_journal(f.journal, journal);
    journal = run_executor(f, *live->client, live->config.server, std::move(journal), trigger != nullptr);
    int moved = 0;
    for (const ExecStep& s : journal.steps) moved += s.kind != "admit" && s.state == "done";
    return moved;
  }

  std::string text;
  if (f.format == "table") {
    text = format_plan_table(plan, snap.state, snap.infos);
    text += held_summary(in.held);
    if (f.bound) text += bound_report(snap.state, goal, budget, snap.infos, plan);
  }
  if (f.format == "json") {
    nlohmann::json j = plan_to_json(plan, snap.state, snap.infos);
    if (f.bound) j["bound"] = bound_json(bounds_for(snap.state, goal, budget, snap.infos, plan));
    text = j.dump(2) + "\n";
  }
  if (f.format == "evictions") text = eviction_list(plan, snap.state, snap.infos).dump(2) + "\n";
  if (f.out.empty()) {
    fmt::print("{}", text);
  } else {
    std::ofstream out(f.out);
    out << text;
    out.flush();
    if (!out) throw std::runtime_error(fmt::format("{}: cannot write file", f.out));
  }
  return plan.moves();
}

// "30m", "90s", "1h", "2.5" (seconds) -> seconds; throws naming the flag.
double parse_duration_s(const std::string& text, const std::string& flag) {
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (used == 0 || scale < 0 || v < 0)
    throw std::invalid_argument(fmt::format("{} '{}': expected a duration such as 90s, 30m, 1h", flag, text));
  return v * scale;
}

// --every: a round every interval until stopped (or --rounds), within a
// rolling budget of moves per hour.
void run_periodic(const DefragFlags& f) {
  if (!f.state.empty() || !f.nodes.empty() || !f.pods.empty())
    throw std::invalid_argument("--every plans the live cluster: give --kubeconfig, --context or --live");
  const double every_s = parse_duration_s(f.every, "--every");
  if (every_s <= 0) throw std::invalid_argument("--every must be above 0");
  TriggerOptions trigger;
  trigger.frag_above_pct = f.frag_above;
  trigger.wait_bound_s =
      f.wait_bound.empty() ? -1 : static_cast<int64_t>(parse_duration_s(f.wait_bound, "--wait-bound"));
  trigger.large_gpus = f.large_gpus;
  RollingBudget rolling(f.max_moves_per_hour, 3600);
  const LiveCluster live = connect(f);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  for (int round = 1; (f.rounds == 0 || round <= f.rounds) && !g_stop_requested; ++round) {
    if (round > 1) {
      const auto until = std::chrono::steady_clock::now() + ms(every_s);
      while (!g_stop_requested && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (g_stop_requested) break;
    }
    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    const int left = rolling.left(now);
    fmt::print("round {} ({}){}\n", round, format_rfc3339(std::chrono::system_clock::now()),
               left < 0 ? "" : fmt::format(": {} moves left this hour", left));
    std::fflush(stdout);
    const int moved = plan_round(f, left, &trigger, &live);
    if (f.apply) rolling.spend(now, moved);
    std::fflush(stdout);
  }
}

void run_defrag(const DefragFlags& f) {
  if (f.resume || f.release) {
    if (f.resume && f.release) throw std::invalid_argument("--resume and --release exclude each other");
    if (!f.state.empty() || !f.nodes.empty() || !f.pods.empty())
      throw std::invalid_argument(
          "--resume/--release act on the live cluster the journal names (--kubeconfig, "
          "--context or --live)");
    LiveCluster c = connect(f);
    (void)run_executor(f, *c.client, c.config.server, std::nullopt);
    return;
  }
  if (f.apply) {
    if (!f.state.empty() || !f.nodes.empty() || !f.pods.empty())
      throw std::invalid_argument(
          "--apply carries a plan out on the live cluster: give --kubeconfig, --context or "
          "--live, not --state or files");
    if (std::filesystem::exists(f.journal)) {
      const ExecJournal old = read_journal(f.journal);
      if (old.unfinished())
        throw std::invalid_argument(fmt::format(
            "journal {} holds plan {}, not finished ({} of {} steps final): --resume continues it, --release "
            "releases its reservations",
            f.journal, old.plan_id, old.count("done") + old.count("skipped") + old.count("failed"), old.steps.size()));
    }
  }
  if (f.format != "table" && f.format != "json" && f.format != "evictions")
    throw std::invalid_argument(fmt::format("--format '{}': expected table, json or evictions", f.format));
  if (f.max_moves_pct > 100)
    throw std::invalid_argument(fmt::format("--max-moves-pct {} is above 100", f.max_moves_pct));
  if (parse_goal_kind(f.goal) == GoalKind::kFragBelow && f.frag_below < 0)
    throw std::invalid_argument(
        "--goal frag needs --frag-below PCT (the FGD fragmentation to reach, % of GPU capacity)");
  if (!f.every.empty()) {
    run_periodic(f);
    return;
  }
  const std::optional<LiveCluster> live = live_source(f) ? std::optional<LiveCluster>(connect(f)) : std::nullopt;
  (void)plan_round(f, -1, nullptr, live ? &*live : nullptr);
}
}  // namespace

void add_defrag_command(CLI::App& app) {
  auto flags = std::make_shared<DefragFlags>();
  auto* cmd = app.add_subcommand("defrag", "plan pod moves that defragment a cluster (saved, live or kubectl JSON)");
  cmd->add_option("--state", flags->state, "cluster state (gpupack-state/v1 JSON, e.g. from simulate --save-state)");
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "plan for the live cluster with this kubeconfig (see --live for the default search)");
  cmd->add_option("--context", flags->context, "kubeconfig context to use instead of current-context");
  cmd->add_flag("--live", flags->live,
                "plan for the live cluster found as kubectl finds it (KUBECONFIG, ~/.kube/config, in-cluster)");
  cmd->add_option("--nodes", flags->nodes, "`kubectl get nodes -o json` output (instead of --state or the API)");
  cmd->add_option("--pods", flags->pods, "`kubectl get pods -A -o json` output");
  cmd->add_option("--pdbs", flags->pdbs, "`kubectl get pdb -A -o json` output (PodDisruptionBudgets)");
  cmd->add_option("--exempt-label", flags->exempt_label, "KEY=VALUE: pods with this label are never moved ('' = none)")
      ->capture_default_str();
  cmd->add_option("--goal", flags->goal, "admit (the pending pods), free-gpus, free-nodes or frag")
      ->capture_default_str();
  cmd->add_flag("--gang", flags->gang, "with --goal admit: admit all pending pods or none");
  // -1 (the default) = no limit; anything else below 0 is a mistake.
  const CLI::Validator no_limit_or_nonnegative(
      [](std::string& v) -> std::string {
        const double x = std::stod(v);
        return x == -1 || x >= 0 ? "" : "must be -1 (no limit) or at least 0";
      },
      "-1|>=0");
  cmd->add_option("--frag-below", flags->frag_below, "with --goal frag: target FGD fragmentation, % of GPU capacity")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--max-moves", flags->max_moves, "at most this many pod moves (-1 = no limit)")
      ->capture_default_str()
      ->check(no_limit_or_nonnegative);
  cmd->add_option("--max-moves-pct", flags->max_moves_pct, "at most this % of running pods moved")
      ->check(no_limit_or_nonnegative);
  cmd->add_option("--max-moved-gpus", flags->max_moved_gpus, "at most this many GPUs' worth of pods moved")
      ->check(no_limit_or_nonnegative);
  cmd->add_option("--max-cost", flags->max_cost, "at most this summed move cost")->check(no_limit_or_nonnegative);
  cmd->add_option("--max-moves-per-gpu", flags->max_moves_per_gpu,
                  "with --goal admit: at most this many moves per GPU admitted; admissions that cost more are "
                  "dropped with the moves only they need (-1 = no limit)")
      ->check(no_limit_or_nonnegative);
  cmd->add_option("--method", flags->method, defrag_method_name_list())->capture_default_str();
  cmd->add_option("--policy", flags->policy, "policy that re-places evicted pods (descheduler methods)")
      ->capture_default_str();
  cmd->add_option("--time-limit", flags->time_limit, "stop the planner's search after this many seconds (0 = none)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--threads", flags->threads,
                  "planner: threads for its two independent searches (1 or 2; the plan is the same either way)")
      ->capture_default_str()
      ->check(CLI::Range(1, 2));
  cmd->add_flag("--bound", flags->bound,
                "with --goal admit: also print the LP bound on what any plan could admit, and the bound with each "
                "constraint family dropped");
  cmd->add_flag("--no-local-search", flags->no_local_search, "planner: skip the second search with chained moves");
  cmd->add_flag("--no-refine", flags->no_refine,
                "planner: keep moves the admissions do not need instead of dropping and re-spending them");
  cmd->add_flag("--no-swaps", flags->no_swaps,
                "planner: no swaps (two pods trading GPUs, one of them parked: evicted before its target frees)");
  cmd->add_flag("--no-chains", flags->no_chains,
                "planner: no chains (a pod leaving along up to 6 moves, each into the hole the next one frees; a "
                "cycle parks its first pod)");
  cmd->add_option("--format", flags->format, "table, json or evictions (Kubernetes List of Eviction)")
      ->capture_default_str();
  cmd->add_option("-o,--out", flags->out, "write the plan here instead of stdout");
  cmd->add_flag("--apply", flags->apply,
                "carry the plan out on the live cluster (reserve, then surge or evict, wait for the new pod), step by "
                "step; without it the plan is only printed");
  cmd->add_option("--journal", flags->journal, "with --apply: the journal of the plan being applied")
      ->capture_default_str();
  cmd->add_flag("--resume", flags->resume, "continue the unfinished plan of --journal");
  cmd->add_flag("--release", flags->release, "release the reservations of the unfinished plan of --journal");
  cmd->add_option("--interval", flags->interval_s, "with --apply: seconds between moves (a rate limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--poll", flags->poll_s, "with --apply: seconds between reads while waiting")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--step-timeout", flags->step_timeout_s,
                  "with --apply: seconds a replacement may take to run before its step fails")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--retry-429", flags->retry_429_s,
                  "with --apply: seconds between evictions a budget refused (HTTP 429)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-429-retries", flags->max_429_retries,
                  "with --apply: retries of a refused eviction before the "
                  "step is skipped")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--surge", flags->surge,
                  "with --apply: auto = make-before-break where the pod's owner can surge (a Deployment's or bare "
                  "ReplicaSet's pod: scale up by one, wait for the new pod on the target, scale back down, removing "
                  "the old pod); never = always evict, then wait for the replacement")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "never"}));
  cmd->add_option("--reservation-ttl", flags->reservation_ttl_s,
                  "with --apply: seconds a reservation holds GPUs if the executor dies")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--every", flags->every,
                  "plan (and with --apply, apply) every DURATION (90s, 30m, 1h) until stopped; see --frag-above, "
                  "--wait-bound, --max-moves-per-hour");
  cmd->add_option("--rounds", flags->rounds, "with --every: stop after this many rounds (0 = until stopped)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--frag-above", flags->frag_above,
                  "with --every: plan only when the FGD fragmentation is above this % of GPU capacity")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--wait-bound", flags->wait_bound,
                  "with --every: plan only when a pending pod of --large-gpus GPUs or more has waited this long (30m)");
  cmd->add_option("--large-gpus", flags->large_gpus, "with --every: the GPUs that make a pending pod large")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-moves-per-hour", flags->max_moves_per_hour,
                  "with --every: at most this many moves in any hour, all rounds together (-1 = no limit)")
      ->capture_default_str()
      ->check(no_limit_or_nonnegative);
  cmd->add_option("--metrics-file", flags->metrics_file,
                  "with --apply: keep this file's Prometheus text (steps by state) current (node_exporter textfile)");
  cmd->callback([flags] { run_defrag(*flags); });
}

}  // namespace gpupack::cli
