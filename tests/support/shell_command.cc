#include "support/shell_command.h"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/temp_dir.h"

namespace reprise::testing_support {

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ShellOutcome RunShell(const std::string& command) {
  TempDir dir;
  const std::string out = dir.path() + "/out", err = dir.path() + "/err";
  const int status = std::system(("(" + command + ") >" + out + " 2>" + err).c_str());
  ShellOutcome o;
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.out = ReadWholeFile(out);
  o.err = ReadWholeFile(err);
  return o;
}

}  // namespace reprise::testing_support
