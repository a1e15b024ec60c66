#include "cli/option_checks.h"

#include <cmath>
#include <cstdio>

#include "cli/store_names.h"
#include "engine/store_settings.h"

namespace reprise::cli {
namespace {

std::string Number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

// A validator of doubles: `in_range` decides, `bounds` is the text after "must be ... in".
CLI::Validator FiniteValidator(double min, double max, bool min_inclusive) {
  const std::string bounds = (min_inclusive ? "[" : "(") + Number(min) + ", " + Number(max) + "]";
  CLI::Validator v(
      [=](std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value)) {
          return "'" + input + "' is not a number (must be a finite number in " + bounds + ")";
        }
        if (!std::isfinite(value)) {
          return "must be a finite number in " + bounds + ", not '" + input + "'";
        }
        const bool above_min = min_inclusive ? value >= min : value > min;
        if (!above_min || value > max) {
          return "must be in " + bounds + ", not " + input;
        }
        return "";
      },
      "NUMBER in " + bounds);
  return v;
}

}  // namespace

CLI::Validator FiniteIn(double min, double max) { return FiniteValidator(min, max, true); }

CLI::Validator FiniteAbove(double min, double max) { return FiniteValidator(min, max, false); }

CLI::Validator GuardThreshold() {
  const CLI::Validator number = FiniteIn(0.0, 1e9);
  return CLI::Validator(
      [number](std::string& input) -> std::string {
        if (input == "auto") {
          input = "-1";
          return "";
        }
        std::string copy = input;
        const std::string error = number(copy);
        return error.empty() ? "" : error + " or 'auto'";
      },
      "auto|NUMBER in [0, 1e9]");
}

CLI::Validator IntegerIn(int64_t min, int64_t max) {
  const std::string bounds = "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
  return CLI::Validator(
      [=](std::string& input) -> std::string {
        int64_t value = 0;
        if (!CLI::detail::lexical_cast(input, value)) {
          return "'" + input + "' is not an integer in " + bounds;
        }
        if (value < min || value > max) return "must be in " + bounds + ", not " + input;
        return "";
      },
      "INT in " + bounds);
}

CLI::Validator BudgetMib() { return IntegerIn(1, engine::kMaxBudgetMib); }

CLI::Validator ChunkIdText() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        Result<uint64_t> id = ParseChunkId(input);
        return id.ok() ? "" : id.error().message();
      },
      "HEX");
}

CLI::Validator NewNamespaceName() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        Status s = CheckNamespaceName(input);
        return s.ok() ? "" : s.message();
      },
      "NAME");
}

CLI::Validator NonEmptyFolder() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        return input.empty() ? "a folder name must not be empty (leave the option out instead)"
                             : "";
      },
      "DIR");
}

CLI::Validator ExistingNamespaceName() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        return input.empty() ? "a namespace name must not be empty (omit --namespace for all)" : "";
      },
      "NAME");
}

}  // namespace reprise::cli
