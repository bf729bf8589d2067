#include "server/kubeconfig.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "util/strings.h"

extern char** environ;

namespace gpupack {

namespace {

namespace fs = std::filesystem;

constexpr const char* kExecV1 = "client.authentication.k8s.io/v1";
constexpr const char* kExecV1beta1 = "client.authentication.k8s.io/v1beta1";

// The whole file, or nullopt when it cannot be read (bounded: 16 MiB).
std::optional<std::string> try_slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string out;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<size_t>(in.gcount()));
    if (out.size() > (16u << 20)) return std::nullopt;
  }
  return out;
}

std::string slurp(const std::string& path, const std::string& where) {
  auto text = try_slurp(path);
  if (!text) throw std::invalid_argument(fmt::format("{}: cannot read {}", where, path));
  return *text;
}

std::string base64_decode(const std::string& in, const std::string& where) {
  static const std::string chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -8;
  for (char c : in) {
    if (c == '=' || c == '\n' || c == '\r' || c == ' ') continue;
    const size_t p = chars.find(c);
    if (p == std::string::npos) throw std::invalid_argument(where + ": not base64");
    val = ((val << 6) + static_cast<int>(p)) & 0xFFFFFF;
    bits += 6;
    if (bits >= 0) {
      out.push_back(static_cast<char>((val >> bits) & 0xFF));
      bits -= 8;
    }
  }
  return out;
}

std::string base64_encode(const std::string& in) {
  static const char* chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += {chars[v >> 18], chars[(v >> 12) & 63], chars[(v >> 6) & 63], chars[v & 63]};
  }
  if (i + 1 == in.size()) {
    const unsigned v = static_cast<unsigned char>(in[i]) << 16;
    out += {chars[v >> 18], chars[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += {chars[v >> 18], chars[(v >> 12) & 63], chars[(v >> 6) & 63], '='};
  }
  return out;
}

// ---- Reading the YAML with errors that name the field --------------------

// The value of `key` in `map`, or an undefined node when absent or null.
YAML::Node field(const YAML::Node& map, const char* key) {
  if (!map || !map.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node v = map[key];
  if (!v || v.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
  return v;
}

std::string scalar(const YAML::Node& n, const std::string& where) {
  if (!n.IsScalar()) throw std::invalid_argument(where + ": expected a string");
  return n.Scalar();
}

bool boolean(const YAML::Node& n, const std::string& where) {
  bool b = false;
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, b))
    throw std::invalid_argument(
        fmt::format("{}: expected true or false{}", where, n.IsScalar() ? ", got \"" + n.Scalar() + "\"" : ""));
  return b;
}

// A path from a kubeconfig: relative ones are relative to the file's folder.
std::string resolve_path(const std::string& p, const std::string& dir) {
  if (p.empty() || fs::path(p).is_absolute()) return p;
  return (fs::path(dir) / p).lexically_normal().string();
}

nlohmann::json yaml_to_json(const YAML::Node& n) {
  if (!n || n.IsNull()) return nullptr;
  if (n.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const YAML::Node& x : n) a.push_back(yaml_to_json(x));
    return a;
  }
  if (n.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& kv : n) o[kv.first.Scalar()] = yaml_to_json(kv.second);
    return o;
  }
  // A quoted scalar stays a string; a plain one may be a bool or number.
  if (n.Tag() != "!") {
    bool b = false;
    if (n.Scalar() == "true" || n.Scalar() == "false") {
      YAML::convert<bool>::decode(n, b);
      return b;
    }
    const std::string& s = n.Scalar();
    char* end = nullptr;
    const long long i = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end && *end == '\0') return i;
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end && *end == '\0') return d;
  }
  return n.Scalar();
}

struct LoadedFile {
  std::string path, dir;
  YAML::Node doc;
};

struct Entry {
  YAML::Node body;  // the item's "cluster" / "context" / "user" map (may be undefined)
  size_t file = 0;
};

struct Merged {
  std::vector<LoadedFile> files;
  std::map<std::string, Entry> clusters, contexts, users;
  std::string current_context;
  size_t current_context_file = 0;

  std::string file_list() const {
    std::string s;
    for (const LoadedFile& f : files) s += (s.empty() ? "" : ", ") + f.path;
    return s;
  }
};

