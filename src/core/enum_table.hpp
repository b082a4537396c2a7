// An enum's names in one table beside the enum (in its header): parsing, printing, the help text's list of
// values, the viewer's combo items and the command line's checks all come from it, so they cannot disagree.
//
//   enum class FftEngine { Auto, Fftw, Cufft, Custom };
//   inline constexpr EnumTable<FftEngine, 4> kFftEngines{
//       "FFT engine", {{{FftEngine::Auto, "auto"}, {FftEngine::Fftw, "fftw"}, ...}}};
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace radstream {

template <class E>
struct EnumName {
  E value;
  const char* name;
  bool offline = false;  // a value only an offline command takes (the viewer's combo leaves it out)
};

template <class E, std::size_t N>
struct EnumTable {
  const char* what;  // e.g. "FFT engine": names the value in errors
  std::array<EnumName<E>, N> items;

  static constexpr std::size_t size() { return N; }
  // Throws ConfigError naming the value and listing the choices.
  E parse(std::string_view s) const {
    for (const auto& i : items)
      if (s == i.name) return i.value;
    throw ConfigError(std::string(what) + " '" + std::string(s) + "' is not one of " + list());
  }
  const char* name(E e) const {
    for (const auto& i : items)
      if (i.value == e) return i.name;
    return "?";
  }
  std::size_t index(E e) const {
    for (std::size_t k = 0; k < N; ++k)
      if (items[k].value == e) return k;
    return 0;
  }
  // "a, b, c" (sep ", ") or "a | b | c".
  std::string list(const char* sep = ", ") const {
    std::string s;
    for (std::size_t k = 0; k < N; ++k) s += (k ? sep : "") + std::string(items[k].name);
    return s;
  }
};

}  // namespace radstream
