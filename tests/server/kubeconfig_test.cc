// Kubeconfig loading (server/kubeconfig.h) against a plain-HTTP fake API
// that records the Authorization header: token, tokenFile, exec plugins
// (shell scripts written here: token, env and KUBERNETES_EXEC_INFO, failure,
// expiry, 401, timeout, flood, missing command), KUBECONFIG merging,
// --context, the resolution order, and errors that name the file and field.
// `gpupack analyze --kubeconfig` reads the same fake. Client certificates
// are tested over TLS in kube_client_tls_test.cc.
#include "server/kubeconfig.h"

#include <gtest/gtest.h>
#include "server/httplib_config.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "support/cli_runner.h"
#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Serves a node and a pod list; records each call's Authorization header;
// answers 401 to tokens in `refused`.
class AuthFakeApi {
 public:
  AuthFakeApi() {
    auto list = [this](const httplib::Request& req, httplib::Response& res, const json& body) {
      const std::string auth = req.get_header_value("Authorization");
      std::lock_guard l(mu_);
      auths_.push_back(auth);
      if (refused_.count(auth)) {
        res.status = 401;
        res.set_content(R"({"kind":"Status","message":"Unauthorized"})", "application/json");
        return;
      }
      res.set_content(body.dump(), "application/json");
    };
    srv_.Get("/api/v1/nodes", [list](const httplib::Request& req, httplib::Response& res) {
      list(req, res, testing::list_json({testing::node_json({"a100-0"}), testing::node_json({"a100-1"})}));
    });
    srv_.Get("/api/v1/pods", [list](const httplib::Request& req, httplib::Response& res) {
      list(req, res,
           testing::list_json(
               {testing::pod_json({.name = "train", .gpus = 2, .node = "a100-0", .assigned = "a100-0:0,1"})}));
    });
    port_ = srv_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
    // stop() before the loop runs would be lost and join() would hang.
    for (int i = 0; i < 500 && !srv_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ~AuthFakeApi() {
    srv_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> auths() {
    std::lock_guard l(mu_);
    return auths_;
  }
  void refuse(const std::string& token) {
    std::lock_guard l(mu_);
    refused_.insert("Bearer " + token);
  }

 private:
  httplib::Server srv_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<std::string> auths_;
  std::set<std::string> refused_;
};

class Kubeconfig : public ::testing::Test {
 protected:
  Kubeconfig() : dir_(testing::fresh_temp_dir("kubeconfig_" + std::to_string(getpid()))) {}
  ~Kubeconfig() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text, bool executable = false) {
    const std::string path = dir_ + "/" + name;
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
    if (executable) chmod(path.c_str(), 0755);
    return path;
  }
  // A kubeconfig with one cluster (the fake), context "main" and `user_yaml`
  // as the user "u" (flow-style map or block lines indented by 4).
  std::string kubeconfig(const std::string& name, const std::string& user_yaml) {
    return write(name, fmt::format(R"(apiVersion: v1
kind: Config
current-context: main
clusters:
- name: fake
  cluster:
    server: {}
contexts:
- name: main
  context: {{cluster: fake, user: u}}
users:
- name: u
  user:
{}
)",
                                   api_.url(), user_yaml));
  }
  // An exec plugin: a script printing an ExecCredential with `status`
  // (a JSON object text; %N is replaced by the run number).
  std::string plugin(const std::string& name, const std::string& status_json,
                     const std::string& version = "client.authentication.k8s.io/v1") {
    std::string status = status_json;
    for (size_t p; (p = status.find("%N")) != std::string::npos;) status.replace(p, 2, "$n");
    return write(name,
                 fmt::format("#!/bin/sh\n"
                             "n=$(cat \"$0.count\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$0.count\"\n"
                             "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$0.info\"\n"
                             "env > \"$0.env\"; echo \"$@\" > \"$0.args\"\n"
                             "cat <<EOF\n{{\"apiVersion\":\"{}\",\"kind\":\"ExecCredential\",\"status\":{}}}\nEOF\n",
                             version, status),
                 true);
  }
  std::string last_auth() {
    auto a = api_.auths();
    return a.empty() ? "" : a.back();
  }
  static std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }

