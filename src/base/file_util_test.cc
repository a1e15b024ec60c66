#include "base/file_util.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/mapped_file.h"
#include "support/temp_dir.h"

namespace reprise {
namespace {

TEST(FileUtilTest, WriteAtomicallyThenReadAndMap) {
  testing_support::TempDir dir;
  const std::string path = dir.path() + "/a/b/file.txt";
  ASSERT_TRUE(CreateDirectories(dir.path() + "/a/b").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "hello").ok());
  Result<std::string> read = ReadFileToString(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, "hello");
  Result<MappedFile> mapped = MappedFile::Open(path);
  ASSERT_TRUE(mapped.ok());
  EXPECT_EQ(mapped->size_bytes(), 5u);
  EXPECT_EQ(mapped->data()[4], 'o');
  // Replacing leaves no temporary behind.
  ASSERT_TRUE(WriteFileAtomically(path, "bye").ok());
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path() + "/a/b")) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST(FileUtilTest, MissingFileIsNotFound) {
  EXPECT_EQ(ReadFileToString("/nonexistent/x").error().code(), StatusCode::kNotFound);
  EXPECT_EQ(MappedFile::Open("/nonexistent/x").error().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace reprise
