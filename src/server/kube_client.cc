#include "server/kube_client.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string_view>

#include "util/strings.h"

namespace gpupack {

namespace {

size_t collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

KubeClient::KubeClient(KubeConfig config, long timeout_s) : config_(std::move(config)), timeout_s_(timeout_s) {
  global_init();
}

namespace {

// The credential of one call: the static one of `config`, with what its
// CredentialSource supplies put over it. Throws what the source throws.
KubeCredential call_credential(const KubeConfig& config) {
  KubeCredential c{config.token, config.client_cert_data, config.client_key_data};
  if (config.credentials) {
    KubeCredential fresh = config.credentials->get();
    if (!fresh.token.empty()) c.token = std::move(fresh.token);
    if (!fresh.client_cert_pem.empty()) {
      c.client_cert_pem = std::move(fresh.client_cert_pem);
      c.client_key_pem = std::move(fresh.client_key_pem);
    }
  }
  return c;
}

// One call's curl handle, headers and error buffer, prepared for `config`
// and `cred` (URL, bearer token, client certificate, CA file or data,
// insecure-skip-verify, proxy); released on destruction. `error` is set when
// it could not be prepared.
struct Handle {
  CURL* curl = nullptr;
  curl_slist* headers = nullptr;
  char detail[CURL_ERROR_SIZE] = "";  // curl's reason, e.g. "SSL certificate problem: ..."
  std::string error;

