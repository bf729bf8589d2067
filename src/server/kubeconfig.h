// Kubeconfig loading as kubectl does it, and credentials from exec plugins.
//
// Contract:
// - resolve_kube_config() gives every front end (serve, analyze, the defrag
//   executor) its API access in kubectl's order:
//     1. an explicit path (--kubeconfig): that file only; it must exist;
//     2. KUBECONFIG: ':'-separated files (empty and repeated entries
//        dropped, missing files skipped), merged as kubectl merges them: the
//        first file to set current-context wins, and a cluster, context or
//        user is taken whole from the first file that names it;
//     3. ~/.kube/config when it exists ($HOME);
//     4. the in-cluster service account (KUBERNETES_SERVICE_HOST/PORT).
//   A context name (--context) replaces current-context. When nothing is
//   found the error lists what was tried.
// - Files: clusters (server, certificate-authority[-data],
//   insecure-skip-tls-verify, proxy-url), users (token, tokenFile,
//   client-certificate[-data], client-key[-data], exec with
//   client.authentication.k8s.io/v1 or v1beta1). Relative paths are relative
//   to the folder of the file that holds them (as kubectl reads them); an exec
//   command without '/' is looked up in PATH. tokenFile wins over token
//   and is re-read once a minute (in-cluster too: bound tokens rotate). Fields
//   gpupack cannot honour (auth-provider, username/password, impersonation,
//   tls-server-name) are refused by name, never ignored; other unknown fields
//   are ignored, as kubectl does.
// - Errors: std::invalid_argument naming the file and the field, e.g.
//   `/home/a/.kube/config: contexts["prod"].context.user: no user named "x"
//   (in /home/a/.kube/config)`. Nothing is half-loaded.
// - Exec plugins: run_exec_plugin() starts the command with its args (no
//   shell; posix_spawn), the process environment plus the plugin's env plus
//   KUBERNETES_EXEC_INFO (an ExecCredential with spec.interactive=false and,
//   when provideClusterInfo, spec.cluster), stdin from /dev/null. It reads
//   the ExecCredential on stdout: status.token or
//   status.clientCertificateData + clientKeyData (PEM), and
//   status.expirationTimestamp (RFC 3339). Bounded: `timeout_ms` (the whole
//   process group is killed past it), `max_output_bytes` of stdout. Errors
//   (std::runtime_error) name the command and the kubeconfig field, with the
//   exit status and an excerpt of stderr (and the installHint when the
//   command cannot be found). interactiveMode Always is refused (gpupack
//   runs without a terminal).
// - ExecCredentialSource caches the plugin's credential until its
//   expirationTimestamp has passed (no timestamp: until invalidate(), which
//   KubeClient calls on a 401); one plugin run at a time. Thread-safe.
#pragma once

#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/kube_client.h"

namespace gpupack {

struct KubeconfigSelection {
  std::string kubeconfig_path = {};  // --kubeconfig; "" = not given
  std::string context = {};          // --context; "" = the current-context
  // The environment; nullopt = read KUBECONFIG / HOME from the process.
  std::optional<std::string> kubeconfig_env = {};
  std::optional<std::string> home = {};
  bool allow_in_cluster = true;
};

KubeConfig resolve_kube_config(const KubeconfigSelection& selection);

// The merged files (first wins, as above), context `context` or the
// current-context. Every path must exist.
KubeConfig load_kubeconfig_files(const std::vector<std::string>& paths, const std::string& context = "");
KubeConfig read_kubeconfig(const std::string& path, const std::string& context = "");

// The service account of the pod gpupack runs in; `account_dir` holds
// token and ca.crt.
KubeConfig in_cluster_config(const std::string& account_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// KUBECONFIG's list: ':'-separated, empty and repeated entries dropped.
std::vector<std::string> split_kubeconfig_env(const std::string& value);

struct ExecPluginConfig {
  std::string api_version = {};  // client.authentication.k8s.io/v1 or /v1beta1
  std::string command = {};      // a path, or a name looked up in PATH
  std::vector<std::string> args = {};
  std::vector<std::pair<std::string, std::string>> env = {};
  std::string install_hint = {};
  nlohmann::json cluster = nullptr;  // spec.cluster of KUBERNETES_EXEC_INFO; null = provideClusterInfo false
  std::string where = {};            // "FILE: users[\"u\"].user.exec", for messages
  long timeout_ms = 30000;
  size_t max_output_bytes = 1u << 20;
};

struct ExecCredentialResult {
  KubeCredential credential;
  std::optional<std::chrono::system_clock::time_point> expires;  // nullopt = no expirationTimestamp
};

ExecCredentialResult run_exec_plugin(const ExecPluginConfig& plugin);

class ExecCredentialSource : public CredentialSource {
 public:
  explicit ExecCredentialSource(ExecPluginConfig plugin) : plugin_(std::move(plugin)) {}
  KubeCredential get() override;
  void invalidate() override;
  int runs() const;  // how often the plugin has been run

 private:
  ExecPluginConfig plugin_;
  mutable std::mutex mu_;
  std::optional<ExecCredentialResult> cached_;
  int runs_ = 0;
};

// A bearer token read from a file, re-read when older than `max_age`
// (or after invalidate()); a failed re-read keeps the last token. Thread-safe.
class TokenFileSource : public CredentialSource {
 public:
  // Reads the file now; throws std::invalid_argument naming `where` if it cannot.
  TokenFileSource(std::string path, std::string where,
                  std::chrono::steady_clock::duration max_age = std::chrono::minutes(1));
  KubeCredential get() override;
  void invalidate() override;

 private:
  std::string path_, where_;
  std::chrono::steady_clock::duration max_age_;
  std::mutex mu_;
  std::string token_;
  std::chrono::steady_clock::time_point read_at_;
};

}  // namespace gpupack
