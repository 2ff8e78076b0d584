// file_cache_store: answers kept on disk survive the process, are private,
// written whole, and read as untrusted: a broken entry is a miss, never a
// crash or another request's answer.
#include <switchboard/models/file_cache_store.hpp>

#include "model_test_support.hpp"

#include <switchboard/models/caching_model.hpp>
#include <switchboard/models/request_hash.hpp>
#include <switchboard/models/scripted_model.hpp>

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace switchboard::models {
namespace {

namespace fs = std::filesystem;
using test::run;
using test::user_request;

chat_result sample_answer() {
  chat_result r;
  r.text = R"({"x": 0.9})";
  r.finish_reason = "stop";
  r.stop = stop_reason::complete;
  r.reasoning = "thought\nabout it";
  r.usage = {11, 7};
  r.model = "gpt-test";
  r.latency = std::chrono::microseconds(1234);
  r.raw_body = R"({"choices": []})";
  return r;
}

std::string read_all(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_all(const fs::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
}

mode_t mode_of(const fs::path& p) {
  struct stat info {};
  ::stat(p.c_str(), &info);
  return info.st_mode & 0777;
}

class FileCacheStore : public ::testing::Test {
 protected:
  test::temp_dir tmp;
  fs::path dir = tmp.path() / "cache";
  std::string key = request_hash(user_request("What is x?"));
};

TEST_F(FileCacheStore, an_entry_reads_back_equal_and_is_private) {
  file_cache_store store({dir});
  EXPECT_EQ(mode_of(dir), 0700u);
  EXPECT_FALSE(store.load(key));
  store.save(key, sample_answer());
  EXPECT_EQ(mode_of(store.path_of(key)), 0600u);
  const auto back = store.load(key);
  ASSERT_TRUE(back);
  const chat_result expected = sample_answer();
  EXPECT_EQ(back->text, expected.text);
  EXPECT_EQ(back->finish_reason, expected.finish_reason);
  EXPECT_EQ(back->stop, expected.stop);
  EXPECT_EQ(back->reasoning, expected.reasoning);
  EXPECT_EQ(back->usage.total(), 18);
  EXPECT_EQ(back->model, expected.model);
  EXPECT_EQ(back->latency, expected.latency);
  EXPECT_EQ(back->raw_body, expected.raw_body);
  // No temporary file is left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST_F(FileCacheStore, a_changed_byte_a_truncation_or_garbage_is_a_miss) {
  file_cache_store store({dir});
  store.save(key, sample_answer());
  const fs::path file = store.path_of(key);
  const std::string good = read_all(file);

  std::string flipped = good;
  flipped[flipped.find("0.9")] = '7';  // still valid JSON: only the checksum tells
  write_all(file, flipped);
  EXPECT_FALSE(store.load(key));

  write_all(file, good.substr(0, good.size() - 5));
  EXPECT_FALSE(store.load(key));

  write_all(file, good.substr(0, 20));
  EXPECT_FALSE(store.load(key));

  write_all(file, "");
  EXPECT_FALSE(store.load(key));

  write_all(file, std::string(5000, '\x1b'));
  EXPECT_FALSE(store.load(key));

  write_all(file, good);
  EXPECT_TRUE(store.load(key));
}

TEST_F(FileCacheStore, another_requests_entry_under_this_name_is_a_miss) {
  file_cache_store store({dir});
  const std::string other = request_hash(user_request("something else"));
  store.save(other, sample_answer());
  fs::rename(store.path_of(other), store.path_of(key));
  EXPECT_FALSE(store.load(key));
}

TEST_F(FileCacheStore, keys_that_are_not_hashes_touch_no_file) {
  file_cache_store store({dir});
  store.save("../escape", sample_answer());
  EXPECT_FALSE(fs::exists(tmp.path() / "escape.entry"));
  EXPECT_FALSE(store.load("../escape"));
}

TEST_F(FileCacheStore, entries_over_the_size_limit_are_neither_written_nor_read) {
  file_cache_store small({dir, 64});
  small.save(key, sample_answer());
  EXPECT_FALSE(fs::exists(small.path_of(key)));
  file_cache_store large({dir});
  large.save(key, sample_answer());
  EXPECT_FALSE(small.load(key));
  EXPECT_TRUE(large.load(key));
}

TEST_F(FileCacheStore, a_path_that_is_a_file_is_refused) {
  write_all(tmp.path() / "plain", "x");
  EXPECT_THROW(file_cache_store({tmp.path() / "plain"}), std::runtime_error);
}

// A second caching_model (a later process) answers from the disk without
// asking its model; a corrupt entry sends the request and is replaced.
TEST_F(FileCacheStore, a_caching_model_with_the_store_answers_from_disk_in_a_new_instance) {
  {
    scripted_model first;
    first.push_text(R"({"x": 1})");
    caching_options options;
    options.store = std::make_shared<file_cache_store>(file_cache_options{dir});
    caching_model cache(first, options);
    EXPECT_EQ(run(cache.complete(user_request("What is x?"))).text, R"({"x": 1})");
    EXPECT_EQ(first.calls(), 1u);
  }
  scripted_model second;  // empty script: any call fails
  caching_options options;
  options.store = std::make_shared<file_cache_store>(file_cache_options{dir});
  caching_model cache(second, options);
  EXPECT_EQ(run(cache.complete(user_request("What is x?"))).text, R"({"x": 1})");
  EXPECT_EQ(second.calls(), 0u);
  const auto stats = cache.statistics();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.store_hits, 1u);
  EXPECT_EQ(stats.misses, 0u);

  write_all(file_cache_store({dir}).path_of(key), "switchboard.cache_entry/1 garbage");
  scripted_model third;
  third.push_text(R"({"x": 3})");
  caching_model fresh(third, options);
  EXPECT_EQ(run(fresh.complete(user_request("What is x?"))).text, R"({"x": 3})");
  EXPECT_EQ(third.calls(), 1u);
  EXPECT_EQ(file_cache_store({dir}).load(key)->text, R"({"x": 3})");
}

}  // namespace
}  // namespace switchboard::models
