// NameIndex: a table from names (node names, at up to 100,000+ entries) to
// small non-negative ints, built for the extender's per-call lookups.
//
// Contract:
// - assign(name, value) adds the name or replaces its value; insert() adds
//   only a new name (false, and nothing changed, when present). Names are
//   copied into one arena; nothing is ever removed except by clear().
// - find(name) is the value or -1; at(name) throws std::out_of_range for a
//   name not present; contains(name).
// - find_many(names, out) sets out[k] = find(names[k]) for a whole list. It
//   hashes every name first, then prefetches the slots, then the stored
//   names, so the memory latency of a lookup overlaps with its neighbours':
//   for 5,000 names in a 100,000-name table it is several times faster than
//   as many find() calls (bench: extender_load_bench NodeNamesAtScale).
// - Cost: open addressing, linear probing, at most half full; 8 bytes per
//   slot plus the names and 8 bytes per entry.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpupack {

class NameIndex {
 public:
  void assign(std::string_view name, int value);
  bool insert(std::string_view name, int value);
  int find(std::string_view name) const;
  int at(std::string_view name) const;
  bool contains(std::string_view name) const { return find(name) >= 0; }
  void find_many(std::span<const std::string> names, std::span<int> out) const;
  size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  void clear();
  void reserve(size_t names);

 private:
  struct Slot {
    uint32_t tag = 0;    // high bits of the name's hash
    int32_t entry = -1;  // index into offsets_/values_, -1 = empty
  };
  static uint64_t hash(std::string_view name);
  std::string_view key(int32_t entry) const {
    const size_t e = static_cast<size_t>(entry);
    return std::string_view(chars_).substr(offsets_[e], offsets_[e + 1] - offsets_[e]);
  }
  // The slot holding `name` (hash `h`), or the empty slot where it goes.
  size_t probe(std::string_view name, uint64_t h) const;
  void grow(size_t slots);

  std::vector<Slot> slots_;           // size a power of two (or empty)
  std::string chars_;                 // every name, back to back
  std::vector<uint32_t> offsets_{0};  // entry e is chars_[offsets_[e], offsets_[e+1])
  std::vector<int32_t> values_;       // by entry
};

}  // namespace gpupack
