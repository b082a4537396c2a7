// The viewer's widgets for a parameter struct, generated from its visit(): a slider or an input box per
// number (clamped to the declared range), a checkbox per flag, a combo per choice (items from the enum's
// name table), the key's help as the tooltip. Names and ranges are the YAML's, the command line's and the
// README's: they cannot disagree.
#pragma once
#include <imgui.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/enum_table.hpp"
#include "recon/recon_params.hpp"

namespace radstream::viewer {

class ParamWidgets {
 public:
  bool changed = false;

  template <class T>
  void field(const char* key, T& value, T lo, T hi, const char* help) {
    if constexpr (std::is_integral_v<T> && sizeof(T) <= sizeof(int)) {
      int v = int(value);
      const bool moved =
          (hi - lo <= 64) ? ImGui::SliderInt(key, &v, int(lo), int(hi)) : ImGui::InputInt(key, &v);
      if (moved) {
        value = std::clamp(T(v), lo, hi);
        changed = true;
      }
    } else if constexpr (std::is_floating_point_v<T>) {
      double v = double(value);
      const bool moved = (hi - lo <= 10)
                             ? ImGui::SliderScalar(key, ImGuiDataType_Double, &v, &lo, &hi, "%.3f")
                             : ImGui::InputDouble(key, &v);
      if (moved) {
        value = std::clamp(T(v), lo, hi);
        changed = true;
      }
    }
    tooltip(help);
  }
  void field(const char* key, bool& value, const char* help) {
    changed |= ImGui::Checkbox(key, &value);
    tooltip(help);
  }
  void field(const char*, std::string&, const char*) {}  // no free text in the reconstruction settings
  template <class E, std::size_t N>
  void choice(const char* key, E& value, const EnumTable<E, N>& table, const char* help) {
    std::array<const char*, N> items{};
    std::array<std::size_t, N> of{};  // combo row -> table index (offline values are not offered)
    int rows = 0, idx = 0;
    for (std::size_t i = 0; i < N; ++i) {
      if (table.items[i].offline) continue;
      if (i == table.index(value)) idx = rows;
      of[std::size_t(rows)] = i;
      items[std::size_t(rows++)] = table.items[i].name;
    }
    if (ImGui::Combo(key, &idx, items.data(), rows)) {
      value = table.items[of[std::size_t(idx)]].value;
      changed = true;
    }
    tooltip(help);
  }
  // The method: the built-in live methods, and the one running if it is another (a registered method).
  void choice(const char* key, MethodName& value, const MethodNames&, const char* help) {
    std::vector<MethodName> names;
    for (const auto& i : kReconMethods.items)
      if (!i.offline) names.emplace_back(i.value);
    if (std::find(names.begin(), names.end(), value) == names.end()) names.push_back(value);
    std::vector<const char*> items;
    int idx = 0;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == value) idx = int(i);
      items.push_back(names[i].str().c_str());
    }
    if (ImGui::Combo(key, &idx, items.data(), int(items.size()))) {
      value = names[std::size_t(idx)];
      changed = true;
    }
    tooltip(help);
  }

 private:
  static void tooltip(const char* help) {
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", help);
  }
};

}  // namespace radstream::viewer
