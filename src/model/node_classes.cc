#include "model/node_classes.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>

namespace gpupack {
namespace {

std::atomic<uint64_t> next_log_id{1};

}  // namespace

uint64_t NodeClasses::History::next_id() { return next_log_id.fetch_add(1, std::memory_order_relaxed); }

void NodeClasses::reset(size_t nodes) {
  class_of_.assign(nodes, -1);
  classes_.clear();
  live_.clear();
  live_ids_.clear();
  free_.clear();
  by_hash_.clear();
  if (!order_.empty() && order_.size() != nodes) order_.clear();
  log_.restart();
}

void NodeClasses::remove(int32_t node) {
  const int32_t c = class_of_[static_cast<size_t>(node)];
  if (c < 0) return;
  class_of_[static_cast<size_t>(node)] = -1;
  Class& k = classes_[static_cast<size_t>(c)];
  k.members.erase({order(node), node});
  touch(c);
  if (!k.members.empty()) {
    refresh_live(c);
    return;
  }
  // The class is empty: out of the live list (swap with the last) and the
  // hash table; its id is reused.
  const size_t pos = static_cast<size_t>(k.live_pos);
  const int32_t last = live_ids_.back();
  live_ids_[pos] = last;
  live_[pos] = live_.back();
  classes_[static_cast<size_t>(last)].live_pos = k.live_pos;
  live_ids_.pop_back();
  live_.pop_back();
  k.live_pos = -1;
  auto it = by_hash_.find(k.hash);
  std::vector<int32_t>& same_hash = it->second;
  same_hash.erase(std::find(same_hash.begin(), same_hash.end(), c));
  if (same_hash.empty()) by_hash_.erase(it);
  free_.push_back(c);
}

void NodeClasses::refresh_live(int32_t c) {
  const Class& k = classes_[static_cast<size_t>(c)];
  Live& l = live_[static_cast<size_t>(k.live_pos)];
  l.first = k.members.begin()->second;
  l.size = static_cast<int32_t>(k.members.size());
}

int32_t NodeClasses::new_class(uint64_t hash, const NodeSummary& summary) {
  int32_t c;
  if (!free_.empty()) {
    c = free_.back();
    free_.pop_back();
  } else {
    c = static_cast<int32_t>(classes_.size());
    classes_.emplace_back();
  }
  Class& k = classes_[static_cast<size_t>(c)];
  k.hash = hash;
  ++k.incarnation;
  k.live_pos = static_cast<int32_t>(live_.size());
  live_ids_.push_back(c);
  live_.push_back({c, -1, 0, summary});
  by_hash_[hash].push_back(c);
  return c;
}

void NodeClasses::set_order(std::vector<int64_t> order) {
  if (!order.empty() && order.size() != class_of_.size())
    throw std::invalid_argument("tie order does not cover every node");
  order_ = std::move(order);
  for (Class& k : classes_) {
    std::set<std::pair<int64_t, int32_t>> resorted;
    for (const auto& [_, node] : k.members) resorted.emplace(this->order(node), node);
    k.members = std::move(resorted);
    if (k.live_pos >= 0) refresh_live(static_cast<int32_t>(&k - classes_.data()));
  }
}

}  // namespace gpupack
