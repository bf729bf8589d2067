#include "util/nesting.h"

#include <algorithm>

#include "util/input_error.h"

namespace gpupack {
namespace {

DepthExcess excess_at(std::string_view text, size_t byte) {
  return {byte,
          1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(byte), '\n'))};
}

bool space_tab_or_cr(char c) { return c == ' ' || c == '\t' || c == '\r'; }

[[noreturn]] void too_deep(std::string_view source, std::string_view what, const DepthExcess& e, int max_depth) {
  throw InputError(std::string(source) + ":" + std::to_string(e.line) + ": " + std::string(what) +
                   " nested more than " + std::to_string(max_depth) + " levels deep (at byte " +
                   std::to_string(e.byte) + "); refused before parsing");
}

}  // namespace

std::optional<DepthExcess> find_json_depth_over(std::string_view text, int max_depth) {
  int depth = 0;
  const size_t n = text.size();
  for (size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '"') {
      // Skip the string; an unterminated one is the parser's to report.
      for (++i; i < n && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return excess_at(text, i);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

std::optional<DepthExcess> find_yaml_depth_over(std::string_view text, int max_depth) {
  const size_t n = text.size();
  int flow = 0;                 // open [ and { collections
  int line_blocks = 0;          // "- " and "? " indicators opening the current line
  bool only_indicators = true;  // nothing but such indicators so far on this line
  size_t line_indent = 0;
  char prev = '\n';  // last token character; '\n' at the start of a block-context line
  auto token_start = [&] {
    if (flow > 0) return prev == '[' || prev == '{' || prev == ',' || prev == ':' || prev == '?';
    return prev == '\n' || prev == ':' || prev == '-' || prev == '?';
  };
  auto to_line_end = [&](size_t i) {
    while (i < n && text[i] != '\n') ++i;
    return i;  // at the '\n' or n
  };
  size_t i = 0;
  // Leading indentation of the first line.
  while (i < n && text[i] == ' ') ++i;
  line_indent = i;
  while (i < n) {
    const char c = text[i];
    if (c == '\n') {
      ++i;
      const size_t start = i;
      while (i < n && text[i] == ' ') ++i;
      if (flow == 0) {
        prev = '\n';
        line_blocks = 0;
        only_indicators = true;
        line_indent = i - start;
      }
      continue;
    }
    if (space_tab_or_cr(c)) {
      ++i;
      continue;
    }
    if (c == '#' && (i == 0 || space_tab_or_cr(text[i - 1]) || text[i - 1] == '\n')) {
      i = to_line_end(i);
      continue;
    }
    const bool at_token = token_start();
    if ((c == '"' || c == '\'') && at_token) {
      for (++i; i < n; ++i) {
        if (c == '"' && text[i] == '\\') {
          ++i;
        } else if (text[i] == c) {
          if (c == '\'' && i + 1 < n && text[i + 1] == '\'') {
            ++i;
          } else {
            break;
          }
        }
      }
      ++i;
      prev = '"';
      only_indicators = false;
      continue;
    }
    if ((c == '&' || c == '!') && at_token) {  // anchor or tag: the node follows
      while (i < n && !space_tab_or_cr(text[i]) && text[i] != '\n' &&
             !(flow > 0 && (text[i] == ',' || text[i] == ']' || text[i] == '}')))
        ++i;
      continue;
    }
    if ((c == '[' || c == '{') && (flow > 0 || at_token)) {
      ++flow;
      if (flow + line_blocks > max_depth) return excess_at(text, i);
      prev = c;
      only_indicators = false;
      ++i;
      continue;
    }
    if ((c == ']' || c == '}') && flow > 0) {
      --flow;
      prev = c;
      ++i;
      continue;
    }
    const bool spaced = i + 1 >= n || space_tab_or_cr(text[i + 1]) || text[i + 1] == '\n';
    if (flow == 0 && (c == '-' || c == '?') && spaced && only_indicators) {
      if (++line_blocks > max_depth) return excess_at(text, i);
      prev = c;
      ++i;
      continue;
    }
    if (flow == 0 && (c == '|' || c == '>') && at_token) {
      // Block scalar: skip its header and every following line that is space_tab_or_cr
      // or indented deeper than the line that introduced it.
      i = to_line_end(i);
      while (i < n) {
        size_t j = i + 1, k = 0;
        while (j + k < n && text[j + k] == ' ') ++k;
        const bool empty_line = j + k >= n || text[j + k] == '\n' || text[j + k] == '\r';
        if (!empty_line && k <= line_indent) break;
        i = to_line_end(j + k);
      }
      continue;  // at the '\n' that ends the scalar (or n)
    }
    prev = c;
    only_indicators = false;
    ++i;
  }
  return std::nullopt;
}

void check_json_depth(std::string_view text, std::string_view source, int max_depth) {
  if (auto e = find_json_depth_over(text, max_depth)) too_deep(source, "JSON", *e, max_depth);
}

void check_yaml_depth(std::string_view text, std::string_view source, int max_depth) {
  if (auto e = find_yaml_depth_over(text, max_depth)) too_deep(source, "YAML", *e, max_depth);
}

}  // namespace gpupack
