#include "defrag/budget.h"

#include <algorithm>

namespace gpupack {

const char* move_kind_name(MoveKind k) {
  switch (k) {
    case MoveKind::kRemap:
      return "remap";
    case MoveKind::kMigrate:
      return "migrate";
    case MoveKind::kEvict:
      return "evict";
    case MoveKind::kAdmit:
      return "admit";
    case MoveKind::kLand:
      return "land";
  }
  return "?";
}

const PodMoveInfo& move_info(const PodMoveInfos& infos, PodId pod) {
  static const PodMoveInfo kDefault;
  return index(pod) < infos.size() ? infos[index(pod)] : kDefault;
}

std::string pod_display_name(const PodMoveInfos& infos, PodId pod) {
  const PodMoveInfo& info = move_info(infos, pod);
  return info.name.empty() ? "pod-" + std::to_string(static_cast<int>(pod)) : info.name;
}

MoveKind classify_move(const PodMoveInfo& info, NodeId from, NodeId to) {
  if (from == to) return MoveKind::kRemap;
  return info.checkpointable ? MoveKind::kMigrate : MoveKind::kEvict;
}

double move_cost(const PodMoveInfo& info, MoveKind kind) {
  if (!is_move(kind)) return 0;
  return info.checkpointable ? info.restart_cost * kCheckpointCostFactor : info.restart_cost;
}

void BudgetUse::add(PodId pod, const PodMoveInfo& info, int64_t milli, double c) {
  ++moves;
  moved_gpu_milli += milli;
  cost += c;
  if (!info.group.empty()) {
    auto& v = moved_by_group[info.group];
    if (std::find(v.begin(), v.end(), pod) == v.end()) v.push_back(pod);
  }
}

bool BudgetUse::within(const DefragBudget& b) const {
  if (b.max_moves >= 0 && moves > b.max_moves) return false;
  if (b.max_moved_gpu_milli >= 0 && moved_gpu_milli > b.max_moved_gpu_milli) return false;
  if (b.max_cost >= 0 && cost > b.max_cost + 1e-9) return false;
  for (const auto& [group, pods] : moved_by_group) {
    auto it = b.max_unavailable.find(group);
    if (it != b.max_unavailable.end() && static_cast<int>(pods.size()) > it->second) return false;
  }
  return true;
}

DefragBudget remaining_budget(const DefragBudget& budget, const BudgetUse& use) {
  DefragBudget b;
  b.max_moves = budget.max_moves < 0 ? -1 : std::max(0, budget.max_moves - use.moves);
  b.max_moved_gpu_milli =
      budget.max_moved_gpu_milli < 0 ? -1 : std::max<int64_t>(0, budget.max_moved_gpu_milli - use.moved_gpu_milli);
  b.max_cost = budget.max_cost < 0 ? -1 : std::max(0.0, budget.max_cost - use.cost);
  for (const auto& [group, limit] : budget.max_unavailable) {
    auto it = use.moved_by_group.find(group);
    const int used = it == use.moved_by_group.end() ? 0 : static_cast<int>(it->second.size());
    b.max_unavailable[group] = std::max(0, limit - used);
  }
  return b;
}

}  // namespace gpupack