  AuthFakeApi api_;
  std::string dir_;
};

TEST_F(Kubeconfig, TokenIsSentAsBearer) {
  KubeConfig c = read_kubeconfig(kubeconfig("config", "    token: inline-token"));
  EXPECT_EQ(c.server, api_.url());
  EXPECT_EQ(KubeClient(c, 5).list_nodes().error, "");
  EXPECT_EQ(last_auth(), "Bearer inline-token");
  EXPECT_NE(c.source.find("context \"main\""), std::string::npos) << c.source;
}

TEST_F(Kubeconfig, TokenFileIsRelativeToTheKubeconfigAndWinsOverToken) {
  write("sub/token.txt", "from-file\n");
  KubeConfig c = read_kubeconfig(kubeconfig("sub/config", "    token: inline\n    tokenFile: token.txt"));
  EXPECT_EQ(KubeClient(c, 5).list_nodes().error, "");
  EXPECT_EQ(last_auth(), "Bearer from-file");
  // A missing token file is named with its field.
  const std::string err =
      error_of([&] { read_kubeconfig(kubeconfig("config2", "    tokenFile: /nonexistent/token")); });
  EXPECT_NE(err.find("users[\"u\"].user.tokenFile"), std::string::npos) << err;
  EXPECT_NE(err.find("/nonexistent/token"), std::string::npos) << err;
}

TEST_F(Kubeconfig, TokenFileIsReReadWhenStale) {
  const std::string path = write("rot", "first\n");
  TokenFileSource src(path, "test", std::chrono::milliseconds(0));
  EXPECT_EQ(src.get().token, "first");
  write("rot", "second\n");
  EXPECT_EQ(src.get().token, "second");
  fs::remove(path);
  EXPECT_EQ(src.get().token, "second");  // a failed re-read keeps the last token
}

TEST_F(Kubeconfig, ExecPluginTokenWithArgsEnvAndExecInfo) {
  const std::string script = plugin("bin/plugin.sh", R"({"token":"exec-%N"})");
  const std::string cfg = kubeconfig("config", R"(    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/plugin.sh
      args: [get-token, --cluster, prod]
      env: [{name: PLUGIN_MODE, value: fast}]
      interactiveMode: Never
      provideClusterInfo: true)");
  KubeConfig c = read_kubeconfig(cfg);
  KubeClient client(c, 5);
  EXPECT_EQ(client.list_nodes().error, "");
  EXPECT_EQ(client.list_pods().error, "");
  // No expirationTimestamp: the first credential serves every call.
  EXPECT_EQ(api_.auths(), (std::vector<std::string>{"Bearer exec-1", "Bearer exec-1"}));
  EXPECT_EQ(testing::read_file(script + ".args"), "get-token --cluster prod\n");
  const std::string env = testing::read_file(script + ".env");
  EXPECT_NE(env.find("PLUGIN_MODE=fast\n"), std::string::npos);
  EXPECT_NE(env.find("PATH="), std::string::npos);  // the process environment is passed on
  json info = json::parse(testing::read_file(script + ".info"));
  EXPECT_EQ(info["apiVersion"], "client.authentication.k8s.io/v1");
  EXPECT_EQ(info["kind"], "ExecCredential");
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_EQ(info["spec"]["cluster"]["server"], api_.url());
}

TEST_F(Kubeconfig, ExecPluginV1beta1WithoutClusterInfo) {
  const std::string script = plugin("p.sh", R"({"token":"beta"})", "client.authentication.k8s.io/v1beta1");
  KubeConfig c = read_kubeconfig(kubeconfig("config", fmt::format(R"(    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: {})",
                                                                  script)));
  EXPECT_EQ(KubeClient(c, 5).list_nodes().error, "");
  EXPECT_EQ(last_auth(), "Bearer beta");
  json info = json::parse(testing::read_file(script + ".info"));
  EXPECT_EQ(info["apiVersion"], "client.authentication.k8s.io/v1beta1");
  EXPECT_FALSE(info["spec"].contains("cluster"));
}

