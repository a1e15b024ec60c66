#include "cli/commands.h"

namespace reprise::cli {

std::vector<std::unique_ptr<Command>> MakeCommands() {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(NewDemoCommand());
  commands.push_back(NewRunCommand());
  commands.push_back(NewServeCommand());
  commands.push_back(NewTokenizeCommand());
  commands.push_back(NewInspectCommand());
  commands.push_back(NewConvertCommand());
  commands.push_back(NewMakeModelCommand());
  commands.push_back(NewBenchCommand());
  commands.push_back(NewCalibrateCommand());
  commands.push_back(NewCacheCommand());
  return commands;
}

}  // namespace reprise::cli
