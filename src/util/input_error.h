// InputError: bad input, with where and what.
//
// Contract: thrown by readers for malformed or oversized files; the message
// names the file, the line (1-based, counting the header) and column where
// known, and at most a short excerpt of the offending value (util/strings.h
// excerpt()). Readers build their result in local storage and return it only
// when the whole input is valid, so a throw leaves nothing half-loaded.
#pragma once

#include <stdexcept>
#include <string>

namespace gpupack {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gpupack