// Adds the named items of `list_key` not seen in an earlier file.
void collect_named(const LoadedFile& f, size_t index, const char* list_key, const char* body_key,
                   std::map<std::string, Entry>& out) {
  const YAML::Node list = field(f.doc, list_key);
  if (!list) return;
  if (!list.IsSequence()) throw std::invalid_argument(fmt::format("{}: {}: expected a list", f.path, list_key));
  std::set<std::string> here;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node item = list[i];
    const std::string where = fmt::format("{}: {}[{}]", f.path, list_key, i);
    if (!item.IsMap()) throw std::invalid_argument(where + ": expected a map with name and " + body_key);
    const YAML::Node name_node = field(item, "name");
    if (!name_node) throw std::invalid_argument(where + ".name: missing");
    const std::string name = scalar(name_node, where + ".name");
    if (!here.insert(name).second)
      throw std::invalid_argument(fmt::format("{}: {}: \"{}\" appears twice", f.path, list_key, name));
    out.emplace(name, Entry{field(item, body_key), index});  // the first file to name it wins
  }
}

Merged merge_files(const std::vector<std::string>& paths) {
  Merged m;
  for (const std::string& p : paths) {
    LoadedFile f;
    f.path = p;
    f.dir = fs::path(p).parent_path().string();
    if (f.dir.empty()) f.dir = ".";
    std::error_code ec;
    if (!fs::exists(p, ec)) throw std::invalid_argument(fmt::format("{}: no such kubeconfig file", p));
    const std::string text = slurp(p, p + ": kubeconfig");
    try {
      f.doc = YAML::Load(text);
    } catch (const std::exception& e) {
      throw std::invalid_argument(fmt::format("{}: not a readable YAML kubeconfig: {}", p, e.what()));
    }
    if (f.doc && !f.doc.IsNull() && !f.doc.IsMap())
      throw std::invalid_argument(fmt::format("{}: not a kubeconfig (expected a map at the top)", p));
    m.files.push_back(std::move(f));
  }
  for (size_t i = 0; i < m.files.size(); ++i) {
    const LoadedFile& f = m.files[i];
    if (const YAML::Node cc = field(f.doc, "current-context"); cc && m.current_context.empty()) {
      m.current_context = scalar(cc, f.path + ": current-context");
      m.current_context_file = i;
    }
    collect_named(f, i, "clusters", "cluster", m.clusters);
    collect_named(f, i, "contexts", "context", m.contexts);
    collect_named(f, i, "users", "user", m.users);
  }
  return m;
}

// The cluster's exec-plugin extension (clusters[].cluster.extensions[] named
// client.authentication.k8s.io/exec), or null.
nlohmann::json exec_extension(const YAML::Node& cluster) {
  const YAML::Node ext = field(cluster, "extensions");
  if (!ext || !ext.IsSequence()) return nullptr;
  for (const YAML::Node& e : ext)
    if (e.IsMap() && field(e, "name") && field(e, "name").IsScalar() &&
        field(e, "name").Scalar() == "client.authentication.k8s.io/exec")
      return yaml_to_json(field(e, "extension"));
  return nullptr;
}

ExecPluginConfig read_exec(const YAML::Node& exec, const std::string& where, const std::string& dir) {
  if (!exec.IsMap()) throw std::invalid_argument(where + ": expected a map");
  ExecPluginConfig p;
  p.where = where;
  const YAML::Node api = field(exec, "apiVersion");
  if (!api) throw std::invalid_argument(where + ".apiVersion: missing");
  p.api_version = scalar(api, where + ".apiVersion");
  if (p.api_version != kExecV1 && p.api_version != kExecV1beta1)
    throw std::invalid_argument(fmt::format("{}.apiVersion: \"{}\" is not supported (use {} or {})", where,
                                            p.api_version, kExecV1, kExecV1beta1));
  const YAML::Node cmd = field(exec, "command");
  if (!cmd) throw std::invalid_argument(where + ".command: missing");
  p.command = scalar(cmd, where + ".command");
  if (p.command.empty()) throw std::invalid_argument(where + ".command: empty");
  if (p.command.find('/') != std::string::npos) p.command = resolve_path(p.command, dir);
  if (const YAML::Node args = field(exec, "args")) {
    if (!args.IsSequence()) throw std::invalid_argument(where + ".args: expected a list");
    for (size_t i = 0; i < args.size(); ++i) p.args.push_back(scalar(args[i], fmt::format("{}.args[{}]", where, i)));
  }
  if (const YAML::Node env = field(exec, "env")) {
    if (!env.IsSequence()) throw std::invalid_argument(where + ".env: expected a list");
    for (size_t i = 0; i < env.size(); ++i) {
      const std::string w = fmt::format("{}.env[{}]", where, i);
      const YAML::Node name = field(env[i], "name");
      if (!name) throw std::invalid_argument(w + ".name: missing");
      const YAML::Node value = field(env[i], "value");
      p.env.emplace_back(scalar(name, w + ".name"), value ? scalar(value, w + ".value") : "");
    }
  }
  if (const YAML::Node hint = field(exec, "installHint")) p.install_hint = scalar(hint, where + ".installHint");
  if (const YAML::Node mode = field(exec, "interactiveMode")) {
    const std::string m = scalar(mode, where + ".interactiveMode");
    if (m == "Always")
      throw std::invalid_argument(where + ".interactiveMode: Always needs a terminal, and gpupack runs without one");
    if (m != "Never" && m != "IfAvailable")
      throw std::invalid_argument(
          fmt::format("{}.interactiveMode: \"{}\" is not one of Never, IfAvailable, Always", where, m));
  }
  return p;
}

