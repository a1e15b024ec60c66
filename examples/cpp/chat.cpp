// Reprise from C++ (reprise/engine.h): one engine, two sessions in different namespaces (two
// apps, or two users), each a conversation of two turns with the reply streamed by a lambda,
// and the ReuseReport of every turn: the second turn reuses the first one's KV as a prefix;
// the other namespace, with the same words, reuses nothing of it.
//
// Usage: chat MODEL.gguf   (e.g. data/demo/stories260K.gguf of the repository)
// Build: examples/README.md.
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "reprise/engine.h"

namespace {

void PrintReport(const std::string& who, int turn, const reprise::GenerateResult& result) {
  const reprise::ReuseReport& reuse = result.reuse;
  std::printf(
      "[%s turn %d] namespace %s, %zu prompt tokens: %d prefix, %d reused, %d recomputed, "
      "%d new; TTFT %.2f ms (matching %.2f, KV %.2f, compute %.2f); chunks %lld from memory, "
      "%lld from flash\n",
      who.c_str(), turn, result.name_space.c_str(), result.prompt_tokens.size(),
      reuse.tokens_prefix, reuse.tokens_reused, reuse.tokens_recomputed, reuse.tokens_new,
      result.ttft_ms, reuse.match_ms, reuse.kv_prep_ms, reuse.compute_ms,
      static_cast<long long>(reuse.chunks_from_memory),
      static_cast<long long>(reuse.chunks_from_flash));
}

// Two turns of one conversation: the second prompt is the first, its reply and a new line.
bool Converse(reprise::Session& session, const std::string& who) {
  reprise::GenerateRequest request;
  request.segments = {
      {"system",
       "Lily and Tom were best friends. They liked to play in the park near the big "
       "tree, where the birds sang every morning and the sun was warm.\n"},
      {"turn", "One day, Lily"},
  };
  request.max_new_tokens = 24;
  for (int turn = 1; turn <= 2; ++turn) {
    std::printf("[%s turn %d] ", who.c_str(), turn);
    reprise::Result<reprise::GenerateResult> result =
        session.Generate(request, [](std::string_view text) {
          std::fwrite(text.data(), 1, text.size(), stdout);
          std::fflush(stdout);
          return true;  // false would stop the generation here
        });
    std::printf("\n");
    if (!result.ok()) {
      std::fprintf(stderr, "chat: %s\n", result.error().ToString().c_str());
      return false;
    }
    PrintReport(who, turn, *result);
    request.segments.push_back({"turn", result->text});
    request.segments.push_back({"turn", "\nThen Tom"});
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
    return 2;
  }
  reprise::EngineOptions options;
  options.model_path = argv[1];
  options.context_tokens = 512;
  options.cache_mb = 64;
  reprise::Result<std::unique_ptr<reprise::Engine>> engine = reprise::Engine::Create(options);
  if (!engine.ok()) {
    std::fprintf(stderr, "chat: %s\n", engine.error().ToString().c_str());
    return 1;
  }
  std::printf("%s\n", (*engine)->Describe().c_str());

  // Sessions share the compiled model; each costs only its KV. Chunks never cross
  // namespaces.
  for (const char* app : {"app-a", "app-b"}) {
    reprise::SessionOptions session_options;
    session_options.name_space = app;
    reprise::Result<std::unique_ptr<reprise::Session>> session =
        (*engine)->OpenSession(session_options);
    if (!session.ok()) {
      std::fprintf(stderr, "chat: %s\n", session.error().ToString().c_str());
      return 1;
    }
    if (!Converse(**session, app)) return 1;
  }
  return 0;
}
