#include "server/kube_client.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace gpupack {

namespace {

constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

std::string slurp(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(fmt::format("{}: cannot read {}", path, what));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string base64_decode(const std::string& in, const std::string& where) {
  static const std::string chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -8;
  for (char c : in) {
    if (c == '=' || c == '\n' || c == '\r' || c == ' ') continue;
    const size_t p = chars.find(c);
    if (p == std::string::npos) throw std::invalid_argument(where + ": not base64");
    val = (val << 6) + static_cast<int>(p);
    bits += 6;
    if (bits >= 0) {
      out.push_back(static_cast<char>((val >> bits) & 0xFF));
      bits -= 8;
    }
  }
  return out;
}

YAML::Node named(const YAML::Node& list, const std::string& name, const std::string& path, const std::string& field) {
  if (list && list.IsSequence())
    for (const YAML::Node& item : list)
      if (item["name"] && item["name"].as<std::string>() == name) return item;
  throw std::invalid_argument(fmt::format("{}: {}: no entry named \"{}\"", path, field, name));
}

size_t collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

KubeConfig in_cluster_config() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || !*host || !*port)
    throw std::invalid_argument("in-cluster config: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set");
  KubeConfig c;
  const std::string h = host;
  c.server = fmt::format("https://{}:{}", h.find(':') != std::string::npos ? "[" + h + "]" : h, port);
  c.token = trim(slurp(std::string(kServiceAccountDir) + "/token", "the service-account token"));
  c.ca_file = std::string(kServiceAccountDir) + "/ca.crt";
  return c;
}

KubeConfig read_kubeconfig(const std::string& path) {
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(path);
  } catch (const std::exception& e) {
    throw std::invalid_argument(fmt::format("{}: not a readable YAML kubeconfig: {}", path, e.what()));
  }
  if (!doc["current-context"]) throw std::invalid_argument(path + ": current-context: missing");
  const std::string ctx_name = doc["current-context"].as<std::string>();
  const YAML::Node ctx = named(doc["contexts"], ctx_name, path, "contexts")["context"];
  if (!ctx || !ctx["cluster"]) throw std::invalid_argument(fmt::format("{}: contexts[{}].context.cluster: missing", path, ctx_name));
  const std::string cluster_name = ctx["cluster"].as<std::string>();
  const YAML::Node cluster = named(doc["clusters"], cluster_name, path, "clusters")["cluster"];
  if (!cluster || !cluster["server"])
    throw std::invalid_argument(fmt::format("{}: clusters[{}].cluster.server: missing", path, cluster_name));
  KubeConfig c;
  c.server = cluster["server"].as<std::string>();
  while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
  if (cluster["certificate-authority"]) c.ca_file = cluster["certificate-authority"].as<std::string>();
  if (cluster["certificate-authority-data"])
    c.ca_data = base64_decode(cluster["certificate-authority-data"].as<std::string>(),
                              fmt::format("{}: clusters[{}].cluster.certificate-authority-data", path, cluster_name));
  if (cluster["insecure-skip-tls-verify"]) c.insecure_skip_verify = cluster["insecure-skip-tls-verify"].as<bool>();
  if (ctx["user"]) {
    const std::string user_name = ctx["user"].as<std::string>();
    const YAML::Node user = named(doc["users"], user_name, path, "users")["user"];
    if (user && user["token"]) c.token = user["token"].as<std::string>();
    else if (user && user["tokenFile"]) c.token = trim(slurp(user["tokenFile"].as<std::string>(), "tokenFile"));
    else if (user && (user["client-certificate"] || user["client-certificate-data"]))
      throw std::invalid_argument(fmt::format("{}: users[{}]: client certificates are not supported; use a token",
                                              path, user_name));
  }
  return c;
}

KubeClient::KubeClient(KubeConfig config, long timeout_s) : config_(std::move(config)), timeout_s_(timeout_s) {
  global_init();
}

namespace {

// One call's curl handle, headers and error buffer, prepared for `config`
// (URL, bearer token, CA file or data, insecure-skip-verify); released on
// destruction. `error` is set when it could not be prepared.
struct Handle {
  CURL* curl = nullptr;
  curl_slist* headers = nullptr;
  curl_blob blob{};
  char detail[CURL_ERROR_SIZE] = "";  // curl's reason, e.g. "SSL certificate problem: ..."
  std::string error;

  Handle(const KubeConfig& config, const std::string& url, const std::string& content_type) {
    curl = curl_easy_init();
    if (!curl) {
      error = "cannot create a curl handle";
      return;
    }
    headers = curl_slist_append(headers, "Accept: application/json");
    if (!content_type.empty()) headers = curl_slist_append(headers, ("Content-Type: " + content_type).c_str());
    if (!config.token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + config.token).c_str());
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, detail);
    if (!config.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, config.ca_file.c_str());
    if (!config.ca_data.empty()) {
      blob.data = const_cast<char*>(config.ca_data.data());
      blob.len = config.ca_data.size();
      blob.flags = CURL_BLOB_COPY;
      if (curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &blob) != CURLE_OK)
        error = "this libcurl cannot take CA data (certificate-authority-data); use a CA file";
    }
    if (config.insecure_skip_verify) {
      curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    }
  }
  ~Handle() {
    curl_slist_free_all(headers);
    if (curl) curl_easy_cleanup(curl);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  std::string reason(CURLcode rc) const { return detail[0] ? detail : curl_easy_strerror(rc); }
};

// The API's message from an error body (a Status object), else its start.
std::string api_message(const std::string& body) {
  try {
    auto j = nlohmann::json::parse(body);
    if (j.is_object() && j.contains("message") && j["message"].is_string()) return j["message"];
  } catch (...) {
  }
  return body.substr(0, 300);
}

}  // namespace

