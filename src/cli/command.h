// The shape of a `reprise` subcommand: it registers its flags on a CLI11 subcommand and runs
// when selected, returning the process exit code. Errors go to stderr (see PrintError).
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace reprise::cli {

// Exit codes of the program.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;       // the operation failed (bad file, I/O, ...)
inline constexpr int kExitUsage = 2;       // bad command line

class Command {
 public:
  virtual ~Command() = default;
  // Adds the subcommand and its options to `app`; the returned subcommand belongs to `app`.
  virtual CLI::App* Register(CLI::App& app) = 0;
  virtual int Run() = 0;
};

// Prints "reprise <command>: <status>" to stderr and returns kExitError.
int PrintError(std::string_view command, const Status& status);

// Every subcommand of the program, in --help order.
std::vector<std::unique_ptr<Command>> MakeCommands();

}  // namespace reprise::cli
