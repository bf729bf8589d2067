// Test support: throwaway X.509 material made at test time with the OpenSSL
// C API (P-256 keys, one-day validity): a CA, server certificates (with a
// subjectAltName) and client certificates, written as PEM files. Throws
// std::runtime_error naming the OpenSSL call that failed.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

namespace gpupack::testing {

struct TestKeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct TestCertFree {
  void operator()(X509* c) const { X509_free(c); }
};

inline void test_ossl_check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("OpenSSL: ") + what + " failed");
}

struct TestCert {
  std::unique_ptr<EVP_PKEY, TestKeyFree> key;
  std::unique_ptr<X509, TestCertFree> cert;
};

enum class CertUse { kCa, kServer, kClient };

inline void test_add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  test_ossl_check(ext != nullptr, value);
  const int added = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  test_ossl_check(added == 1, "X509_add_ext");
}

// A certificate for `cn`; a CA is self-signed, the others are signed by
// `issuer`; a server certificate gets `san` (e.g. "IP:127.0.0.1").
inline TestCert make_test_cert(const std::string& cn, CertUse use, const TestCert* issuer = nullptr,
                               const char* san = nullptr) {
  static long serial = 1000;
  TestCert out{std::unique_ptr<EVP_PKEY, TestKeyFree>(EVP_EC_gen("P-256")),
               std::unique_ptr<X509, TestCertFree>(X509_new())};
  test_ossl_check(out.key && out.cert, "key/certificate allocation");
  X509* c = out.cert.get();
  test_ossl_check(X509_set_version(c, 2) == 1, "X509_set_version");
  test_ossl_check(ASN1_INTEGER_set(X509_get_serialNumber(c), serial++) == 1, "serial");
  test_ossl_check(X509_gmtime_adj(X509_getm_notBefore(c), -3600) != nullptr, "notBefore");
  test_ossl_check(X509_gmtime_adj(X509_getm_notAfter(c), 24 * 3600) != nullptr, "notAfter");
  test_ossl_check(X509_set_pubkey(c, out.key.get()) == 1, "X509_set_pubkey");
  test_ossl_check(X509_NAME_add_entry_by_txt(X509_get_subject_name(c), "CN", MBSTRING_ASC,
                                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0) == 1,
                  "subject CN");
  const bool self = use == CertUse::kCa || !issuer;
  X509* issuer_cert = self ? c : issuer->cert.get();
  EVP_PKEY* issuer_key = self ? out.key.get() : issuer->key.get();
  test_ossl_check(X509_set_issuer_name(c, X509_get_subject_name(issuer_cert)) == 1, "X509_set_issuer_name");
  test_add_ext(c, issuer_cert, NID_subject_key_identifier, "hash");
  test_add_ext(c, issuer_cert, NID_authority_key_identifier, "keyid:always");
  if (use == CertUse::kCa) {
    test_add_ext(c, c, NID_basic_constraints, "critical,CA:TRUE");
    test_add_ext(c, c, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    test_add_ext(c, issuer_cert, NID_basic_constraints, "critical,CA:FALSE");
    test_add_ext(c, issuer_cert, NID_key_usage, "critical,digitalSignature");
    test_add_ext(c, issuer_cert, NID_ext_key_usage, use == CertUse::kServer ? "serverAuth" : "clientAuth");
    if (san) test_add_ext(c, issuer_cert, NID_subject_alt_name, san);
  }
  test_ossl_check(X509_sign(c, issuer_key, EVP_sha256()) > 0, "X509_sign");
  return out;
}

inline std::string cert_pem(const TestCert& c) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  test_ossl_check(bio && PEM_write_bio_X509(bio.get(), c.cert.get()) == 1, "PEM_write_bio_X509");
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

inline std::string key_pem(const TestCert& c) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  test_ossl_check(bio && PEM_write_bio_PrivateKey(bio.get(), c.key.get(), nullptr, nullptr, 0, nullptr, nullptr) == 1,
                  "PEM_write_bio_PrivateKey");
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

// Writes `text` to `path` through a temporary name and a rename, as a
// Kubernetes secret volume update does.
inline void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp, std::ios::binary) << text;
  std::filesystem::rename(tmp, path);
}

}  // namespace gpupack::testing
