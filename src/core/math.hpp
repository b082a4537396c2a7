// The one spelling of pi (host and device code alike: constexpr scalars are usable in kernels).
#pragma once
#include <numbers>

namespace radstream {

inline constexpr double kPi = std::numbers::pi_v<double>;
inline constexpr float kPiF = std::numbers::pi_v<float>;

}  // namespace radstream
