// PosixFileSystem (modes, durability calls, error mapping) and FaultInjectingFileSystem (each
// fault, deterministically).
#include "store/file_system.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include "store/fault_injecting_file_system.h"
#include "support/temp_dir.h"

namespace reprise::store {
namespace {

std::vector<uint8_t> Bytes(std::string_view text) { return {text.begin(), text.end()}; }

mode_t ModeOf(const std::string& path) {
  struct stat info;
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 0777;
}

TEST(PosixFileSystemTest, WritesReadsListsRenamesRemoves) {
  testing_support::TempDir temp;
  auto fs = NewPosixFileSystem();
  const std::string dir = temp.path() + "/a/b/c";
  ASSERT_TRUE(fs->CreateDir(dir).ok());
  ASSERT_TRUE(fs->CreateDir(dir + "/").ok());  // exists: ok
  EXPECT_EQ(ModeOf(temp.path() + "/a"), 0700u);
  EXPECT_EQ(ModeOf(dir), 0700u);

  ASSERT_TRUE(fs->WriteFile(dir + "/x.tmp", Bytes("hello"), /*sync=*/true).ok());
  EXPECT_EQ(ModeOf(dir + "/x.tmp"), 0600u);
  ASSERT_TRUE(fs->Rename(dir + "/x.tmp", dir + "/x").ok());
  ASSERT_TRUE(fs->SyncDir(dir).ok());
  auto read = fs->ReadFile(dir + "/x");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, Bytes("hello"));
  auto size = fs->FileSize(dir + "/x");
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 5u);

  // Rename replaces; an empty file reads back empty.
  ASSERT_TRUE(fs->WriteFile(dir + "/y", {}, /*sync=*/false).ok());
  ASSERT_TRUE(fs->Rename(dir + "/y", dir + "/x").ok());
  EXPECT_TRUE(fs->ReadFile(dir + "/x")->empty());

  ASSERT_TRUE(fs->CreateDir(dir + "/sub").ok());
  auto names = fs->ListDir(dir);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"x"});  // folders are not listed

  ASSERT_TRUE(fs->Remove(dir + "/x").ok());
  EXPECT_TRUE(fs->ListDir(dir)->empty());
}

