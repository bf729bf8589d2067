#include "util/name_index.h"

#include <bit>
#include <functional>
#include <stdexcept>

namespace gpupack {

namespace {
constexpr size_t kMinSlots = 16;
constexpr size_t kBatch = 64;  // names in flight in find_many
}  // namespace

uint64_t NameIndex::hash(std::string_view name) {
  // std::hash<std::string_view> (a Murmur-style hash in libstdc++), mixed so
  // that both the low bits (the slot) and the high bits (the tag) spread.
  uint64_t h = std::hash<std::string_view>{}(name);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

size_t NameIndex::probe(std::string_view name, uint64_t h) const {
  const size_t mask = slots_.size() - 1;
  const uint32_t tag = static_cast<uint32_t>(h >> 32);
  for (size_t s = h & mask;; s = (s + 1) & mask) {
    const Slot& slot = slots_[s];
    if (slot.entry < 0 || (slot.tag == tag && key(slot.entry) == name)) return s;
  }
}

void NameIndex::grow(size_t slots) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(slots, Slot{});
  const size_t mask = slots - 1;
  for (const Slot& o : old) {
    if (o.entry < 0) continue;
    size_t s = hash(key(o.entry)) & mask;
    while (slots_[s].entry >= 0) s = (s + 1) & mask;
    slots_[s] = o;
  }
}

void NameIndex::reserve(size_t names) {
  const size_t want = std::bit_ceil(std::max(kMinSlots, 2 * names + 1));
  if (want > slots_.size()) grow(want);
  offsets_.reserve(names + 1);
  values_.reserve(names);
}

bool NameIndex::insert(std::string_view name, int value) {
  if (2 * (values_.size() + 1) > slots_.size()) grow(std::max(kMinSlots, 2 * slots_.size()));
  const uint64_t h = hash(name);
  const size_t s = probe(name, h);
  if (slots_[s].entry >= 0) return false;
  if (chars_.size() + name.size() > UINT32_MAX) throw std::length_error("NameIndex: names exceed 4 GiB");
  slots_[s] = {static_cast<uint32_t>(h >> 32), static_cast<int32_t>(values_.size())};
  chars_.append(name);
  offsets_.push_back(static_cast<uint32_t>(chars_.size()));
  values_.push_back(value);
  return true;
}

void NameIndex::assign(std::string_view name, int value) {
  if (!insert(name, value)) values_[static_cast<size_t>(slots_[probe(name, hash(name))].entry)] = value;
}

int NameIndex::find(std::string_view name) const {
  if (slots_.empty()) return -1;
  const Slot& slot = slots_[probe(name, hash(name))];
  return slot.entry < 0 ? -1 : values_[static_cast<size_t>(slot.entry)];
}

int NameIndex::at(std::string_view name) const {
  const int v = find(name);
  if (v < 0) throw std::out_of_range("NameIndex: no entry named '" + std::string(name) + "'");
  return v;
}

void NameIndex::find_many(std::span<const std::string> names, std::span<int> out) const {
  if (out.size() != names.size()) throw std::invalid_argument("NameIndex::find_many: output size differs");
  if (slots_.empty()) {
    std::fill(out.begin(), out.end(), -1);
    return;
  }
  const size_t mask = slots_.size() - 1;
  uint64_t h[kBatch];
  for (size_t base = 0; base < names.size(); base += kBatch) {
    const size_t n = std::min(kBatch, names.size() - base);
    // Hash the batch and start loading each name's home slot.
    for (size_t k = 0; k < n; ++k) {
      h[k] = hash(names[base + k]);
      __builtin_prefetch(&slots_[h[k] & mask]);
    }
    // Start loading the stored name of each home slot whose tag matches.
    const char* chars = chars_.data();
    for (size_t k = 0; k < n; ++k) {
      const Slot& slot = slots_[h[k] & mask];
      if (slot.entry >= 0 && slot.tag == static_cast<uint32_t>(h[k] >> 32))
        __builtin_prefetch(chars + offsets_[static_cast<size_t>(slot.entry)]);
    }
    for (size_t k = 0; k < n; ++k) {
      const Slot& slot = slots_[probe(names[base + k], h[k])];
      out[base + k] = slot.entry < 0 ? -1 : values_[static_cast<size_t>(slot.entry)];
    }
  }
}

void NameIndex::clear() {
  slots_.clear();
  chars_.clear();
  offsets_.assign(1, 0);
  values_.clear();
}

}  // namespace gpupack
