// file_cache_store: a cache_store (caching_model.hpp) on disk, one file per
// request hash in one directory, so that answers survive the process: a
// second `switchboard ask --cache DIR` with the same request sends nothing.
//
// Files are private: the directory is created 0700, entries are written
// 0600 to a temporary file and renamed into place (a reader sees the old
// entry or the new one, never half of one). Entries are read as untrusted:
// a header names the format, the key, the creation time, the body's length
// and its SHA-256; the body is the chat_result as JSON. A missing, expired,
// truncated, corrupt, oversized or mislabelled entry is a miss (with a
// warning for the broken ones), never an exception and never another
// request's answer; the next answer for that key replaces it.
//
// Reads and writes are synchronous and small (at most max_entry_bytes): the
// calling coroutine's thread does them. Entries never expire unless ttl is
// set; delete the directory to empty the cache.
//
// Thread-safety: load() and save() may be called concurrently from any
// threads and processes (writes race benignly: the last rename wins, and
// both entries are whole).
#pragma once

#include <switchboard/models/caching_model.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace switchboard::models {

struct file_cache_options {
  std::filesystem::path directory;
  // Entries larger than this are neither written nor read (the raw body of
  // an answer is kept, so this bounds memory too).
  std::size_t max_entry_bytes = 16 * 1024 * 1024;
  std::chrono::seconds ttl{0};  // zero: entries never expire
};

class file_cache_store final : public cache_store {
 public:
  // Creates the directory (0700) when missing. Throws std::runtime_error
  // naming the path when it cannot be created or is not a directory.
  explicit file_cache_store(file_cache_options options);

  std::optional<chat_result> load(const std::string& key) override;
  void save(const std::string& key, const chat_result& result) override;

  // The file of `key` (tests corrupt it); keys are request_hash() values.
  std::filesystem::path path_of(const std::string& key) const;

 private:
  file_cache_options options_;
};

}  // namespace switchboard::models
