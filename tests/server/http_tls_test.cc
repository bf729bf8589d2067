// The extender listener over HTTPS with certificates made at test time:
// plain HTTP refused, client certificates checked against the CA, the bearer
// token on the verbs and /metrics, and certificate rotation without restart.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "server/extender_service.h"
#include "server/http_server.h"
#include "server/httplib_config.h"
#include "support/k8s_fixtures.h"
#include "support/test_certs.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::CertUse;
using testing::make_test_cert;
using testing::node_json;
using testing::pod_json;

class HttpTls : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::path(::testing::TempDir()) / ("gpupack-http-tls-" + std::to_string(getpid()))).string();
    std::filesystem::create_directories(dir_);
    service_.set_cluster({parse_node(node_json({"a100-0"}))}, {});
    write_pair(make_test_cert("server", CertUse::kServer, &ca_, "IP:127.0.0.1"));
    write(path("ca.pem"), testing::cert_pem(ca_));
    write(path("client-ca.pem"), testing::cert_pem(client_ca_));
    const auto client = make_test_cert("scheduler", CertUse::kClient, &client_ca_);
    write(path("client.pem"), testing::cert_pem(client));
    write(path("client.key"), testing::key_pem(client));
    const auto stranger = make_test_cert("stranger", CertUse::kClient, &other_ca_);
    write(path("stranger.pem"), testing::cert_pem(stranger));
    write(path("stranger.key"), testing::key_pem(stranger));
  }
  void TearDown() override {
    if (server_) server_->stop();
    std::filesystem::remove_all(dir_);
  }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  static void write(const std::string& p, const std::string& text) { testing::write_file_atomically(p, text); }
  void write_pair(const testing::TestCert& c) {
    write(path("server.pem"), testing::cert_pem(c));
    write(path("server.key"), testing::key_pem(c));
  }

  int start(HttpOptions o) {
    o.port = 0;
    o.tls_cert_file = path("server.pem");
    o.tls_key_file = path("server.key");
    server_ = std::make_unique<HttpServer>(service_, o, latency_, counters_);
    port_ = server_->start();
    return port_;
  }

  // An HTTPS client trusting `ca_file`, with a client certificate when named.
  std::unique_ptr<httplib::SSLClient> client(const std::string& ca_file, const std::string& cert = "") {
    auto c = cert.empty()
                 ? std::make_unique<httplib::SSLClient>("127.0.0.1", port_)
                 : std::make_unique<httplib::SSLClient>("127.0.0.1", port_, path(cert + ".pem"), path(cert + ".key"));
    c->set_ca_cert_path(ca_file.c_str());
    c->enable_server_certificate_verification(true);
    c->set_connection_timeout(2, 0);
    c->set_read_timeout(3, 0);
    return c;
  }

  std::string filter_body() const {
    return json{{"Pod", pod_json({.name = "p", .gpus = 1})}, {"Nodes", nullptr}, {"NodeNames", {"a100-0"}}}.dump();
  }

  std::string dir_;
  testing::TestCert ca_ = make_test_cert("server-ca", CertUse::kCa);
  testing::TestCert client_ca_ = make_test_cert("client-ca", CertUse::kCa);
  testing::TestCert other_ca_ = make_test_cert("other-ca", CertUse::kCa);
  ExtenderService service_{"fgd"};
  LatencyHistogram latency_;
  RequestCounters counters_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
};

TEST_F(HttpTls, ServesHttpsAndRefusesPlainHttp) {
  start({});
  auto https = client(path("ca.pem"));
  auto r = https->Post("/filter", filter_body(), "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["NodeNames"], json({"a100-0"}));

  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{3, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string plain = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(fd, plain.data(), plain.size(), MSG_NOSIGNAL), static_cast<ssize_t>(plain.size()));
  std::string got;
  char buf[1024];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, static_cast<size_t>(n));
  EXPECT_LE(n, 0);
  EXPECT_EQ(got.find("HTTP/1.1"), std::string::npos) << "plain HTTP got an HTTP reply: " << got;
  ::close(fd);
}

