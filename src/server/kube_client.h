// KubeClient: the few Kubernetes API calls `gpupack serve` makes (libcurl).
//
// Contract:
// - KubeConfig holds the API server URL, a bearer token and the CA (file or
//   PEM data); in_cluster_config() reads the service-account files and the
//   KUBERNETES_SERVICE_HOST/PORT environment, read_kubeconfig() the current
//   context of a kubeconfig file (server, certificate-authority[-data],
//   insecure-skip-tls-verify, token / tokenFile; client certificates are not
//   supported). Both throw std::invalid_argument naming the file and field.
// - list_nodes()/list_pods() GET /api/v1/nodes and /api/v1/pods and return
//   the body text (a NodeList/PodList); patch_pod_annotations() sends a JSON
//   merge patch of metadata.annotations; create_binding() POSTs a v1 Binding
//   to /api/v1/namespaces/{ns}/pods/{name}/binding. Every call returns ""
//   on a 2xx reply, else an error naming the call, the HTTP status and the
//   API's message; transport and TLS errors name the call and carry curl's
//   reason (e.g. "SSL certificate problem: unable to get local issuer
//   certificate"). Timeouts: `timeout_s` per call. All calls share one setup
//   of URL, token and TLS options.
// - stream_lines() GETs a watch URL and hands each complete line (one
//   WatchEvent) to a callback as it arrives; it ends when the server closes
//   the stream or after `max_s` seconds (error ""), on a non-2xx reply or a
//   transport error (error set, as above), when the callback returns false,
//   or when `stop` turns true (checked about once a second; error "").
// - KubeBinder implements Binder: annotation patch (GPU pods), then Binding.
// - Thread-safe (one curl handle per call).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "server/extender_service.h"

namespace gpupack {

struct KubeConfig {
  std::string server;          // "https://10.0.0.1:443"
  std::string token;
  std::string ca_file;         // PEM file; "" = none
  std::string ca_data;         // PEM text (decoded certificate-authority-data)
  bool insecure_skip_verify = false;
};

KubeConfig in_cluster_config();
KubeConfig read_kubeconfig(const std::string& path);

struct KubeResponse {
  long status = 0;       // HTTP status; 0 = transport error
  std::string body;
  std::string error;     // "" when 2xx
};

class KubeClient {
 public:
  explicit KubeClient(KubeConfig config, long timeout_s = 10);

  KubeResponse request(const std::string& method, const std::string& path, const std::string& body,
                       const std::string& content_type) const;
  KubeResponse list_nodes() const { return request("GET", "/api/v1/nodes", "", ""); }
  KubeResponse list_pods() const { return request("GET", "/api/v1/pods", "", ""); }
  std::string patch_pod_annotations(const std::string& ns, const std::string& name,
                                    const std::map<std::string, std::string>& annotations) const;
  std::string create_binding(const std::string& ns, const std::string& name, const std::string& uid,
                             const std::string& node) const;
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

 private:
  const KubeClient& client_;
};

}  // namespace gpupack