void refuse(const YAML::Node& user, const char* key, const std::string& where, const std::string& instead) {
  if (field(user, key))
    throw std::invalid_argument(fmt::format("{}.{}: not supported by gpupack{}", where, key, instead));
}

KubeConfig build_config(const Merged& m, const std::string& context_flag) {
  const std::string files = m.file_list();
  const std::string ctx_name = context_flag.empty() ? m.current_context : context_flag;
  if (ctx_name.empty())
    throw std::invalid_argument(fmt::format("{}: current-context: not set, and no --context given", files));
  const auto ctx_it = m.contexts.find(ctx_name);
  if (ctx_it == m.contexts.end()) {
    if (!context_flag.empty())
      throw std::invalid_argument(
          fmt::format("--context \"{}\": no context named \"{}\" in {}", ctx_name, ctx_name, files));
    throw std::invalid_argument(fmt::format("{}: current-context \"{}\": no context named \"{}\" in {}",
                                            m.files[m.current_context_file].path, ctx_name, ctx_name, files));
  }
  const LoadedFile& ctx_file = m.files[ctx_it->second.file];
  const std::string ctx_where = fmt::format("{}: contexts[\"{}\"].context", ctx_file.path, ctx_name);
  const YAML::Node ctx = ctx_it->second.body;
  if (!ctx || !ctx.IsMap()) throw std::invalid_argument(ctx_where + ": missing or not a map");

  // Cluster.
  const YAML::Node cluster_ref = field(ctx, "cluster");
  if (!cluster_ref) throw std::invalid_argument(ctx_where + ".cluster: missing");
  const std::string cluster_name = scalar(cluster_ref, ctx_where + ".cluster");
  const auto cl_it = m.clusters.find(cluster_name);
  if (cl_it == m.clusters.end())
    throw std::invalid_argument(
        fmt::format("{}.cluster: no cluster named \"{}\" in {}", ctx_where, cluster_name, files));
  const LoadedFile& cl_file = m.files[cl_it->second.file];
  const std::string cl_where = fmt::format("{}: clusters[\"{}\"].cluster", cl_file.path, cluster_name);
  const YAML::Node cluster = cl_it->second.body;
  if (!cluster || !cluster.IsMap()) throw std::invalid_argument(cl_where + ": missing or not a map");
  KubeConfig c;
  const YAML::Node server = field(cluster, "server");
  if (!server) throw std::invalid_argument(cl_where + ".server: missing");
  c.server = scalar(server, cl_where + ".server");
  while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
  if (c.server.rfind("https://", 0) != 0 && c.server.rfind("http://", 0) != 0)
    throw std::invalid_argument(fmt::format("{}.server: \"{}\" is not an http(s) URL", cl_where, c.server));
  if (const YAML::Node v = field(cluster, "certificate-authority")) {
    c.ca_file = resolve_path(scalar(v, cl_where + ".certificate-authority"), cl_file.dir);
    if (!try_slurp(c.ca_file))
      throw std::invalid_argument(fmt::format("{}.certificate-authority: cannot read {}", cl_where, c.ca_file));
  }
  if (const YAML::Node v = field(cluster, "certificate-authority-data"))
    c.ca_data =
        base64_decode(scalar(v, cl_where + ".certificate-authority-data"), cl_where + ".certificate-authority-data");
  if (const YAML::Node v = field(cluster, "insecure-skip-tls-verify"))
    c.insecure_skip_verify = boolean(v, cl_where + ".insecure-skip-tls-verify");
  if (const YAML::Node v = field(cluster, "proxy-url")) c.proxy_url = scalar(v, cl_where + ".proxy-url");
  if (field(cluster, "tls-server-name"))
    throw std::invalid_argument(
        cl_where + ".tls-server-name: not supported by gpupack; use a server URL whose name the certificate carries");
  c.source = fmt::format("kubeconfig {} (context \"{}\")", files, ctx_name);

  // User (none: anonymous).
  const YAML::Node user_ref = field(ctx, "user");
  const std::string user_name = user_ref ? scalar(user_ref, ctx_where + ".user") : "";
  if (user_name.empty()) return c;
  const auto u_it = m.users.find(user_name);
  if (u_it == m.users.end())
    throw std::invalid_argument(fmt::format("{}.user: no user named \"{}\" in {}", ctx_where, user_name, files));
  const LoadedFile& u_file = m.files[u_it->second.file];
  const std::string u_where = fmt::format("{}: users[\"{}\"].user", u_file.path, user_name);
  const YAML::Node user = u_it->second.body;
  if (!user) return c;
  if (!user.IsMap()) throw std::invalid_argument(u_where + ": expected a map");
  refuse(user, "auth-provider", u_where, "; use the provider's exec plugin (gke-gcloud-auth-plugin, kubelogin)");
  refuse(user, "username", u_where, " (basic authentication); use a token or a client certificate");
  refuse(user, "password", u_where, " (basic authentication); use a token or a client certificate");
  for (const char* k : {"as", "as-uid", "as-groups", "as-user-extra"})
    refuse(user, k, u_where, " (impersonation); give gpupack its own user");

  if (const YAML::Node v = field(user, "token")) c.token = scalar(v, u_where + ".token");
  if (const YAML::Node v = field(user, "tokenFile")) {
    const std::string path = resolve_path(scalar(v, u_where + ".tokenFile"), u_file.dir);
    c.credentials = std::make_shared<TokenFileSource>(path, u_where + ".tokenFile");
    c.token.clear();
  }
  std::string cert_file, key_file;
  if (const YAML::Node v = field(user, "client-certificate"))
    cert_file = resolve_path(scalar(v, u_where + ".client-certificate"), u_file.dir);
  if (const YAML::Node v = field(user, "client-key"))
    key_file = resolve_path(scalar(v, u_where + ".client-key"), u_file.dir);
  if (const YAML::Node v = field(user, "client-certificate-data"))
    c.client_cert_data =
        base64_decode(scalar(v, u_where + ".client-certificate-data"), u_where + ".client-certificate-data");
  if (const YAML::Node v = field(user, "client-key-data"))
    c.client_key_data = base64_decode(scalar(v, u_where + ".client-key-data"), u_where + ".client-key-data");
  if (!cert_file.empty() && !c.client_cert_data.empty())
    throw std::invalid_argument(u_where + ": both client-certificate and client-certificate-data are set; keep one");
  if (!key_file.empty() && !c.client_key_data.empty())
    throw std::invalid_argument(u_where + ": both client-key and client-key-data are set; keep one");
  const bool has_cert = !cert_file.empty() || !c.client_cert_data.empty();
  const bool has_key = !key_file.empty() || !c.client_key_data.empty();
  if (has_cert != has_key)
    throw std::invalid_argument(fmt::format("{}.{}: missing (a client certificate needs its key)", u_where,
                                            has_cert ? "client-key" : "client-certificate"));
  if (!cert_file.empty()) {
    const std::string text = slurp(cert_file, u_where + ".client-certificate");  // named now, not by curl later
    if (!c.client_key_data.empty()) c.client_cert_data = text;
  }
  if (!key_file.empty()) {
    const std::string text = slurp(key_file, u_where + ".client-key");
    if (!c.client_cert_data.empty()) c.client_key_data = text;
  }
  if (c.client_cert_data.empty()) {  // both files: curl reads them on every call (rotation works)
    c.client_cert_file = cert_file;
    c.client_key_file = key_file;
  }

  if (const YAML::Node exec = field(user, "exec")) {
    ExecPluginConfig p = read_exec(exec, u_where + ".exec", u_file.dir);
    if (const YAML::Node v = field(exec, "provideClusterInfo"); v && boolean(v, u_where + ".exec.provideClusterInfo")) {
      nlohmann::json cl = {{"server", c.server}, {"insecure-skip-tls-verify", c.insecure_skip_verify}};
      std::string ca = c.ca_data;
      if (ca.empty() && !c.ca_file.empty()) ca = try_slurp(c.ca_file).value_or("");
      if (!ca.empty()) cl["certificate-authority-data"] = base64_encode(ca);
      if (!c.proxy_url.empty()) cl["proxy-url"] = c.proxy_url;
      if (nlohmann::json ext = exec_extension(cluster); !ext.is_null()) cl["config"] = ext;
      p.cluster = std::move(cl);
    }
    if (c.credentials) throw std::invalid_argument(u_where + ": both tokenFile and exec are set; keep one");
    c.credentials = std::make_shared<ExecCredentialSource>(std::move(p));
  }
  return c;
}