TEST(PosixFileSystemTest, MapsErrorsAndNamesThePath) {
  testing_support::TempDir temp;
  auto fs = NewPosixFileSystem();
  const std::string missing = temp.path() + "/missing";
  const Status read = fs->ReadFile(missing).status();
  EXPECT_EQ(read.code(), StatusCode::kNotFound);
  EXPECT_NE(read.message().find(missing), std::string::npos) << read.message();
  EXPECT_EQ(fs->FileSize(missing).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(fs->Remove(missing).code(), StatusCode::kNotFound);
  EXPECT_EQ(fs->ListDir(missing).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(fs->Rename(missing, missing + "2").code(), StatusCode::kNotFound);
  EXPECT_EQ(fs->WriteFile(missing + "/f", Bytes("x"), false).code(), StatusCode::kNotFound);

  // A file where a folder should be.
  ASSERT_TRUE(fs->WriteFile(temp.path() + "/file", Bytes("x"), false).ok());
  EXPECT_EQ(fs->CreateDir(temp.path() + "/file").code(), StatusCode::kIoError);
  EXPECT_FALSE(fs->CreateDir(temp.path() + "/file/sub").ok());

  // /dev/full, where the machine has it, fails every write with ENOSPC: the disk-full mapping.
  // (Only a real character device: WriteFile would otherwise create a file of that name.)
  struct stat info;
  if (::stat("/dev/full", &info) == 0 && S_ISCHR(info.st_mode)) {
    const Status full = fs->WriteFile("/dev/full", Bytes("data"), /*sync=*/false);
    EXPECT_EQ(full.code(), StatusCode::kResourceExhausted) << full.ToString();
    EXPECT_NE(full.message().find("/dev/full"), std::string::npos);
    EXPECT_EQ(::stat("/dev/full", &info), 0);  // still there: failed writes unlink files only
  }
}

TEST(FaultInjectingFileSystemTest, FailsTheNthWriteWithDiskFull) {
  testing_support::TempDir temp;
  auto base = NewPosixFileSystem();
  FaultInjectingFileSystem fs(base.get());
  fs.FailNthWrite(2);
  EXPECT_TRUE(fs.WriteFile(temp.path() + "/a", Bytes("a"), true).ok());
  EXPECT_EQ(fs.WriteFile(temp.path() + "/b", Bytes("b"), true).code(),
            StatusCode::kResourceExhausted);
  EXPECT_TRUE(fs.WriteFile(temp.path() + "/c", Bytes("c"), true).ok());
  EXPECT_EQ(base->FileSize(temp.path() + "/b").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(fs.num_writes(), 3);
}

TEST(FaultInjectingFileSystemTest, FailsAllWritesWhileFull) {
  testing_support::TempDir temp;
  auto base = NewPosixFileSystem();
  FaultInjectingFileSystem fs(base.get());
  ASSERT_TRUE(fs.WriteFile(temp.path() + "/a", Bytes("old"), true).ok());
  fs.FailAllWrites(true);
  EXPECT_EQ(fs.WriteFile(temp.path() + "/a", Bytes("new"), true).code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(*base->ReadFile(temp.path() + "/a"), Bytes("old"));
  fs.FailAllWrites(false);
  EXPECT_TRUE(fs.WriteFile(temp.path() + "/a", Bytes("new"), true).ok());
}

TEST(FaultInjectingFileSystemTest, ReadOnlyFolderRejectsMutationsOnly) {
  testing_support::TempDir temp;
  auto base = NewPosixFileSystem();
  FaultInjectingFileSystem fs(base.get());
  const std::string dir = temp.path() + "/ro";
  ASSERT_TRUE(fs.CreateDir(dir).ok());
  ASSERT_TRUE(fs.WriteFile(dir + "/a", Bytes("a"), true).ok());
  fs.SetReadOnlyDir(dir + "/");
  EXPECT_EQ(fs.WriteFile(dir + "/b", Bytes("b"), true).code(), StatusCode::kUnavailable);
  EXPECT_EQ(fs.Rename(dir + "/a", dir + "/c").code(), StatusCode::kUnavailable);
  EXPECT_EQ(fs.Rename(temp.path() + "/x", dir + "/c").code(), StatusCode::kUnavailable);
  EXPECT_EQ(fs.Remove(dir + "/a").code(), StatusCode::kUnavailable);
  EXPECT_EQ(fs.CreateDir(dir + "/sub").code(), StatusCode::kUnavailable);
  EXPECT_EQ(fs.SyncDir(dir).code(), StatusCode::kUnavailable);
  EXPECT_EQ(*fs.ReadFile(dir + "/a"), Bytes("a"));
  EXPECT_EQ(*fs.ListDir(dir), std::vector<std::string>{"a"});
  // A sibling whose name starts the same is not inside the folder.
  EXPECT_TRUE(fs.WriteFile(temp.path() + "/ro2", Bytes("x"), true).ok());
  fs.SetReadOnlyDir("");
  EXPECT_TRUE(fs.WriteFile(dir + "/b", Bytes("b"), true).ok());
}

TEST(FaultInjectingFileSystemTest, TornWriteLandsAPrefixThenCrashes) {
  testing_support::TempDir temp;
  auto base = NewPosixFileSystem();
  FaultInjectingFileSystem fs(base.get());
  fs.TearNthWrite(1, 3);
  const Status torn = fs.WriteFile(temp.path() + "/a", Bytes("abcdef"), true);
  EXPECT_EQ(torn.code(), StatusCode::kIoError);
  EXPECT_TRUE(fs.crashed());
  EXPECT_EQ(*base->ReadFile(temp.path() + "/a"), Bytes("abc"));
  EXPECT_FALSE(fs.Rename(temp.path() + "/a", temp.path() + "/b").ok());
  EXPECT_FALSE(fs.ReadFile(temp.path() + "/a").ok());
  EXPECT_FALSE(fs.ListDir(temp.path()).ok());
  EXPECT_EQ(*base->ListDir(temp.path()), std::vector<std::string>{"a"});
}

TEST(FaultInjectingFileSystemTest, CrashesAfterACountOfMutatingOps) {
  testing_support::TempDir temp;
  auto base = NewPosixFileSystem();
  FaultInjectingFileSystem fs(base.get());
  fs.CrashAfterOps(2);
  EXPECT_TRUE(fs.WriteFile(temp.path() + "/a", Bytes("a"), true).ok());
  EXPECT_TRUE(fs.ReadFile(temp.path() + "/a").ok());  // reads do not count
  EXPECT_TRUE(fs.Rename(temp.path() + "/a", temp.path() + "/b").ok());
  EXPECT_FALSE(fs.crashed());
  EXPECT_EQ(fs.SyncDir(temp.path()).code(), StatusCode::kIoError);
  EXPECT_TRUE(fs.crashed());
  EXPECT_FALSE(fs.WriteFile(temp.path() + "/c", Bytes("c"), true).ok());
  EXPECT_EQ(*base->ListDir(temp.path()), std::vector<std::string>{"b"});
  EXPECT_EQ(fs.num_mutating_ops(), 3);
}

}  // namespace
}  // namespace reprise::store
