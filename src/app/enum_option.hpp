// A command-line option for an enum, from the enum's name table: the accepted names, the default and the
// error message come from the table (a bad value exits 2 naming the option, the value and the choices).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "core/enum_table.hpp"

namespace radstream::app {

template <class E, std::size_t N>
CLI::Option* add_enum_option(CLI::App& app, const std::string& name, E& value, const EnumTable<E, N>& table,
                             const std::string& help) {
  return app.add_option_function<std::string>(
      name,
      [&value, &table, name](const std::string& s) {
        try {
          value = table.parse(s);
        } catch (const ConfigError& e) {
          throw CLI::ValidationError(name + " " + s + ": " + e.what());
        }
      },
      help + " (" + table.list(" | ") + "; default " + table.name(value) + ")");
}

}  // namespace radstream::app
