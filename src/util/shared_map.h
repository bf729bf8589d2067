// SharedMap: an immutable std::map whose copies share one body (a copy is a
// reference count, not a tree of strings).
//
// Contract:
// - Holds what it was constructed or assigned from; never changes in place.
//   set() makes a private copy first when the body is shared (copy on
//   write), so a copy never sees another's changes.
// - Reads (begin/end/find/count/at/size/empty, get()) are those of the
//   std::map; an empty map holds no allocation.
// - Thread-safe as std::shared_ptr is: copies on different threads are fine;
//   one object written on one thread while read on another is not.
// Why: a Kubernetes node's labels, annotations and quantities are copied
// with every whole-model rebuild (the watch store, the service's node table,
// the next model); at 100,000 nodes with a few dozen labels each, the copies
// and their frees took seconds of CPU.
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <utility>

namespace gpupack {

template <class K, class V>
class SharedMap {
 public:
  using map_type = std::map<K, V>;
  using key_type = K;
  using mapped_type = V;
  using value_type = typename map_type::value_type;
  using const_iterator = typename map_type::const_iterator;
  using iterator = const_iterator;

  SharedMap() = default;
  SharedMap(map_type m)  // NOLINT(google-explicit-constructor): a map is a SharedMap
      : body_(m.empty() ? nullptr : std::make_shared<const map_type>(std::move(m))) {}
  SharedMap(std::initializer_list<value_type> items) : SharedMap(map_type(items)) {}

  const map_type& get() const { return body_ ? *body_ : none(); }
  operator const map_type&() const { return get(); }  // NOLINT(google-explicit-constructor)

  const_iterator begin() const { return get().begin(); }
  const_iterator end() const { return get().end(); }
  const_iterator find(const K& key) const { return get().find(key); }
  const_iterator lower_bound(const K& key) const { return get().lower_bound(key); }
  size_t count(const K& key) const { return get().count(key); }
  bool contains(const K& key) const { return get().count(key) != 0; }
  const V& at(const K& key) const { return get().at(key); }
  size_t size() const { return get().size(); }
  bool empty() const { return !body_ || body_->empty(); }

  // Copy on write: this object gets a body of its own with `key` = `value`.
  void set(const K& key, V value) {
    map_type next = get();
    next.insert_or_assign(key, std::move(value));
    body_ = std::make_shared<const map_type>(std::move(next));
  }

  friend bool operator==(const SharedMap& a, const SharedMap& b) { return a.get() == b.get(); }

 private:
  static const map_type& none() {
    static const map_type nothing;
    return nothing;
  }
  std::shared_ptr<const map_type> body_;
};

}  // namespace gpupack
