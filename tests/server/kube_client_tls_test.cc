// KubeClient and KubeBinder over HTTPS: a fake API server (httplib::SSLServer)
// with a throwaway CA and server certificate made at test time with the
// OpenSSL C API. Covers the CA as a file, as PEM data (directly and through a
// kubeconfig's certificate-authority-data), unknown CAs and wrong names
// (refused with a certificate error), insecure-skip-tls-verify, and the
// bearer token; and client certificates (files, PEM data, from an exec
// plugin) against a fake that requires one signed by a client CA.
#include "server/kube_client.h"

#include <gtest/gtest.h>

#include <chrono>
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

#include "server/kubeconfig.h"
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
// null). A CA gets CA:TRUE; a server certificate gets `san` as subjectAltName;
// a client certificate (`client`) gets extendedKeyUsage clientAuth.
Cert make_cert(const std::string& cn, const Cert* issuer, const char* san = nullptr, bool client = false) {
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
    add_ext(c, issuer_cert, NID_ext_key_usage, client ? "clientAuth" : "serverAuth");
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

std::string pem(EVP_PKEY* key) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  ossl_check(bio && PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
             "PEM_write_bio_PrivateKey");
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

// A store holding `ca`, for a server that asks for client certificates
// (the SSL context takes ownership).
X509_STORE* client_ca_store(const Cert* ca) {
  if (!ca) return nullptr;
  X509_STORE* store = X509_STORE_new();
  ossl_check(store && X509_STORE_add_cert(store, ca->cert.get()) == 1, "X509_STORE_add_cert");
  return store;
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
// every call that got past the TLS handshake. With `client_ca`, the
// handshake requires a client certificate signed by it.
class TlsFakeApi {
 public:
  explicit TlsFakeApi(const Cert& server, const Cert* client_ca = nullptr)
      : srv_(server.cert.get(), server.key.get(), client_ca_store(client_ca)) {
    if (!srv_.is_valid()) throw std::runtime_error("httplib::SSLServer rejected the certificate or key");
    srv_.Get("/api/v1/nodes", [this](const httplib::Request& req, httplib::Response& res) {
      record(req);
      res.set_content(testing::list_json({node_json({"a100-0"})}).dump(), "application/json");
    });
    srv_.Patch(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))",
               [this](const httplib::Request& req, httplib::Response& res) {
                 record(req);
                 res.set_content("{}", "application/json");
               });
    srv_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)",
              [this](const httplib::Request& req, httplib::Response& res) {
                record(req);
                res.status = 201;
                res.set_content(R"({"kind":"Status","status":"Success"})", "application/json");
              });
    port_ = srv_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("cannot bind the HTTPS fake API server");
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
    // stop() before the loop runs would be lost and join() would hang.
    for (int i = 0; i < 500 && !srv_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
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
  size_t call_count() {
    std::lock_guard l(mu_);
    return calls_.size();
  }

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

TEST_F(KubeClientTls, CaFileVerifiesTheServerAndTheTokenArrives) { expect_listed(config(ca_file_, ""), "tls-token"); }

TEST_F(KubeClientTls, CaPemDataVerifiesTheServer) { expect_listed(config("", ca_pem_), "tls-token"); }

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

// ---- Client certificates ------------------------------------------------

// The API requires a client certificate signed by client_ca_.
class KubeClientMtls : public ::testing::Test {
 protected:
  KubeClientMtls()
      : ca_(make_cert("gpupack-test-ca", nullptr)),
        client_ca_(make_cert("gpupack-client-ca", nullptr)),
        other_ca_(make_cert("other-client-ca", nullptr)),
        server_cert_(make_cert("127.0.0.1", &ca_, "IP:127.0.0.1,DNS:localhost")),
        client_(make_cert("gpupack", &client_ca_, nullptr, true)),
        stranger_(make_cert("stranger", &other_ca_, nullptr, true)),
        api_(server_cert_, &client_ca_),
        dir_((std::filesystem::path(::testing::TempDir()) / ("kube-mtls-" + std::to_string(getpid()))).string()) {
    std::filesystem::create_directories(dir_ + "/creds");
    write("ca.crt", pem(ca_.cert.get()));
  }
  ~KubeClientMtls() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  // A kubeconfig in dir_ whose cluster trusts ca.crt (a relative path) and
  // whose user is `user_yaml` (a flow-style map).
  KubeConfig load(const std::string& user_yaml) {
    return read_kubeconfig(write("config", fmt::format(R"(current-context: mtls
clusters:
- {{name: c, cluster: {{server: "{}", certificate-authority: ca.crt}}}}
contexts:
- {{name: mtls, context: {{cluster: c, user: u}}}}
users:
- {{name: u, user: {}}}
)",
                                                       api_.url(), user_yaml)));
  }
  void expect_listed(const KubeConfig& c) {
    const size_t before = api_.call_count();
    KubeResponse r = KubeClient(c, 5).list_nodes();
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(json::parse(r.body)["items"][0]["metadata"]["name"], "a100-0");
    EXPECT_EQ(api_.call_count(), before + 1);
  }
  // Refused in the handshake: an error naming the call, nothing reaches the API.
  void expect_refused(const KubeConfig& c) {
    const size_t before = api_.call_count();
    KubeResponse r = KubeClient(c, 5).list_nodes();
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.error.find("GET " + c.server + "/api/v1/nodes"), std::string::npos) << r.error;
    EXPECT_EQ(api_.call_count(), before);
  }

  Cert ca_, client_ca_, other_ca_, server_cert_, client_, stranger_;
  TlsFakeApi api_;
  std::string dir_;
};

