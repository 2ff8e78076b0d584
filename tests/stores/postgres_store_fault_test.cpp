// The PostgreSQL store when things go wrong: a server nobody runs, a URL
// libpq cannot read, a wrong password, sessions terminated behind the
// store's back, and a server killed while an operation waits on it. Each
// ends in a checkpoint_error naming the server (never the password), or in
// the store carrying on with a new connection; none hangs (a hang guard of
// minutes fails a step that would, no test measures how fast it was).
#include <switchboard/stores/postgres_store.hpp>

#include <switchboard/testing/checkpoint_store_conformance_support.hpp>

#include "postgres_test_server.hpp"

#include <switchboard/testing/hang_guard.hpp>

#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>

namespace switchboard::orchestrator {
namespace {

using namespace std::chrono_literals;
using stores::testing::exec_sql;
using stores::testing::read_line;
using stores::testing::server_state;
using stores::testing::unused_port;
using stores::testing::url_for;
using testing::long_lease;
using testing::new_run;
using testing::next_step;
using testing::run_now;
using testing::scratch_directory;
using ::testing::HasSubstr;
using ::testing::Not;

// The message of the checkpoint_error opening a store at `url` throws, and
// how long it took.
std::pair<std::string, std::chrono::steady_clock::duration> open_refusal(const std::string& url) {
  const switchboard::testing::hang_guard guard("opening a store at an unusable server");
  const auto start = std::chrono::steady_clock::now();
  try {
    stores::make_postgres_checkpoint_store(url);
    ADD_FAILURE() << "opened a store at " << url;
  } catch (const checkpoint_error& e) {
    return {e.what(), std::chrono::steady_clock::now() - start};
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a checkpoint_error, got: " << e.what();
  }
  return {"", std::chrono::steady_clock::now() - start};
}

std::string port_of_test_server() { return read_line(server_state() / "port"); }

TEST(postgres_store_faults, an_unreachable_server_is_a_clear_error_not_a_hang) {
  const std::string port = std::to_string(unused_port());
  const auto message = open_refusal("postgresql://swb@127.0.0.1:" + port + "/switchboard_test").first;
  EXPECT_THAT(message, HasSubstr("127.0.0.1 port " + port));
  EXPECT_THAT(message, HasSubstr("Connection refused"));
}

TEST(postgres_store_faults, a_connect_timeout_in_the_url_bounds_a_server_that_never_answers) {
  // A listening socket that never accepts: the TCP handshake completes (the
  // backlog), the server's greeting never comes.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), size), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size), 0);
  const std::string port = std::to_string(ntohs(address.sin_port));
  const auto [message, took] =
      open_refusal("postgresql://swb@127.0.0.1:" + port + "/switchboard_test?connect_timeout=1&sslmode=disable");
  ::close(fd);
  EXPECT_THAT(message, HasSubstr("127.0.0.1 port " + port));
  EXPECT_THAT(message, HasSubstr("no answer within the connect timeout"));
  EXPECT_GE(took, 1s) << "the URL's connect_timeout is waited out";
}

TEST(postgres_store_faults, a_malformed_url_is_a_clear_error_that_hides_its_password) {
  const auto message = open_refusal("postgresql://swb:hunter2-secret@127.0.0.1:notaport/db").first;
  EXPECT_THAT(message, HasSubstr("PostgreSQL"));
  EXPECT_THAT(message, HasSubstr("notaport"));
  EXPECT_THAT(message, Not(HasSubstr("hunter2-secret")));
  const auto bad_option = open_refusal("postgresql://swb:hunter2-secret@127.0.0.1/db?no_such_option=1").first;
  EXPECT_THAT(bad_option, HasSubstr("no_such_option"));
  EXPECT_THAT(bad_option, Not(HasSubstr("hunter2-secret")));
}

TEST(postgres_store_faults, a_wrong_password_is_refused_without_repeating_it) {
  const std::string port = port_of_test_server();
  const auto message =
      open_refusal("postgres://swb_password:not-the-password-42@127.0.0.1:" + port + "/switchboard_test").first;
  EXPECT_THAT(message, HasSubstr("127.0.0.1 port " + port));
  EXPECT_THAT(message, HasSubstr("user 'swb_password'"));
  EXPECT_THAT(message, HasSubstr("password authentication failed"));
  EXPECT_THAT(message, Not(HasSubstr("not-the-password-42")));
}

TEST(postgres_store_faults, the_password_and_the_rest_may_come_from_pg_environment_variables) {
  const std::string port = port_of_test_server();
  ::setenv("PGHOST", "127.0.0.1", 1);
  ::setenv("PGPORT", port.c_str(), 1);
  ::setenv("PGUSER", "swb_password", 1);
  ::setenv("PGPASSWORD", "the-right-password", 1);
  ::setenv("PGDATABASE", "switchboard_test", 1);
  // The role may not create tables in public (PostgreSQL 15): a schema of its own.
  const auto admin = read_line(server_state() / "url");
  exec_sql(admin, "DROP SCHEMA IF EXISTS swb_password CASCADE");
  exec_sql(admin, "CREATE SCHEMA swb_password AUTHORIZATION swb_password");
  auto store = stores::make_postgres_checkpoint_store("");
  run_now(store->create(new_run("from-the-environment"), long_lease));
  EXPECT_TRUE(run_now(store->load("from-the-environment")).has_value());
  auto also = stores::make_postgres_checkpoint_store("postgresql://");
  EXPECT_TRUE(run_now(also->load("from-the-environment")).has_value());
  for (const char* name : {"PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE"}) ::unsetenv(name);
}

TEST(postgres_store_faults, sessions_terminated_behind_the_stores_back_are_replaced) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  auto store = stores::make_postgres_checkpoint_store(url + "&application_name=swb-terminated");
  run_now(store->create(new_run("survivor"), long_lease));
  const auto terminated = exec_sql(url,
                                   "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                   "WHERE application_name = 'swb-terminated'");
  EXPECT_NE(terminated, "0");
  // The backends are gone once pg_stat_activity no longer lists them.
  for (int i = 0; i < 100; ++i) {
    if (exec_sql(url, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'swb-terminated'") == "0") {
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  const auto loaded = run_now(store->load("survivor"));
  ASSERT_TRUE(loaded.has_value()) << "an idle connection the server closed is dropped, a new one opened";
  EXPECT_EQ(loaded->owner, "worker-a");
}

// The server's own limits (here lock_timeout, from the URL) refuse a
// statement inside a claim's transaction: the claim fails naming why, the
// transaction is rolled back (the row is not left locked) and the same
// store carries on.
TEST(postgres_store_faults, a_statement_refused_inside_a_claim_is_rolled_back_and_the_store_carries_on) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  // Its sessions are named: other tests on the server may be mid-transaction.
  const std::string name = "swb-refused-claim-" + std::to_string(::getpid());
  auto store = stores::make_postgres_checkpoint_store(url_for(dir.path(), {"lock_timeout=200"}) +
                                                      "&application_name=" + name);
  const save_request run = new_run("locked");
  run_now(store->create(run, long_lease));
  run_now(store->save(next_step(run, 1, workflow_status::awaiting_clarification, "{}")));

  auto holder = stores::testing::connect_blocking(url);
  exec_sql(holder.get(), "BEGIN");
  exec_sql(holder.get(), "SELECT 1 FROM switchboard_runs WHERE workflow_id = 'locked' FOR UPDATE");
  const auto claim = testing::claim_for("locked", "worker-b", workflow_status::awaiting_clarification, 1);
  EXPECT_THAT(testing::refusal_message(store->claim(claim)), HasSubstr("lock timeout"));
  exec_sql(holder.get(), "ROLLBACK");

  const auto claimed = run_now(store->claim(claim));
  EXPECT_EQ(claimed.owner, "worker-b");
  EXPECT_EQ(claimed.fence, 2);
  EXPECT_EQ(exec_sql(url, "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
                          "WHERE a.state = 'idle in transaction' AND a.application_name = '" +
                              name + "'"),
            "0")
      << "no session of the store is left inside a transaction";
}

// A server of this test's own, stopped by the test (the shared one serves
// the other tests).
class private_server {
 public:
  private_server() { script("start"); }
  ~private_server() { script("stop"); }
  std::string url() const { return read_line(state_.path() / "url"); }
  void kill_immediately() { script("stop"); }

 private:
  void script(const std::string& command) {
    const std::string line =
        std::string(SWITCHBOARD_POSTGRES_TEST_SERVER) + " " + command + " " + state_.path().string() + " >/dev/null";
    if (std::system(line.c_str()) != 0 && command == "start") throw std::runtime_error("cannot start a server");
  }
  scratch_directory state_;
};

TEST(postgres_store_faults, a_server_killed_mid_operation_fails_the_waiting_operation) {
  private_server server;
  const auto url = server.url();
  auto store = stores::make_postgres_checkpoint_store(url);
  const save_request run = new_run("held");
  run_now(store->create(run, long_lease));

  // Another session holds the run's row: the save waits for the lock.
  auto holder = stores::testing::connect_blocking(url);
  exec_sql(holder.get(), "BEGIN");
  exec_sql(holder.get(), "SELECT 1 FROM switchboard_runs WHERE workflow_id = 'held' FOR UPDATE");
  auto saving = std::async(std::launch::async, [&] {
    run_now(store->save(next_step(run, 1, workflow_status::running, "{}", {"step 1"})));
  });
  ASSERT_EQ(saving.wait_for(300ms), std::future_status::timeout) << "the save waits for the row lock";

  server.kill_immediately();  // pg_ctl stop -m immediate
  const switchboard::testing::hang_guard guard("a save waiting on a killed server");
  try {
    saving.get();
    ADD_FAILURE() << "the save succeeded on a killed server";
  } catch (const checkpoint_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("PostgreSQL checkpoint store"));
    EXPECT_THAT(e.what(), HasSubstr("port "));
  }

  // The next operation finds no server: a clear error too, at once.
  EXPECT_THROW(run_now(store->load("held")), checkpoint_error);
}

// A feed and a queue keep a listening connection that reconnects while the
// server is away, and a NOTIFY may still be owed: closing them must stop
// both promptly, not wait for a server that will not come back.
TEST(postgres_store_faults, a_feed_and_a_queue_whose_server_died_close_without_hanging) {
  private_server server;
  const auto url = server.url();
  auto feed = stores::make_postgres_event_feed(url);
  auto queue = stores::make_postgres_run_queue(url);
  run_now(feed->append("run-1", "{}"));
  run_now(queue->enqueue({"run-1", "wf", ready_reason::new_run, "{}"}));
  server.kill_immediately();
  // An operation meanwhile fails clearly (the listener is reconnecting).
  EXPECT_THROW(run_now(feed->read("run-1", 0, 0)), checkpoint_error);
  std::this_thread::sleep_for(300ms);  // the listener is between attempts now
  const switchboard::testing::hang_guard guard("closing a feed and a queue whose server is gone");
  feed.reset();
  queue.reset();
}

}  // namespace
}  // namespace switchboard::orchestrator
