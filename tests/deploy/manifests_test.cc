// deploy/ manifests parse, reference each other consistently, run hardened
// (securityContext, separate service accounts, one scheduler at a time, a
// NetworkPolicy in front of the extender), grant exactly the API rights the
// code uses, embed a scheduler config that passes the schema checker, and the
// monitoring objects (PrometheusRule, Grafana dashboard) query only metrics
// `gpupack serve` exports. The opt-in defrag executor (deploy/defrag) gets the
// same RBAC check against the defrag sources, its own account, one executor
// with its journal on a PersistentVolumeClaim, and an init container that
// releases exactly the unfinished plans.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "execute/defrag_executor.h"
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
// credentials (`gpupack analyze`, `gpupack defrag --live`) or the defrag
// executor's account (deploy/defrag/rbac.yaml, kDefragCalls below): not granted
// to the extender, and `serve` must not make them. (call) -> KubeClient method.
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

// --- The defrag executor's RBAC (deploy/defrag/rbac.yaml) ---------------------

using ApiCall = std::pair<std::string, std::string>;  // (method, path as the code writes it)

// What `gpupack defrag --live [--every D] [--apply | --resume | --release]`
// does against the API server, and the grants each call needs. Keyed by
// (method, path literal) in the defrag code or in the KubeClient method it
// calls. The scale path names its resource at run time (deployments or
// replicasets), so it needs both.
const std::map<ApiCall, std::set<std::string>> kDefragCalls = {
    // The plan's input (cli/defrag.cc load_input); each step re-reads the pods.
    {{"GET", "/api/v1/nodes"}, {"/nodes:list"}},
    {{"GET", "/api/v1/pods"}, {"/pods:list"}},
    {{"GET", "/apis/policy/v1/poddisruptionbudgets"}, {"policy/poddisruptionbudgets:list"}},
    // Reservations: reservation.gpupack.io/* node annotations, set and removed.
    {{"PATCH", "/api/v1/nodes/{}"}, {"/nodes:patch"}},
    // The evict path: a policy/v1 Eviction with a UID precondition.
    {{"POST", "/api/v1/namespaces/{}/pods/{}/eviction"}, {"/pods/eviction:create"}},
    // An Event on the pod per step.
    {{"POST", "/api/v1/namespaces/{}/events"}, {"/events:create"}},
    // The surge path: the pod's ReplicaSet and its Deployment, the autoscalers
    // of the namespace, the owner's scale, the old pod's deletion cost (also
    // as a dry run: ?dryRun=All needs the same grant).
    {{"GET", "/apis/apps/v1/namespaces/{}/replicasets/{}"}, {"apps/replicasets:get"}},
    {{"GET", "/apis/apps/v1/namespaces/{}/deployments/{}"}, {"apps/deployments:get"}},
    {{"GET", "/apis/autoscaling/v2/namespaces/{}/horizontalpodautoscalers"},
     {"autoscaling/horizontalpodautoscalers:list"}},
    {{"GET", "/apis/apps/v1/namespaces/{}/{}/{}/scale"}, {"apps/deployments/scale:get", "apps/replicasets/scale:get"}},
    {{"PATCH", "/apis/apps/v1/namespaces/{}/{}/{}/scale"},
     {"apps/deployments/scale:patch", "apps/replicasets/scale:patch"}},
    {{"PATCH", "/api/v1/namespaces/{}/pods/{}{}"}, {"/pods:patch"}},
};