TEST_F(Kubeconfig, ExecPluginExpiredTokenIsFetchedAgain) {
  const std::string past = plugin("past.sh", R"({"token":"p-%N","expirationTimestamp":"2001-01-01T00:00:00Z"})");
  ExecPluginConfig p{.api_version = "client.authentication.k8s.io/v1", .command = past};
  auto src = std::make_shared<ExecCredentialSource>(p);
  KubeConfig c{api_.url(), "", "", "", false};
  c.credentials = src;
  KubeClient client(c, 5);
  EXPECT_EQ(client.list_nodes().error, "");
  EXPECT_EQ(client.list_nodes().error, "");
  EXPECT_EQ(api_.auths(), (std::vector<std::string>{"Bearer p-1", "Bearer p-2"}));
  EXPECT_EQ(src->runs(), 2);
  // One that is still valid is cached.
  const std::string future =
      plugin("future.sh", R"({"token":"f-%N","expirationTimestamp":"2999-01-01T00:00:00.5+02:00"})");
  auto cached =
      std::make_shared<ExecCredentialSource>(ExecPluginConfig{.api_version = p.api_version, .command = future});
  EXPECT_EQ(cached->get().token, "f-1");
  EXPECT_EQ(cached->get().token, "f-1");
  EXPECT_EQ(cached->runs(), 1);
}

TEST_F(Kubeconfig, ExecPluginTokenRefusedWith401IsFetchedAgainOnce) {
  const std::string script = plugin("p.sh", R"({"token":"t-%N"})");
  api_.refuse("t-1");
  KubeConfig c{api_.url(), "", "", "", false};
  c.credentials = std::make_shared<ExecCredentialSource>(
      ExecPluginConfig{.api_version = "client.authentication.k8s.io/v1", .command = script});
  EXPECT_EQ(KubeClient(c, 5).list_nodes().error, "");
  EXPECT_EQ(api_.auths(), (std::vector<std::string>{"Bearer t-1", "Bearer t-2"}));
  // A credential refused again is an error, not a loop.
  api_.refuse("t-3");
  api_.refuse("t-4");
  c.credentials->invalidate();
  KubeResponse r = KubeClient(c, 5).list_nodes();
  EXPECT_EQ(r.status, 401);
  EXPECT_NE(r.error.find("HTTP 401"), std::string::npos) << r.error;
  EXPECT_EQ(api_.auths().size(), 4u);
}

