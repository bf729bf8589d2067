#include "io/quantity.h"

#include <fmt/format.h>

#include <limits>
#include <stdexcept>

#include "util/strings.h"

namespace gpupack {
namespace {

using i128 = __int128;

constexpr int kMaxSignificantDigits = 36;
constexpr int kMaxExponent = 60;

[[noreturn]] void bad_quantity(std::string_view text, std::string_view why) {
  throw std::invalid_argument(fmt::format("invalid quantity \"{}\": {}", excerpt(text), why));
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Multiplies `v` by 10^n or 2^n; false on overflow.
bool mul_pow(i128& v, int base, int n) {
  for (int i = 0; i < n; ++i) {
    if (__builtin_mul_overflow(v, static_cast<i128>(base), &v)) return false;
  }
  return true;
}

// q x 10^s10 x 2^s2, rounded as asked, as int64.
int64_t scaled(const Quantity& q, int s10, int s2, Round round) {
  i128 mantissa = 0;
  for (char c : q.digits) mantissa = mantissa * 10 + (c - '0');
  if (mantissa == 0) return 0;
  int a = q.exp10 + s10;
  int b = q.exp2 + s2;
  i128 num = mantissa;
  if (!mul_pow(num, 10, a > 0 ? a : 0) || !mul_pow(num, 2, b > 0 ? b : 0)) {
    throw std::out_of_range("quantity is too large");
  }
  i128 den = 1;
  bool den_overflow = !mul_pow(den, 10, a < 0 ? -a : 0) || !mul_pow(den, 2, b < 0 ? -b : 0);
  // Rounding away from zero for kUp on positives, towards zero for negatives
  // (= towards +inf overall); kDown is the opposite.
  bool up = (round == Round::kUp) != q.negative;
  i128 quotient;
  if (den_overflow) {
    // den >= 10^38 > num: the magnitude is below one.
    quotient = up ? 1 : 0;
  } else {
    quotient = num / den;
    if (up && num % den != 0) ++quotient;
  }
  if (q.negative) quotient = -quotient;
  if (quotient > std::numeric_limits<int64_t>::max() || quotient < std::numeric_limits<int64_t>::min()) {
    throw std::out_of_range("quantity is too large");
  }
  return static_cast<int64_t>(quotient);
}

}  // namespace

Quantity parse_quantity(std::string_view text) {
  Quantity q;
  size_t i = 0;
  if (text.empty()) bad_quantity(text, "empty");
  if (text[i] == '+' || text[i] == '-') {
    q.negative = text[i] == '-';
    ++i;
  }
  std::string digits;
  int frac_digits = 0;
  bool seen_point = false;
  int digit_count = 0;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (is_digit(c)) {
      ++digit_count;
      if (digits.empty() && c == '0') {
        // leading zero: only matters for the position of the point
      } else {
        digits.push_back(c);
      }
      if (seen_point) ++frac_digits;
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (digit_count == 0) bad_quantity(text, "no digits");
  q.exp10 = -frac_digits;

  std::string_view suffix = text.substr(i);
  if (suffix.empty()) {
  } else if (suffix.size() == 2 && suffix[1] == 'i') {
    switch (suffix[0]) {
      case 'K':
        q.exp2 = 10;
        break;
      case 'M':
        q.exp2 = 20;
        break;
      case 'G':
        q.exp2 = 30;
        break;
      case 'T':
        q.exp2 = 40;
        break;
      case 'P':
        q.exp2 = 50;
        break;
      case 'E':
        q.exp2 = 60;
        break;
      default:
        bad_quantity(text, fmt::format("unknown suffix \"{}\"", excerpt(suffix)));
    }
  } else if (suffix.size() == 1) {
    switch (suffix[0]) {
      case 'n':
        q.exp10 -= 9;
        break;
      case 'u':
        q.exp10 -= 6;
        break;
      case 'm':
        q.exp10 -= 3;
        break;
      case 'k':
        q.exp10 += 3;
        break;
      case 'M':
        q.exp10 += 6;
        break;
      case 'G':
        q.exp10 += 9;
        break;
      case 'T':
        q.exp10 += 12;
        break;
      case 'P':
        q.exp10 += 15;
        break;
      case 'E':
        q.exp10 += 18;
        break;
      default:
        bad_quantity(text, fmt::format("unknown suffix \"{}\"", excerpt(suffix)));
    }
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    size_t j = 1;
    bool neg = false;
    if (j < suffix.size() && (suffix[j] == '+' || suffix[j] == '-')) {
      neg = suffix[j] == '-';
      ++j;
    }
    if (j >= suffix.size()) bad_quantity(text, "exponent has no digits");
    int e = 0;
    for (; j < suffix.size(); ++j) {
      if (!is_digit(suffix[j])) bad_quantity(text, fmt::format("unknown suffix \"{}\"", excerpt(suffix)));
      e = e * 10 + (suffix[j] - '0');
      if (e > kMaxExponent) bad_quantity(text, "exponent out of range");
    }
    q.exp10 += neg ? -e : e;
  } else {
    bad_quantity(text, fmt::format("unknown suffix \"{}\"", excerpt(suffix)));
  }

  // Trailing zeros move into the exponent so the mantissa stays small.
  while (!digits.empty() && digits.back() == '0') {
    digits.pop_back();
    ++q.exp10;
  }
  if (static_cast<int>(digits.size()) > kMaxSignificantDigits) bad_quantity(text, "too many significant digits");
  if (q.exp10 > 2 * kMaxExponent || q.exp10 < -2 * kMaxExponent) bad_quantity(text, "exponent out of range");
  if (digits.empty()) {
    q.negative = false;
    q.exp10 = 0;
  }
  q.digits = std::move(digits);
  return q;
}

int64_t quantity_value(const Quantity& q) { return scaled(q, 0, 0, Round::kUp); }
int64_t quantity_milli(const Quantity& q) { return scaled(q, 3, 0, Round::kUp); }
int64_t quantity_mib(const Quantity& q, Round round) { return scaled(q, 0, -20, round); }

bool quantity_is_integer(const Quantity& q) { return scaled(q, 0, 0, Round::kUp) == scaled(q, 0, 0, Round::kDown); }

int64_t parse_cpu_milli(std::string_view text) { return quantity_milli(parse_quantity(text)); }
int64_t parse_memory_mib(std::string_view text, Round round) { return quantity_mib(parse_quantity(text), round); }

}  // namespace gpupack