TEST_F(HttpTls, ClientCertificateMustBeSignedByTheClientCa) {
  HttpOptions o;
  o.tls_client_ca_file = path("client-ca.pem");
  start(o);
  auto right = client(path("ca.pem"), "client");
  auto r = right->Post("/filter", filter_body(), "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);

  auto wrong = client(path("ca.pem"), "stranger");
  EXPECT_FALSE(wrong->Post("/filter", filter_body(), "application/json")) << "a stranger's certificate was accepted";
  auto none = client(path("ca.pem"));
  EXPECT_FALSE(none->Get("/healthz")) << "no client certificate was accepted";
}

TEST_F(HttpTls, BearerTokenIsRequiredOnVerbsAndMetricsWhenConfigured) {
  write(path("token"), "s3cret-token\n");
  HttpOptions o;
  o.token_file = path("token");
  start(o);
  auto c = client(path("ca.pem"));
  auto r = c->Post("/filter", filter_body(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Bearer");
  ASSERT_TRUE(c->Get("/metrics"));
  EXPECT_EQ(c->Get("/metrics")->status, 401);
  EXPECT_EQ(c->Get("/healthz")->status, 200);  // probes stay open
  EXPECT_EQ(c->Get("/readyz")->status, 200);
  // The GPU map page holds no data; its data needs the token.
  EXPECT_EQ(c->Get("/ui")->status, 200);
  EXPECT_EQ(c->Get("/ui/state.json")->status, 401);
  c->set_bearer_token_auth("s3cret-tokeX");
  EXPECT_EQ(c->Post("/filter", filter_body(), "application/json")->status, 401);
  c->set_bearer_token_auth("s3cret-token");
  EXPECT_EQ(c->Post("/filter", filter_body(), "application/json")->status, 200);
  EXPECT_EQ(c->Get("/metrics")->status, 200);
  auto state = c->Get("/ui/state.json");
  ASSERT_TRUE(state);
  EXPECT_EQ(state->status, 200);
  EXPECT_TRUE(nlohmann::json::parse(state->body).contains("nodes")) << state->body.substr(0, 200);
  // A rotated token is picked up without a restart.
  write(path("token"), "next-token");
  bool rotated = false;
  for (int i = 0; i < 40 && !rotated; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rotated = c->Post("/filter", filter_body(), "application/json")->status == 401;
  }
  EXPECT_TRUE(rotated);
  c->set_bearer_token_auth("next-token");
  EXPECT_EQ(c->Post("/filter", filter_body(), "application/json")->status, 200);
}

TEST_F(HttpTls, RotatedCertificateIsServedWithoutARestart) {
  start({});
  const testing::TestCert next_ca = make_test_cert("next-ca", CertUse::kCa);
  write(path("next-ca.pem"), testing::cert_pem(next_ca));
  ASSERT_TRUE(client(path("ca.pem"))->Get("/healthz"));
  EXPECT_FALSE(client(path("next-ca.pem"))->Get("/healthz")) << "trusted the next CA before the rotation";
  write_pair(make_test_cert("server", CertUse::kServer, &next_ca, "IP:127.0.0.1"));
  bool rotated = false;
  for (int i = 0; i < 40 && !rotated; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto r = client(path("next-ca.pem"))->Get("/healthz");
    rotated = r && r->status == 200;
  }
  EXPECT_TRUE(rotated) << "the rotated certificate was not served within 4 s";
  EXPECT_FALSE(client(path("ca.pem"))->Get("/healthz")) << "still serving the old certificate";
}

TEST_F(HttpTls, MissingOrMismatchedFilesFailAtStartNamingTheFile) {
  HttpOptions o;
  o.port = 0;
  o.tls_cert_file = path("nope.pem");
  o.tls_key_file = path("server.key");
  HttpServer s(service_, o, latency_, counters_);
  try {
    s.start();
    FAIL() << "started without a certificate";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("nope.pem"), std::string::npos) << e.what();
  }
  HttpOptions k = o;
  k.tls_cert_file = path("server.pem");
  k.tls_key_file = path("client.key");
  HttpServer s2(service_, k, latency_, counters_);
  EXPECT_THROW(s2.start(), std::runtime_error);
}

}  // namespace
}  // namespace gpupack