TEST_F(Kubeconfig, ExecPluginFailureNamesThePluginAndItsStderr) {
  const std::string script = write("fail.sh", "#!/bin/sh\necho 'login expired for account 42' >&2\nexit 3\n", true);
  const std::string cfg = kubeconfig("config", fmt::format(R"(    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: {})",
                                                           script));
  KubeConfig c = read_kubeconfig(cfg);
  KubeResponse r = KubeClient(c, 5).list_nodes();
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find("GET " + api_.url() + "/api/v1/nodes: credentials"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("exec plugin \"" + script + "\""), std::string::npos) << r.error;
  EXPECT_NE(r.error.find(cfg + ": users[\"u\"].user.exec"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("exit status 3"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("login expired for account 42"), std::string::npos) << r.error;
  EXPECT_TRUE(api_.auths().empty());  // nothing was sent without a credential
}

TEST_F(Kubeconfig, ExecPluginBadOutputTimeoutFloodAndMissingCommand) {
  const std::string v1 = "client.authentication.k8s.io/v1";
  auto err = [&](const ExecPluginConfig& p) { return error_of([&] { run_exec_plugin(p); }); };
  // Not an ExecCredential / wrong apiVersion / no token.
  std::string e = err({.api_version = v1, .command = write("a.sh", "#!/bin/sh\necho hello\n", true)});
  EXPECT_NE(e.find("not a JSON object"), std::string::npos) << e;
  e = err({.api_version = v1, .command = plugin("b.sh", R"({"token":"x"})", "client.authentication.k8s.io/v1beta1")});
  EXPECT_NE(e.find("apiVersion \"client.authentication.k8s.io/v1beta1\", expected"), std::string::npos) << e;
  e = err({.api_version = v1, .command = plugin("c.sh", R"({})")});
  EXPECT_NE(e.find("neither token nor clientCertificateData"), std::string::npos) << e;
  e = err({.api_version = v1, .command = plugin("d.sh", R"({"token":"x","expirationTimestamp":"tomorrow"})")});
  EXPECT_NE(e.find("expirationTimestamp \"tomorrow\""), std::string::npos) << e;
  // Past its time: killed (with what it left running), quickly.
  const auto t0 = std::chrono::steady_clock::now();
  e = err(
      {.api_version = v1, .command = write("slow.sh", "#!/bin/sh\nsleep 30 &\nsleep 30\n", true), .timeout_ms = 300});
  EXPECT_NE(e.find("no answer within 300 ms"), std::string::npos) << e;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // Too much output.
  e = err({.api_version = v1, .command = write("flood.sh", "#!/bin/sh\nexec yes\n", true), .max_output_bytes = 4096});
  EXPECT_NE(e.find("more than 4096 bytes"), std::string::npos) << e;
  // A command that is not there: the install hint is shown.
  e = err({.api_version = v1, .command = "gpupack-no-such-plugin", .install_hint = "install it with apt"});
  EXPECT_NE(e.find("exec plugin \"gpupack-no-such-plugin\""), std::string::npos) << e;
  EXPECT_NE(e.find("install it with apt"), std::string::npos) << e;
}

TEST_F(Kubeconfig, KubeconfigEnvMergesFilesFirstValueWins) {
  write("a/token", "token-a\n");
  write("b/token", "token-b\n");
  // First file: current-context and the "shared" cluster; user "alice" lives
  // only in the second file (its relative tokenFile is relative to b/).
  const std::string a = write("a/config", fmt::format(R"(current-context: work
clusters:
- name: shared
  cluster: {{server: "{}"}}
contexts:
- name: work
  context: {{cluster: shared, user: alice}}
)",
                                                      api_.url()));
  const std::string b = write("b/config", R"(current-context: other
clusters:
- name: shared
  cluster: {server: "http://127.0.0.1:1"}
contexts:
- name: work
  context: {cluster: nowhere, user: nobody}
- name: other
  context: {cluster: shared, user: bob}
users:
- name: alice
  user: {tokenFile: token}
- name: bob
  user: {token: bob-token}
)");
  KubeconfigSelection sel{.kubeconfig_env = a + ":" + dir_ + "/missing:" + b + "::" + a, .home = dir_};
  KubeConfig c = resolve_kube_config(sel);
  EXPECT_EQ(c.server, api_.url());  // a's "shared", not b's
  EXPECT_EQ(KubeClient(c, 5).list_nodes().error, "");
  EXPECT_EQ(last_auth(), "Bearer token-b");  // alice from b, tokenFile relative to b/
  EXPECT_NE(c.source.find(a + ", " + b), std::string::npos) << c.source;
  // The other order: b's current-context and b's cluster.
  sel.kubeconfig_env = b + ":" + a;
  EXPECT_EQ(resolve_kube_config(sel).server, "http://127.0.0.1:1");
  EXPECT_EQ(split_kubeconfig_env("x::y:x:"), (std::vector<std::string>{"x", "y"}));
}

TEST_F(Kubeconfig, ContextFlagChoosesANonCurrentContext) {
  const std::string cfg = write("config", fmt::format(R"(current-context: dev
clusters:
- {{name: dev, cluster: {{server: "http://127.0.0.1:1"}}}}
- {{name: prod, cluster: {{server: "{}"}}}}
contexts:
- {{name: dev, context: {{cluster: dev, user: d}}}}
- {{name: prod, context: {{cluster: prod, user: p}}}}
users:
- {{name: d, user: {{token: dev-token}}}}
- {{name: p, user: {{token: prod-token}}}}
)",
                                                      api_.url()));
  EXPECT_EQ(read_kubeconfig(cfg).server, "http://127.0.0.1:1");
  KubeConfig c = resolve_kube_config({.kubeconfig_path = cfg, .context = "prod"});
  EXPECT_EQ(KubeClient(c, 5).list_nodes().error, "");
  EXPECT_EQ(last_auth(), "Bearer prod-token");
}

