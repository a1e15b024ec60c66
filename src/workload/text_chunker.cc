#include "workload/text_chunker.h"

#include <cctype>

#include "base/check.h"

namespace reprise::workload {
namespace {

// A unit, or a piece of a unit too long for one chunk, ready to pack.
struct Piece {
  int group = 0;
  std::string text;
  int tokens = 0;  // count_tokens(text)
};

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Words with the whitespace before them: "a b  c" -> "a", " b", "  c".
std::vector<std::string> SplitWords(std::string_view text) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    const size_t start = i;
    while (i < text.size() && IsSpace(text[i])) ++i;
    while (i < text.size() && !IsSpace(text[i])) ++i;
    words.emplace_back(text.substr(start, i - start));
  }
  return words;
}

// UTF-8 characters: a lead byte and the continuation bytes (10xxxxxx) after it.
std::vector<std::string> SplitCharacters(std::string_view text) {
  std::vector<std::string> characters;
  size_t i = 0;
  while (i < text.size()) {
    const size_t start = i++;
    while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
    characters.emplace_back(text.substr(start, i - start));
  }
  return characters;
}

// Splits `text`, which does not fit on its own, into pieces that each fit (`fits` says
// whether a piece fits with its heading and the suffix): greedily by words, and a word
// that does not fit alone by characters. Errors: InvalidArgument when one character does
// not fit.
Status SplitToFit(std::string_view text, const std::function<bool(const std::string&)>& fits,
                  bool by_characters, std::vector<std::string>* out) {
  const std::vector<std::string> atoms = by_characters ? SplitCharacters(text) : SplitWords(text);
  std::string current;
  for (const std::string& atom : atoms) {
    std::string candidate = current + atom;
    if (fits(candidate)) {
      current = std::move(candidate);
      continue;
    }
    if (!current.empty()) out->push_back(std::move(current));
    current.clear();
    if (fits(atom)) {
      current = atom;
    } else if (by_characters) {
      return InvalidArgumentError("chunk limit too small: the character '" + atom +
                                  "' does not fit in a chunk with its heading");
    } else {
      REPRISE_RETURN_IF_ERROR(SplitToFit(atom, fits, /*by_characters=*/true, out));
    }
  }
  if (!current.empty()) out->push_back(std::move(current));
  return Status::Ok();
}

}  // namespace

std::vector<std::string> SplitLines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    end = end == std::string_view::npos ? text.size() : end + 1;
    lines.emplace_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

Result<std::vector<TextChunk>> PackIntoChunks(std::span<const TextGroup> groups,
                                              const ChunkingOptions& options,
                                              const CountTokensFn& count_tokens) {
  if (options.max_tokens < 1) {
    return InvalidArgumentError("chunk limit must be >= 1 token, got " +
                                std::to_string(options.max_tokens));
  }
  const int max_tokens = options.max_tokens;
  const int suffix_tokens = count_tokens(options.suffix);
  std::vector<int> heading_tokens(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) heading_tokens[g] = count_tokens(groups[g].heading);

  // 1. Units as pieces that each fit a chunk alone.
  std::vector<Piece> pieces;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string& heading = groups[g].heading;
    auto fits = [&](const std::string& text) {
      return count_tokens(heading + text + options.suffix) <= max_tokens;
    };
    for (const std::string& unit : groups[g].units) {
      if (unit.empty()) continue;
      std::vector<std::string> parts;
      if (fits(unit)) {
        parts.push_back(unit);
      } else {
        Status status = SplitToFit(unit, fits, /*by_characters=*/false, &parts);
        if (!status.ok()) {
          return InvalidArgumentError(status.message() + " (max " + std::to_string(max_tokens) +
                                      " tokens, heading '" + heading + "')");
        }
      }
      for (std::string& part : parts) {
        const int tokens = count_tokens(part);
        pieces.push_back({static_cast<int>(g), std::move(part), tokens});
      }
    }
  }

  // 2. Greedy packing on summed counts, then an exact check of each chunk.
  auto render = [&](size_t begin, size_t end) {
    std::string text;
    for (size_t i = begin; i < end; ++i) {
      if (i == begin || pieces[i].group != pieces[i - 1].group) {
        text += groups[static_cast<size_t>(pieces[i].group)].heading;
      }
      text += pieces[i].text;
    }
    text += options.suffix;
    return text;
  };
  std::vector<TextChunk> chunks;
  size_t begin = 0;
  while (begin < pieces.size()) {
    size_t end = begin;
    int64_t estimate = suffix_tokens;
    while (end < pieces.size()) {
      const bool new_group = end == begin || pieces[end].group != pieces[end - 1].group;
      if (end > begin && new_group && !options.allow_mixed_groups) break;
      const int64_t extra =
          pieces[end].tokens +
          (new_group ? heading_tokens[static_cast<size_t>(pieces[end].group)] : 0);
      if (end > begin && estimate + extra > max_tokens) break;
      estimate += extra;
      ++end;
    }
    std::string text = render(begin, end);
    while (end - begin > 1 && count_tokens(text) > max_tokens) {
      --end;
      text = render(begin, end);
    }
    REPRISE_DCHECK(count_tokens(text) <= max_tokens);
    chunks.push_back({std::move(text), pieces[begin].group, pieces[end - 1].group});
    begin = end;
  }
  return chunks;
}

}  // namespace reprise::workload
