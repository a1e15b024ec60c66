#include "server/request_body.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <vector>

namespace reprise::server {
namespace {

enum class Coding { kIdentity, kGzip, kDeflate };

HttpError Refuse(int http_status, const std::string& message) {
  return HttpError{http_status, ErrorBody(http_status, message)};
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// The one coding `header` names (a comma-separated list; identity adds nothing).
std::optional<Coding> CodingOf(std::string_view header, std::string* unsupported) {
  std::vector<Coding> codings;
  while (true) {
    const size_t comma = header.find(',');
    const std::string name = Lower(Trim(header.substr(0, comma)));
    if (name == "gzip" || name == "x-gzip") {
      codings.push_back(Coding::kGzip);
    } else if (name == "deflate") {
      codings.push_back(Coding::kDeflate);
    } else if (!name.empty() && name != "identity") {
      *unsupported = "Content-Encoding '" + name + "' is not supported (gzip, deflate)";
      return std::nullopt;
    }
    if (comma == std::string_view::npos) break;
    header.remove_prefix(comma + 1);
  }
  if (codings.size() > 1) {
    *unsupported = "one Content-Encoding at most (gzip or deflate)";
    return std::nullopt;
  }
  return codings.empty() ? Coding::kIdentity : codings[0];
}

// zlib's inflate state, ended however the function that holds it returns.
class Inflater {
 public:
  explicit Inflater(Coding coding) {
    // 15 + 16: a gzip member; 15: a zlib stream, which is what HTTP calls deflate.
    ok_ = inflateInit2(&stream_, coding == Coding::kGzip ? 15 + 16 : 15) == Z_OK;
  }
  ~Inflater() {
    if (ok_) inflateEnd(&stream_);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  bool ok() const { return ok_; }
  z_stream& stream() { return stream_; }

 private:
  z_stream stream_{};
  bool ok_ = false;
};

}  // namespace

std::optional<HttpError> DecodeContentEncoding(std::string_view content_encoding, std::string& body,
                                               int64_t max_bytes) {
  std::string unsupported;
  const std::optional<Coding> coding = CodingOf(content_encoding, &unsupported);
  if (!coding) return Refuse(415, unsupported);
  if (*coding == Coding::kIdentity) return std::nullopt;
  const char* name = *coding == Coding::kGzip ? "gzip" : "deflate";
  Inflater inflater(*coding);
  if (!inflater.ok()) return Refuse(500, "cannot start inflating the body");
  z_stream& z = inflater.stream();
  z.next_in = reinterpret_cast<Bytef*>(body.data());
  z.avail_in = 0;
  size_t fed = 0;
  std::string out;
  constexpr size_t kPiece = 64 * 1024;
  while (true) {
    if (z.avail_in == 0 && fed < body.size()) {  // zlib counts input in 32 bits
      const size_t n = std::min<size_t>(body.size() - fed, 1u << 30);
      z.next_in = reinterpret_cast<Bytef*>(body.data() + fed);
      z.avail_in = static_cast<uInt>(n);
      fed += n;
    }
    const size_t before = out.size();
    out.resize(before + kPiece);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + before);
    z.avail_out = static_cast<uInt>(kPiece);
    const int result = inflate(&z, Z_NO_FLUSH);
    out.resize(before + kPiece - z.avail_out);
    if (static_cast<int64_t>(out.size()) > max_bytes) {
      return Refuse(413, std::string("the body inflates to more than the server's limit of ") +
                             std::to_string(max_bytes) + " bytes (Content-Encoding: " + name + ")");
    }
    if (result == Z_STREAM_END) {
      const bool more = z.avail_in > 0 || fed < body.size();
      if (!more) break;
      // gzip allows members one after the other; deflate data must end here.
      if (*coding != Coding::kGzip || inflateReset(&z) != Z_OK) {
        return Refuse(400, std::string("the body has bytes after its ") + name + " data");
      }
      continue;
    }
    if (result == Z_BUF_ERROR && z.avail_in == 0 && fed == body.size()) {
      return Refuse(400, std::string("the body's ") + name + " data is truncated");
    }
    if (result != Z_OK && result != Z_BUF_ERROR) {
      return Refuse(400, std::string("the body is not valid ") + name + " data" +
                             (z.msg != nullptr ? std::string(": ") + z.msg : std::string()));
    }
  }
  body = std::move(out);
  return std::nullopt;
}

}  // namespace reprise::server
