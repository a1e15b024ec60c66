// Factories of the subcommands, one per command_*.cc file.
#pragma once

#include <memory>

#include "cli/command.h"

namespace reprise::cli {

std::unique_ptr<Command> NewInspectCommand();
std::unique_ptr<Command> NewTokenizeCommand();
std::unique_ptr<Command> NewRunCommand();
std::unique_ptr<Command> NewServeCommand();
std::unique_ptr<Command> NewMakeModelCommand();
std::unique_ptr<Command> NewConvertCommand();
std::unique_ptr<Command> NewDemoCommand();
std::unique_ptr<Command> NewBenchCommand();
std::unique_ptr<Command> NewCalibrateCommand();
std::unique_ptr<Command> NewCacheCommand();

}  // namespace reprise::cli
