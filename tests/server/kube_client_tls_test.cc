// KubeClient and KubeBinder over HTTPS: a fake API server (httplib::SSLServer)
// with a throwaway CA and server certificate made at test time with the
// OpenSSL C API. Covers the CA as a file, as PEM data (directly and through a
// kubeconfig's certificate-authority-data), unknown CAs and wrong names
// (refused with a certificate error), insecure-skip-tls-verify, and the
// bearer token.
#include "server/kube_client.h"

#include <gtest/gtest.h>
#include "server/httplib_config.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "support/k8s_fixtures.h"

namespace gpupack {
namespace {

using nlohmann::json;
using testing::node_json;
using testing::pod_json;

// ---- Certificates -------------------------------------------------------

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};

void ossl_check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("OpenSSL: ") + what + " failed");
}

struct Cert {
  std::unique_ptr<EVP_PKEY, KeyFree> key;
  std::unique_ptr<X509, CertFree> cert;
};

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  ossl_check(ext != nullptr, value);
  const int added = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  ossl_check(added == 1, "X509_add_ext");
}

// A P-256 key and a certificate for `cn`, signed by `issuer` (self-signed when
// null). A CA gets CA:TRUE; a server certificate gets `san` as subjectAltName.
Cert make_cert(const std::string& cn, const Cert* issuer, const char* san = nullptr) {
  static long serial = 1;
  Cert out{std::unique_ptr<EVP_PKEY, KeyFree>(EVP_EC_gen("P-256")), std::unique_ptr<X509, CertFree>(X509_new())};
  ossl_check(out.key && out.cert, "key/certificate allocation");
  X509* c = out.cert.get();
  ossl_check(X509_set_version(c, 2) == 1, "X509_set_version");
  ossl_check(ASN1_INTEGER_set(X509_get_serialNumber(c), serial++) == 1, "serial");
  ossl_check(X509_gmtime_adj(X509_getm_notBefore(c), -3600) != nullptr, "notBefore");
  ossl_check(X509_gmtime_adj(X509_getm_notAfter(c), 24 * 3600) != nullptr, "notAfter");
  ossl_check(X509_set_pubkey(c, out.key.get()) == 1, "X509_set_pubkey");
  ossl_check(X509_NAME_add_entry_by_txt(X509_get_subject_name(c), "CN", MBSTRING_ASC,
                                        reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0) == 1,
             "subject CN");
  X509* issuer_cert = issuer ? issuer->cert.get() : c;
  EVP_PKEY* issuer_key = issuer ? issuer->key.get() : out.key.get();
  ossl_check(X509_set_issuer_name(c, X509_get_subject_name(issuer_cert)) == 1, "X509_set_issuer_name");
  add_ext(c, issuer_cert, NID_subject_key_identifier, "hash");
  add_ext(c, issuer_cert, NID_authority_key_identifier, "keyid:always");
  if (!issuer) {
    add_ext(c, c, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(c, c, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_ext(c, issuer_cert, NID_basic_constraints, "critical,CA:FALSE");
    add_ext(c, issuer_cert, NID_key_usage, "critical,digitalSignature");
    add_ext(c, issuer_cert, NID_ext_key_usage, "serverAuth");
    if (san) add_ext(c, issuer_cert, NID_subject_alt_name, san);
  }
  ossl_check(X509_sign(c, issuer_key, EVP_sha256()) > 0, "X509_sign");
  return out;
}

std::string pem(X509* cert) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  ossl_check(bio && PEM_write_bio_X509(bio.get(), cert) == 1, "PEM_write_bio_X509");
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string base64(const std::string& in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path =
      (std::filesystem::path(::testing::TempDir()) / ("kube-tls-" + std::to_string(getpid()) + "-" + name)).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// ---- HTTPS fake API server ----------------------------------------------

// Serves one node list, accepts annotation patches and Bindings, and records
// every call that got past the TLS handshake.
class TlsFakeApi {
 public:
  explicit TlsFakeApi(const Cert& server) : srv_(server.cert.get(), server.key.get()) {
    if (!srv_.is_valid()) throw std::runtime_error("httplib::SSLServer rejected the certificate or key");
    srv_.Get("/api/v1/nodes", [this](const httplib::Request& req, httplib::Response& res) {
      record(req);
      res.set_content(testing::list_json({node_json({"a100-0"})}).dump(), "application/json");
    });
    srv_.Patch(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](const httplib::Request& req,
                                                                   httplib::Response& res) {
      record(req);
      res.set_content("{}", "application/json");
    });
    srv_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)", [this](const httplib::Request& req,
                                                                         httplib::Response& res) {
      record(req);
      res.status = 201;
      res.set_content(R"({"kind":"Status","status":"Success"})", "application/json");
    });
    port_ = srv_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("cannot bind the HTTPS fake API server");
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
  }
  ~TlsFakeApi() {
    srv_.stop();
    thread_.join();
  }
  struct Call {
    std::string method, path, body, authorization;
  };
  std::vector<Call> calls() {
    std::lock_guard l(mu_);
    return calls_;
  }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

 private:
  void record(const httplib::Request& req) {
    std::lock_guard l(mu_);
    calls_.push_back({req.method, req.path, req.body, req.get_header_value("Authorization")});
  }
  httplib::SSLServer srv_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<Call> calls_;
};

