// deploy/ manifests parse, reference each other consistently, run hardened
// (securityContext, separate service accounts, one scheduler at a time, a
// NetworkPolicy in front of the extender), grant exactly the API rights the
// code uses, embed a scheduler config that passes the schema checker, and the
// monitoring objects (PrometheusRule, Grafana dashboard) query only metrics
// `gpupack serve` exports.
#include <gtest/gtest.h>

#include <filesystem>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "io/k8s_config.h"
#include "server/metrics.h"

namespace gpupack {
namespace {

const std::string kDeploy = std::string(GPUPACK_SOURCE_DIR) + "/deploy/";

std::string str(const YAML::Node& n) { return n && n.IsScalar() ? n.Scalar() : std::string(); }

std::vector<YAML::Node> load(const std::string& file) { return YAML::LoadAllFromFile(kDeploy + file); }

// Every object a kustomization directory renders from its `resources` (files
// and sub-directories), as `kubectl kustomize` would before its transformers.
void collect(const std::string& dir, std::vector<YAML::Node>& out) {
  YAML::Node k = YAML::LoadFile(kDeploy + dir + "/kustomization.yaml");
  for (const auto& r : k["resources"]) {
    const std::string res = str(r);
    if (res.size() > 5 && (res.ends_with(".yaml") || res.ends_with(".yml"))) {
      for (const auto& d : load(dir + "/" + res)) out.push_back(d);
    } else {
      collect(dir + "/" + res, out);
    }
  }
}

std::vector<YAML::Node> kit(const std::string& dir = "base") {
  std::vector<YAML::Node> docs;
  collect(dir, docs);
  return docs;
}

YAML::Node find(const std::vector<YAML::Node>& docs, const std::string& kind, const std::string& name) {
  for (const auto& d : docs) {
    if (str(d["kind"]) == kind && str(d["metadata"]["name"]) == name) return d;
  }
  return YAML::Node();
}

std::vector<YAML::Node> all_of(const std::vector<YAML::Node>& docs, const std::string& kind) {
  std::vector<YAML::Node> out;
  for (const auto& d : docs) {
    if (str(d["kind"]) == kind) out.push_back(d);
  }
  return out;
}

// "group/resource:verb" (core group: empty) for each grant of a role; a rule
// restricted to resourceNames gets a "[names]" suffix.
std::set<std::string> grants(const YAML::Node& role) {
  std::set<std::string> out;
  for (const auto& rule : role["rules"]) {
    std::string names;
    for (const auto& n : rule["resourceNames"]) names += (names.empty() ? "" : ",") + str(n);
    for (const auto& g : rule["apiGroups"]) {
      for (const auto& r : rule["resources"]) {
        for (const auto& v : rule["verbs"]) {
          out.insert(str(g) + "/" + str(r) + ":" + str(v) + (names.empty() ? "" : "[" + names + "]"));
        }
      }
    }
  }
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// --- RBAC ----------------------------------------------------------------------

// What gpupack serve does against the API server, and the grant each call
// needs. Keyed by (method, path literal in src/server); WATCH is a GET with
// ?watch=1 (cluster_watch.cc streams the collection paths).
const std::map<std::pair<std::string, std::string>, std::string> kApiCalls = {
    {{"GET", "/api/v1/nodes"}, "/nodes:list"},
    {{"GET", "/api/v1/pods"}, "/pods:list"},
    {{"WATCH", "/api/v1/nodes"}, "/nodes:watch"},
    {{"WATCH", "/api/v1/pods"}, "/pods:watch"},
    {{"PATCH", "/api/v1/namespaces/{}/pods/{}"}, "/pods:patch"},                  // gpupack.io/assigned-gpus
    {{"POST", "/api/v1/namespaces/{}/pods/{}/binding"}, "/pods/binding:create"},  // the bind verb
    {{"GET", "/apis/resource.k8s.io/v1/resourceclaims"}, "resource.k8s.io/resourceclaims:list"},  // DRA GPUs
    {{"WATCH", "/apis/resource.k8s.io/v1/resourceclaims"}, "resource.k8s.io/resourceclaims:watch"},
    // PodGroups (spec.minMember), listed every 10 s.
    {{"GET", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"}, "scheduling.x-k8s.io/podgroups:list"},
    {{"GET", "/apis/scheduling.volcano.sh/v1beta1/podgroups"}, "scheduling.volcano.sh/podgroups:list"},
    {{"GET", "/apis/scheduling.run.ai/v2alpha2/podgroups"}, "scheduling.run.ai/podgroups:list"},
};

// Calls the client offers only to the commands a person runs with their own
// credentials (`gpupack analyze`, `gpupack defrag --live`): not granted to the
// extender, and `serve` must not make them. (call) -> KubeClient method.
const std::map<std::pair<std::string, std::string>, std::string> kUserOnlyCalls = {
    {{"GET", "/apis/policy/v1/poddisruptionbudgets"}, "list_pdbs"},
    // `gpupack defrag --apply` (src/execute/): evictions, reservations on
    // nodes, an Event per move.
    {{"POST", "/api/v1/namespaces/{}/pods/{}/eviction"}, "evict_pod"},
    {{"PATCH", "/api/v1/nodes/{}"}, "patch_node_annotations"},
    {{"POST", "/api/v1/namespaces/{}/events"}, "create_event"},
};

TEST(DeployManifests, ExtenderRoleGrantsExactlyTheCallsTheCodeMakes) {
  auto docs = kit();
  YAML::Node role = find(docs, "ClusterRole", "gpupack-extender");
  ASSERT_TRUE(role);
  std::set<std::string> expected;
  for (const auto& [call, grant] : kApiCalls) expected.insert(grant);
  EXPECT_EQ(grants(role), expected);
  // No Role or ClusterRole of the kit grants wildcards or secrets.
  for (const auto& kind : {"Role", "ClusterRole"}) {
    for (const auto& r : all_of(docs, kind)) {
      for (const auto& g : grants(r)) {
        EXPECT_EQ(g.find('*'), std::string::npos) << str(r["metadata"]["name"]) << ": " << g;
        EXPECT_EQ(g.find("secrets"), std::string::npos) << str(r["metadata"]["name"]) << ": " << g;
      }
    }
  }
}

// The table above is the code's list of API calls: every API path the
// server code names must be in it, so a new call fails here until its grant
// is added to deploy/base/rbac.yaml and to kApiCalls.
TEST(DeployManifests, EveryApiCallInTheServerCodeIsInTheRbacTable) {
  const std::regex api_literal(R"re("(/apis?/[^"]*)")re");
  const std::regex method(R"re(request\("([A-Z]+)")re");
  std::set<std::pair<std::string, std::string>> seen;
  for (const char* file : {"kube_client.h", "kube_client.cc", "cluster_watch.cc"}) {
    const std::string path = std::string(GPUPACK_SOURCE_DIR) + "/src/server/" + file;
    const std::string text = read_text(path);
    ASSERT_FALSE(text.empty()) << path;
    const bool watches = text.find("watch=1") != std::string::npos;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      std::smatch m;
      std::string verb;
      if (std::regex_search(line, m, method)) verb = m[1];
      for (auto it = std::sregex_iterator(line.begin(), line.end(), api_literal); it != std::sregex_iterator(); ++it) {
        const std::string p = (*it)[1];
        if (!verb.empty()) {
          seen.insert({verb, p});
        } else {
          ASSERT_TRUE(watches) << file << ": API path " << p << " used by an unknown call";
          seen.insert({"WATCH", p});
        }
      }
    }
  }
  for (const auto& call : seen) {
    EXPECT_TRUE(kApiCalls.count(call) || kUserOnlyCalls.count(call))
        << "src/server calls " << call.first << " " << call.second
        << ": grant it in deploy/base/rbac.yaml and list it in kApiCalls";
  }
  // The user-only calls stay out of the server: no file of src/server/ and
  // not `serve` uses them.
  std::vector<std::string> server_files = {std::string(GPUPACK_SOURCE_DIR) + "/src/cli/serve.cc"};
  for (const auto& e : std::filesystem::directory_iterator(std::string(GPUPACK_SOURCE_DIR) + "/src/server"))
    if (e.path().extension() == ".cc") server_files.push_back(e.path().string());
  for (const auto& [call, fn] : kUserOnlyCalls) {
    EXPECT_TRUE(seen.count(call)) << call.second << " is not offered any more";
    for (const std::string& f : server_files) {
      // Calls, not the definition (KubeClient::fn in kube_client.cc).
      const std::string text = read_text(f);
      const std::string definition = "KubeClient::" + fn + "(";
      for (size_t at = text.find(fn + "("); at != std::string::npos; at = text.find(fn + "(", at + 1)) {
        const bool defines = at >= 12 && text.compare(at - 12, definition.size(), definition) == 0;
        EXPECT_TRUE(defines) << f << " calls " << fn << ", which the extender may not";
      }
    }
  }
  // And the table names nothing the code no longer does.
  for (const auto& [call, grant] : kApiCalls) {
    EXPECT_TRUE(seen.count(call)) << call.first << " " << call.second << " (" << grant << ") is not called any more";
  }
}

TEST(DeployManifests, EachPodHasItsOwnServiceAccount) {
  auto docs = kit();
  std::map<std::string, std::string> account_of;  // Deployment -> service account
  for (const auto& d : all_of(docs, "Deployment")) {
    const std::string sa = str(d["spec"]["template"]["spec"]["serviceAccountName"]);
    ASSERT_FALSE(sa.empty()) << str(d["metadata"]["name"]);
    EXPECT_TRUE(find(docs, "ServiceAccount", sa)) << sa;
    for (const auto& [other, other_sa] : account_of) EXPECT_NE(sa, other_sa) << other;
    account_of[str(d["metadata"]["name"])] = sa;
  }
  ASSERT_EQ(account_of.size(), 2u);
  const std::string scheduler_sa = account_of["gpupack-scheduler"];
  const std::string extender_sa = account_of["gpupack-extender"];

  // Which roles each account holds, through any binding.
  std::map<std::string, std::set<std::string>> roles_of;
  for (const auto& kind : {"RoleBinding", "ClusterRoleBinding"}) {
    for (const auto& b : all_of(docs, kind)) {
      for (const auto& s : b["subjects"]) {
        EXPECT_EQ(str(s["kind"]), "ServiceAccount");
        EXPECT_EQ(str(s["namespace"]), "gpupack-system");
        roles_of[str(s["name"])].insert(str(b["roleRef"]["name"]));
      }
    }
  }
  EXPECT_EQ(roles_of[extender_sa], std::set<std::string>{"gpupack-extender"});
  EXPECT_EQ(roles_of[scheduler_sa],
            (std::set<std::string>{"system:kube-scheduler", "system:volume-scheduler",
                                   "extension-apiserver-authentication-reader", "gpupack-scheduler-leader-election"}));
}

// --- Pods ----------------------------------------------------------------------

TEST(DeployManifests, EveryContainerRunsHardened) {
  auto docs = kit();
  int containers = 0;
  for (const auto& d : all_of(docs, "Deployment")) {
    const YAML::Node pod = d["spec"]["template"]["spec"];
    const std::string dep = str(d["metadata"]["name"]);
    EXPECT_EQ(str(pod["securityContext"]["runAsNonRoot"]), "true") << dep;
    EXPECT_EQ(str(pod["securityContext"]["seccompProfile"]["type"]), "RuntimeDefault") << dep;
    if (pod["securityContext"]["runAsUser"]) {
      EXPECT_GT(pod["securityContext"]["runAsUser"].as<int>(), 0) << dep;
    }
    EXPECT_FALSE(pod["hostNetwork"] && pod["hostNetwork"].as<bool>()) << dep;
    for (const char* list : {"initContainers", "containers"}) {
      for (const auto& c : pod[list]) {
        ++containers;
        const std::string where = dep + "/" + str(c["name"]);
        const YAML::Node sc = c["securityContext"];
        ASSERT_TRUE(sc) << where;
        EXPECT_EQ(str(sc["runAsNonRoot"]), "true") << where;
        EXPECT_EQ(str(sc["readOnlyRootFilesystem"]), "true") << where;
        EXPECT_EQ(str(sc["allowPrivilegeEscalation"]), "false") << where;
        EXPECT_NE(str(sc["privileged"]), "true") << where;
        EXPECT_EQ(str(sc["seccompProfile"]["type"]), "RuntimeDefault") << where;
        std::vector<std::string> drop;
        for (const auto& x : sc["capabilities"]["drop"]) drop.push_back(str(x));
        EXPECT_EQ(drop, std::vector<std::string>{"ALL"}) << where;
        EXPECT_FALSE(sc["capabilities"]["add"]) << where;
        if (sc["runAsUser"]) {
          EXPECT_GT(sc["runAsUser"].as<int>(), 0) << where;
        }
        EXPECT_TRUE(c["resources"]["requests"]) << where;
        EXPECT_TRUE(c["resources"]["limits"]["memory"]) << where;
      }
    }
  }
  EXPECT_EQ(containers, 2);
  // The namespace enforces the same through Pod Security Admission.
  YAML::Node ns = find(docs, "Namespace", "gpupack-system");
  ASSERT_TRUE(ns);
  EXPECT_EQ(str(ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]), "restricted");
}

YAML::Node scheduler_config(const std::vector<YAML::Node>& docs) {
  YAML::Node cm = find(docs, "ConfigMap", "gpupack-scheduler-config");
  if (!cm) return YAML::Node();
  return YAML::Load(str(cm["data"]["scheduler-config.yaml"]));
}

// At most one kube-scheduler and one extender act at any time: the scheduler
// by leader election on a lease of its own (not the default scheduler's
// kube-system/kube-scheduler), which its account may write; the extender (one
// in-memory ledger, the binder) by replicas 1 and Recreate.
TEST(DeployManifests, OneSchedulerAndOneExtenderAtATime) {
  auto docs = kit();
  YAML::Node sched = scheduler_config(docs);
  ASSERT_TRUE(sched);
  const YAML::Node le = sched["leaderElection"];
  YAML::Node scheduler = find(docs, "Deployment", "gpupack-scheduler");
  ASSERT_TRUE(scheduler);
  const bool elects = str(le["leaderElect"]) == "true";
  const bool single =
      str(scheduler["spec"]["replicas"]) == "1" && str(scheduler["spec"]["strategy"]["type"]) == "Recreate";
  ASSERT_TRUE(elects || single) << "two kube-schedulers may run at once";
  if (elects) {
    EXPECT_EQ(str(le["resourceLock"]), "leases");
    EXPECT_EQ(str(le["resourceNamespace"]), "gpupack-system");
    const std::string lease = str(le["resourceName"]);
    EXPECT_FALSE(lease.empty());
    EXPECT_NE(lease, "kube-scheduler");  // the default scheduler's lease
    YAML::Node role = find(docs, "Role", "gpupack-scheduler-leader-election");
    ASSERT_TRUE(role);
    EXPECT_EQ(str(role["metadata"]["namespace"]), "gpupack-system");
    EXPECT_EQ(grants(role), (std::set<std::string>{"coordination.k8s.io/leases:create",
                                                   "coordination.k8s.io/leases:get[" + lease + "]",
                                                   "coordination.k8s.io/leases:update[" + lease + "]"}));
  }
  YAML::Node extender = find(docs, "Deployment", "gpupack-extender");
  ASSERT_TRUE(extender);
  EXPECT_EQ(str(extender["spec"]["replicas"]), "1");
  EXPECT_EQ(str(extender["spec"]["strategy"]["type"]), "Recreate");
}

bool selects(const YAML::Node& selector, const YAML::Node& labels) {
  if (!selector["matchLabels"] || selector["matchLabels"].size() == 0) return false;
  for (const auto& kv : selector["matchLabels"]) {
    if (str(labels[kv.first.Scalar()]) != str(kv.second)) return false;
  }
  return true;
}

TEST(DeployManifests, NetworkPolicyAdmitsOnlyTheSchedulerAndPrometheus) {
  auto docs = kit();
  YAML::Node extender = find(docs, "Deployment", "gpupack-extender");
  YAML::Node scheduler = find(docs, "Deployment", "gpupack-scheduler");
  ASSERT_TRUE(extender && scheduler);
  const YAML::Node ext_labels = extender["spec"]["template"]["metadata"]["labels"];
  const YAML::Node sched_labels = scheduler["spec"]["template"]["metadata"]["labels"];
  YAML::Node np = find(docs, "NetworkPolicy", "gpupack-extender");
  ASSERT_TRUE(np);
  EXPECT_EQ(str(np["metadata"]["namespace"]), "gpupack-system");
  EXPECT_TRUE(selects(np["spec"]["podSelector"], ext_labels));
  EXPECT_FALSE(selects(np["spec"]["podSelector"], sched_labels));
  std::vector<std::string> types;
  for (const auto& t : np["spec"]["policyTypes"]) types.push_back(str(t));
  EXPECT_NE(std::find(types.begin(), types.end(), "Ingress"), types.end());

  // The container ports by number, to compare with the policy's.
  std::map<std::string, int> port_of;
  for (const auto& p : extender["spec"]["template"]["spec"]["containers"][0]["ports"])
    port_of[str(p["name"])] = p["containerPort"].as<int>();
  ASSERT_EQ(np["spec"]["ingress"].size(), 2u);
  bool scheduler_rule = false, prometheus_rule = false;
  for (const auto& rule : np["spec"]["ingress"]) {
    ASSERT_EQ(rule["from"].size(), 1u);  // one peer per rule
    ASSERT_EQ(rule["ports"].size(), 1u);
    const YAML::Node peer = rule["from"][0];
    const int port = rule["ports"][0]["port"].as<int>();
    EXPECT_FALSE(peer["ipBlock"]);
    if (!peer["namespaceSelector"] && selects(peer["podSelector"], sched_labels)) {
      scheduler_rule = true;
      EXPECT_EQ(port, port_of["extender"]);
    } else if (peer["namespaceSelector"] &&
               str(peer["podSelector"]["matchLabels"]["app.kubernetes.io/name"]) == "prometheus") {
      prometheus_rule = true;
      EXPECT_EQ(port, port_of["metrics"]);
      EXPECT_TRUE(peer["namespaceSelector"]["matchLabels"]) << "an empty namespaceSelector admits every namespace";
    } else {
      ADD_FAILURE() << "ingress rule admits a peer that is neither the scheduler nor Prometheus";
    }
  }
  EXPECT_TRUE(scheduler_rule);
  EXPECT_TRUE(prometheus_rule);
  // The scheduler pod admits nothing.
  YAML::Node sp = find(docs, "NetworkPolicy", "gpupack-scheduler");
  ASSERT_TRUE(sp);
  EXPECT_TRUE(selects(sp["spec"]["podSelector"], sched_labels));
  EXPECT_EQ(sp["spec"]["ingress"].size(), 0u);
}

TEST(DeployManifests, SchedulerReachesTheExtenderThroughItsService) {
  auto docs = kit();
  YAML::Node sched = scheduler_config(docs);
  ASSERT_TRUE(sched);
  EXPECT_TRUE(check_scheduler_config(sched).empty());
  EXPECT_EQ(str(sched["profiles"][0]["schedulerName"]), "gpupack-scheduler");

  YAML::Node scheduler = find(docs, "Deployment", "gpupack-scheduler");
  ASSERT_TRUE(scheduler);
  EXPECT_EQ(str(scheduler["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"]), "gpupack-scheduler-config");

  YAML::Node extender = find(docs, "Deployment", "gpupack-extender");
  ASSERT_TRUE(extender);
  const YAML::Node pod = extender["spec"]["template"];
  std::set<std::string> args;
  for (const auto& a : pod["spec"]["containers"][0]["args"]) args.insert(str(a));

  // urlPrefix http://SERVICE.NAMESPACE.svc:PORT/PREFIX names the extender's
  // Service, a port of it that leads to serve's --listen port, and its prefix.
  const std::string url = str(sched["extenders"][0]["urlPrefix"]);
  std::smatch m;
  const std::regex form(R"(http://([a-z0-9-]+)\.([a-z0-9-]+)\.svc:(\d+)(/.*))");
  ASSERT_TRUE(std::regex_match(url, m, form)) << url;
  YAML::Node svc = find(docs, "Service", m[1]);
  ASSERT_TRUE(svc) << m[1];
  EXPECT_EQ(str(svc["metadata"]["namespace"]), std::string(m[2]));
  EXPECT_TRUE(
      selects(YAML::Load("{matchLabels: " + YAML::Dump(svc["spec"]["selector"]) + "}"), pod["metadata"]["labels"]));
  std::string target;
  for (const auto& p : svc["spec"]["ports"]) {
    if (str(p["port"]) == std::string(m[3])) target = str(p["targetPort"]);
  }
  ASSERT_FALSE(target.empty()) << "Service has no port " << m[3];
  int container_port = 0;
  for (const auto& p : pod["spec"]["containers"][0]["ports"]) {
    if (str(p["name"]) == target) container_port = p["containerPort"].as<int>();
  }
  EXPECT_TRUE(args.count("--listen=0.0.0.0:" + std::to_string(container_port))) << container_port;
  EXPECT_TRUE(args.count("--url-prefix=" + std::string(m[4])));
}

// --- Monitoring ----------------------------------------------------------------

// Metric names `gpupack serve` exports, read from render_metrics() itself: each
// family has a TYPE line even when it has no samples; histograms add
// _bucket, _sum and _count.
std::set<std::string> exported_metrics() {
  const std::string text = render_metrics(ServiceMetrics{}, LatencyHistogram{}, RequestCounters{});
  std::set<std::string> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string hash, what, name, type;
    f >> hash >> what >> name >> type;
    if (hash != "#" || what != "TYPE") continue;
    out.insert(name);
    if (type == "histogram") {
      for (const char* s : {"_bucket", "_sum", "_count"}) out.insert(name + s);
    }
  }
  return out;
}

// Series names a PromQL expression reads: what remains after dropping
// strings, label matchers, ranges, Grafana variables, grouping clauses,
// numbers, keywords and function calls.
std::set<std::string> series_in(std::string e) {
  static const std::vector<std::regex> drop = {
      std::regex(R"re("(\\.|[^"\\])*")re"),
      std::regex(R"(\{[^}]*\})"),
      std::regex(R"(\[[^\]]*\])"),
      std::regex(R"(\$\w+)"),
      std::regex(R"(\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\))"),
      std::regex(R"(\b(\d+(ms|[smhdwy]))+\b)"),  // durations (offset 5m, @ ... 1h30m)
      std::regex(R"(\b\d+(\.\d+)?([eE][+-]?\d+)?\b)")};
  for (const auto& r : drop) e = std::regex_replace(e, r, " ");
  static const std::set<std::string> keywords = {"and",         "or",      "unless", "bool",     "offset",
                                                 "by",          "without", "on",     "ignoring", "group_left",
                                                 "group_right", "inf",     "nan"};
  std::set<std::string> out;
  const std::regex ident(R"([A-Za-z_:][A-Za-z0-9_:]*)");
  for (auto it = std::sregex_iterator(e.begin(), e.end(), ident); it != std::sregex_iterator(); ++it) {
    const std::string name = it->str();
    size_t after = static_cast<size_t>(it->position()) + name.size();
    while (after < e.size() && e[after] == ' ') ++after;
    if (after < e.size() && e[after] == '(') continue;  // function or aggregation
    std::string lower = name;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (keywords.count(lower)) continue;
    out.insert(name);
  }
  return out;
}

TEST(DeployManifests, SeriesNamesOfAnExpression) {
  EXPECT_EQ(series_in("histogram_quantile(0.99, sum by (le, verb) (rate(a_bucket{verb=\"x\"}[$__rate_interval])))"),
            std::set<std::string>{"a_bucket"});
  EXPECT_EQ(series_in("(b > 0) and on() (sum(c{x=~\"a|b\"}) > 1e3) unless d offset 5m"),
            (std::set<std::string>{"b", "c", "d"}));
}

std::vector<std::string> rule_exprs(const YAML::Node& groups) {
  std::vector<std::string> out;
  for (const auto& g : groups) {
    for (const auto& r : g["rules"]) out.push_back(str(r["expr"]));
  }
  return out;
}

TEST(DeployManifests, PrometheusRuleCarriesThePlainRuleFile) {
  YAML::Node plain = YAML::LoadFile(kDeploy + "prometheus-rules.yaml");
  auto docs = kit("monitoring");
  YAML::Node pr = find(docs, "PrometheusRule", "gpupack");
  ASSERT_TRUE(pr);
  EXPECT_EQ(str(pr["apiVersion"]), "monitoring.coreos.com/v1");
  EXPECT_EQ(str(pr["metadata"]["namespace"]), "gpupack-system");
  // Same rules, field for field (a semantic comparison; the ctest
  // deploy_kustomize also checks the generated text).
  EXPECT_EQ(YAML::Dump(pr["spec"]["groups"]), YAML::Dump(plain["groups"]))
      << "run deploy/monitoring/gen-prometheus-rule.sh";
  EXPECT_EQ(rule_exprs(plain["groups"]).size(), 4u);
}

TEST(DeployManifests, AlertRulesQueryOnlyExportedMetrics) {
  const std::set<std::string> exported = exported_metrics();
  ASSERT_GT(exported.size(), 20u);
  YAML::Node plain = YAML::LoadFile(kDeploy + "prometheus-rules.yaml");
  for (const auto& e : rule_exprs(plain["groups"])) {
    const auto names = series_in(e);
    EXPECT_FALSE(names.empty()) << e;
    for (const auto& n : names) EXPECT_TRUE(exported.count(n)) << n << " in " << e;
  }
}

TEST(DeployManifests, DashboardQueriesOnlyExportedMetrics) {
  const std::set<std::string> exported = exported_metrics();
  const nlohmann::json dash = nlohmann::json::parse(read_text(kDeploy + "grafana/gpupack-dashboard.json"));
  ASSERT_TRUE(dash.contains("panels"));
  std::set<int> ids;
  std::set<std::string> used;
  int exprs = 0;
  for (const auto& p : dash["panels"]) {
    EXPECT_TRUE(ids.insert(p.at("id").get<int>()).second) << "duplicate panel id";
    ASSERT_TRUE(p.contains("targets")) << p.value("title", "");
    for (const auto& t : p["targets"]) {
      const std::string e = t.at("expr").get<std::string>();
      ++exprs;
      const auto names = series_in(e);
      EXPECT_FALSE(names.empty()) << e;
      for (const auto& n : names) {
        EXPECT_TRUE(exported.count(n)) << p.value("title", "") << ": " << n << " is not exported";
        used.insert(n);
      }
    }
  }
  EXPECT_GE(exprs, 10);
  // The dashboard shows the series the alerts fire on.
  for (const char* n : {"gpupack_pool_fragmentation_ratio", "gpupack_gpu_stranded_memory_bytes", "gpupack_pending_pods",
                        "gpupack_oldest_pending_pod_age_seconds", "gpupack_decision_duration_seconds_bucket"}) {
    EXPECT_TRUE(used.count(n)) << n;
  }
}

TEST(DeployManifests, ServiceMonitorScrapesTheMetricsPort) {
  auto docs = kit();
  auto mon = kit("monitoring");
  YAML::Node sm = find(mon, "ServiceMonitor", "gpupack-extender");
  ASSERT_TRUE(sm);
  YAML::Node svc = find(docs, "Service", "gpupack-extender");
  ASSERT_TRUE(svc);
  EXPECT_TRUE(selects(sm["spec"]["selector"], svc["metadata"]["labels"]));
  const std::string port = str(sm["spec"]["endpoints"][0]["port"]);
  bool found = false;
  for (const auto& p : svc["spec"]["ports"]) found = found || str(p["name"]) == port;
  EXPECT_TRUE(found) << port;
  YAML::Node extender = find(docs, "Deployment", "gpupack-extender");
  std::set<std::string> args;
  for (const auto& a : extender["spec"]["template"]["spec"]["containers"][0]["args"]) args.insert(str(a));
  EXPECT_TRUE(args.count("--metrics-listen=0.0.0.0:9464"));
}

}  // namespace
}  // namespace gpupack
