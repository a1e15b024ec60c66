// Cuts texts into chunks of at most N tokens at natural boundaries (sentences, chat turns,
// lines), without depending on a tokenizer: token counts come from an injected function.
//
// The input is a list of groups (a paragraph, a chat session, a skill text), each a heading
// and a list of units (sentences, turns, lines) whose concatenation is the group's text. A
// chunk is: for each group it touches, the group's heading followed by consecutive units of
// that group, and then `suffix`. So a group cut in two repeats its heading at the top of the
// second chunk ("Title: X\n" for a paragraph, the session date for a chat session), and the
// chunk texts stripped of headings and suffixes give back every unit, in order.
//
// Chunk boundaries fall between units. A unit too long to fit a chunk on its own (with its
// heading and the suffix) is split between words (whitespace stays with the word after it),
// and a word too long even alone is split between UTF-8 characters.
//
// Token counts: the packer adds the counts of the pieces it joins (the heading and each
// unit counted on their own), which is close to, but not always equal to, the count of the
// joined text. Every finished chunk is therefore counted again whole, and pieces are moved
// to the next chunk until the whole count fits: the limit holds exactly for count_tokens.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "workload/request.h"

namespace reprise::workload {

struct TextGroup {
  std::string heading;             // repeated at the top of every chunk part of the group
  std::vector<std::string> units;  // consecutive pieces; boundaries may fall between them
};

struct ChunkingOptions {
  int max_tokens = 512;  // count_tokens(chunk text) <= max_tokens for every chunk
  // When false, every chunk holds units of one group only (a paragraph never shares a chunk
  // with the next one); when true, a chunk may run on into the next group.
  bool allow_mixed_groups = false;
  std::string suffix;  // appended to every chunk, e.g. "\n"
};

struct TextChunk {
  std::string text;
  int first_group = 0;  // indices into the groups span: the chunk holds units of
  int last_group = 0;   // first_group..last_group
};

// Packs the units of `groups` greedily, in order, into as few chunks as the boundaries
// allow. Groups without units yield no chunk. Errors: InvalidArgument when a heading plus
// the suffix leaves no room for a single character within max_tokens.
Result<std::vector<TextChunk>> PackIntoChunks(std::span<const TextGroup> groups,
                                              const ChunkingOptions& options,
                                              const CountTokensFn& count_tokens);

// `text` cut after each '\n' (the newline stays with its line); a last line without one is
// kept too. SplitLines("") is empty.
std::vector<std::string> SplitLines(std::string_view text);

}  // namespace reprise::workload
