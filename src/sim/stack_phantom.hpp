// The volumetric scanner's object for a stack-of-stars stream: the 3D Shepp-Logan ellipsoids (sim/phantom3d)
// with an optional catheter tip moving along a closed 3D path, seen through 3D coil sensitivities that stay
// exact in k-space: coil c's map is the 2D map of sim/coil_maps times a smooth profile along z,
//   m_c(x, y, z) = s_c(x, y) (1 + a_c exp(2 pi i g_c z)),
// so FT(f m_c)(kappa) = sum_l s_cl [F(kappa - f_l) + a_c F(kappa - f_l - g_c e_z)] with F the ellipsoids'
// transform. Coordinates in units of the field of view [-1, 1]^3, kappa in cycles per unit.
#pragma once
#include <array>
#include <complex>
#include <vector>

#include "sim/coil_maps.hpp"
#include "sim/phantom3d.hpp"

namespace radstream {

class StackPhantom {
 public:
  StackPhantom(int coils, bool motion, double motion_period_s);

  // The tip's centre at time t seconds (units of the field of view: x, y, z).
  std::array<double, 3> tip_at(double t) const;
  // The ellipsoids at time t (with the tip when motion is on).
  std::vector<Ellipsoid> at(double t) const;
  // Coil c's noiseless k-space of `e` at kappa (cycles per unit of the field of view).
  std::complex<double> kspace(const std::vector<Ellipsoid>& e, int coil, double kx, double ky,
                              double kz) const;
  // Every coil's k-space at kappa into out[0..coils): the ellipsoids' transform evaluated once per plane wave
  // of the maps (3 x 9 of them), not once per coil.
  void kspace_all(const std::vector<Ellipsoid>& e, double kx, double ky, double kz,
                  std::complex<double>* out) const;
  // Coil c's sensitivity at (x, y, z).
  std::complex<double> sensitivity(int coil, double x, double y, double z) const;
  int coils() const { return maps_.coils(); }

 private:
  CoilMaps maps_;
  bool motion_;
  double period_s_;
  std::vector<std::complex<double>> a_;  // each coil's z profile: amplitude and phase
  std::vector<double> g_;                // and frequency (cycles per unit)
};

}  // namespace radstream