const std::string kSrc = std::string(GPUPACK_SOURCE_DIR) + "/src/";
const std::regex kApiLiteral(R"re("(/apis?/[^"]*)")re");
// request("VERB", "PATH" or request("VERB", fmt::format("PATH", across lines.
const std::regex kRequestLiteral(R"re(request\(\s*"([A-Z]+)"\s*,\s*(?:fmt::format\(\s*)?"(/apis?/[^"]*)")re");

// Every request with a literal path in text[begin, end).
std::set<ApiCall> literal_requests(const std::string& text, size_t begin, size_t end) {
  std::set<ApiCall> out;
  for (auto it = std::sregex_iterator(text.begin() + static_cast<std::ptrdiff_t>(begin),
                                      text.begin() + static_cast<std::ptrdiff_t>(end), kRequestLiteral);
       it != std::sregex_iterator(); ++it)
    out.insert({(*it)[1], (*it)[2]});
  return out;
}

// KubeClient's methods and the requests each makes: the inline bodies of
// kube_client.h, the KubeClient::NAME definitions of kube_client.cc. request()
// itself and stream_lines() take their path from the caller: no entry of
// their own (an empty set).
std::map<std::string, std::set<ApiCall>> kube_client_methods() {
  std::map<std::string, std::set<ApiCall>> out;
  const std::string h = read_text(kSrc + "server/kube_client.h");
  const size_t cls = h.find("class KubeClient {");
  const size_t cls_end = h.find("\n};", cls);
  if (cls == std::string::npos || cls_end == std::string::npos) return out;
  // "  TYPE NAME(" at the class's indentation: a declaration; its requests
  // are those up to the next declaration.
  const std::regex decl(R"(\n  [\w:]+ (\w+)\()");
  std::vector<std::pair<std::string, size_t>> decls;
  for (auto it = std::sregex_iterator(h.begin() + static_cast<std::ptrdiff_t>(cls),
                                      h.begin() + static_cast<std::ptrdiff_t>(cls_end), decl);
       it != std::sregex_iterator(); ++it)
    decls.push_back({(*it)[1], cls + static_cast<size_t>(it->position())});
  for (size_t i = 0; i < decls.size(); ++i) {
    const size_t end = i + 1 < decls.size() ? decls[i + 1].second : cls_end;
    auto calls = literal_requests(h, decls[i].second, end);
    out[decls[i].first].insert(calls.begin(), calls.end());
  }
  // Out-of-line definitions: from "KubeClient::NAME(" to the function's
  // closing brace at column 0.
  const std::string cc = read_text(kSrc + "server/kube_client.cc");
  const std::regex def(R"(KubeClient::(\w+)\()");
  for (auto it = std::sregex_iterator(cc.begin(), cc.end(), def); it != std::sregex_iterator(); ++it) {
    const size_t at = static_cast<size_t>(it->position());
    size_t end = cc.find("\n}", at);
    if (end == std::string::npos) end = cc.size();
    auto calls = literal_requests(cc, at, end);
    out[(*it)[1]].insert(calls.begin(), calls.end());
  }
  out.erase("KubeClient");  // the constructor
  return out;
}

// The sources of `gpupack defrag`: the command, the live input and the
// executor (every file of src/execute/).
std::vector<std::string> defrag_sources() {
  std::vector<std::string> files = {kSrc + "cli/defrag.cc", kSrc + "analyze/defrag_input.h",
                                    kSrc + "analyze/defrag_input.cc"};
  for (const auto& e : std::filesystem::directory_iterator(kSrc + "execute")) {
    const auto ext = e.path().extension();
    if (ext == ".cc" || ext == ".h") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

struct DefragScan {
  std::set<ApiCall> calls;
  std::map<std::string, std::string> literals;  // API path literal -> file
  std::vector<std::string> unreadable;          // calls whose path the scan cannot tell
};

// The API calls the defrag sources make: KubeClient methods called on a
// variable declared as a KubeClient in them (client.list_pods(),
// client_.evict_pod(...)), request() with a path literal, or with a path from
// a helper of the same file (scale_path(s)). API path literals reached some
// other way are left in `literals` without a call.
DefragScan scan_defrag_sources() {
  DefragScan scan;
  const auto methods = kube_client_methods();
  std::vector<std::pair<std::string, std::string>> sources;  // (file name, text)
  for (const std::string& file : defrag_sources()) {
    sources.push_back({std::filesystem::path(file).filename().string(), read_text(file)});
    if (sources.back().second.empty()) scan.unreadable.push_back(file + ": empty or unreadable");
  }
  // The names KubeClient objects go by: "const KubeClient& client",
  // "std::unique_ptr<KubeClient> client;".
  std::set<std::string> clients;
  const std::regex client_decl(R"(\bKubeClient\s*>?\s*[&*]?\s*(\w+)\s*[;,)=({])");
  for (const auto& [name, text] : sources) {
    for (auto it = std::sregex_iterator(text.begin(), text.end(), client_decl); it != std::sregex_iterator(); ++it)
      clients.insert((*it)[1]);
  }
  if (clients.empty()) scan.unreadable.push_back("no variable of type KubeClient in the defrag sources");
  const std::regex member_call(R"(\b(\w+)\s*(?:\.|->)\s*(\w+)\s*\()");
  const std::regex verb(R"re(^\s*"([A-Z]+)"\s*,\s*)re");
  const std::regex helper(R"(^(\w+)\()");
  for (const auto& [name, text] : sources) {
    for (auto it = std::sregex_iterator(text.begin(), text.end(), kApiLiteral); it != std::sregex_iterator(); ++it)
      scan.literals.emplace((*it)[1], name);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), member_call); it != std::sregex_iterator(); ++it) {
      if (!clients.count((*it)[1])) continue;
      const std::string fn = (*it)[2];
      const auto m = methods.find(fn);
      if (m == methods.end()) {
        scan.unreadable.push_back(name + ": KubeClient has no method " + fn);
        continue;
      }
      const size_t args = static_cast<size_t>(it->position() + it->length());
      if (fn != "request") {
        if (m->second.empty()) scan.unreadable.push_back(name + ": calls KubeClient::" + fn);
        scan.calls.insert(m->second.begin(), m->second.end());
        continue;
      }
      // request(VERB, PATH, ...): the path is a literal here or in a helper.
      const std::string rest = text.substr(args, 400);
      std::smatch v, lit, h;
      if (!std::regex_search(rest, v, verb)) {
        scan.unreadable.push_back(name + ": request(" + rest.substr(0, 60));
        continue;
      }
      const std::string after = v.suffix();
      if (std::regex_search(after, lit, std::regex(R"re(^(?:fmt::format\(\s*)?"(/apis?/[^"]*)")re"))) {
        scan.calls.insert({v[1], lit[1]});
      } else if (std::regex_search(after, h, helper)) {
        // The helper's definition: "NAME(" on a line with no call before it,
        // its body up to the closing brace at column 0.
        std::smatch d, body_lit;
        const std::regex definition("\n[^\n(]*\\b" + std::string(h[1]) + R"(\([^;{]*\)\s*\{)");
        if (std::regex_search(text, d, definition)) {
          const size_t from = static_cast<size_t>(d.position() + d.length());
          const std::string body = text.substr(from, text.find("\n}", from) - from);
          if (std::regex_search(body, body_lit, kApiLiteral)) {
            scan.calls.insert({v[1], body_lit[1]});
            continue;
          }
        }
        scan.unreadable.push_back(name + ": request(\"" + std::string(v[1]) + "\", " + std::string(h[1]) + "(...)");
      } else {
        scan.unreadable.push_back(name + ": request(\"" + std::string(v[1]) + "\", " + after.substr(0, 60));
      }
    }
  }
  return scan;
}

TEST(DeployManifests, DefragRoleGrantsExactlyTheCallsTheCodeMakes) {
  auto docs = kit("defrag");
  YAML::Node role = find(docs, "ClusterRole", "gpupack-defrag");
  ASSERT_TRUE(role);
  std::set<std::string> expected;
  for (const auto& [call, need] : kDefragCalls) expected.insert(need.begin(), need.end());
  EXPECT_EQ(grants(role), expected);
  for (const auto& kind : {"Role", "ClusterRole"}) {
    for (const auto& r : all_of(docs, kind)) {
      for (const auto& g : grants(r)) {
        EXPECT_EQ(g.find('*'), std::string::npos) << str(r["metadata"]["name"]) << ": " << g;
        EXPECT_EQ(g.find("secrets"), std::string::npos) << str(r["metadata"]["name"]) << ": " << g;
      }
    }
  }
  // The extender is granted none of the executor's writes but the pod patch
  // (its assigned-gpus annotation).
  const std::set<std::string> extender = grants(find(kit(), "ClusterRole", "gpupack-extender"));
  for (const auto& g : expected) {
    if (g.ends_with(":list") || g == "/pods:patch") continue;
    EXPECT_FALSE(extender.count(g)) << "the extender holds the executor's " << g;
  }
}

// The table above is the defrag code's list of API calls: every call the
// sources of `gpupack defrag` make must be in it and every entry must still
// be made, so a new call fails here until it is granted in
// deploy/defrag/rbac.yaml and listed in kDefragCalls.
TEST(DeployManifests, EveryApiCallInTheDefragCodeIsInTheRbacTable) {
  const auto methods = kube_client_methods();
  // The reader of kube_client.{h,cc} sees the methods the defrag code uses.
  for (const char* fn : {"list_nodes", "list_pods", "list_pdbs", "evict_pod", "patch_node_annotations", "create_event",
                         "request", "stream_lines"})
    EXPECT_TRUE(methods.count(fn)) << fn;
  if (methods.count("evict_pod")) {
    EXPECT_EQ(methods.at("evict_pod"), (std::set<ApiCall>{{"POST", "/api/v1/namespaces/{}/pods/{}/eviction"}}));
  }
  const DefragScan scan = scan_defrag_sources();
  EXPECT_TRUE(scan.unreadable.empty()) << "API calls whose path the scan cannot read (list them by hand): "
                                       << ::testing::PrintToString(scan.unreadable);
  for (const auto& call : scan.calls) {
    EXPECT_TRUE(kDefragCalls.count(call)) << "gpupack defrag calls " << call.first << " " << call.second
                                          << ": grant it in deploy/defrag/rbac.yaml and list it in kDefragCalls";
  }
  for (const auto& [call, need] : kDefragCalls) {
    EXPECT_TRUE(scan.calls.count(call)) << call.first << " " << call.second << " is not called any more";
  }
  // Every API path the sources name belongs to a call the scan found (the
  // rest are the paths that error messages quote).
  for (const auto& [path, file] : scan.literals) {
    bool called = false;
    for (const auto& call : scan.calls) called = called || call.second == path;
    EXPECT_TRUE(called) << file << " names " << path << " but the scan found no call to it";
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

// Checks every container of the kit's Deployments; returns how many.
int check_hardened(const std::vector<YAML::Node>& docs) {
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
        if (!sc) {
          ADD_FAILURE() << where << ": no securityContext";
          continue;
        }
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
  return containers;
}

TEST(DeployManifests, EveryContainerRunsHardened) {
  auto docs = kit();
  EXPECT_EQ(check_hardened(docs), 2);
  EXPECT_EQ(check_hardened(kit("defrag")), 2);  // the executor and its init container
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

// --- The defrag executor's pod (deploy/defrag/executor.yaml) -------------------

// It runs under its own account, which holds its role only; no other account
// holds that role, and applying deploy/ or deploy/base starts no executor.
TEST(DeployManifests, DefragExecutorHasItsOwnAccount) {
  auto docs = kit("defrag");
  auto base = kit();
  YAML::Node dep = find(docs, "Deployment", "gpupack-defrag");
  ASSERT_TRUE(dep);
  const std::string sa = str(dep["spec"]["template"]["spec"]["serviceAccountName"]);
  EXPECT_EQ(sa, "gpupack-defrag");
  YAML::Node account = find(docs, "ServiceAccount", sa);
  ASSERT_TRUE(account);
  EXPECT_EQ(str(account["metadata"]["namespace"]), "gpupack-system");
  EXPECT_EQ(all_of(docs, "Deployment").size(), 1u);
  EXPECT_EQ(all_of(docs, "ServiceAccount").size(), 1u);
  for (const auto& d : all_of(base, "Deployment"))
    EXPECT_NE(str(d["spec"]["template"]["spec"]["serviceAccountName"]), sa) << str(d["metadata"]["name"]);
  for (const auto& d : kit(".")) {
    EXPECT_NE(str(d["metadata"]["name"]), "gpupack-defrag") << str(d["kind"]) << " in deploy/: the executor is opt-in";
  }
  std::map<std::string, std::set<std::string>> roles_of;  // "namespace/account" -> roles
  for (const auto* k : {&docs, &base}) {
    for (const auto& kind : {"RoleBinding", "ClusterRoleBinding"}) {
      for (const auto& b : all_of(*k, kind)) {
        for (const auto& s : b["subjects"]) {
          EXPECT_EQ(str(s["kind"]), "ServiceAccount");
          roles_of[str(s["namespace"]) + "/" + str(s["name"])].insert(str(b["roleRef"]["name"]));
        }
      }
    }
  }
  EXPECT_EQ(roles_of["gpupack-system/" + sa], std::set<std::string>{"gpupack-defrag"});
  for (const auto& [who, roles] : roles_of) {
    if (who != "gpupack-system/" + sa) {
      EXPECT_FALSE(roles.count("gpupack-defrag")) << who;
    }
  }
}

YAML::Node defrag_pod(const std::vector<YAML::Node>& docs) {
  YAML::Node dep = find(docs, "Deployment", "gpupack-defrag");
  return dep ? dep["spec"]["template"]["spec"] : YAML::Node();
}

// "--flag=value" among args, or "".
std::string flag_value(const YAML::Node& args, const std::string& flag) {
  for (const auto& a : args) {
    if (str(a).starts_with(flag + "=")) return str(a).substr(flag.size() + 1);
  }
  return "";
}

// The volume a container mounts, writable, at dir ("" = none).
std::string volume_at(const YAML::Node& container, const std::string& dir) {
  for (const auto& m : container["volumeMounts"]) {
    if (str(m["mountPath"]) == dir && str(m["readOnly"]) != "true") return str(m["name"]);
  }
  return "";
}

// Exactly one executor, periodic and applying, its journal on a
// PersistentVolumeClaim: after a restart the executor finds the plan a killed
// one left (the root filesystem is read-only, an emptyDir dies with the pod).
TEST(DeployManifests, OneDefragExecutorWithADurableJournal) {
  auto docs = kit("defrag");
  YAML::Node dep = find(docs, "Deployment", "gpupack-defrag");
  ASSERT_TRUE(dep);
  EXPECT_EQ(str(dep["spec"]["replicas"]), "1");
  EXPECT_EQ(str(dep["spec"]["strategy"]["type"]), "Recreate");
  const YAML::Node pod = defrag_pod(docs);
  // On SIGTERM the executor rolls a surge back and releases its reservations
  // (API calls of up to 60 s each): more than the default 30 s.
  ASSERT_TRUE(pod["terminationGracePeriodSeconds"]);
  EXPECT_GE(pod["terminationGracePeriodSeconds"].as<int>(), 120);
  ASSERT_EQ(pod["containers"].size(), 1u);
  const YAML::Node main = pod["containers"][0];
  std::set<std::string> args;
  for (const auto& a : main["args"]) args.insert(str(a));
  EXPECT_EQ(str(main["args"][0]), "defrag");
  EXPECT_TRUE(args.count("--live") && args.count("--apply"));
  EXPECT_FALSE(flag_value(main["args"], "--every").empty());
  const std::string journal = flag_value(main["args"], "--journal");
  ASSERT_FALSE(journal.empty()) << "the default journal is in the working directory";
  const std::string dir = std::filesystem::path(journal).parent_path().string();
  const std::string vol = volume_at(main, dir);
  ASSERT_FALSE(vol.empty()) << "no writable volume at " << dir;
  std::string claim;
  for (const auto& v : pod["volumes"]) {
    if (str(v["name"]) == vol) claim = str(v["persistentVolumeClaim"]["claimName"]);
  }
  ASSERT_FALSE(claim.empty()) << "volume " << vol << " is not a PersistentVolumeClaim";
  YAML::Node pvc = find(docs, "PersistentVolumeClaim", claim);
  ASSERT_TRUE(pvc) << claim;
  EXPECT_EQ(str(pvc["metadata"]["namespace"]), "gpupack-system");
  EXPECT_EQ(str(pvc["spec"]["accessModes"][0]), "ReadWriteOnce");
  // The volume is writable by the pod's group (uid 65532 is not its owner).
  EXPECT_EQ(str(pod["securityContext"]["fsGroup"]), str(pod["securityContext"]["runAsGroup"]));
  // The init container works on the same journal.
  ASSERT_EQ(pod["initContainers"].size(), 1u);
  EXPECT_EQ(volume_at(pod["initContainers"][0], dir), vol);
}

// The init container's script, run by /bin/sh on journals that
// write_journal() writes, with a stand-in `gpupack` that records its
// arguments: it releases exactly the plans ExecJournal::unfinished() names
// (--apply refuses to start over those), and lets every other journal, or
// none, through to the executor.
TEST(DeployManifests, DefragInitContainerReleasesOnlyAnUnfinishedPlan) {
  auto docs = kit("defrag");
  const YAML::Node pod = defrag_pod(docs);
  ASSERT_TRUE(pod);
  ASSERT_EQ(pod["initContainers"].size(), 1u);
  const YAML::Node init = pod["initContainers"][0];
  const std::string journal = flag_value(pod["containers"][0]["args"], "--journal");
  ASSERT_FALSE(journal.empty());
  ASSERT_EQ(init["command"].size(), 2u);
  EXPECT_EQ(str(init["command"][0]), "/bin/sh");
  EXPECT_EQ(str(init["command"][1]), "-c");
  ASSERT_EQ(init["args"].size(), 1u);
  std::string script = str(init["args"][0]);
  ASSERT_NE(script.find(journal), std::string::npos) << "the script works on another journal than " << journal;

  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / ("gpupack-defrag-init-" + std::to_string(::getpid()));
  std::filesystem::remove_all(tmp);
  std::filesystem::create_directories(tmp / "bin");
  const std::string local = (tmp / "journal.json").string();
  for (size_t at = script.find(journal); at != std::string::npos; at = script.find(journal, at + local.size()))
    script.replace(at, journal.size(), local);
  {
    std::ofstream(tmp / "init.sh") << script;
    std::ofstream(tmp / "bin" / "gpupack") << "#!/bin/sh\necho \"$@\" > " << (tmp / "called").string() << "\n";
  }
  std::filesystem::permissions(tmp / "bin" / "gpupack", std::filesystem::perms::owner_all);
  const std::string run = "PATH=" + (tmp / "bin").string() + ":/usr/bin:/bin /bin/sh " + (tmp / "init.sh").string();

  for (const std::string status : {"", "new", "running", "finished", "aborted", "released"}) {
    std::filesystem::remove(tmp / "called");
    std::filesystem::remove(local);
    ExecJournal j;
    if (!status.empty()) {
      j.plan_id = "20260101-000000-1";
      j.server = "https://10.0.0.1:443";
      j.status = status;
      ExecStep s;
      s.index = 1;
      s.kind = "migrate";
      s.ns = "ml";
      s.pod = "train-0";
      s.from = "node-a";
      s.to = "node-b";
      s.state = "reserved";
      j.steps.push_back(s);
      write_journal(local, j);
    }
    EXPECT_EQ(std::system(run.c_str()), 0) << "journal status '" << status << "'";
    const bool released = std::filesystem::exists(tmp / "called");
    EXPECT_EQ(released, !status.empty() && j.unfinished()) << "journal status '" << status << "'";
    if (released) {
      EXPECT_EQ(read_text((tmp / "called").string()), "defrag --live --release --journal=" + local + "\n");
    }
  }
  std::filesystem::remove_all(tmp);
}

// The executor's arguments are ones `gpupack` accepts: run with no cluster
// to reach, it gets past the command line and fails connecting.
TEST(DeployManifests, DefragExecutorArgumentsParse) {
  const YAML::Node pod = defrag_pod(kit("defrag"));
  ASSERT_TRUE(pod);
  std::string cmd = "env -i HOME=/nonexistent KUBECONFIG=/nonexistent/kubeconfig " + std::string(GPUPACK_BINARY);
  for (const auto& a : pod["containers"][0]["args"]) {
    const std::string arg = str(a);
    ASSERT_EQ(arg.find_first_of("'\\"), std::string::npos) << arg;
    cmd += " '" + arg + "'";
  }
  cmd += " 2>&1";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int rc = ::pclose(p);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("kubeconfig"), std::string::npos) << out;
  for (const char* cli_error : {"was not expected", "Run with --help", "is required", "ValidationError"})
    EXPECT_EQ(out.find(cli_error), std::string::npos) << out;
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

// The executor serves nothing: its pod admits no connection.
TEST(DeployManifests, DefragExecutorAdmitsNoConnection) {
  auto docs = kit("defrag");
  YAML::Node dep = find(docs, "Deployment", "gpupack-defrag");
  YAML::Node np = find(docs, "NetworkPolicy", "gpupack-defrag");
  ASSERT_TRUE(dep && np);
  EXPECT_EQ(str(np["metadata"]["namespace"]), "gpupack-system");
  EXPECT_TRUE(selects(np["spec"]["podSelector"], dep["spec"]["template"]["metadata"]["labels"]));
  EXPECT_EQ(str(np["spec"]["policyTypes"][0]), "Ingress");
  EXPECT_EQ(np["spec"]["ingress"].size(), 0u);
  EXPECT_FALSE(dep["spec"]["template"]["spec"]["containers"][0]["ports"]);
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
// Every series render_metrics() can write: those written only when known
// (the repack bound) included.
std::set<std::string> exported_metrics() {
  ServiceMetrics m;
  m.repack = ClusterMetrics::Repack{};
  const std::string text = render_metrics(m, LatencyHistogram{}, RequestCounters{});
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
  EXPECT_EQ(rule_exprs(plain["groups"]).size(), 5u);
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