TEST_F(KubeClientMtls, WithoutAClientCertificateTheHandshakeFails) {
  expect_refused(load("{token: only-a-token}"));
  // A certificate from a CA the API does not trust.
  write("creds/stranger.crt", pem(stranger_.cert.get()));
  write("creds/stranger.key", pem(stranger_.key.get()));
  expect_refused(load("{client-certificate: creds/stranger.crt, client-key: creds/stranger.key}"));
}

TEST_F(KubeClientMtls, ClientCertificateFilesRelativeToTheKubeconfig) {
  write("creds/client.crt", pem(client_.cert.get()));
  write("creds/client.key", pem(client_.key.get()));
  KubeConfig c = load("{client-certificate: creds/client.crt, client-key: creds/client.key}");
  EXPECT_EQ(c.client_cert_file, dir_ + "/creds/client.crt");
  EXPECT_EQ(c.client_key_file, dir_ + "/creds/client.key");
  EXPECT_EQ(c.ca_file, dir_ + "/ca.crt");
  expect_listed(c);
  // A key file that is not there is named with its field.
  try {
    load("{client-certificate: creds/client.crt, client-key: creds/absent.key}");
    ADD_FAILURE() << "a missing client-key file was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("users[\"u\"].user.client-key: cannot read " + dir_ + "/creds/absent.key"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(KubeClientMtls, ClientCertificateData) {
  KubeConfig c = load(fmt::format("{{client-certificate-data: {}, client-key-data: {}}}",
                                  base64(pem(client_.cert.get())), base64(pem(client_.key.get()))));
  EXPECT_EQ(c.client_cert_data, pem(client_.cert.get()));
  EXPECT_EQ(c.client_cert_file, "");
  expect_listed(c);
  // Data for the certificate and a file for the key mix.
  write("creds/client.key", pem(client_.key.get()));
  expect_listed(load(
      fmt::format("{{client-certificate-data: {}, client-key: creds/client.key}}", base64(pem(client_.cert.get())))));
}

TEST_F(KubeClientMtls, ExecPluginSuppliesTheClientCertificate) {
  const json cred = {{"apiVersion", "client.authentication.k8s.io/v1beta1"},
                     {"kind", "ExecCredential"},
                     {"status",
                      {{"clientCertificateData", pem(client_.cert.get())},
                       {"clientKeyData", pem(client_.key.get())},
                       {"expirationTimestamp", "2999-01-01T00:00:00Z"}}}};
  const std::string cred_file = write("creds/cred.json", cred.dump());
  const std::string script = write("plugin.sh", "#!/bin/sh\ncat '" + cred_file + "'\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  KubeConfig c = load(R"({exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: ./plugin.sh}})");
  expect_listed(c);
  expect_listed(c);  // cached: valid until 2999
  auto* src = dynamic_cast<ExecCredentialSource*>(c.credentials.get());
  ASSERT_NE(src, nullptr);
  EXPECT_EQ(src->runs(), 1);
}

}  // namespace
}  // namespace gpupack
