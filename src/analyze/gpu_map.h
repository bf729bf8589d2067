// The GPU map: every node and GPU of a ClusterState with what holds it, for
// `gpupack serve`'s /ui page and the report.html of `simulate` and `analyze`.
//
// Contract:
// - gpu_map_json() reads the state and the ClusterMetrics computed from it
//   (frag/cluster_metrics.h; same order of nodes and GPUs): per node its
//   model, allocated and capacity milli, FGD fragmentation (milli, as the
//   metrics computed it); per GPU allocated milli, GPU memory (allocated, capacity),
//   whether it is stranded (and its stranded memory), the pods on it with
//   their share, and on a MIG GPU its instances in their real slot positions
//   (profile, start slice, slices, busy); MIG devices a node advertises only
//   as counts (from Kubernetes) are per node (profile, used, total). Pools,
//   cluster totals and pending
//   pods by reason come from the metrics and `pending_reasons`; the GPU and
//   GPU-node counts from the metrics' totals and stranded GPUs from the
//   pools, so the totals hold when
//   the metrics have no per-node detail (cluster_metrics per_node = false):
//   then `nodes` is empty and cluster.nodes_omitted counts the GPU nodes left
//   out, which the page says. Pod names are
//   pod_names[PodId] ("" or out of range: "pod <id>"). Nodes without GPUs or
//   MIG devices are left out, as in the metrics.
// - gpu_map_page() is one self-contained HTML page (no network: styles and
//   script inline) that draws such a JSON: with `embedded` the data is in the
//   page (a report); without, the page fetches `state_url` every
//   `refresh_s` seconds (live). Each GPU is one element of class "gpu"
//   (plus "stranded" when stranded) with data-node and data-gpu, so a
//   browser test can count and find them.
// - Pure; O(GPUs + bound pods) once the metrics are computed.
#pragma once

#include <map>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "frag/cluster_metrics.h"
#include "frag/fgd.h"
#include "model/cluster_state.h"

namespace gpupack {

nlohmann::json gpu_map_json(const ClusterState& state, const ClusterMetrics& metrics,
                            std::span<const std::string> pod_names,
                            const std::map<std::string, int>& pending_reasons = {});

// JSON that can stand inside a <script> element ("</script>" cannot occur:
// every '<' is written \u003c).
std::string script_json(const nlohmann::json& value);

std::string gpu_map_page(const std::string& title, const nlohmann::json* embedded, const std::string& state_url = "",
                         int refresh_s = 2);

}  // namespace gpupack