TEST_F(Kubeconfig, ResolutionOrderExplicitThenEnvThenHome) {
  const std::string explicit_cfg = kubeconfig("explicit", "    token: explicit");
  const std::string env_cfg = kubeconfig("env", "    token: env");
  kubeconfig("home/.kube/config", "    token: home");
  auto token = [&](const KubeconfigSelection& s) { return resolve_kube_config(s).token; };
  EXPECT_EQ(token({.kubeconfig_path = explicit_cfg, .kubeconfig_env = env_cfg, .home = dir_ + "/home"}), "explicit");
  EXPECT_EQ(token({.kubeconfig_env = env_cfg, .home = dir_ + "/home"}), "env");
  EXPECT_EQ(token({.kubeconfig_env = "", .home = dir_ + "/home"}), "home");
  // Nothing found (and not in a cluster): the error lists what was tried.
  std::string e = error_of(
      [&] { resolve_kube_config({.kubeconfig_env = "", .home = dir_ + "/nohome", .allow_in_cluster = false}); });
  EXPECT_NE(e.find(dir_ + "/nohome/.kube/config: no such file"), std::string::npos) << e;
  e = error_of([&] {
    resolve_kube_config(
        {.kubeconfig_env = dir_ + "/x:" + dir_ + "/y", .home = dir_ + "/home", .allow_in_cluster = false});
  });
  EXPECT_NE(e.find("none of its files exist"), std::string::npos) << e;
  // An explicit file must exist.
  e = error_of([&] { resolve_kube_config({.kubeconfig_path = dir_ + "/absent"}); });
  EXPECT_NE(e.find("--kubeconfig " + dir_ + "/absent: no such file"), std::string::npos) << e;
}