// ---- Running a plugin -----------------------------------------------------

struct ProcessResult {
  int spawn_errno = 0;  // posix_spawn failed with this
  int wait_status = 0;
  bool timed_out = false, too_much = false;
  std::string out, err;
};

ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env, long timeout_ms,
                          size_t max_out) {
  ProcessResult r;
  constexpr size_t kMaxErr = 16384;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    r.spawn_errno = errno;
    return r;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    r.spawn_errno = errno;
    close(out_pipe[0]);
    close(out_pipe[1]);
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);  // no listening sockets etc. in the plugin
#endif
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);  // its own process group: a timeout kills its children too
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> cargv, cenv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const std::string& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, cargv[0], &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    r.spawn_errno = rc;
    return r;
  }

  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  int fds[2] = {out_pipe[0], err_pipe[0]};
  bool reaped = false;
  char buf[65536];
  while (fds[0] >= 0 || fds[1] >= 0) {
    const auto now = Clock::now();
    if (now >= deadline) {
      r.timed_out = !reaped;
      break;
    }
    if (!reaped && waitpid(pid, &r.wait_status, WNOHANG) == pid) {
      reaped = true;  // something it left behind may hold the pipes: read what is there for 1 s more
      deadline = std::min(deadline, now + std::chrono::seconds(1));
    }
    pollfd p[2];
    nfds_t n = 0;
    for (int fd : fds)
      if (fd >= 0) p[n++] = {fd, POLLIN, 0};
    const long wait_ms =
        std::min<long>(100, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1);
    if (poll(p, n, static_cast<int>(wait_ms)) < 0 && errno != EINTR) break;
    for (nfds_t i = 0; i < n; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = read(p[i].fd, buf, sizeof buf);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      const bool is_out = p[i].fd == fds[0];
      if (got <= 0) {
        close(p[i].fd);
        (is_out ? fds[0] : fds[1]) = -1;
        continue;
      }
      if (is_out) {
        r.out.append(buf, static_cast<size_t>(got));
      } else if (r.err.size() < kMaxErr) {
        r.err.append(buf, std::min(static_cast<size_t>(got), kMaxErr - r.err.size()));
      }
    }
    if (r.out.size() > max_out) {
      r.too_much = true;
      break;
    }
  }
  for (int fd : fds)
    if (fd >= 0) close(fd);
  if (!reaped) {
    if (r.timed_out || r.too_much) kill(-pid, SIGKILL);
    // Both pipes closed: it is ending; give it until the deadline, then kill it.
    while (waitpid(pid, &r.wait_status, WNOHANG) == 0) {
      if (Clock::now() >= deadline) {
        r.timed_out = true;
        kill(-pid, SIGKILL);
        waitpid(pid, &r.wait_status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return r;
}

std::string excerpt(const std::string& text, size_t max = 400) {
  std::string s(trim(text));
  for (char& ch : s)
    if (ch == '\n' || ch == '\r') ch = ' ';
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

}  // namespace

ExecCredentialResult run_exec_plugin(const ExecPluginConfig& plugin) {
  const std::string who = fmt::format("exec plugin \"{}\" ({})", plugin.command, plugin.where);
  nlohmann::json info = {
      {"apiVersion", plugin.api_version}, {"kind", "ExecCredential"}, {"spec", {{"interactive", false}}}};
  if (!plugin.cluster.is_null()) info["spec"]["cluster"] = plugin.cluster;
  std::set<std::string> overridden = {"KUBERNETES_EXEC_INFO"};
  for (const auto& [name, value] : plugin.env) overridden.insert(name);
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    if (!overridden.count(kv.substr(0, kv.find('=')))) env.push_back(kv);
  }
  for (const auto& [name, value] : plugin.env) env.push_back(name + "=" + value);
  env.push_back("KUBERNETES_EXEC_INFO=" + info.dump());
  std::vector<std::string> argv = {plugin.command};
  argv.insert(argv.end(), plugin.args.begin(), plugin.args.end());

  const ProcessResult p = run_process(argv, env, plugin.timeout_ms, plugin.max_output_bytes);
  if (p.spawn_errno != 0)
    throw std::runtime_error(fmt::format("{}: cannot run it: {}{}", who, std::strerror(p.spawn_errno),
                                         plugin.install_hint.empty() ? "" : "; " + excerpt(plugin.install_hint)));
  const std::string err = p.err.empty() ? "" : "; stderr: " + excerpt(p.err);
  if (p.timed_out)
    throw std::runtime_error(fmt::format("{}: no answer within {} ms, killed{}", who, plugin.timeout_ms, err));
  if (p.too_much)
    throw std::runtime_error(
        fmt::format("{}: wrote more than {} bytes to stdout, killed{}", who, plugin.max_output_bytes, err));
  if (WIFSIGNALED(p.wait_status))
    throw std::runtime_error(fmt::format("{}: killed by signal {}{}", who, WTERMSIG(p.wait_status), err));
  if (WIFEXITED(p.wait_status) && WEXITSTATUS(p.wait_status) != 0)
    throw std::runtime_error(fmt::format(
        "{}: exit status {}{}{}", who, WEXITSTATUS(p.wait_status), err,
        WEXITSTATUS(p.wait_status) == 127 && !plugin.install_hint.empty() ? "; " + excerpt(plugin.install_hint) : ""));

  const nlohmann::json doc = nlohmann::json::parse(p.out, nullptr, false);
  auto bad = [&](const std::string& what) {
    return std::runtime_error(fmt::format("{}: stdout is not a usable ExecCredential: {} (stdout starts \"{}\"){}", who,
                                          what, excerpt(p.out, 80), err));
  };
  if (!doc.is_object()) throw bad("not a JSON object");
  if (doc.value("kind", "") != "ExecCredential") throw bad("kind is not ExecCredential");
  if (doc.value("apiVersion", "") != plugin.api_version)
    throw bad(fmt::format(
        "apiVersion \"{}\", expected \"{}\"",
        doc.contains("apiVersion") && doc["apiVersion"].is_string() ? doc["apiVersion"].get<std::string>() : "",
        plugin.api_version));
  if (!doc.contains("status") || !doc["status"].is_object()) throw bad("status: missing");
  const nlohmann::json& st = doc["status"];
  auto text = [&](const char* key) -> std::string {
    if (!st.contains(key) || st[key].is_null()) return "";
    if (!st[key].is_string()) throw bad(fmt::format("status.{}: not a string", key));
    return st[key].get<std::string>();
  };
  ExecCredentialResult r;
  r.credential.token = text("token");
  r.credential.client_cert_pem = text("clientCertificateData");
  r.credential.client_key_pem = text("clientKeyData");
  if (r.credential.client_cert_pem.empty() != r.credential.client_key_pem.empty())
    throw bad("status has only one of clientCertificateData and clientKeyData");
  if (r.credential.token.empty() && r.credential.client_cert_pem.empty())
    throw bad("status has neither token nor clientCertificateData/clientKeyData");
  if (const std::string exp = text("expirationTimestamp"); !exp.empty()) {
    r.expires = parse_rfc3339(exp);
    if (!r.expires)
      throw bad(fmt::format("status.expirationTimestamp \"{}\" is not an RFC 3339 time", excerpt(exp, 60)));
  }
  return r;
}

KubeCredential ExecCredentialSource::get() {
  std::lock_guard l(mu_);
  if (cached_ && (!cached_->expires || std::chrono::system_clock::now() < *cached_->expires))
    return cached_->credential;
  cached_.reset();
  ++runs_;
  cached_ = run_exec_plugin(plugin_);
  return cached_->credential;
}

void ExecCredentialSource::invalidate() {
  std::lock_guard l(mu_);
  cached_.reset();
}

int ExecCredentialSource::runs() const {
  std::lock_guard l(mu_);
  return runs_;
}

TokenFileSource::TokenFileSource(std::string path, std::string where, std::chrono::steady_clock::duration max_age)
    : path_(std::move(path)), where_(std::move(where)), max_age_(max_age) {
  token_ = trim(slurp(path_, where_));
  if (token_.empty()) throw std::invalid_argument(fmt::format("{}: {} is empty", where_, path_));
  read_at_ = std::chrono::steady_clock::now();
}

KubeCredential TokenFileSource::get() {
  std::lock_guard l(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now - read_at_ >= max_age_) {
    if (auto text = try_slurp(path_); text && !trim(*text).empty()) token_ = trim(*text);
    read_at_ = now;  // a failed re-read keeps the last token until the next minute
  }
  return {token_, "", ""};
}

void TokenFileSource::invalidate() {
  std::lock_guard l(mu_);
  read_at_ = std::chrono::steady_clock::time_point{};
}

std::vector<std::string> split_kubeconfig_env(const std::string& value) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(':', start);
    if (end == std::string::npos) end = value.size();
    std::string p = value.substr(start, end - start);
    if (!p.empty() && seen.insert(p).second) out.push_back(p);
    start = end + 1;
  }
  return out;
}

