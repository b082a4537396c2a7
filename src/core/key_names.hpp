// The keys a parameter struct declares (its visit()), in order: which options belong to a method, which keys
// a panel offers, what a test expects to see.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

namespace radstream {

struct KeyNames {
  std::vector<std::string> keys;
  template <class... A>
  void field(const char* key, A&&...) {
    keys.emplace_back(key);
  }
  template <class... A>
  void choice(const char* key, A&&...) {
    keys.emplace_back(key);
  }
  bool has(const std::string& k) const { return std::find(keys.begin(), keys.end(), k) != keys.end(); }
};

}  // namespace radstream
