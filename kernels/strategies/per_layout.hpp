// A value computed once per layout (or per layout and parameters) and kept for the process: the
// strategies' plans are read on every kernel call and layouts never go away, so each is built on
// first use under a lock and its address stays valid (kernels compare plan pointers). A thread's
// last hit is remembered, so the kernels' per-call lookups take no lock.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace ternlab::strategies {

template <class Key, class Value>
class PerLayout {
 public:
  template <class Build>
  const Value& get(const Key& key, Build&& build) {
    struct Hit {
      const PerLayout* cache = nullptr;
      Key key{};
      const Value* value = nullptr;
    };
    thread_local Hit last;
    if (last.cache == this && last.value && last.key == key) return *last.value;
    const std::lock_guard lock(mu_);
    auto& slot = values_[key];
    if (!slot) slot = std::make_unique<const Value>(std::forward<Build>(build)());
    last = {this, key, slot.get()};
    return *slot;
  }

 private:
  std::mutex mu_;
  std::map<Key, std::unique_ptr<const Value>> values_;
};

}  // namespace ternlab::strategies
