// Seed lists as the CLI takes them: "42", "42-51", "1,5,7-9".
//
// Contract: parse_seeds() returns the seeds in the order written (ranges
// ascending, duplicates kept) or throws std::invalid_argument naming the
// --seeds flag and the offending part; a range spans at most 10,001 seeds.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace gpupack {

std::vector<uint64_t> parse_seeds(std::string_view text);

}  // namespace gpupack
