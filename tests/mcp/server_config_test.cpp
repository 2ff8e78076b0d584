// MCP server configurations: workflow-file entries and command-line SPECs.
#include <switchboard/mcp/server_config.hpp>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace {

namespace json = boost::json;
namespace sbm = switchboard::mcp;

std::string error_of(const std::string& name, std::string_view entry) {
  try {
    sbm::from_json(name, json::parse(entry));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(McpServerConfig, ReadsStdioAndHttpEntries) {
  const auto files = sbm::from_json("files", json::parse(R"({"command":["npx","-y","srv"],"env":{"ROOT":"/tmp"},
                                                             "timeout_ms":5000,"needs_approval":true})"));
  EXPECT_TRUE(files.is_stdio());
  EXPECT_EQ(files.command, (std::vector<std::string>{"npx", "-y", "srv"}));
  EXPECT_EQ(files.env.at("ROOT"), "/tmp");
  EXPECT_EQ(files.request_timeout, std::chrono::milliseconds(5000));
  EXPECT_TRUE(files.needs_approval);
  EXPECT_EQ(sbm::from_json("files", sbm::to_json(files)).command, files.command);

  const auto remote = sbm::from_json("remote", json::parse(R"({"url":"https://example.com/mcp",
                                                               "headers":{"Authorization":"Bearer x"}})"));
  EXPECT_FALSE(remote.is_stdio());
  EXPECT_EQ(remote.headers.at("Authorization"), "Bearer x");
  EXPECT_EQ(sbm::to_json(remote), json::parse(R"({"url":"https://example.com/mcp","headers":{"Authorization":"Bearer x"}})"));
}

TEST(McpServerConfig, RefusesBadEntriesNamingTheField) {
  EXPECT_EQ(error_of("files", R"({"command":[]})"), "command: expected a non-empty array of strings");
  EXPECT_EQ(error_of("files", R"({"command":["a", 1]})"), "command/1: expected a string");
  EXPECT_EQ(error_of("files", R"({"command":["a"],"url":"http://x/"})"),
            "files: needs exactly one of \"command\" (stdio) or \"url\" (HTTP)");
  EXPECT_EQ(error_of("files", R"({})"), "files: needs exactly one of \"command\" (stdio) or \"url\" (HTTP)");
  EXPECT_NE(error_of("files", R"({"comand":["a"]})").find("comand: unknown key"), std::string::npos);
  EXPECT_EQ(error_of("r", R"({"url":"ftp://x/"})"), "url: must use http or https");
  EXPECT_EQ(error_of("r", R"({"url":"http://u:p@x/"})").substr(0, 30), "url: must not carry credential");
  EXPECT_EQ(error_of("r", R"({"url":"http://x/","headers":{"A":"b\nc"}})"), "headers/A: a value must be on one line");
  EXPECT_EQ(error_of("r", R"({"url":"http://x/","timeout_ms":0})").substr(0, 12), "timeout_ms: ");
  EXPECT_NE(error_of("bad name", R"({"url":"http://x/"})").find("must be 1 to 64 of"), std::string::npos);
}

TEST(McpServerConfig, ParsesCommandLineSpecs) {
  const auto stdio = sbm::parse_spec("cli", "stdio:node  server.js   --flag");
  EXPECT_EQ(stdio.command, (std::vector<std::string>{"node", "server.js", "--flag"}));
  const auto http = sbm::parse_spec("cli", "https://example.com/mcp");
  EXPECT_EQ(http.url, "https://example.com/mcp");
  EXPECT_THROW(sbm::parse_spec("cli", "stdio:"), std::invalid_argument);
  EXPECT_THROW(sbm::parse_spec("cli", "node server.js"), std::invalid_argument);
  EXPECT_THROW(sbm::parse_spec("cli", "http://"), std::invalid_argument);
  EXPECT_TRUE(sbm::is_valid_server_name("files-2.v1_x"));
  EXPECT_FALSE(sbm::is_valid_server_name("a/b"));
  EXPECT_FALSE(sbm::is_valid_server_name(""));
}

}  // namespace
