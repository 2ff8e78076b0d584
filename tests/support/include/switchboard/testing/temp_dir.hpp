// A private temporary directory for one test: created fresh and unique
// under the system's temporary directory (mkdtemp: mode 0700), removed
// with everything in it when the object is destroyed. Header-only; the one
// temporary-directory helper of the test suites.
//
// Thread-safety: path() may be read from any thread; write() from one
// thread at a time per file.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace switchboard::testing {

class temp_dir {
 public:
  // `prefix` starts the directory's name, to tell a suite's leftovers apart.
  explicit temp_dir(std::string_view prefix = "switchboard-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("cannot create a temporary directory from " + pattern);
    }
    path_ = pattern;
  }
  ~temp_dir() {
    std::error_code ignored;  // a test that failed half-way must not throw from here
    std::filesystem::remove_all(path_, ignored);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }

  // Writes `text` to `relative` inside the directory, creating the parent
  // directories it needs; returns the file's path.
  std::filesystem::path write(const std::filesystem::path& relative, std::string_view text) const {
    const std::filesystem::path file = path_ / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out.flush()) throw std::runtime_error("cannot write " + file.string());
    return file;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace switchboard::testing
