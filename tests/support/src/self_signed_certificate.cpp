#include "self_signed_certificate.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>

#include <functional>
#include <memory>
#include <random>
#include <stdexcept>

namespace switchboard::testing::detail {
namespace {

template <auto Free>
struct deleter {
  template <class T>
  void operator()(T* p) const noexcept { Free(p); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, deleter<EVP_PKEY_free>>;
using x509_ptr = std::unique_ptr<X509, deleter<X509_free>>;
using bio_ptr = std::unique_ptr<BIO, deleter<BIO_free_all>>;
using ext_ptr = std::unique_ptr<X509_EXTENSION, deleter<X509_EXTENSION_free>>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("self-signed certificate: ") + what + " failed");
}

std::string subject_alt_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) {
    boost::system::error_code ec;
    boost::asio::ip::make_address(name, ec);
    if (!out.empty()) out += ',';
    out += (ec ? "DNS:" : "IP:") + name;
  }
  return out;
}

void add_extension(X509* cert, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  ext_ptr ext{X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str())};
  check(ext != nullptr, "X509V3_EXT_conf_nid");
  check(X509_add_ext(cert, ext.get(), -1) == 1, "X509_add_ext");
}

std::string to_pem(const std::function<int(BIO*)>& write) {
  bio_ptr bio{BIO_new(BIO_s_mem())};
  check(bio && write(bio.get()) == 1, "PEM_write");
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

}  // namespace

self_signed_certificate make_self_signed_certificate(const std::vector<std::string>& names) {
  check(!names.empty(), "at least one name");
  pkey_ptr key{EVP_EC_gen("P-256")};
  check(key != nullptr, "EVP_EC_gen");

  x509_ptr cert{X509_new()};
  check(cert != nullptr, "X509_new");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), static_cast<long>(std::random_device{}() & 0x7fffffff));
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* subject = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(names.front().c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), subject);
  add_extension(cert.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_extension(cert.get(), NID_subject_alt_name, subject_alt_names(names));
  check(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0, "X509_sign");

  self_signed_certificate out;
  out.certificate_pem = to_pem([&](BIO* b) { return PEM_write_bio_X509(b, cert.get()); });
  out.private_key_pem = to_pem([&](BIO* b) {
    return PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  });
  return out;
}

}  // namespace switchboard::testing::detail
