// Runs a shell command for the end-to-end tests and captures what it printed.
#pragma once

#include <string>

namespace reprise::testing_support {

struct ShellOutcome {
  int exit_code = -1;  // -1 when the command did not exit normally (killed by a signal)
  std::string out;
  std::string err;
};

// Runs `command` through /bin/sh with its stdout and stderr sent to temporary files.
ShellOutcome RunShell(const std::string& command);

// The whole content of the file at `path` ("" when it cannot be read).
std::string ReadWholeFile(const std::string& path);

}  // namespace reprise::testing_support
