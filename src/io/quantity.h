// Kubernetes resource quantities ("500m", "2", "16Gi", "1.5G", "2k", "1e3").
//
// Contract: parse_quantity() accepts exactly the Kubernetes quantity grammar
// (optional sign, digits with an optional decimal point, then one suffix:
// binary Ki Mi Gi Ti Pi Ei, decimal n u m k M G T P E or none, or a decimal
// exponent e<int>/E<int>) and throws std::invalid_argument naming the text
// otherwise. The value is kept exact (mantissa x 10^exp10 x 2^exp2); the
// conversions round up like Kubernetes' Value()/MilliValue() (towards +inf),
// except to_mib(.., Round::kDown) for capacities. Conversions throw
// std::out_of_range when the result does not fit in int64. Pure functions,
// thread-safe, O(length of the text).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpupack {

struct Quantity {
  bool negative = false;
  // Decimal digits of the number without the point, leading zeros stripped
  // (at most 40 significant digits are accepted).
  std::string digits;
  int exp10 = 0;  // decimal exponent applied to `digits`
  int exp2 = 0;   // binary exponent from Ki/Mi/... suffixes
};

enum class Round { kUp, kDown };

Quantity parse_quantity(std::string_view text);

// Value in whole units (e.g. bytes, device counts), rounded up.
int64_t quantity_value(const Quantity& q);
// Value x 1000 (e.g. CPU millicores), rounded up.
int64_t quantity_milli(const Quantity& q);
// Bytes expressed in MiB, rounded as asked.
int64_t quantity_mib(const Quantity& q, Round round);
// True when the quantity is a whole number (no fraction after scaling).
bool quantity_is_integer(const Quantity& q);

// Shorthands: parse then convert.
int64_t parse_cpu_milli(std::string_view text);
int64_t parse_memory_mib(std::string_view text, Round round);

}  // namespace gpupack
