// The chat page served at GET / : one self-contained HTML file (src/server/web/chat.html, no
// build step) that talks to /v1/chat/completions with streaming and shows, under each reply,
// its time to first token and where the prompt's KV came from. Embedded at build time.
#pragma once

#include <string_view>

namespace reprise::server {

std::string_view ChatPageHtml();

}  // namespace reprise::server
