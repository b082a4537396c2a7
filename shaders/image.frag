#version 330 core
// Window/level, gamma and a colour map on a float texture of image magnitudes.
uniform sampler2D u_image;
uniform float u_low;    // value shown as black
uniform float u_high;   // value shown as white
uniform float u_gamma;
uniform int u_colormap;  // 0 grey, 1 hot
in vec2 v_uv;
out vec4 o_color;
vec3 hot(float t) {
  return clamp(vec3(3.0 * t, 3.0 * t - 1.0, 3.0 * t - 2.0), 0.0, 1.0);
}
void main() {
  float v = texture(u_image, v_uv).r;
  float t = clamp((v - u_low) / max(u_high - u_low, 1e-20), 0.0, 1.0);
  t = pow(t, 1.0 / max(u_gamma, 1e-3));
  o_color = vec4(u_colormap == 1 ? hot(t) : vec3(t), 1.0);
}
