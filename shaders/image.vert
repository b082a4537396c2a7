#version 330 core
// A quad covering the image's rectangle in normalized device coordinates: centre + half-size (zoom, pan and
// aspect are applied on the CPU side into these two uniforms).
uniform vec2 u_center;
uniform vec2 u_half;
out vec2 v_uv;
void main() {
  vec2 corner = vec2(float(gl_VertexID & 1), float((gl_VertexID >> 1) & 1));  // (0,0) (1,0) (0,1) (1,1)
  v_uv = vec2(corner.x, 1.0 - corner.y);                                      // image row 0 at the top
  gl_Position = vec4(u_center + (corner * 2.0 - 1.0) * u_half, 0.0, 1.0);
}