  Handle(const KubeConfig& config, const KubeCredential& cred, const std::string& url,
         const std::string& content_type) {
    curl = curl_easy_init();
    if (!curl) {
      error = "cannot create a curl handle";
      return;
    }
    headers = curl_slist_append(headers, "Accept: application/json");
    if (!content_type.empty()) headers = curl_slist_append(headers, ("Content-Type: " + content_type).c_str());
    if (!cred.token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + cred.token).c_str());
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, detail);
    if (!config.proxy_url.empty()) curl_easy_setopt(curl, CURLOPT_PROXY, config.proxy_url.c_str());
    if (!config.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, config.ca_file.c_str());
    if (!config.ca_data.empty() && !set_blob(CURLOPT_CAINFO_BLOB, config.ca_data))
      error = "this libcurl cannot take CA data (certificate-authority-data); use a CA file";
    if (!cred.client_cert_pem.empty()) {
      curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
      if (!set_blob(CURLOPT_SSLCERT_BLOB, cred.client_cert_pem) || !set_blob(CURLOPT_SSLKEY_BLOB, cred.client_key_pem))
        error = "this libcurl cannot take client certificate data (client-certificate-data); use files";
    } else if (!config.client_cert_file.empty()) {
      curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(curl, CURLOPT_SSLCERT, config.client_cert_file.c_str());
      if (!config.client_key_file.empty()) {
        curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
        curl_easy_setopt(curl, CURLOPT_SSLKEY, config.client_key_file.c_str());
      }
    }
    if (config.insecure_skip_verify) {
      curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    }
  }
  // curl copies the bytes (CURL_BLOB_COPY); false when this libcurl lacks the option.
  bool set_blob(CURLoption option, const std::string& bytes) {
    curl_blob blob{const_cast<char*>(bytes.data()), bytes.size(), CURL_BLOB_COPY};
    return curl_easy_setopt(curl, option, &blob) == CURLE_OK;
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
  const std::string url = config_.server + path;
  for (int attempt = 0;; ++attempt) {
    KubeResponse r;
    KubeCredential cred;
    try {
      cred = call_credential(config_);
    } catch (const std::exception& e) {
      r.error = fmt::format("{} {}: credentials: {}", method, url, e.what());
      return r;
    }
    Handle h(config_, cred, url, content_type);
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
      if (r.status == 401 && config_.credentials && attempt == 0) {
        config_.credentials->invalidate();  // expired or revoked early: fetch anew, send once more
        continue;
      }
      if (r.status < 200 || r.status >= 300)
        r.error = fmt::format("{} {}: HTTP {}: {}", method, url, r.status, api_message(r.body));
    }
    return r;
  }
}

namespace {

// "" when `ns` is a DNS-1123 label and `name` a DNS-1123 subdomain, as the
// API requires of namespaces and of pod and node names (`noun` says which,
// for the message); else why not. A name that
// passes is one path segment as it stands (lower-case letters, digits, '-'
// and '.', never "." or ".."), so no name can reach another API path.
std::string check_pod_path(std::string_view call, const std::string& ns, const std::string& name,
                           std::string_view noun = "pod") {
  auto dns = [](std::string_view v, bool dots, size_t max) {
    if (v.empty() || v.size() > max) return false;
    auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    size_t start = 0;  // each dot-separated part: alnum at both ends, '-' inside
    for (size_t i = 0; i <= v.size(); ++i) {
      if (i < v.size() && v[i] != '.') {
        if (!alnum(v[i]) && v[i] != '-') return false;
        continue;
      }
      if (i < v.size() && !dots) return false;
      if (i == start || !alnum(v[start]) || !alnum(v[i - 1])) return false;
      start = i + 1;
    }
    return true;
  };
  if (!dns(ns, false, 63))
    return fmt::format("{}: namespace \"{}\" is not a valid Kubernetes namespace (DNS-1123 label); no request sent",
                       call, excerpt(ns));
  if (!dns(name, true, 253))
    return fmt::format("{}: {} name \"{}\" is not a valid Kubernetes name (DNS-1123 subdomain); no request sent", call,
                       noun, excerpt(name));
  return "";
}

}  // namespace

std::string KubeClient::check_object_path(std::string_view call, const std::string& ns, const std::string& name,
                                          std::string_view noun) {
  return check_pod_path(call, ns, name, noun);
}

std::string KubeClient::patch_pod_annotations(const std::string& ns, const std::string& name,
                                              const std::map<std::string, std::string>& annotations) const {
  if (std::string bad = check_pod_path("PATCH pod", ns, name); !bad.empty()) return bad;
  nlohmann::json patch = {{"metadata", {{"annotations", annotations}}}};
  return request("PATCH", fmt::format("/api/v1/namespaces/{}/pods/{}", ns, name), patch.dump(),
                 "application/merge-patch+json")
      .error;
}

std::string KubeClient::create_binding(const std::string& ns, const std::string& name, const std::string& uid,
                                       const std::string& node) const {
  if (std::string bad = check_pod_path("POST binding", ns, name); !bad.empty()) return bad;
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

KubeResponse KubeClient::evict_pod(const std::string& ns, const std::string& name, const std::string& uid) const {
  if (std::string bad = check_pod_path("POST eviction", ns, name); !bad.empty()) return {0, "", bad};
  nlohmann::json meta = {{"name", name}, {"namespace", ns}};
  nlohmann::json eviction = {{"apiVersion", "policy/v1"}, {"kind", "Eviction"}, {"metadata", meta}};
  if (!uid.empty()) eviction["deleteOptions"] = {{"preconditions", {{"uid", uid}}}};
  return request("POST", fmt::format("/api/v1/namespaces/{}/pods/{}/eviction", ns, name), eviction.dump(),
                 "application/json");
}

std::string KubeClient::patch_node_annotations(
    const std::string& node, const std::map<std::string, std::optional<std::string>>& annotations) const {
  if (std::string bad = check_pod_path("PATCH node", "default", node, "node"); !bad.empty()) return bad;
  nlohmann::json values = nlohmann::json::object();
  for (const auto& [k, v] : annotations) values[k] = v ? nlohmann::json(*v) : nlohmann::json();
  nlohmann::json patch = {{"metadata", {{"annotations", values}}}};
  return request("PATCH", fmt::format("/api/v1/nodes/{}", node), patch.dump(), "application/merge-patch+json").error;
}

std::string KubeClient::create_event(const std::string& ns, const nlohmann::json& event) const {
  if (std::string bad = check_pod_path("POST event", ns, "event"); !bad.empty()) return bad;
  return request("POST", fmt::format("/api/v1/namespaces/{}/events", ns), event.dump(), "application/json").error;
}

namespace {

struct LineStream {
  CURL* curl = nullptr;
  const std::function<bool(std::string_view)>* on_line = nullptr;
  const std::atomic<bool>* stop = nullptr;
  std::string pending;     // an incomplete last line
  std::string error_body;  // the body of a non-2xx reply
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
  KubeCredential cred;
  try {
    cred = call_credential(config_);
  } catch (const std::exception& e) {
    r.error = fmt::format("GET {}: credentials: {}", url, e.what());
    return r;
  }
  Handle h(config_, cred, url, "");
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
    if (r.status == 401 && config_.credentials) config_.credentials->invalidate();  // the reopen fetches anew
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

std::vector<std::string> KubeBinder::bind_gang(const std::vector<Item>& items, const std::string& commit_id) {
  // Phase 1: every member carries the commit (and its GPUs) before any
  // Binding exists; a failure here binds nobody.
  std::vector<std::string> errors(items.size());
  for (size_t k = 0; k < items.size(); ++k) {
    std::map<std::string, std::string> a = {{std::string(annotations::kGangCommit), commit_id + "@" + items[k].node}};
    if (!items[k].assigned_gpus.empty()) a[std::string(annotations::kAssignedGpus)] = items[k].assigned_gpus;
    std::string err = client_.patch_pod_annotations(items[k].pod.namespace_name, items[k].pod.name, a);
    if (!err.empty()) {
      const std::string why = fmt::format("recording gang commit {} on {}: {}", commit_id, items[k].pod.key(), err);
      return std::vector<std::string>(items.size(), why);
    }
  }
  // Phase 2: the Bindings. The first one commits the gang: a restart binds
  // the rest (ExtenderService roll-forward).
  for (size_t k = 0; k < items.size(); ++k) {
    std::string err =
        client_.create_binding(items[k].pod.namespace_name, items[k].pod.name, items[k].pod.uid, items[k].node);
    if (!err.empty()) errors[k] = "creating the Binding: " + err;
  }
  return errors;
}

}  // namespace gpupack
