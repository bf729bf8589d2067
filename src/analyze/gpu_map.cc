#include "analyze/gpu_map.h"

#include <fmt/format.h>

#include <unordered_map>
#include <vector>

#include "mig/mig_geometry.h"
#include "mig/mig_slots.h"
#include "util/strings.h"

namespace gpupack {

namespace {

std::string pod_label(std::span<const std::string> names, PodId p) {
  const size_t i = index(p);
  return i < names.size() && !names[i].empty() ? names[i] : fmt::format("pod {}", i);
}

}  // namespace

nlohmann::json gpu_map_json(const ClusterState& state, const ClusterMetrics& metrics,
                            std::span<const std::string> pod_names, const std::map<std::string, int>& pending_reasons) {
  using nlohmann::json;
  // Totals from the metrics' counts and pools, kept at any size.
  int stranded = 0;
  for (const ClusterMetrics::Pool& p : metrics.pools) stranded += p.stranded_gpus;
  std::unordered_map<std::string_view, NodeId> node_of;
  // Pods per GPU: (name, milli) in bind order.
  std::unordered_map<uint64_t, std::vector<std::pair<std::string, int>>> on_gpu;
  auto gpu_key = [](NodeId n, int g) { return (static_cast<uint64_t>(index(n)) << 8) | static_cast<uint64_t>(g); };
  // Without per-node metrics (a cluster above the per-node limit) there is
  // nothing to draw per node: only the totals.
  std::vector<PodId> bound;
  if (!metrics.nodes.empty()) {
    bound = state.bound_pods();
    for (int n = 0; n < state.node_count(); ++n) node_of.emplace(state.node_name(NodeId{n}), NodeId{n});
  }
  for (PodId p : bound) {
    const Assignment& a = state.assignment(p);
    for (int g = 0; g < 32; ++g) {
      if (!((a.gpu_mask >> g) & 1u)) continue;
      const int milli = a.mig_profile >= 0 ? 0 : (a.gpu_milli > 0 ? a.gpu_milli : 1000);
      on_gpu[gpu_key(a.node, g)].emplace_back(pod_label(pod_names, p), milli);
    }
  }
  json nodes = json::array();
  size_t next_gpu = 0;
  for (const ClusterMetrics::Node& mn : metrics.nodes) {
    auto it = node_of.find(mn.name);
    if (it == node_of.end()) continue;
    const NodeId n = it->second;
    json gpus = json::array();
    for (; next_gpu < metrics.gpus.size() && metrics.gpus[next_gpu].node == mn.name; ++next_gpu) {
      const ClusterMetrics::Gpu& mg = metrics.gpus[next_gpu];
      json g = {{"i", mg.gpu},
                {"alloc_milli", mg.allocated_milli},
                {"mem_alloc_mib", mg.allocated_memory_mib},
                {"mem_mib", mg.memory_mib},
                {"stranded", mg.stranded},
                {"stranded_mem_mib", mg.stranded_memory_mib}};
      json pods = json::array();
      if (auto p = on_gpu.find(gpu_key(n, mg.gpu)); p != on_gpu.end())
        for (const auto& [name, milli] : p->second) pods.push_back({{"name", name}, {"milli", milli}});
      g["pods"] = std::move(pods);
      if (const MigGpuState* mig = state.mig_state(n, mg.gpu)) {
        const MigGeometry& geo = mig->geometry();
        const bool fixed = state.mig_fixed_layout(n, mg.gpu);
        const uint8_t busy = state.mig_busy_starts(n, mg.gpu);
        json inst = json::array();
        for (const MigPlacement& m : mig->instances()) {
          const MigProfile& prof = geo.profile(m.profile);
          inst.push_back({{"profile", prof.name},
                          {"start", m.start},
                          {"slices", prof.memory_slices},
                          {"busy", !fixed || ((busy >> m.start) & 1u) != 0}});
        }
        g["mig"] = {{"slices", geo.memory_slices}, {"instances", std::move(inst)}};
      }
      gpus.push_back(std::move(g));
    }
    // MIG devices a node advertises as counts (the device plugin's mixed
    // strategy): no slot positions are known, only how many are in use.
    json mig_devices = json::array();
    for (const auto& [profile, used_total] : mn.mig)
      mig_devices.push_back({{"profile", profile}, {"used", used_total.first}, {"total", used_total.second}});
    nodes.push_back({{"name", mn.name},
                     {"model", mn.model},
                     {"mig_devices", std::move(mig_devices)},
                     {"alloc_milli", mn.allocated_milli},
                     {"capacity_milli", mn.capacity_milli},
                     {"frag_milli", mn.fragmentation_milli},
                     {"gpus", std::move(gpus)}});
  }
  json pools = json::array();
  for (const ClusterMetrics::Pool& p : metrics.pools)
    pools.push_back({{"model", p.model},
                     {"capacity_milli", p.capacity_milli},
                     {"free_milli", p.free_milli},
                     {"frag_milli", p.fragmentation_milli},
                     {"stranded_gpus", p.stranded_gpus}});
  json pending = json::array();
  int pending_total = 0;
  for (const auto& [reason, count] : pending_reasons) {
    pending.push_back({{"reason", reason}, {"pods", count}});
    pending_total += count;
  }
  return {{"cluster",
           {{"capacity_milli", state.gpu_capacity_milli()},
            {"alloc_milli", state.gpu_used_milli()},
            {"frag_milli", metrics.cluster_fragmentation_milli},
            {"free_milli", metrics.cluster_free_milli},
            {"gpus", metrics.gpu_total},
            {"stranded_gpus", stranded},
            {"gpu_nodes", metrics.gpu_nodes},
            {"nodes_omitted", metrics.gpu_nodes - static_cast<int>(nodes.size())},
            {"bound_pods", state.bound_pod_count()},
            {"pending_pods", pending_total}}},
          {"pools", std::move(pools)},
          {"pending", std::move(pending)},
          {"nodes", std::move(nodes)}};
}

namespace {

// The page: styles and the renderer, shared by the live view and reports.
constexpr std::string_view kStyle = R"css(
body{font:13px/1.35 system-ui,-apple-system,"Segoe UI",sans-serif;margin:16px;color:#1d2330;background:#f6f7f9}
h1{font-size:18px;margin:0 0 4px} h2{font-size:14px;margin:18px 0 6px}
.sub{color:#5b6475;margin-bottom:10px}
.cards{display:flex;gap:10px;flex-wrap:wrap;margin:8px 0}
.card{background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:6px 10px;min-width:110px}
.card b{display:block;font-size:17px}
table{border-collapse:collapse;background:#fff;margin:4px 0}
td,th{border:1px solid #dde1e8;padding:3px 8px;text-align:right} th{background:#eef0f4} td:first-child,th:first-child{text-align:left}
.tools{margin:10px 0;display:flex;gap:10px;align-items:center}
.legend span{display:inline-block;width:12px;height:12px;vertical-align:middle;margin:0 4px 0 10px;border:1px solid #8892a6}
.nodes{display:flex;flex-wrap:wrap;gap:6px}
.node{background:#fff;border:1px solid #dde1e8;border-radius:5px;padding:4px 5px}
.node .h{font-size:11px;color:#39414f;white-space:nowrap;display:flex;justify-content:space-between;gap:6px}
.node .f{color:#a23b2a}
.gpus{display:flex;gap:2px;margin-top:3px}
.gpu{position:relative;width:16px;height:30px;background:#e9ecf1;border:1px solid #b9c0cc;border-radius:2px;overflow:hidden}
.gpu .c{position:absolute;left:0;bottom:0;width:10px;background:#3b6fd8}
.gpu .m{position:absolute;right:0;bottom:0;width:5px;background:#37a07a}
.gpu.stranded{border:2px solid #d43c2c;background:repeating-linear-gradient(45deg,#fbe3df,#fbe3df 3px,#fff 3px,#fff 6px)}
.gpu.mig{width:22px;background:#f1f3f6}
.gpu .s{position:absolute;left:1px;right:1px;border-top:1px solid #fff;background:#9aa7bd}
.gpu .s.busy{background:#7a4fc9}
.mds{font-size:10px;color:#5b6475;margin-top:3px;white-space:nowrap}
.md{display:inline-block;width:7px;height:10px;margin-right:1px;background:#dfe3ea;border:1px solid #b9c0cc;vertical-align:middle}
.md.busy{background:#7a4fc9}
)css";

constexpr std::string_view kScript = R"js(
function esc(s){return String(s).replace(/[&<>"']/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]));}
function pct(a,b){return b>0?(100*a/b).toFixed(1)+'%':'-';}
function gpus(m){return (m/1000).toFixed(m%1000?2:0);}
function render(d){
  const root=document.getElementById('map');
  const c=d.cluster;
  const q=(document.getElementById('q')||{}).value||'';
  const sort=(document.getElementById('sort')||{}).value||'name';
  let h='<div class="cards">'+
    '<div class="card">GPU allocated<b>'+pct(c.alloc_milli,c.capacity_milli)+'</b>'+gpus(c.alloc_milli)+' of '+gpus(c.capacity_milli)+'</div>'+
    '<div class="card">Fragmentation<b>'+pct(c.frag_milli,c.free_milli)+'</b>'+gpus(Math.round(c.frag_milli))+' GPUs of the free</div>'+
    '<div class="card">Stranded GPUs<b id="stranded-count">'+c.stranded_gpus+'</b>of '+c.gpus+'</div>'+
    '<div class="card">Pods<b>'+c.bound_pods+'</b>'+c.pending_pods+' pending</div></div>';
  h+='<h2>Pools</h2><table><tr><th>model</th><th>GPUs</th><th>free</th><th>fragmentation</th><th>stranded GPUs</th></tr>';
  for(const p of d.pools) h+='<tr><td>'+esc(p.model)+'</td><td>'+gpus(p.capacity_milli)+'</td><td>'+gpus(p.free_milli)+
    '</td><td>'+pct(p.frag_milli,p.free_milli)+'</td><td>'+p.stranded_gpus+'</td></tr>';
  h+='</table>';
  if(d.pending.length){
    h+='<h2>Pending pods</h2><table><tr><th>reason</th><th>pods</th></tr>';
    for(const p of d.pending) h+='<tr><td>'+esc(p.reason)+'</td><td>'+p.pods+'</td></tr>';
    h+='</table>';
  }
  let nodes=d.nodes.filter(n=>!q||n.name.includes(q)||n.model.includes(q));
  if(sort==='frag') nodes=nodes.slice().sort((a,b)=>b.frag_milli-a.frag_milli);
  if(sort==='alloc') nodes=nodes.slice().sort((a,b)=>b.alloc_milli/b.capacity_milli-a.alloc_milli/a.capacity_milli);
  if(c.nodes_omitted>0) h+='<p class="omitted" id="nodes-omitted">'+c.nodes_omitted+' of '+c.gpu_nodes+
    ' GPU nodes are not drawn: the cluster is above the per-node limit (serve --metrics-max-nodes).</p>';
  h+='<h2>Nodes ('+nodes.length+')</h2><div class="nodes">';
  for(const n of nodes){
    h+='<div class="node" title="'+esc(n.name+' ('+n.model+'): '+gpus(n.alloc_milli)+' of '+gpus(n.capacity_milli)+
      ' GPUs allocated, fragmentation '+gpus(Math.round(n.frag_milli))+' GPUs')+'"><div class="h"><span>'+esc(n.name)+
      '</span><span class="f">'+(n.frag_milli>=1?gpus(Math.round(n.frag_milli)):'')+'</span></div><div class="gpus">';
    for(const g of n.gpus){
      const cls='gpu'+(g.stranded?' stranded':'')+(g.mig?' mig':'');
      let tip=n.name+' GPU '+g.i+': '+g.alloc_milli+'/1000 compute';
      if(g.mem_mib) tip+=', memory '+g.mem_alloc_mib+'/'+g.mem_mib+' MiB';
      if(g.stranded) tip+=', STRANDED ('+g.stranded_mem_mib+' MiB no pending pod can use)';
      for(const p of g.pods) tip+='\n'+p.name+(p.milli&&p.milli<1000?' '+p.milli+'m':'');
      h+='<div class="'+cls+'" data-node="'+esc(n.name)+'" data-gpu="'+g.i+'" title="'+esc(tip)+'">';
      if(g.mig){
        const s=g.mig.slices;
        for(const m of g.mig.instances){
          h+='<div class="s'+(m.busy?' busy':'')+'" title="'+esc(m.profile+' @'+m.start)+'" style="top:'+
            (100*m.start/s)+'%;height:'+(100*m.slices/s)+'%"></div>';
        }
      }else{
        h+='<div class="c" style="height:'+(g.alloc_milli/10)+'%"></div>';
        if(g.mem_mib) h+='<div class="m" style="height:'+(100*g.mem_alloc_mib/g.mem_mib)+'%"></div>';
      }
      h+='</div>';
    }
    h+='</div>';
    for(const m of (n.mig_devices||[])){
      h+='<div class="mds" title="'+esc(n.name+': '+m.used+' of '+m.total+' '+m.profile+' MIG devices in use')+'">'+esc(m.profile)+' ';
      for(let k=0;k<m.total;k++) h+='<span class="md'+(k<m.used?' busy':'')+'"></span>';
      h+='</div>';
    }
    h+='</div>';
  }
  h+='</div>';
  root.innerHTML=h;
}
)js";

}  // namespace

std::string script_json(const nlohmann::json& value) {
  std::string out;
  for (char ch : value.dump()) {
    if (ch == '<') {
      out += "\\u003c";
    } else {
      out += ch;
    }
  }
  return out;
}

std::string gpu_map_page(const std::string& title, const nlohmann::json* embedded, const std::string& state_url,
                         int refresh_s) {
  const std::string escaped_title = html_escape(title);
  std::string out = "<!doctype html><html><head><meta charset=\"utf-8\"><title>" + escaped_title + "</title><style>";
  out += kStyle;
  out += "</style></head><body><h1>" + escaped_title +
         "</h1><div class=\"sub\" id=\"sub\"></div>"
         "<div class=\"tools\"><input id=\"q\" placeholder=\"filter nodes\" oninput=\"redraw()\">"
         "<select id=\"sort\" onchange=\"redraw()\"><option value=\"name\">by name</option>"
         "<option value=\"frag\">by fragmentation</option><option value=\"alloc\">by allocation</option></select>"
         "<span class=\"legend\"><span style=\"background:#3b6fd8\"></span>compute"
         "<span style=\"background:#37a07a\"></span>memory<span style=\"background:#7a4fc9\"></span>MIG instance in use"
         "<span style=\"border:2px solid #d43c2c\"></span>stranded</span></div><div id=\"map\"></div><script>";
  out += kScript;
  if (embedded != nullptr) {
    out += "const DATA=" + script_json(*embedded) +
           ";function redraw(){render(DATA);}redraw();"
           "document.getElementById('sub').textContent='report';";
  } else {
    out += fmt::format(
        "let last=null;function redraw(){{if(last)render(last);}}"
        "const tok=new URLSearchParams(location.hash.slice(1)).get('token');"
        "async function tick(){{try{{const r=await fetch('{}',{{cache:'no-store',"
        "headers:tok?{{Authorization:'Bearer '+tok}}:{{}}}});"
        "if(!r.ok)throw new Error('HTTP '+r.status);last=await r.json();redraw();"
        "document.getElementById('sub').textContent='live, updated '+new Date().toLocaleTimeString();}}"
        "catch(e){{document.getElementById('sub').textContent='update failed: '+e.message;}}}}"
        "tick();setInterval(tick,{});",
        state_url, refresh_s * 1000);
  }
  out += "</script></body></html>\n";
  return out;
}

}  // namespace gpupack
