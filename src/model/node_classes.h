// NodeClasses: the nodes of a ClusterState grouped by identical state.
//
// Two nodes in the same class have the same capacity, model, free CPU and
// memory, free milli (and every other per-GPU figure) on each GPU in order,
// pods by shape and MIG devices; nodes with a hardware setup or a MIG GPU
// are always alone. So every policy that scores by state alone gives every
// member the same score and GPUs, and a scheduler may score one member per
// class: the member first in the tie order (see Scheduler).
//
// Contract:
// - ClusterState owns one and keeps it current on every bind, unbind and
//   rollback (place() with the node's new state hash); O(log class size)
//   plus one state comparison per move.
// - classes() lists the live (non-empty) class ids in no particular order;
//   first(c) is the member with the lowest (order, node index), size(c) the
//   member count. class_of(node) is the node's class. live() lists the same
//   classes with their first member, size and a NodeSummary of their state
//   in one contiguous array, for a filter that skips classes without
//   touching the nodes.
// - The tie order defaults to the node index; set_order() replaces it (one
//   value per node) and regroups nothing, only re-sorts members.
// - Change log: every class a move touches (a member left or joined, the
//   class was created or emptied) is appended to a log that holds the last
//   kLogCapacity entries; a reader keeps its own cursor (log_end() when it
//   last read) and re-reads the classes it names. incarnation(c) changes
//   whenever an emptied class id is reused for another state, so a reader can
//   tell "same class, other members" from "another class". log_id() is
//   unique to one continuous history: reset(), a copy and an assignment each
//   start a new one (with an empty log), so a reader never mixes histories.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpupack {

// What a filter needs to rule a class out, the same for every member.
struct NodeSummary {
  int64_t cpu_free_milli = 0;
  int64_t memory_free_mib = 0;
  int32_t max_gpu_free_milli = 0;  // the freest GPU
  int16_t whole_free_gpus = 0;     // GPUs with nothing on them
  int16_t gpu_count = 0;
  bool plain = false;  // no hardware setup: the openb filter applies
};

class NodeClasses {
 public:
  struct Live {
    int32_t id = 0, first = 0, size = 0;
    NodeSummary summary;
  };
  static constexpr uint64_t kLogCapacity = uint64_t{1} << 15;

  // Every node unplaced; place() each once to start.
  void reset(size_t nodes);
  // Moves `node` into the class of nodes whose state hashes to `hash` and
  // for which same(node, member) holds, or into a new class (summarised by
  // `summary`).
  template <class Same>
  void place(int32_t node, uint64_t hash, const NodeSummary& summary, Same&& same);

  std::span<const int32_t> classes() const { return live_ids_; }
  std::span<const Live> live() const { return live_; }
  int32_t first(int32_t c) const { return classes_[static_cast<size_t>(c)].members.begin()->second; }
  int32_t size(int32_t c) const { return static_cast<int32_t>(classes_[static_cast<size_t>(c)].members.size()); }
  int32_t class_of(int32_t node) const { return class_of_[static_cast<size_t>(node)]; }
  uint64_t hash_of(int32_t c) const { return classes_[static_cast<size_t>(c)].hash; }
  // Class ids are below slots(); alive(c) when c has members, then live_of(c)
  // is its entry of live().
  size_t slots() const { return classes_.size(); }
  bool alive(int32_t c) const { return classes_[static_cast<size_t>(c)].live_pos >= 0; }
  const Live& live_of(int32_t c) const { return live_[static_cast<size_t>(classes_[static_cast<size_t>(c)].live_pos)]; }
  uint32_t incarnation(int32_t c) const { return classes_[static_cast<size_t>(c)].incarnation; }

  // The change log (see the contract above).
  uint64_t log_id() const { return log_.id; }
  uint64_t log_end() const { return log_.end; }
  // True when entries [from, log_end()) are all still held.
  bool log_holds(uint64_t from) const { return from <= log_.end && log_.end - from <= log_.ring.size(); }
  int32_t logged(uint64_t i) const { return log_.ring[static_cast<size_t>(i % kLogCapacity)]; }

  void set_order(std::vector<int64_t> order);
  int64_t order(int32_t node) const { return order_.empty() ? node : order_[static_cast<size_t>(node)]; }
  bool order_is_index() const { return order_.empty(); }

 private:
  struct Class {
    uint64_t hash = 0;
    std::set<std::pair<int64_t, int32_t>> members;  // (order, node)
    int32_t live_pos = -1;                          // index in live_, -1 when empty
    uint32_t incarnation = 0;                       // bumped when the id is (re)used
  };
  // The change log. Copying or moving it (with its NodeClasses) starts a new
  // history, so the defaulted copy and move of NodeClasses keep the contract.
  struct History {
    std::vector<int32_t> ring;  // touched class ids, kLogCapacity at most
    uint64_t end = 0;           // entries ever appended in this history
    uint64_t id = next_id();

    History() = default;
    History(const History&) {}
    History(History&& other) noexcept { other.restart(); }
    History& operator=(const History&) {
      restart();
      return *this;
    }
    History& operator=(History&& other) noexcept {
      restart();
      other.restart();
      return *this;
    }
    ~History() = default;
    void restart() {
      ring.clear();
      end = 0;
      id = next_id();
    }
    void append(int32_t c) {
      if (ring.size() < kLogCapacity) {
        ring.push_back(c);
      } else {
        ring[static_cast<size_t>(end % kLogCapacity)] = c;
      }
      ++end;
    }
    static uint64_t next_id();
  };
  void remove(int32_t node);
  void touch(int32_t c) { log_.append(c); }
  int32_t new_class(uint64_t hash, const NodeSummary& summary);
  void refresh_live(int32_t c);  // first and size of c into live_

  std::vector<int32_t> class_of_;  // -1 = not placed
  std::vector<Class> classes_;
  std::vector<Live> live_;
  std::vector<int32_t> live_ids_, free_;
  std::unordered_map<uint64_t, std::vector<int32_t>> by_hash_;  // live classes by state hash
  std::vector<int64_t> order_;                                  // empty = node index
  History log_;
};

template <class Same>
void NodeClasses::place(int32_t node, uint64_t hash, const NodeSummary& summary, Same&& same) {
  remove(node);
  int32_t target = -1;
  if (auto it = by_hash_.find(hash); it != by_hash_.end()) {
    for (int32_t c : it->second)
      if (same(node, first(c))) {
        target = c;
        break;
      }
  }
  if (target < 0) target = new_class(hash, summary);
  classes_[static_cast<size_t>(target)].members.emplace(order(node), node);
  class_of_[static_cast<size_t>(node)] = target;
  refresh_live(target);
  touch(target);
}

}  // namespace gpupack
