// The store by URL and the state directory: what a host promises about the
// URLs it takes and the directory where it keeps runs.
#include <switchboard/host/store.hpp>

#include <switchboard/host/error.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace switchboard::host {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// The message and code of the host_error `url` is refused with.
host_error refusal_of(std::string_view url) {
  try {
    parse_store_url(url);
  } catch (const host_error& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << url;
  return host_error(host_errc::missing_path, "(accepted)");
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  ::lstat(p.c_str(), &st);
  return st.st_mode & 0777;
}

class host_store : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "sb-host-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    if (const char* old = std::getenv("SWITCHBOARD_STATE_DIR")) saved_state_dir_ = old;
  }
  void TearDown() override {
    if (saved_state_dir_) ::setenv("SWITCHBOARD_STATE_DIR", saved_state_dir_->c_str(), 1);
    else ::unsetenv("SWITCHBOARD_STATE_DIR");
    fs::remove_all(dir_);
  }

  fs::path dir_;
  std::optional<std::string> saved_state_dir_;
};

TEST(parse_store_url, reads_memory_and_sqlite_with_its_path) {
  EXPECT_EQ(parse_store_url("memory").scheme, store_url::backend::memory);
  const auto sqlite = parse_store_url("sqlite:runs/workflows.db");
  EXPECT_EQ(sqlite.scheme, store_url::backend::sqlite);
  EXPECT_EQ(sqlite.path, "runs/workflows.db");
}

TEST(parse_store_url, refuses_other_urls_naming_them) {
  for (const std::string_view url :
       {"", "Memory", "mysql://db/runs", "postgres:runs", "sqlite", "/tmp/runs.db", "memory:x"}) {
    const auto e = refusal_of(url);
    EXPECT_EQ(e.code(), host_errc::bad_store_url) << url;
    EXPECT_THAT(e.what(), HasSubstr("'" + std::string(url) + "'"));
    EXPECT_THAT(e.what(), HasSubstr("expected 'memory', 'sqlite:PATH' or 'postgresql://...'"));
  }
  const auto hidden = refusal_of("mysql://app:s3cret@db/runs");
  EXPECT_THAT(hidden.what(), ::testing::Not(HasSubstr("s3cret")));
  const auto e = refusal_of("sqlite:");
  EXPECT_EQ(e.code(), host_errc::bad_store_url);
  EXPECT_THAT(e.what(), HasSubstr("'sqlite:': missing path after 'sqlite:'"));
}

TEST(parse_store_url, reads_postgres_urls_as_libpq_will) {
  for (const std::string_view url : {"postgres://db/runs", "postgresql://app@db:5433/runs?sslmode=require",
                                     "postgresql:///runs?host=/run/postgresql", "postgresql://"}) {
    const auto parsed = parse_store_url(url);
    EXPECT_EQ(parsed.scheme, store_url::backend::postgres) << url;
    EXPECT_EQ(parsed.conninfo, url);
    EXPECT_TRUE(parsed.path.empty());
  }
}

TEST(printable_store_url, leaves_a_postgres_password_out) {
  EXPECT_EQ(printable_store_url("postgresql://app:s3cret@db:5433/runs"), "postgresql://app@db:5433/runs");
  EXPECT_EQ(printable_store_url("postgres://app:s3cret@db"), "postgres://app@db");
  EXPECT_EQ(printable_store_url("postgresql://db/runs?password=s3cret"), "postgresql://db/runs");
  EXPECT_EQ(printable_store_url("postgresql://db/runs?sslmode=require&password=s3cret&application_name=x"),
            "postgresql://db/runs?sslmode=require&application_name=x");
  EXPECT_EQ(printable_store_url("postgresql://app@db/runs?host=/tmp"), "postgresql://app@db/runs?host=/tmp");
  EXPECT_EQ(printable_store_url("sqlite:/var/runs.db"), "sqlite:/var/runs.db");
  EXPECT_EQ(printable_store_url("memory"), "memory");
}

TEST(absolute_store_url, makes_a_relative_sqlite_path_absolute_and_leaves_the_rest) {
  EXPECT_EQ(absolute_store_url("sqlite:runs.db"), "sqlite:" + (fs::current_path() / "runs.db").string());
  EXPECT_EQ(absolute_store_url("sqlite:/var/runs.db"), "sqlite:/var/runs.db");
  EXPECT_EQ(absolute_store_url("memory"), "memory");
  EXPECT_EQ(absolute_store_url("sqlite:"), "sqlite:");  // refused when opened, naming it
  EXPECT_EQ(absolute_store_url("bogus"), "bogus");
  EXPECT_EQ(absolute_store_url("postgresql://app@db/runs"), "postgresql://app@db/runs");
}

TEST_F(host_store, opens_the_backend_the_url_names) {
  EXPECT_NE(open_store("memory"), nullptr);
  const auto file = dir_ / "runs.db";
  EXPECT_NE(open_store("sqlite:" + file.string()), nullptr);
  EXPECT_TRUE(fs::is_regular_file(file));
  try {
    open_store("sqlite");
    ADD_FAILURE() << "opened";
  } catch (const host_error& e) {
    EXPECT_EQ(e.code(), host_errc::bad_store_url);
    EXPECT_THAT(e.what(), HasSubstr("'sqlite'"));
  }
}

// A postgres URL reaches the PostgreSQL backend: with nobody listening, its
// error names the server (never the password). The store itself is tested
// against a real server in tests/stores.
TEST_F(host_store, a_postgres_url_opens_the_postgresql_backend) {
  const std::string url = "postgresql://app:s3cret@127.0.0.1:1/runs?connect_timeout=5";
  for (const bool feed : {false, true}) {
    try {
      if (feed) open_event_feed(url);
      else open_store(url);
      ADD_FAILURE() << "opened";
    } catch (const orchestrator::checkpoint_error& e) {
      EXPECT_THAT(e.what(), HasSubstr(feed ? "PostgreSQL event feed" : "PostgreSQL checkpoint store"));
      EXPECT_THAT(e.what(), HasSubstr("127.0.0.1 port 1"));
      EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("s3cret")));
    }
  }
}

TEST_F(host_store, the_default_is_an_sqlite_file_in_a_private_state_directory) {
  const auto state = dir_ / "state";
  ::setenv("SWITCHBOARD_STATE_DIR", state.c_str(), 1);
  EXPECT_EQ(default_store_url(), "sqlite:" + (state / "workflows.db").string());
  EXPECT_TRUE(fs::is_directory(state));
  EXPECT_EQ(mode_of(state), 0700u);
  const auto store = open_store("");
  boost::asio::io_context io;
  auto listed = boost::asio::co_spawn(io, orchestrator::list_all(*store), boost::asio::use_future);
  io.run();
  EXPECT_TRUE(listed.get().empty());
  EXPECT_TRUE(fs::is_regular_file(state / "workflows.db"));
}

TEST_F(host_store, a_state_directory_open_to_others_is_made_private_and_a_symlink_refused) {
  const auto open = dir_ / "open";
  fs::create_directory(open);
  ::chmod(open.c_str(), 0755);
  ::setenv("SWITCHBOARD_STATE_DIR", open.c_str(), 1);
  EXPECT_EQ(state_directory(), open);
  EXPECT_EQ(mode_of(open), 0700u);

  const auto link = dir_ / "link";
  fs::create_directory_symlink(open, link);
  ::setenv("SWITCHBOARD_STATE_DIR", link.c_str(), 1);
  try {
    state_directory();
    ADD_FAILURE() << "a symbolic link was used";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr(link.string()));
  }
}

}  // namespace
}  // namespace switchboard::host
