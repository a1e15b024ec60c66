// `reprise tokenize`: token ids (and pieces) of a text.
#include <cstdio>

#include "cli/command.h"
#include "cli/commands.h"
#include "reprise/engine.h"

namespace reprise::cli {
namespace {

// The piece with control characters escaped, for display.
std::string Printable(const std::string& piece) {
  std::string out;
  for (unsigned char c : piece) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

class TokenizeCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("tokenize", "Print the token ids (and pieces) of a text");
    sub->add_option("-m,--model", model_, "GGUF model file")->required();
    sub->add_option("text", text_, "Text to tokenize")->required();
    sub->add_flag("--ids", ids_only_, "Print only the ids, space separated");
    sub->add_flag("--no-bos", no_special_, "Do not add BOS/EOS");
    sub->add_flag("--parse-special", parse_special_,
                  "Turn special-token texts (e.g. <|im_start|>) into those tokens");
    return sub;
  }

  int Run() override {
    EngineOptions options;
    options.model_path = model_;
    options.context_tokens = 1;
    Result<std::unique_ptr<Engine>> engine = Engine::Create(options);
    if (!engine.ok()) return PrintError("tokenize", engine.error());
    std::vector<TokenPiece> pieces = (*engine)->Tokenize(text_, !no_special_, parse_special_);
    if (ids_only_) {
      for (size_t i = 0; i < pieces.size(); ++i) {
        std::printf("%s%d", i ? " " : "", pieces[i].id);
      }
      std::printf("\n");
    } else {
      for (const TokenPiece& p : pieces) {
        std::printf("%6d  '%s'\n", p.id, Printable(p.text).c_str());
      }
      std::printf("%zu tokens\n", pieces.size());
    }
    return kExitOk;
  }

 private:
  std::string model_, text_;
  bool ids_only_ = false, no_special_ = false, parse_special_ = false;
};

}  // namespace

std::unique_ptr<Command> NewTokenizeCommand() { return std::make_unique<TokenizeCommand>(); }

}  // namespace reprise::cli
