// Small string helpers shared by every layer (std only).
//
// Contract: pure functions, no allocation beyond their results.
// iequals() compares ASCII case-insensitively; split() keeps empty fields
// ("a,,b" -> {"a", "", "b"}; "" -> {""}).
// excerpt() is how an error message quotes input: at most `max_bytes` bytes
// of output (a max_bytes below 8 counts as 8), whatever the input length. Control bytes,
// DEL and backslash are escaped (\n, \t, \x01, \\), other bytes
// are kept (UTF-8 passes through and is never cut inside a character); a
// text that does not fit is cut and ends in "...". O(max_bytes) time.
// excerpt_around() quotes the input near byte offset `byte` (an error's
// position): starts up to max_bytes / 2 bytes before it, "..." first when it
// does not start at the beginning of `text`.
// error_text() bounds a library's error message (which may quote a whole
// token of the input): it drops any "; last read: ..." tail and keeps at most
// max_bytes bytes, as excerpt() does.
// trim() drops the characters of `chars` (by default ASCII white space:
// space, \t, \n, \r, \f, \v) from both ends; the view points into `text`.
// nearest_name() is the candidate closest to `word` by edit distance
// (insert, delete, replace, or swap of neighbours, each 1), or "" when none
// is within max(2, size / 3) edits; ties go to the earlier candidate.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpupack {

bool iequals(std::string_view a, std::string_view b);
std::vector<std::string> split(std::string_view text, char sep);
std::string_view trim(std::string_view text, std::string_view chars = " \t\n\r\f\v");
std::string excerpt(std::string_view text, size_t max_bytes = 80);
std::string excerpt_around(std::string_view text, size_t byte, size_t max_bytes = 80);
std::string error_text(std::string_view what, size_t max_bytes = 200);
std::string nearest_name(std::string_view word, const std::vector<std::string>& candidates);
// Text for HTML or SVG content and attribute values: & < > " escaped.
std::string html_escape(std::string_view text);

}  // namespace gpupack
