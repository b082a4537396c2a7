#include "core/trajectory.hpp"

#include <cmath>

#include "core/error.hpp"

namespace radstream {

AngleScheme parse_angle_scheme(const std::string& name) {
  if (name == "linear180" || name == "linear") return AngleScheme::Linear180;
  if (name == "linear360") return AngleScheme::Linear360;
  if (name == "golden") return AngleScheme::Golden;
  if (name == "tiny-golden" || name == "tinygolden") return AngleScheme::TinyGolden;
  if (name == "turns") return AngleScheme::Turns;
  throw ConfigError("angle scheme '" + name +
                    "' is not one of linear180, linear360, golden, tiny-golden, turns");
}

std::string to_string(AngleScheme s) {
  switch (s) {
    case AngleScheme::Linear180:
      return "linear180";
    case AngleScheme::Linear360:
      return "linear360";
    case AngleScheme::Golden:
      return "golden";
    case AngleScheme::TinyGolden:
      return "tiny-golden";
    case AngleScheme::Turns:
      return "turns";
  }
  return "unknown";
}

void AngleSpec::validate() const {
  if (scheme == AngleScheme::TinyGolden && (tiny_n < 2 || tiny_n > 10))
    throw ConfigError("tiny golden angle order " + std::to_string(tiny_n) + " is outside 2..10");
  if ((scheme == AngleScheme::Linear180 || scheme == AngleScheme::Linear360 ||
       scheme == AngleScheme::Turns) &&
      spokes_per_rotation < 1)
    throw ConfigError("spokes per rotation " + std::to_string(spokes_per_rotation) + " must be >= 1");
  if (scheme == AngleScheme::Turns && (turns < 1 || turns > 1024))
    throw ConfigError("turns " + std::to_string(turns) + " is outside 1..1024");
}

double AngleSpec::increment() const {
  switch (scheme) {
    case AngleScheme::Linear180:
      return kPi / spokes_per_rotation;
    case AngleScheme::Linear360:
      return 2.0 * kPi / spokes_per_rotation;
    case AngleScheme::Golden:
      return kPi / kGoldenRatio;
    case AngleScheme::TinyGolden:
      return kPi / (kGoldenRatio + tiny_n - 1);
    case AngleScheme::Turns:
      return kPi / spokes_per_rotation;
  }
  return 0.0;
}

double AngleSpec::angle(std::int64_t spoke_index) const {
  double a = 0.0;
  if (scheme == AngleScheme::Turns) {
    const std::int64_t s = spokes_per_rotation;
    const std::int64_t i = spoke_index < 0 ? 0 : spoke_index;
    const std::int64_t frame = i / s, j = i % s;
    return kPi * (double(j) + double(frame % turns) / turns) / double(s);
  }
  if (scheme == AngleScheme::Linear180 || scheme == AngleScheme::Linear360) {
    // Exact modulo on the integer index so that angles repeat bit for bit every rotation.
    const std::int64_t i = spoke_index % spokes_per_rotation;
    a = increment() * static_cast<double>(i < 0 ? i + spokes_per_rotation : i);
  } else {
    a = std::fmod(increment() * static_cast<double>(spoke_index), 2.0 * kPi);
    if (a < 0) a += 2.0 * kPi;
  }
  return a;
}

void spoke_coordinates(double angle, int samples, std::span<float> out) {
  if (out.size() < 2 * static_cast<std::size_t>(samples))
    throw InputError("spoke_coordinates: output holds " + std::to_string(out.size()) + " floats, needs " +
                     std::to_string(2 * samples));
  const double c = std::cos(angle), s = std::sin(angle);
  for (int n = 0; n < samples; ++n) {
    const double r = radial_position(n, samples);
    out[2 * n] = static_cast<float>(r * c);
    out[2 * n + 1] = static_cast<float>(r * s);
  }
}

}  // namespace radstream
