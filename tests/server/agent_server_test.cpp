// agent_server over HTTP: health, assistants (by graph id and by UUID),
// threads, the errors a caller gets (400 malformed JSON, 404 unknown route
// or record, 422), the API token, CORS, and shutdown() closing the door.
#include "server_fixture.hpp"

#include "ids.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::server::testing {
namespace {

using ::testing::HasSubstr;

class agent_server_test : public server_test {};

TEST_F(agent_server_test, ok_and_info) {
  const auto ok = get(port(), "/ok");
  ASSERT_EQ(ok.status, 200) << ok.describe();
  EXPECT_EQ(ok.json(), (json::object{{"ok", true}}));
  EXPECT_THAT(ok.header("content-type"), HasSubstr("application/json"));
  const auto info = get(port(), "/info");
  ASSERT_EQ(info.status, 200) << info.describe();
  EXPECT_TRUE(info.json().as_object().contains("version"));
}

TEST_F(agent_server_test, the_graphs_assistant_is_found_by_graph_id_and_by_uuid) {
  const auto by_graph = get(port(), "/assistants/family_scheduling");
  ASSERT_EQ(by_graph.status, 200) << by_graph.describe();
  const auto a = by_graph.json().as_object();
  EXPECT_EQ(a.at("assistant_id"), json::value(system_assistant_id("family_scheduling")));
  EXPECT_EQ(a.at("graph_id"), "family_scheduling");
  EXPECT_EQ(a.at("name"), "family_scheduling");
  EXPECT_EQ(a.at("metadata").at("created_by"), "system");

  const auto by_uuid = get(port(), "/assistants/" + system_assistant_id("family_scheduling"));
  ASSERT_EQ(by_uuid.status, 200) << by_uuid.describe();
  EXPECT_EQ(by_uuid.json(), by_graph.json());

  const auto search = post(port(), "/assistants/search", json::object{{"graph_id", "family_scheduling"}});
  ASSERT_EQ(search.status, 200) << search.describe();
  ASSERT_EQ(search.json().as_array().size(), 1u);
  EXPECT_EQ(search.json().at(0).at("assistant_id"), a.at("assistant_id"));
  EXPECT_EQ(search.header("x-pagination-total"), "1");
}

TEST_F(agent_server_test, an_unknown_assistant_is_404_no_assistant_found) {
  for (const std::string& id : std::vector<std::string>{"no_such_graph", random_uuid()}) {
    const auto r = get(port(), "/assistants/" + id);
    EXPECT_EQ(r.status, 404) << r.describe();
    EXPECT_THAT(std::string(r.json().at("detail").as_string()), HasSubstr("No assistant found"));
    EXPECT_THAT(std::string(r.json().at("detail").as_string()), HasSubstr(id));
  }
  // A run on an unknown assistant likewise.
  const auto thread = create_thread();
  const auto r = post(port(), "/threads/" + thread + "/runs",
                      json::object{{"assistant_id", "nope"}, {"input", json::object{{"request", "hi"}}}});
  EXPECT_EQ(r.status, 404) << r.describe();
  EXPECT_THAT(std::string(r.json().at("detail").as_string()), HasSubstr("No assistant found"));
}

TEST_F(agent_server_test, an_assistant_created_is_found_and_runs_its_graph) {
  const auto created = post(port(), "/assistants",
                            json::object{{"graph_id", "family_scheduling"}, {"name", "planner"},
                                         {"metadata", json::object{{"team", "home"}}}});
  ASSERT_EQ(created.status, 200) << created.describe();
  const std::string id(created.json().at("assistant_id").as_string());
  EXPECT_TRUE(is_uuid(id));
  const auto got = get(port(), "/assistants/" + id);
  ASSERT_EQ(got.status, 200) << got.describe();
  EXPECT_EQ(got.json().at("name"), "planner");
  EXPECT_EQ(got.json().at("graph_id"), "family_scheduling");

  const auto again = post(port(), "/assistants", json::object{{"graph_id", "family_scheduling"}, {"assistant_id", id}});
  EXPECT_EQ(again.status, 409) << again.describe();
  const auto kept = post(port(), "/assistants", json::object{{"graph_id", "family_scheduling"}, {"assistant_id", id},
                                                             {"if_exists", "do_nothing"}});
  EXPECT_EQ(kept.status, 200) << kept.describe();
  EXPECT_EQ(kept.json().at("name"), "planner");

  const auto unknown_graph = post(port(), "/assistants", json::object{{"graph_id", "nope"}});
  EXPECT_EQ(unknown_graph.status, 404) << unknown_graph.describe();

  const auto search = post(port(), "/assistants/search", json::object{{"metadata", json::object{{"team", "home"}}}});
  ASSERT_EQ(search.status, 200) << search.describe();
  ASSERT_EQ(search.json().as_array().size(), 1u);
  EXPECT_EQ(search.json().at(0).at("assistant_id"), json::value(id));

  const auto thread = create_thread();
  const auto r = post(port(), "/threads/" + thread + "/runs/wait",
                      json::object{{"assistant_id", id}, {"input", json::object{{"request", question}}}});
  ASSERT_EQ(r.status, 200) << r.describe();
  EXPECT_EQ(r.json().at("status"), "completed");
}

TEST_F(agent_server_test, threads_are_created_read_searched_and_deleted) {
  const auto created = post(port(), "/threads", json::object{{"metadata", json::object{{"user", "ana"}}}});
  ASSERT_EQ(created.status, 200) << created.describe();
  const auto t = created.json().as_object();
  const std::string id(t.at("thread_id").as_string());
  EXPECT_TRUE(is_uuid(id));
  EXPECT_EQ(t.at("status"), "idle");
  EXPECT_EQ(t.at("metadata"), (json::object{{"user", "ana"}}));
  for (const auto* key : {"created_at", "updated_at", "state_updated_at", "values", "interrupts", "config"})
    EXPECT_TRUE(t.contains(key)) << key;

  const auto got = get(port(), "/threads/" + id);
  ASSERT_EQ(got.status, 200) << got.describe();
  EXPECT_EQ(got.json(), created.json());

  // A chosen id; the same id again is a conflict unless told to keep it.
  const auto chosen = random_uuid();
  EXPECT_EQ(create_thread(json::object{{"thread_id", chosen}}), chosen);
  EXPECT_EQ(post(port(), "/threads", json::object{{"thread_id", chosen}}).status, 409);
  EXPECT_EQ(post(port(), "/threads", json::object{{"thread_id", chosen}, {"if_exists", "do_nothing"}}).status, 200);
  EXPECT_EQ(post(port(), "/threads", json::object{{"thread_id", "not-a-uuid"}}).status, 422);

  const auto by_metadata = post(port(), "/threads/search", json::object{{"metadata", json::object{{"user", "ana"}}}});
  ASSERT_EQ(by_metadata.status, 200) << by_metadata.describe();
  ASSERT_EQ(by_metadata.json().as_array().size(), 1u);
  EXPECT_EQ(by_metadata.json().at(0).at("thread_id"), json::value(id));
  const auto all = post(port(), "/threads/search", json::object{});
  ASSERT_EQ(all.status, 200) << all.describe();
  EXPECT_EQ(all.json().as_array().size(), 2u);
  EXPECT_EQ(all.header("x-pagination-total"), "2");
  const auto one = post(port(), "/threads/search", json::object{{"limit", 1}});
  EXPECT_EQ(one.json().as_array().size(), 1u);
  EXPECT_EQ(one.header("x-pagination-next"), "1");
  const auto busy = post(port(), "/threads/search", json::object{{"status", "busy"}});
  EXPECT_TRUE(busy.json().as_array().empty());

  const auto deleted = del(port(), "/threads/" + id);
  EXPECT_EQ(deleted.status, 204) << deleted.describe();
  EXPECT_TRUE(deleted.body.empty());
  EXPECT_EQ(get(port(), "/threads/" + id).status, 404);
  EXPECT_EQ(del(port(), "/threads/" + id).status, 404);
  EXPECT_EQ(post(port(), "/threads/search", json::object{}).json().as_array().size(), 1u);
}

TEST_F(agent_server_test, an_unknown_thread_is_404) {
  const auto id = random_uuid();
  for (const auto& r : {get(port(), "/threads/" + id), get(port(), "/threads/" + id + "/state"),
                        post(port(), "/threads/" + id + "/history", json::object{}),
                        get(port(), "/threads/" + id + "/runs"),
                        post(port(), "/threads/" + id + "/runs",
                             json::object{{"assistant_id", "family_scheduling"}, {"input", json::object{}}})}) {
    EXPECT_EQ(r.status, 404) << r.describe();
    EXPECT_TRUE(r.json().as_object().contains("detail")) << r.body;
  }
}

TEST_F(agent_server_test, malformed_json_is_400) {
  for (const std::string target : {"/threads", "/assistants/search", "/threads/search"}) {
    const auto r = request(port(), http::verb::post, target, "{\"metadata\": ");
    EXPECT_EQ(r.status, 400) << target << ": " << r.describe();
    EXPECT_THAT(std::string(r.json().at("detail").as_string()), HasSubstr("not JSON")) << target;
  }
  const auto thread = create_thread();
  const auto r = request(port(), http::verb::post, "/threads/" + thread + "/runs", "{'assistant_id': 1}");
  EXPECT_EQ(r.status, 400) << r.describe();
  // JSON, but not an object.
  EXPECT_EQ(request(port(), http::verb::post, "/threads", "[1, 2]").status, 422);
  // Nothing was created by the refused requests.
  EXPECT_EQ(post(port(), "/threads/search", json::object{}).json().as_array().size(), 1u);
}

TEST_F(agent_server_test, an_unknown_route_is_404) {
  const auto thread = create_thread();
  for (const auto& r : {get(port(), "/nothing"), post(port(), "/", json::object{}), post(port(), "/ok", json::object{}),
                        post(port(), "/threads/" + thread + "/frobnicate", json::object{}),
                        del(port(), "/assistants"), get(port(), "/threads/" + thread + "/runs/x/y/z")}) {
    EXPECT_EQ(r.status, 404) << r.describe();
    EXPECT_TRUE(r.json().as_object().contains("detail")) << r.body;
  }
}

TEST_F(agent_server_test, a_run_body_the_api_does_not_take_is_422) {
  const auto thread = create_thread();
  const auto run = [&](json::object body) { return post(port(), "/threads/" + thread + "/runs", body); };
  EXPECT_EQ(run({{"input", json::object{}}}).status, 422);  // no assistant
  EXPECT_EQ(run({{"assistant_id", "family_scheduling"}, {"input", "text"}}).status, 422);
  EXPECT_EQ(run({{"assistant_id", "family_scheduling"}, {"input", json::object{}},
                 {"command", json::object{{"resume", "x"}}}}).status, 422);
  EXPECT_EQ(run({{"assistant_id", "family_scheduling"}, {"input", json::object{}},
                 {"multitask_strategy", "sometimes"}}).status, 422);
  EXPECT_EQ(run({{"assistant_id", "family_scheduling"}, {"input", json::object{}},
                 {"stream_mode", "telepathy"}}).status, 422);
  EXPECT_EQ(run({{"assistant_id", "family_scheduling"}, {"command", json::object{{"goto", "parse"}}}}).status, 422);
  // Nothing ran.
  const auto runs = get(port(), "/threads/" + thread + "/runs");
  ASSERT_EQ(runs.status, 200) << runs.describe();
  EXPECT_TRUE(runs.json().as_array().empty());
  EXPECT_EQ(thread_status(thread), "idle");
}

TEST_F(agent_server_test, shutdown_stops_accepting_connections) {
  ASSERT_EQ(get(port(), "/ok").status, 200);
  const auto p = port();
  server_->shutdown(std::chrono::seconds(10));
  EXPECT_ANY_THROW(get(p, "/ok")) << "a connection after shutdown() was answered";
}

// The API token: every request but GET /ok carries it, as a bearer token
// or as x-api-key.
class auth_test : public server_test {
 protected:
  server::serve_options options() override {
    auto o = server_test::options();
    o.auth_token = token;
    o.cors_origins = {"https://ui.example"};
    return o;
  }
  static constexpr const char* token = "a-long-enough-test-token-0123456789";
};

TEST_F(auth_test, a_request_without_the_token_is_401) {
  for (const auto& r : {get(port(), "/threads/" + random_uuid()), post(port(), "/threads", json::object{}),
                        post(port(), "/assistants/search", json::object{}), get(port(), "/info"),
                        get(port(), "/nothing")}) {
    EXPECT_EQ(r.status, 401) << r.describe();
    EXPECT_EQ(r.header("www-authenticate"), "Bearer");
    EXPECT_TRUE(r.json().as_object().contains("detail")) << r.body;
  }
  // Nothing was created.
  const auto search = post(port(), "/threads/search", json::object{}, {{"x-api-key", token}});
  ASSERT_EQ(search.status, 200) << search.describe();
  EXPECT_TRUE(search.json().as_array().empty());
}

TEST_F(auth_test, a_wrong_token_is_401) {
  const std::vector<header_list> wrong{
      {{"authorization", std::string("Bearer ") + token + "x"}},
      {{"authorization", "Bearer a-long-enough-test-token-012345678"}},
      {{"authorization", "Bearer "}},
      {{"authorization", std::string("Basic ") + token}},
      {{"authorization", token}},
      {{"x-api-key", "wrong"}},
      {{"x-api-key", ""}}};
  for (const auto& h : wrong) {
    const auto r = post(port(), "/threads", json::object{}, h);
    EXPECT_EQ(r.status, 401) << h.front().first << ": " << h.front().second << " -> " << r.describe();
  }
}

TEST_F(auth_test, the_token_as_bearer_or_as_x_api_key_is_let_in) {
  const auto bearer = post(port(), "/threads", json::object{}, {{"authorization", std::string("Bearer ") + token}});
  EXPECT_EQ(bearer.status, 200) << bearer.describe();
  const auto lower = post(port(), "/threads", json::object{}, {{"authorization", std::string("bearer ") + token}});
  EXPECT_EQ(lower.status, 200) << lower.describe();
  const auto key = post(port(), "/threads", json::object{}, {{"x-api-key", token}});
  EXPECT_EQ(key.status, 200) << key.describe();
  const auto search = post(port(), "/threads/search", json::object{}, {{"x-api-key", token}});
  EXPECT_EQ(search.json().as_array().size(), 3u);
}

TEST_F(auth_test, ok_and_the_page_are_open_the_rest_is_not) {
  const auto r = get(port(), "/ok");
  EXPECT_EQ(r.status, 200) << r.describe();
  EXPECT_EQ(r.json(), (json::object{{"ok", true}}));
  // The page must load to ask for the token; its files only.
  const auto page = get(port(), "/");
  EXPECT_EQ(page.status, 200) << page.describe();
  EXPECT_THAT(page.header("content-type"), HasSubstr("text/html"));
  EXPECT_EQ(get(port(), "/ok/").status, 401);
  EXPECT_EQ(get(port(), "//ok").status, 401);
  EXPECT_EQ(get(port(), "/metrics").status, 401);
  EXPECT_EQ(get(port(), "/metrics", {{"x-api-key", token}}).status, 200);
  EXPECT_EQ(get(port(), "/ui/../threads/search").status, 401);
}

TEST_F(auth_test, cors_for_a_listed_origin_only) {
  const auto preflight = request(port(), http::verb::options, "/threads", {},
                                 {{"origin", "https://ui.example"}, {"access-control-request-method", "POST"}});
  EXPECT_EQ(preflight.status, 204) << preflight.describe();
  EXPECT_EQ(preflight.header("access-control-allow-origin"), "https://ui.example");
  EXPECT_THAT(preflight.header("access-control-allow-headers"), HasSubstr("Last-Event-ID"));
  EXPECT_THAT(preflight.header("access-control-allow-headers"), HasSubstr("X-Api-Key"));

  const auto allowed = post(port(), "/threads", json::object{}, {{"origin", "https://ui.example"}, {"x-api-key", token}});
  EXPECT_EQ(allowed.status, 200);
  EXPECT_EQ(allowed.header("access-control-allow-origin"), "https://ui.example");
  EXPECT_THAT(allowed.header("access-control-expose-headers"), HasSubstr("Content-Location"));
  // A 401 carries the header too, so the browser shows the page why.
  const auto refused = post(port(), "/threads", json::object{}, {{"origin", "https://ui.example"}});
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(refused.header("access-control-allow-origin"), "https://ui.example");

  const auto other = post(port(), "/threads", json::object{}, {{"origin", "https://evil.example"}, {"x-api-key", token}});
  EXPECT_EQ(other.header("access-control-allow-origin"), "");
  const auto other_preflight = request(port(), http::verb::options, "/threads", {}, {{"origin", "https://evil.example"}});
  EXPECT_NE(other_preflight.status, 204);
  EXPECT_EQ(other_preflight.header("access-control-allow-origin"), "");
}

}  // namespace
}  // namespace switchboard::server::testing
