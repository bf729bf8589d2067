#include "alloc/alloc_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <stdexcept>
#include <vector>

#include "util/strings.h"

namespace gpupack {
namespace {

[[noreturn]] void bad(std::string_view key, std::string_view value, std::string_view why) {
  throw std::invalid_argument(fmt::format("alloc conf: key '{}' value '{}': {}", excerpt(key), excerpt(value), why));
}

std::uint64_t parse_uint(std::string_view key, std::string_view value) {
  std::uint64_t out = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc() || ptr != value.data() + value.size() || value.empty()) {
    bad(key, value, "expected a non-negative integer");
  }
  return out;
}

double parse_double(std::string_view key, std::string_view value) {
  std::string s(value);
  std::size_t used = 0;
  double out = 0;
  try {
    out = std::stod(s, &used);
  } catch (const std::exception&) {
    bad(key, value, "expected a number");
  }
  if (used != s.size()) bad(key, value, "expected a number");
  return out;
}

bool parse_bool(std::string_view key, std::string_view value) {
  if (value == "True") return true;
  if (value == "False") return false;
  bad(key, value, "expected exactly True or False");
}

std::uint32_t parse_division(std::string_view key, std::string_view value) {
  std::uint64_t d = parse_uint(key, value);
  if (d != 0 && !std::has_single_bit(d)) bad(key, value, "divisions must be a power of two");
  if (d > (1u << 20)) bad(key, value, "divisions too large");
  return static_cast<std::uint32_t>(d);
}

// "[256:1,512:2,>:8]" or a single power of two.
void parse_roundup(std::string_view value, std::array<std::uint32_t, 16>& out) {
  constexpr std::string_view key = "roundup_power2_divisions";
  out.fill(0);
  if (value.empty()) bad(key, value, "empty value");
  if (value.front() != '[') {
    out.fill(parse_division(key, value));
    return;
  }
  if (value.back() != ']') bad(key, value, "missing closing ']'");
  std::string_view body = value.substr(1, value.size() - 2);
  bool first = true;
  std::size_t last_index = 0;
  bool any = false;
  while (!body.empty()) {
    std::size_t comma = body.find(',');
    std::string_view item = body.substr(0, comma);
    body = comma == std::string_view::npos ? std::string_view{} : body.substr(comma + 1);
    std::size_t colon = item.find(':');
    if (colon == std::string_view::npos) bad(key, item, "expected 'MB:divisions' or '>:divisions'");
    std::string_view bound = item.substr(0, colon);
    std::uint32_t div = parse_division(key, item.substr(colon + 1));
    if (bound == ">") {
      // Fill every interval after the last listed boundary.
      std::size_t from = any ? last_index + 1 : 0;
      for (std::size_t i = from; i < out.size(); ++i) out[i] = div;
      any = true;
      last_index = out.size() - 1;
      continue;
    }
    std::uint64_t mb = parse_uint(key, bound);
    if (!std::has_single_bit(mb)) bad(key, bound, "interval boundaries must be powers of two (MB)");
    std::size_t index = static_cast<std::size_t>(std::max<int>(0, std::bit_width(mb) - 1));
    index = std::min<std::size_t>(index, out.size() - 1);
    if (any && index <= last_index && !first) bad(key, bound, "boundaries must be increasing");
    if (first) {
      for (std::size_t i = 0; i <= index; ++i) out[i] = div;  // first entry fills lower ranges
    } else {
      out[index] = div;
    }
    first = false;
    any = true;
    last_index = index;
  }
  if (!any) bad(key, value, "empty list");
}

}  // namespace