TEST_F(Kubeconfig, ErrorsNameTheFileAndField) {
  const std::string cfg = write("config", R"(current-context: ghost
clusters:
- {name: c, cluster: {server: "https://x"}}
- {name: nosrv, cluster: {insecure-skip-tls-verify: true}}
contexts:
- {name: nouser, context: {cluster: c, user: missing-user}}
- {name: nocluster, context: {cluster: missing-cluster}}
- {name: noserver, context: {cluster: nosrv}}
- {name: gcp, context: {cluster: c, user: gcp}}
- {name: half, context: {cluster: c, user: half}}
- {name: oldexec, context: {cluster: c, user: oldexec}}
- {name: anon, context: {cluster: c}}
users:
- {name: gcp, user: {auth-provider: {name: gcp}}}
- {name: half, user: {client-certificate: cert.pem}}
- {name: oldexec, user: {exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}}}
)");
  auto err = [&](const std::string& ctx) { return error_of([&] { read_kubeconfig(cfg, ctx); }); };
  std::string e = err("");
  EXPECT_NE(e.find(cfg + ": current-context \"ghost\": no context named \"ghost\""), std::string::npos) << e;
  e = err("nope");
  EXPECT_NE(e.find("--context \"nope\": no context named \"nope\" in " + cfg), std::string::npos) << e;
  e = err("nouser");
  EXPECT_NE(e.find(cfg + ": contexts[\"nouser\"].context.user: no user named \"missing-user\""), std::string::npos)
      << e;
  e = err("nocluster");
  EXPECT_NE(e.find(cfg + ": contexts[\"nocluster\"].context.cluster: no cluster named \"missing-cluster\""),
            std::string::npos)
      << e;
  e = err("noserver");
  EXPECT_NE(e.find(cfg + ": clusters[\"nosrv\"].cluster.server: missing"), std::string::npos) << e;
  e = err("gcp");
  EXPECT_NE(e.find(cfg + ": users[\"gcp\"].user.auth-provider: not supported"), std::string::npos) << e;
  e = err("half");
  EXPECT_NE(e.find(cfg + ": users[\"half\"].user.client-key: missing"), std::string::npos) << e;
  e = err("oldexec");
  EXPECT_NE(e.find(cfg + ": users[\"oldexec\"].user.exec.apiVersion: \"client.authentication.k8s.io/v1alpha1\""),
            std::string::npos)
      << e;
  // A context without a user is anonymous.
  KubeConfig anon = read_kubeconfig(cfg, "anon");
  EXPECT_EQ(anon.token, "");
  EXPECT_FALSE(anon.credentials);
  // Not YAML, not a kubeconfig.
  e = error_of([&] { read_kubeconfig(write("bad", "clusters: [\n")); });
  EXPECT_NE(e.find(dir_ + "/bad: not a readable YAML kubeconfig"), std::string::npos) << e;
  e = error_of([&] { read_kubeconfig(write("list", "- 1\n- 2\n")); });
  EXPECT_NE(e.find(dir_ + "/list: not a kubeconfig"), std::string::npos) << e;
}

TEST(Rfc3339, ParsesZoneOffsetsAndFractions) {
  using namespace std::chrono;
  auto at = [](const char* s) { return parse_rfc3339(s); };
  ASSERT_TRUE(at("1970-01-01T00:00:10Z"));
  EXPECT_EQ(system_clock::to_time_t(*at("1970-01-01T00:00:10Z")), 10);
  EXPECT_EQ(*at("2024-05-01T12:00:00+02:00"), *at("2024-05-01T10:00:00Z"));
  EXPECT_EQ(*at("2024-05-01T10:00:00.250Z") - *at("2024-05-01T10:00:00Z"), milliseconds(250));
  // Beyond what system_clock holds (2262): clamped, not wrapped into the past.
  EXPECT_EQ(*at("2999-01-01T00:00:00Z"), system_clock::time_point::max());
  EXPECT_GT(*at("2999-01-01T00:00:00Z"), system_clock::now());
  EXPECT_FALSE(at("2024-05-01 10:00"));
  EXPECT_FALSE(at("2024-13-01T10:00:00Z"));
  EXPECT_FALSE(at("2024-05-01T10:00:00"));
  EXPECT_FALSE(at("2024-05-01T10:00:00Zjunk"));
}

TEST_F(Kubeconfig, AnalyzeReadsTheLiveApi) {
  const std::string cfg = kubeconfig("config", "    token: analyze-token");
  const std::string out = dir_ + "/report.json";
  auto r = testing::run_gpupack("analyze --kubeconfig " + cfg + " --context main --format json -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json j = json::parse(testing::read_file(out));
  EXPECT_EQ(j["nodes"], 2);
  EXPECT_EQ(j["bound_pods"], 1);
  EXPECT_EQ(api_.auths(), (std::vector<std::string>{"Bearer analyze-token", "Bearer analyze-token"}));
  // An unknown context fails, naming it; files and the API do not mix.
  r = testing::run_gpupack("analyze --kubeconfig " + cfg + " --context nope");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--context \"nope\""), std::string::npos) << r.output;
  r = testing::run_gpupack("analyze --kubeconfig " + cfg + " --nodes " + cfg + " --pods " + cfg);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("not both"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace gpupack
