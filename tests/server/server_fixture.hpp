// The fixture of the HTTP tests: an agent_server serving the scheduling
// sample as shipped (bookings wait for approval) on 127.0.0.1, port 0,
// with a store of `store_url()`, and the API calls the tests repeat.
#pragma once

#include "server_test_support.hpp"

#include <switchboard/testing/hang_guard.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace switchboard::server::testing {

inline const std::string soccer = "Soccer practice for Maya on Saturday 2-4pm, she needs the minivan";
inline const std::string vague = "Piano lesson for Leo sometime next week";
inline const std::string question = "What does Maya have on Saturday?";

class server_test : public ::testing::Test {
 protected:
  void SetUp() override { start(); }

  virtual server::serve_options options() {
    server::serve_options o;
    fs::create_directories(dir_.path() / "state");
    o.workflows = {scheduling_settings(dir_.path() / "state")};
    o.store_url = "memory";
    return o;
  }
  void start() { server_.emplace(options()); }
  std::uint16_t port() const { return server_->port(); }

  // POST /threads: the new thread's id.
  std::string create_thread(json::object body = {}) {
    const auto r = post(port(), "/threads", body);
    EXPECT_EQ(r.status, 200) << r.describe();
    const auto v = r.json();
    if (!v.is_object() || !v.as_object().contains("thread_id")) return {};
    return std::string(v.at("thread_id").as_string());
  }
  // POST /threads/{id}/runs/wait with `request` as the sample's input.
  reply run_wait(const std::string& thread, const std::string& request_text) {
    return post(port(), "/threads/" + thread + "/runs/wait",
                json::object{{"assistant_id", "family_scheduling"},
                             {"input", json::object{{"request", request_text}}}});
  }
  // POST /threads/{id}/runs[/wait] answering the thread's pause.
  reply resume(const std::string& thread, const json::value& resume_value, const std::string& how = "/wait") {
    return post(port(), "/threads/" + thread + "/runs" + how,
                json::object{{"assistant_id", "family_scheduling"},
                             {"command", json::object{{"resume", resume_value}}}});
  }
  json::value thread(const std::string& id) {
    const auto r = get(port(), "/threads/" + id);
    EXPECT_EQ(r.status, 200) << r.describe();
    return r.json();
  }
  std::string thread_status(const std::string& id) {
    const auto t = thread(id);
    return t.is_object() && t.as_object().contains("status") ? std::string(t.at("status").as_string()) : "(none)";
  }
  // The values a run's wait answered, checked to be JSON.
  static json::object values_of(const reply& r) {
    EXPECT_EQ(r.status, 200) << r.describe();
    const auto v = r.json();
    if (!v.is_object()) {
      ADD_FAILURE() << "not an object: " << r.body;
      return {};
    }
    return v.as_object();
  }

  const switchboard::testing::hang_guard guard_{"a server test"};
  temp_dir dir_{"sb-server-test"};
  std::optional<running_server> server_;
};

}  // namespace switchboard::server::testing