class KubeClientTls : public ::testing::Test {
 protected:
  KubeClientTls()
      : ca_(make_cert("gpupack-test-ca", nullptr)),
        other_ca_(make_cert("some-other-ca", nullptr)),
        server_cert_(make_cert("127.0.0.1", &ca_, "IP:127.0.0.1,DNS:localhost")),
        api_(server_cert_),
        ca_pem_(pem(ca_.cert.get())),
        other_ca_pem_(pem(other_ca_.cert.get())),
        ca_file_(write_file("ca.crt", ca_pem_)),
        other_ca_file_(write_file("other-ca.crt", other_ca_pem_)) {}
  ~KubeClientTls() override {
    std::filesystem::remove(ca_file_);
    std::filesystem::remove(other_ca_file_);
  }
  KubeConfig config(std::string ca_file, std::string ca_data, bool insecure = false) const {
    return {api_.url(), "tls-token", std::move(ca_file), std::move(ca_data), insecure};
  }
  // The node list arrived intact, with the token.
  void expect_listed(const KubeConfig& c, const std::string& token) {
    KubeResponse r = KubeClient(c, 5).list_nodes();
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(json::parse(r.body)["items"][0]["metadata"]["name"], "a100-0");
    auto calls = api_.calls();
    ASSERT_FALSE(calls.empty());
    EXPECT_EQ(calls.back().method, "GET");
    EXPECT_EQ(calls.back().path, "/api/v1/nodes");
    EXPECT_EQ(calls.back().authorization, "Bearer " + token);
  }
  // The call fails in the TLS handshake, with an error that says so, and
  // never reaches the server.
  void expect_certificate_error(const KubeConfig& c) {
    const size_t before = api_.calls().size();
    KubeResponse r = KubeClient(c, 5).list_nodes();
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.error.find("GET " + c.server + "/api/v1/nodes"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("SSL certificate problem"), std::string::npos) << r.error;
    EXPECT_EQ(api_.calls().size(), before);
  }

  Cert ca_, other_ca_, server_cert_;
  TlsFakeApi api_;
  std::string ca_pem_, other_ca_pem_, ca_file_, other_ca_file_;
};

TEST_F(KubeClientTls, CaFileVerifiesTheServerAndTheTokenArrives) {
  expect_listed(config(ca_file_, ""), "tls-token");
}

TEST_F(KubeClientTls, CaPemDataVerifiesTheServer) {
  expect_listed(config("", ca_pem_), "tls-token");
}

TEST_F(KubeClientTls, KubeconfigCertificateAuthorityDataVerifiesTheServer) {
  const std::string token_file = write_file("token", "file-token\n");
  const std::string path = write_file("kubeconfig.yaml", fmt::format(R"(apiVersion: v1
kind: Config
current-context: test
clusters:
- name: tls
  cluster:
    server: {}/
    certificate-authority-data: {}
contexts:
- name: test
  context: {{cluster: tls, user: sa}}
users:
- name: sa
  user: {{tokenFile: {}}}
)",
                                                                      api_.url(), base64(ca_pem_), token_file));
  KubeConfig c = read_kubeconfig(path);
  EXPECT_EQ(c.server, api_.url());
  EXPECT_EQ(c.ca_data, ca_pem_);
  EXPECT_EQ(c.ca_file, "");
  EXPECT_FALSE(c.insecure_skip_verify);
  expect_listed(c, "file-token");
  std::filesystem::remove(path);
  std::filesystem::remove(token_file);
}

TEST_F(KubeClientTls, UnknownCaOrWrongNameIsACertificateError) {
  expect_certificate_error(config("", ""));  // the system's CAs only
  expect_certificate_error(config(other_ca_file_, ""));
  expect_certificate_error(config("", other_ca_pem_));
  // A certificate from the right CA, for another name.
  Cert elsewhere = make_cert("api.elsewhere", &ca_, "DNS:api.elsewhere");
  TlsFakeApi wrong_name(elsewhere);
  KubeConfig c = config(ca_file_, "");
  c.server = wrong_name.url();
  KubeResponse r = KubeClient(c, 5).list_nodes();
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find("127.0.0.1"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("certificate"), std::string::npos) << r.error;
  EXPECT_TRUE(wrong_name.calls().empty());
  // A CA file that is not there is named in the error.
  r = KubeClient(config(ca_file_ + ".missing", ""), 5).list_nodes();
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find(ca_file_ + ".missing"), std::string::npos) << r.error;
}

TEST_F(KubeClientTls, InsecureSkipVerifyAcceptsAnUnknownCa) {
  expect_listed(config(other_ca_file_, "", true), "tls-token");
  expect_listed(config("", "", true), "tls-token");
}

TEST_F(KubeClientTls, BinderPatchesThenBindsOverHttps) {
  KubeClient client(config("", ca_pem_), 5);
  KubeBinder binder(client);
  K8sPod pod = parse_pod(pod_json({.name = "p", .uid = "u-p", .gpus = 1}));
  EXPECT_EQ(binder.bind(pod, "a100-0", "a100-0:3"), "");
  auto calls = api_.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].method, "PATCH");
  EXPECT_EQ(calls[0].path, "/api/v1/namespaces/ml/pods/p");
  EXPECT_EQ(json::parse(calls[0].body)["metadata"]["annotations"]["gpupack.io/assigned-gpus"], "a100-0:3");
  EXPECT_EQ(calls[0].authorization, "Bearer tls-token");
  EXPECT_EQ(calls[1].method, "POST");
  EXPECT_EQ(calls[1].path, "/api/v1/namespaces/ml/pods/p/binding");
  json b = json::parse(calls[1].body);
  EXPECT_EQ(b["metadata"]["uid"], "u-p");
  EXPECT_EQ(b["target"]["name"], "a100-0");
  EXPECT_EQ(calls[1].authorization, "Bearer tls-token");
}

}  // namespace
}  // namespace gpupack
