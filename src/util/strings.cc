#include "util/strings.h"

#include <algorithm>
#include <cctype>

namespace gpupack {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    if (end == std::string_view::npos) {
      out.emplace_back(text.substr(start));
      return out;
    }
    out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
}

std::string_view trim(std::string_view text, std::string_view chars) {
  const size_t b = text.find_first_not_of(chars);
  if (b == std::string_view::npos) return text.substr(text.size());
  return text.substr(b, text.find_last_not_of(chars) - b + 1);
}

namespace {

// Escaped form of text's bytes while it fits in `limit` bytes; *all is set
// when every byte fit.
std::string escape_prefix(std::string_view text, size_t limit, bool* all) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(limit);
  *all = false;
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    char esc[4] = {'\\', 0, 0, 0};
    size_t n = 2;
    switch (c) {
      case '\n':
        esc[1] = 'n';
        break;
      case '\r':
        esc[1] = 'r';
        break;
      case '\t':
        esc[1] = 't';
        break;
      case '\\':
        esc[1] = '\\';
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          esc[1] = 'x', esc[2] = kHex[c >> 4], esc[3] = kHex[c & 15], n = 4;
        } else {
          esc[0] = ch, n = 1;
        }
    }
    if (out.size() + n > limit) return out;
    out.append(esc, n);
  }
  *all = true;
  return out;
}

}  // namespace

std::string excerpt(std::string_view text, size_t max_bytes) {
  max_bytes = std::max<size_t>(max_bytes, 8);
  bool all = false;
  std::string out = escape_prefix(text, max_bytes, &all);
  if (all) return out;
  out = escape_prefix(text, max_bytes - 3, &all);
  // Never end inside a UTF-8 sequence: drop a lead byte whose tail was cut.
  size_t k = out.size();
  while (k > 0 && (static_cast<unsigned char>(out[k - 1]) & 0xC0) == 0x80) --k;
  if (k > 0 && static_cast<unsigned char>(out[k - 1]) >= 0xC0) {
    const unsigned char lead = static_cast<unsigned char>(out[k - 1]);
    const size_t len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    if (out.size() - (k - 1) < len) out.resize(k - 1);
  }
  out += "...";
  return out;
}

std::string excerpt_around(std::string_view text, size_t byte, size_t max_bytes) {
  max_bytes = std::max<size_t>(max_bytes, 16);
  byte = std::min(byte, text.size());
  const size_t back = max_bytes / 2;
  if (byte <= back) return excerpt(text, max_bytes);
  // Start on a UTF-8 character boundary.
  size_t start = byte - back;
  while (start < byte && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
  return "..." + excerpt(text.substr(start), max_bytes - 3);
}

std::string error_text(std::string_view what, size_t max_bytes) {
  const size_t tail = what.find("; last read: ");
  if (tail != std::string_view::npos) what = what.substr(0, tail);
  return excerpt(what, max_bytes);
}

std::string nearest_name(std::string_view word, const std::vector<std::string>& candidates) {
  // Optimal string alignment distance (Damerau-Levenshtein without repeats).
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
    return d[a.size()][b.size()];
  };
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  std::string best;
  size_t best_d = limit + 1;
  for (const std::string& c : candidates) {
    const size_t dist = distance(word, c);
    if (dist < best_d) best_d = dist, best = c;
  }
  return best;
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

}  // namespace gpupack