KubeConfig load_kubeconfig_files(const std::vector<std::string>& paths, const std::string& context) {
  if (paths.empty()) throw std::invalid_argument("kubeconfig: no files given");
  return build_config(merge_files(paths), context);
}

KubeConfig read_kubeconfig(const std::string& path, const std::string& context) {
  return load_kubeconfig_files({path}, context);
}

KubeConfig in_cluster_config(const std::string& account_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || !*host || !*port)
    throw std::invalid_argument("in-cluster config: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set");
  KubeConfig c;
  const std::string h = host;
  c.server = fmt::format("https://{}:{}", h.find(':') != std::string::npos ? "[" + h + "]" : h, port);
  c.credentials =
      std::make_shared<TokenFileSource>(account_dir + "/token", "in-cluster config: the service-account token");
  c.ca_file = account_dir + "/ca.crt";
  c.source = fmt::format("in-cluster service account ({})", c.server);
  return c;
}

KubeConfig resolve_kube_config(const KubeconfigSelection& sel) {
  if (!sel.kubeconfig_path.empty()) {
    std::error_code ec;
    if (!fs::exists(sel.kubeconfig_path, ec))
      throw std::invalid_argument(fmt::format("--kubeconfig {}: no such file", sel.kubeconfig_path));
    return read_kubeconfig(sel.kubeconfig_path, sel.context);
  }
  std::vector<std::string> tried = {"no --kubeconfig"};
  const char* env_raw = std::getenv("KUBECONFIG");
  const std::string env = sel.kubeconfig_env ? *sel.kubeconfig_env : env_raw ? env_raw : "";
  if (!env.empty()) {
    std::vector<std::string> present;
    for (const std::string& p : split_kubeconfig_env(env)) {
      std::error_code ec;
      if (fs::exists(p, ec)) present.push_back(p);
    }
    if (!present.empty()) return load_kubeconfig_files(present, sel.context);
    tried.push_back(fmt::format("KUBECONFIG={}: none of its files exist", env));
  } else {
    tried.push_back("KUBECONFIG unset");
    const char* home_raw = std::getenv("HOME");
    const std::string home = sel.home ? *sel.home : home_raw ? home_raw : "";
    if (!home.empty()) {
      const std::string p = (fs::path(home) / ".kube" / "config").string();
      std::error_code ec;
      if (fs::exists(p, ec)) return read_kubeconfig(p, sel.context);
      tried.push_back(p + ": no such file");
    } else {
      tried.push_back("HOME unset");
    }
  }
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  if (sel.allow_in_cluster && host && *host) {
    if (!sel.context.empty())
      throw std::invalid_argument(
          fmt::format("--context \"{}\": no kubeconfig to take it from ({})", sel.context, fmt::join(tried, ", ")));
    return in_cluster_config();
  }
  tried.push_back(sel.allow_in_cluster ? "not in a cluster (KUBERNETES_SERVICE_HOST unset)" : "in-cluster not allowed");
  throw std::invalid_argument(fmt::format("no Kubernetes API configuration found: {}", fmt::join(tried, ", ")));
}

}  // namespace gpupack
