#include "workload/request.h"

namespace reprise::workload {

bool IsContextRole(std::string_view role) {
  return role == kRoleDocument || role == kRoleTurn || role == kRoleSkill;
}

std::string PromptText(const Request& request) {
  std::string text;
  for (const Segment& segment : request.segments) text += segment.text;
  return text;
}

int64_t CountPromptTokens(const Request& request, const CountTokensFn& count_tokens) {
  int64_t total = 0;
  for (const Segment& segment : request.segments) total += count_tokens(segment.text);
  return total;
}

}  // namespace reprise::workload
