// switchboard tools --mcp: the built tool against the reference MCP server
// and the misbehaving one (tests/mcp_peers), with its exit codes.
#include "../../cli_runner.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace {

namespace fs = std::filesystem;
using switchboard::test::run_switchboard;
using switchboard::test::shell_quoted;

const fs::path peers = SWITCHBOARD_MCP_PEERS;

std::string everything() {
  return shell_quoted("stdio:" SWITCHBOARD_NODE " " +
                      (peers / "node_modules/@modelcontextprotocol/server-everything/dist/index.js").string() + " stdio");
}

std::string misbehaving() { return shell_quoted("stdio:" SWITCHBOARD_NODE " " + (peers / "misbehaving_server.mjs").string()); }

fs::path empty_stdin() {
  const auto p = fs::temp_directory_path() / "sb-cmd-tools-stdin";
  std::ofstream(p).flush();
  return p;
}

TEST(CmdTools, ListsTheReferenceServersTools) {
  ASSERT_TRUE(fs::exists(peers / "node_modules")) << "run scripts/test.sh (npm ci in tests/mcp_peers)";
  const auto r = run_switchboard(fs::temp_directory_path(), "tools --mcp " + everything(), empty_stdin(), false);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("get-sum  [idempotent]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("arguments: a: number*, b: number*"), std::string::npos) << r.out;
  EXPECT_EQ(switchboard::test::find_raw_control(r.out), "");
  const auto j = run_switchboard(fs::temp_directory_path(), "tools --json --mcp " + everything(), empty_stdin(), false);
  ASSERT_EQ(j.exit_code, 0) << j.out;
  const auto doc = boost::json::parse(j.out);
  EXPECT_EQ(doc.at("server"), "cli");
  EXPECT_GE(doc.at("tools").as_array().size(), 5u);
}

TEST(CmdTools, CallsAToolAndPrintsItsResult) {
  const auto r = run_switchboard(fs::temp_directory_path(),
                                 "tools --mcp " + everything() + " --call get-sum --args '{\"a\":40,\"b\":2}'",
                                 empty_stdin(), false);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("42"), std::string::npos) << r.out;
  const auto s = run_switchboard(fs::temp_directory_path(),
                                 "tools --mcp " + misbehaving() + " --call echo --args '{\"text\":\"hi\"}' --json",
                                 empty_stdin(), false);
  ASSERT_EQ(s.exit_code, 0) << s.out;
  EXPECT_EQ(boost::json::parse(s.out).at("structured").at("echoed"), "hi");
}

TEST(CmdTools, FailuresAndUsageErrorsHaveTheirExitCodes) {
  const auto failed = run_switchboard(fs::temp_directory_path(), "tools --mcp " + misbehaving() + " --call fails",
                                      empty_stdin(), true);
  EXPECT_EQ(failed.exit_code, 1) << failed.out;
  EXPECT_NE(failed.out.find("the tool failed on purpose"), std::string::npos);
  const auto crashed = run_switchboard(fs::temp_directory_path(), "tools --mcp " + misbehaving() + " --call crash",
                                       empty_stdin(), true);
  EXPECT_EQ(crashed.exit_code, 1) << crashed.out;
  EXPECT_NE(crashed.out.find("MCP server 'cli': the server exited with status 3"), std::string::npos) << crashed.out;
  EXPECT_EQ(run_switchboard(fs::temp_directory_path(), "tools", empty_stdin()).exit_code, 2);
  EXPECT_EQ(run_switchboard(fs::temp_directory_path(), "tools --mcp ftp://x", empty_stdin()).exit_code, 2);
  EXPECT_EQ(run_switchboard(fs::temp_directory_path(), "tools --mcp " + misbehaving() + " --call echo --args '[1]'",
                            empty_stdin()).exit_code, 2);
  EXPECT_EQ(run_switchboard(fs::temp_directory_path(), "tools --mcp stdio:/nonexistent/server", empty_stdin()).exit_code, 1);
}

}  // namespace
