#include "sim/seeds.h"

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>

namespace gpupack {

std::vector<uint64_t> parse_seeds(std::string_view text) {
  std::vector<uint64_t> seeds;
  auto number = [&](std::string_view s) {
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size())
      throw std::invalid_argument(fmt::format("--seeds: '{}' is not a non-negative integer", s));
    return v;
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view part = text.substr(start, end - start);
    const size_t dash = part.find('-');
    if (dash == std::string_view::npos) {
      seeds.push_back(number(part));
    } else {
      const uint64_t lo = number(part.substr(0, dash)), hi = number(part.substr(dash + 1));
      if (hi < lo || hi - lo > 10000) throw std::invalid_argument(fmt::format("--seeds: bad range '{}'", part));
      for (uint64_t s = lo; s <= hi; ++s) seeds.push_back(s);
    }
    start = end + 1;
  }
  return seeds;
}

}  // namespace gpupack
