// KubeClient: the few Kubernetes API calls `gpupack serve` makes (libcurl).
//
// Contract:
// - KubeConfig holds the API server URL, the CA (file or PEM data), the
//   static credentials (bearer token, client certificate and key as files or
//   PEM data) and, for credentials that change (an exec plugin, a rotating
//   token file), a CredentialSource asked on every call. It is filled by
//   server/kubeconfig.h (kubeconfig files, in-cluster service account).
// - list_nodes()/list_pods()/list_resource_claims() GET /api/v1/nodes,
//   /api/v1/pods and /apis/resource.k8s.io/v1/resourceclaims and return
//   the body text (a NodeList/PodList/ResourceClaimList); patch_pod_annotations() sends a JSON
//   merge patch of metadata.annotations; create_binding() POSTs a v1 Binding
//   to /api/v1/namespaces/{ns}/pods/{name}/binding. Every call returns ""
//   on a 2xx reply, else an error naming the call, the HTTP status and the
//   API's message; transport and TLS errors name the call and carry curl's
//   reason (e.g. "SSL certificate problem: unable to get local issuer
//   certificate"); a credential that cannot be had (the plugin failed) is an
//   error naming the call and the credential's source. A 401 reply to a call
//   whose credential comes from a CredentialSource makes the source fetch a
//   fresh one and the call is sent once more. Timeouts: `timeout_s` per call.
//   All calls share one setup of URL, credentials and TLS options.
// - stream_lines() GETs a watch URL and hands each complete line (one
//   WatchEvent) to a callback as it arrives; it ends when the server closes
//   the stream or after `max_s` seconds (error ""), on a non-2xx reply or a
//   transport error (error set, as above), when the callback returns false,
//   or when `stop` turns true (checked about once a second; error ""). A
//   401 makes the CredentialSource fetch anew for the next call.
// - KubeBinder implements Binder: annotation patch (GPU pods), then Binding.
// - Thread-safe (one curl handle per call; CredentialSource is thread-safe).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/extender_service.h"

namespace gpupack {

// Credentials obtained at call time. PEM text, not base64.
struct KubeCredential {
  std::string token;            // "" = none
  std::string client_cert_pem;  // with client_key_pem; "" = none
  std::string client_key_pem;
};

// Where a call's credential comes from when it can change (an exec plugin,
// a token file that is rotated). Thread-safe.
class CredentialSource {
 public:
  virtual ~CredentialSource() = default;
  // The credential to use now (cached while valid). Throws
  // std::runtime_error naming the source when none can be had.
  virtual KubeCredential get() = 0;
  // The API refused the credential (HTTP 401): the next get() fetches anew.
  virtual void invalidate() = 0;
};

struct KubeConfig {
  std::string server;  // "https://10.0.0.1:443"
  std::string token;
  std::string ca_file;  // PEM file; "" = none
  std::string ca_data;  // PEM text (decoded certificate-authority-data)
  bool insecure_skip_verify = false;
  std::string client_cert_file = {};  // PEM files (client-certificate / client-key)
  std::string client_key_file = {};
  std::string client_cert_data = {};  // PEM text (decoded client-certificate-data / client-key-data)
  std::string client_key_data = {};
  std::string proxy_url = {};  // cluster.proxy-url; "" = none (curl's environment rules)
  // Asked on every call; what it returns replaces `token` (when it has a
  // token) and the client certificate (when it has one). Null = static.
  std::shared_ptr<CredentialSource> credentials = {};
  std::string source = {};  // for messages: "kubeconfig /a/b (context \"c\")", "in-cluster service account"
};

struct KubeResponse {
  long status = 0;  // HTTP status; 0 = transport error
  std::string body;
  std::string error;  // "" when 2xx
};

class KubeClient {
 public:
  explicit KubeClient(KubeConfig config, long timeout_s = 10);

  KubeResponse request(const std::string& method, const std::string& path, const std::string& body,
                       const std::string& content_type) const;
  KubeResponse list_nodes() const { return request("GET", "/api/v1/nodes", "", ""); }
  KubeResponse list_pods() const { return request("GET", "/api/v1/pods", "", ""); }
  // DRA ResourceClaims of every namespace; HTTP 404 where the cluster does
  // not serve resource.k8s.io/v1.
  KubeResponse list_resource_claims() const {
    return request("GET", "/apis/resource.k8s.io/v1/resourceclaims", "", "");
  }
  // PodDisruptionBudgets (policy/v1) of every namespace.
  KubeResponse list_pdbs() const { return request("GET", "/apis/policy/v1/poddisruptionbudgets", "", ""); }
  // PodGroups (spec.minMember) of scheduler-plugins' coscheduling, Volcano
  // and KAI-Scheduler; HTTP 404 where that API is not installed.
  KubeResponse list_coscheduling_pod_groups() const {
    return request("GET", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups", "", "");
  }
  KubeResponse list_volcano_pod_groups() const {
    return request("GET", "/apis/scheduling.volcano.sh/v1beta1/podgroups", "", "");
  }
  KubeResponse list_kai_pod_groups() const {
    return request("GET", "/apis/scheduling.run.ai/v2alpha2/podgroups", "", "");
  }
  // "" when `ns` is a namespace and `name` an object name as the API
  // requires (DNS-1123 label and subdomain), so the name is one path segment
  // as it stands; else why not, naming `call` and `noun`. Every method here
  // that puts a name into a path checks it so; callers that build their own
  // paths use this.
  static std::string check_object_path(std::string_view call, const std::string& ns, const std::string& name,
                                       std::string_view noun = "pod");
  std::string patch_pod_annotations(const std::string& ns, const std::string& name,
                                    const std::map<std::string, std::string>& annotations) const;
  std::string create_binding(const std::string& ns, const std::string& name, const std::string& uid,
                             const std::string& node) const;
  // The defrag executor's calls (`gpupack defrag --apply`, a person's
  // credentials; the extender makes none of them). evict_pod(): an
  // Eviction (policy/v1) with a UID precondition, so PodDisruptionBudgets
  // hold (HTTP 429 while a budget forbids it) and a newer pod of the same
  // name is never evicted. patch_node_annotations(): a merge patch; a value
  // of nullopt removes the key. create_event(): a core/v1 Event in `ns`.
  KubeResponse evict_pod(const std::string& ns, const std::string& name, const std::string& uid) const;
  std::string patch_node_annotations(const std::string& node,
                                     const std::map<std::string, std::optional<std::string>>& annotations) const;
  std::string create_event(const std::string& ns, const nlohmann::json& event) const;
  KubeResponse stream_lines(const std::string& path, const std::function<bool(std::string_view)>& on_line,
                            const std::atomic<bool>& stop, long max_s) const;

 private:
  KubeConfig config_;
  long timeout_s_;
};

class KubeBinder : public Binder {
 public:
  explicit KubeBinder(const KubeClient& client) : client_(client) {}
  std::string bind(const K8sPod& pod, const std::string& node, const std::string& assigned_gpus) override;
  // Two phases: every member's gpupack.io/gang-commit (and assigned-gpus)
  // annotation, then the Bindings.
  std::vector<std::string> bind_gang(const std::vector<Item>& items, const std::string& commit_id) override;

 private:
  const KubeClient& client_;
};

}  // namespace gpupack
