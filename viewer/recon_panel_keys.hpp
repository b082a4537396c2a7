// Which reconstruction keys the viewer's panel offers: those the chosen method declares it reads
// (methods.cpp) on the backend in use, so the panel never shows a key that changes nothing (nlinv's Newton
// steps while gridding, cuda_graph on the CPU). Hidden keys keep their values and are applied with the rest.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/key_names.hpp"
#include "recon/backend.hpp"
#include "recon/methods.hpp"
#include "recon/recon_params.hpp"

namespace radstream::viewer {

// Forwards to `v` only the top-level keys that apply to the backend (the sections are visited apart).
template <class V>
struct TopLevelKeys {
  V& v;
  Backend backend;
  bool keep(std::string_view k) const {
    return k == "method" || k == "backend" || (k == "threads" && backend == Backend::Cpu) ||
           (k == "cuda_graph" && backend == Backend::Cuda);
  }
  template <class... A>
  void field(const char* key, A&&... a) {
    if (keep(key)) v.field(key, std::forward<A>(a)...);
  }
  template <class... A>
  void choice(const char* key, A&&... a) {
    if (keep(key)) v.choice(key, std::forward<A>(a)...);
  }
};

// methods: the running stream's (its registry's, StreamRuntime::registry()).
template <class V>
void visit_panel_keys(ReconParams& p, Backend backend, V& v, const MethodTable& methods = builtin_methods()) {
  TopLevelKeys<V> top{v, backend};
  p.visit(top);
  // The groups of keys the method declares (recon/methods.hpp); the exact methods are offline only: nothing
  // more to set in a stream.
  const MethodSpec* m = methods.find(p.method.str());
  if (m && m->live)
    for (const KeySection s : m->keys) p.visit_section(s, v);
}

// The keys' names, in the panel's order (the screenshot's JSON lists them).
inline std::vector<std::string> panel_keys(ReconParams p, Backend backend) {
  KeyNames names;
  visit_panel_keys(p, backend, names);
  return names.keys;
}

}  // namespace radstream::viewer