KubeResponse KubeClient::request(const std::string& method, const std::string& path, const std::string& body,
                                 const std::string& content_type) const {
  KubeResponse r;
  const std::string url = config_.server + path;
  Handle h(config_, url, content_type);
  if (!h.error.empty()) {
    r.error = fmt::format("{} {}: {}", method, url, h.error);
    return r;
  }
  curl_easy_setopt(h.curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(h.curl, CURLOPT_TIMEOUT, timeout_s_);
  curl_easy_setopt(h.curl, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(h.curl, CURLOPT_WRITEDATA, &r.body);
  if (!body.empty() || method == "POST" || method == "PATCH") {
    curl_easy_setopt(h.curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h.curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  const CURLcode rc = curl_easy_perform(h.curl);
  if (rc != CURLE_OK) {
    r.error = fmt::format("{} {}: {}", method, url, h.reason(rc));
  } else {
    curl_easy_getinfo(h.curl, CURLINFO_RESPONSE_CODE, &r.status);
    if (r.status < 200 || r.status >= 300)
      r.error = fmt::format("{} {}: HTTP {}: {}", method, url, r.status, api_message(r.body));
  }
  return r;
}

std::string KubeClient::patch_pod_annotations(const std::string& ns, const std::string& name,
                                              const std::map<std::string, std::string>& annotations) const {
  nlohmann::json patch = {{"metadata", {{"annotations", annotations}}}};
  return request("PATCH", fmt::format("/api/v1/namespaces/{}/pods/{}", ns, name), patch.dump(),
                 "application/merge-patch+json")
      .error;
}

std::string KubeClient::create_binding(const std::string& ns, const std::string& name, const std::string& uid,
                                       const std::string& node) const {
  nlohmann::json meta = {{"name", name}, {"namespace", ns}};
  if (!uid.empty()) meta["uid"] = uid;
  nlohmann::json binding = {{"apiVersion", "v1"},
                            {"kind", "Binding"},
                            {"metadata", meta},
                            {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  return request("POST", fmt::format("/api/v1/namespaces/{}/pods/{}/binding", ns, name), binding.dump(),
                 "application/json")
      .error;
}

namespace {

struct LineStream {
  CURL* curl = nullptr;
  const std::function<bool(std::string_view)>* on_line = nullptr;
  const std::atomic<bool>* stop = nullptr;
  std::string pending;    // an incomplete last line
  std::string error_body; // the body of a non-2xx reply
  bool ended_by_callback = false;
};

size_t stream_chunk(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<LineStream*>(user);
  const size_t bytes = size * n;
  long status = 0;
  curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status >= 300) {
    if (s->error_body.size() < 4096) s->error_body.append(data, std::min<size_t>(bytes, 4096));
    return bytes;
  }
  s->pending.append(data, bytes);
  size_t start = 0;
  for (size_t nl; (nl = s->pending.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view line(s->pending.data() + start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (!(*s->on_line)(line)) {
      s->ended_by_callback = true;
      return 0;  // aborts the transfer
    }
  }
  s->pending.erase(0, start);
  return bytes;
}

int stream_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<LineStream*>(user)->stop->load() ? 1 : 0;
}

}  // namespace

KubeResponse KubeClient::stream_lines(const std::string& path, const std::function<bool(std::string_view)>& on_line,
                                      const std::atomic<bool>& stop, long max_s) const {
  KubeResponse r;
  const std::string url = config_.server + path;
  Handle h(config_, url, "");
  if (!h.error.empty()) {
    r.error = fmt::format("GET {}: {}", url, h.error);
    return r;
  }
  LineStream s;
  s.curl = h.curl;
  s.on_line = &on_line;
  s.stop = &stop;
  curl_easy_setopt(h.curl, CURLOPT_CONNECTTIMEOUT, timeout_s_);
  curl_easy_setopt(h.curl, CURLOPT_TIMEOUT, max_s);
  curl_easy_setopt(h.curl, CURLOPT_WRITEFUNCTION, stream_chunk);
  curl_easy_setopt(h.curl, CURLOPT_WRITEDATA, &s);
  curl_easy_setopt(h.curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h.curl, CURLOPT_XFERINFOFUNCTION, stream_progress);
  curl_easy_setopt(h.curl, CURLOPT_XFERINFODATA, &s);
  const CURLcode rc = curl_easy_perform(h.curl);
  curl_easy_getinfo(h.curl, CURLINFO_RESPONSE_CODE, &r.status);
  if (r.status != 0 && (r.status < 200 || r.status >= 300)) {
    r.error = fmt::format("GET {}: HTTP {}: {}", url, r.status, api_message(s.error_body));
  } else if (rc != CURLE_OK && rc != CURLE_OPERATION_TIMEDOUT && !s.ended_by_callback &&
             !(rc == CURLE_ABORTED_BY_CALLBACK && stop.load())) {
    r.error = fmt::format("GET {}: {}", url, h.reason(rc));
  }
  return r;
}

std::string KubeBinder::bind(const K8sPod& pod, const std::string& node, const std::string& assigned_gpus) {
  if (!assigned_gpus.empty()) {
    std::string err = client_.patch_pod_annotations(pod.namespace_name, pod.name,
                                                    {{std::string(annotations::kAssignedGpus), assigned_gpus}});
    if (!err.empty()) return "recording the GPU assignment: " + err;
  }
  std::string err = client_.create_binding(pod.namespace_name, pod.name, pod.uid, node);
  return err.empty() ? "" : "creating the Binding: " + err;
}

}  // namespace gpupack
