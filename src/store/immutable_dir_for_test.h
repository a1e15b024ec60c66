// ImmutableDirForTest: makes a folder truly unwritable, even for root (tests run as root here,
// and root ignores permission bits), with `chattr +i`, and undoes it on destruction. For
// tests of read-only stores; is_active() is false where the file system or the user cannot
// do it (the test then skips). Header-only; included by *_test.cc files only.
#pragma once

#include <cstdlib>
#include <string>

namespace reprise::store::test_util {

class ImmutableDirForTest {
 public:
  explicit ImmutableDirForTest(std::string dir) : dir_(std::move(dir)) {
    active_ = std::system(("chattr +i '" + dir_ + "' 2>/dev/null").c_str()) == 0;
  }
  ~ImmutableDirForTest() { Release(); }
  ImmutableDirForTest(const ImmutableDirForTest&) = delete;
  ImmutableDirForTest& operator=(const ImmutableDirForTest&) = delete;

  bool is_active() const { return active_; }
  void Release() {
    if (active_) (void)std::system(("chattr -i '" + dir_ + "' 2>/dev/null").c_str());
    active_ = false;
  }

 private:
  std::string dir_;
  bool active_ = false;
};

}  // namespace reprise::store::test_util
