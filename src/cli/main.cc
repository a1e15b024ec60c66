// reprise: the command-line program. Parses flags with CLI11 and runs one subcommand.
#include <cstdio>
#include <string>

#include "base/logging.h"
#include "cli/command.h"

namespace reprise::cli {

int PrintError(std::string_view command, const Status& status) {
  std::fprintf(stderr, "reprise %.*s: %s\n", static_cast<int>(command.size()), command.data(),
               status.ToString().c_str());
  return kExitError;
}

int Main(int argc, char** argv) {
  CLI::App app("Reprise: on-device LLM serving with cross-request KV cache reuse", "reprise");
  app.require_subcommand(1);
  app.set_version_flag("--version", "reprise 0.1.0");
  std::string log_level = "warning";
  app.add_option("--log-level", log_level, "debug, info, warning, error or silent")
      ->check(CLI::IsMember({"debug", "info", "warning", "error", "silent"}));
  std::vector<std::unique_ptr<Command>> commands = MakeCommands();
  std::vector<std::pair<CLI::App*, Command*>> registered;
  for (auto& command : commands) registered.emplace_back(command->Register(app), command.get());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (log_level == "debug") SetLogLevel(LogLevel::kDebug);
  if (log_level == "info") SetLogLevel(LogLevel::kInfo);
  if (log_level == "error") SetLogLevel(LogLevel::kError);
  if (log_level == "silent") SetLogLevel(LogLevel::kSilent);
  for (auto& [sub, command] : registered) {
    if (sub->parsed()) return command->Run();
  }
  return kExitUsage;
}

}  // namespace reprise::cli

int main(int argc, char** argv) { return reprise::cli::Main(argc, argv); }
