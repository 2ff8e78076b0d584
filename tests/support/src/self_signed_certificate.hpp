// A throw-away self-signed certificate for the loopback HTTPS server,
// generated with the OpenSSL API at test time (nothing checked in).
#pragma once

#include <string>
#include <vector>

namespace switchboard::testing::detail {

struct self_signed_certificate {
  std::string certificate_pem;
  std::string private_key_pem;
};

// A P-256 key and a certificate valid for one day whose subjectAltName lists
// `names` (IP literals as IP entries, the rest as DNS entries).
self_signed_certificate make_self_signed_certificate(const std::vector<std::string>& names);

}  // namespace switchboard::testing::detail
