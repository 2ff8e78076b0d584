// temp_dir: a fresh private directory per object, files written inside it,
// everything removed when it goes.
#include <switchboard/testing/temp_dir.hpp>

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using switchboard::testing::temp_dir;

TEST(temp_dir, is_fresh_private_and_removed_with_what_it_holds) {
  fs::path kept;
  {
    const temp_dir a("sb-temp-dir-test");
    const temp_dir b("sb-temp-dir-test");
    kept = a.path();
    EXPECT_NE(a.path(), b.path());
    EXPECT_TRUE(fs::is_directory(a.path()));
    EXPECT_TRUE(fs::is_empty(a.path()));
    EXPECT_EQ(a.path().filename().string().rfind("sb-temp-dir-test-", 0), 0u) << a.path();
    struct stat info {};
    ASSERT_EQ(::stat(a.path().c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0700u);
    const fs::path file = a.write("nested/deeper/note.txt", std::string("line\n\0binary", 12));
    EXPECT_EQ(file, a.path() / "nested" / "deeper" / "note.txt");
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), std::string("line\n\0binary", 12));
  }
  EXPECT_FALSE(fs::exists(kept));
}

}  // namespace
