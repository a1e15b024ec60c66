// Store folder hygiene: the default cache folder is never a shared /tmp path. (The folder and
// file checks themselves are exercised through ChunkStore in chunk_store_hardening_test.cc.)
#include "store/store_dir.h"

#include <gtest/gtest.h>

#include <fstream>

#include "support/temp_dir.h"

namespace reprise::store {
namespace {

TEST(StoreDirTest, CacheDirFollowsXdgThenHomeThenPasswdThenRuntimeDir) {
  CacheDirSources s{"/x/cache", "/home/u", "/home/p", "/run/user/7"};
  EXPECT_EQ(*ChooseCacheDir(s), "/x/cache/reprise");
  s.xdg_cache_home = "relative/cache";  // ignored, as the XDG spec says
  EXPECT_EQ(*ChooseCacheDir(s), "/home/u/.cache/reprise");
  s.home = "";
  EXPECT_EQ(*ChooseCacheDir(s), "/home/p/.cache/reprise");
  s.passwd_home = "/";
  EXPECT_EQ(*ChooseCacheDir(s), "/run/user/7/reprise");
}

TEST(StoreDirTest, WithoutAnyHomeThereIsNoCacheDirNeverATmpPath) {
  const Result<std::string> none = ChooseCacheDir({});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(none.status().message().find("HOME"), std::string::npos);
}

}  // namespace
}  // namespace reprise::store

namespace reprise::store {
namespace {

TEST(StoreDirTest, DropKvFilePagesAdvisesKvFilesOnly) {
  testing_support::TempDir temp;
  for (const char* name : {"a.rpkv", "b.rpkv", "catalog.db", "c.rpkv.tmp"}) {
    std::ofstream(temp.path() + "/" + name) << "bytes";
  }
  Result<int> advised = DropKvFilePages(temp.path());
  ASSERT_TRUE(advised.ok()) << advised.status().ToString();
  EXPECT_EQ(*advised, 2);
  EXPECT_EQ(DropKvFilePages(temp.path() + "/missing").status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace reprise::store