AllocConfig parse_alloc_conf(std::string_view text) {
  AllocConfig cfg;
  cfg.text = std::string(text);
  std::string s;
  s.reserve(text.size());
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) s.push_back(c);
  }
  // Split on commas that are not inside brackets.
  std::vector<std::string> items;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      items.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (depth != 0) throw std::invalid_argument(fmt::format("alloc conf '{}': unbalanced brackets", excerpt(text)));
  if (!cur.empty() || !items.empty()) items.push_back(cur);

  for (const std::string& item : items) {
    if (item.empty()) throw std::invalid_argument(fmt::format("alloc conf '{}': empty entry", excerpt(text)));
    std::size_t colon = item.find(':');
    if (colon == std::string::npos) {
      throw std::invalid_argument(
          fmt::format("alloc conf '{}': entry '{}' is not key:value", excerpt(text), excerpt(item)));
    }
    std::string_view key = std::string_view(item).substr(0, colon);
    std::string_view value = std::string_view(item).substr(colon + 1);
    if (key == "max_split_size_mb") {
      std::uint64_t mb = parse_uint(key, value);
      if (mb < 20) bad(key, value, "must be >= 20");
      cfg.max_split_size_bytes = mb * kMiB;
    } else if (key == "max_non_split_rounding_mb") {
      std::uint64_t mb = parse_uint(key, value);
      if (mb < 20) bad(key, value, "must be >= 20");
      cfg.max_non_split_rounding_bytes = mb * kMiB;
    } else if (key == "roundup_power2_divisions") {
      parse_roundup(value, cfg.roundup_power2_divisions);
    } else if (key == "garbage_collection_threshold") {
      double t = parse_double(key, value);
      if (!(t > 0.0 && t < 1.0)) bad(key, value, "must be strictly between 0 and 1");
      cfg.garbage_collection_threshold = t;
    } else if (key == "expandable_segments") {
      cfg.expandable_segments = parse_bool(key, value);
    } else if (key == "per_process_memory_fraction") {
      double f = parse_double(key, value);
      if (!(f > 0.0 && f <= 1.0)) bad(key, value, "must be in (0, 1]");
      cfg.per_process_memory_fraction = f;
    } else if (key == "large_segment_size_mb") {
      std::uint64_t mb = parse_uint(key, value);
      if (mb == 0 || mb % 2 != 0) bad(key, value, "must be a positive multiple of 2");
      cfg.large_segment_size_bytes = mb * kMiB;
    } else if (key == "backend") {
      if (value != "native" && value != "cudaMallocAsync") bad(key, value, "expected native or cudaMallocAsync");
      if (value != "native") bad(key, value, "only the native backend is modelled");
      cfg.backend = std::string(value);
    } else if (key == "release_lock_on_cudamalloc" || key == "pinned_use_cuda_host_register" ||
               key == "throw_on_cudamalloc_oom" || key == "graph_capture_record_stream_reuse") {
      parse_bool(key, value);  // validated, no effect on the model
    } else if (key == "pinned_num_register_threads") {
      std::uint64_t n = parse_uint(key, value);
      if (n == 0 || n > 128 || !std::has_single_bit(n)) bad(key, value, "must be a power of two <= 128");
    } else {
      bad(key, value, "unknown key");
    }
  }
  return cfg;
}

std::uint64_t parse_bytes(std::string_view text, std::string_view what) {
  auto fail = [&] {
    throw std::invalid_argument(
        fmt::format("{}: '{}' is not a byte count (examples: 81920, 512MiB, 80GiB, 2GB)", what, excerpt(text)));
  };
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) fail();
  double number = 0;
  try {
    std::size_t used = 0;
    number = std::stod(std::string(text.substr(0, i)), &used);
    if (used != i) fail();
  } catch (const std::invalid_argument&) {
    fail();
  }
  std::string_view unit = text.substr(i);
  double mult = 1;
  if (unit.empty() || unit == "B")
    mult = 1;
  else if (unit == "KiB")
    mult = 1024.0;
  else if (unit == "MiB")
    mult = static_cast<double>(kMiB);
  else if (unit == "GiB")
    mult = static_cast<double>(kGiB);
  else if (unit == "TiB")
    mult = static_cast<double>(kGiB) * 1024.0;
  else if (unit == "KB" || unit == "kB")
    mult = 1e3;
  else if (unit == "MB")
    mult = 1e6;
  else if (unit == "GB")
    mult = 1e9;
  else if (unit == "TB")
    mult = 1e12;
  else
    fail();
  double bytes = number * mult;
  if (bytes >= 1.8e19) fail();
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace gpupack
