#include "endpoint_url.hpp"

#include <switchboard/net/redaction.hpp>

#include <switchboard/net/error.hpp>

#include <boost/asio/ip/address.hpp>
#include <boost/url/parse.hpp>

namespace switchboard::net {

endpoint_url parse_base_url(const std::string& url, const std::string& provider) {
  const auto fail = [&](std::string_view why) {
    return net_error(net_errc::invalid_options,
                       provider + ": base URL '" + excerpt(url, {}, 300) + "' " + std::string(why));
  };
  const auto parsed = boost::urls::parse_uri(url);
  if (!parsed) throw fail("is not a valid URL (expected http://host[:port][/path] or https://...)");
  if (parsed->has_userinfo()) {
    throw fail("carries credentials (user:password@host); they are neither sent nor kept: remove them and set "
               "the provider's API key option (api_key, e.g. from OPENAI_API_KEY or ANTHROPIC_API_KEY) instead");
  }
  endpoint_url out;
  const auto scheme = parsed->scheme();
  if (scheme == "https") {
    out.tls = true;
  } else if (scheme != "http") {
    throw fail("must use http or https");
  }
  out.host = parsed->host_address();
  if (out.host.empty()) throw fail("has no host");
  out.port = parsed->has_port() ? std::string(parsed->port()) : (out.tls ? "443" : "80");
  if (const auto number = parsed->has_port() ? parsed->port_number() : 1; number == 0) {
    throw fail("has no valid port (1 to 65535)");
  }
  boost::system::error_code ec;
  boost::asio::ip::make_address(out.host, ec);
  out.host_is_ip = !ec;
  out.host_header = std::string(parsed->encoded_host_and_port());
  out.base_path = std::string(parsed->encoded_path());
  while (!out.base_path.empty() && out.base_path.back() == '/') out.base_path.pop_back();
  out.display = std::string(scheme) + "://" + out.host_header + out.base_path;
  return out;
}

}  // namespace switchboard::net
