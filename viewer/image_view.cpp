#define GL_GLEXT_PROTOTYPES
#include "viewer/image_view.hpp"

#include <GL/gl.h>
#include <GL/glext.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "viewer_shaders.hpp"

namespace radstream::viewer {
namespace {

GLuint compile(GLenum type, const char* src) {
  const GLuint s = glCreateShader(type);
  glShaderSource(s, 1, &src, nullptr);
  glCompileShader(s);
  GLint ok = 0;
  glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[2048] = {};
    glGetShaderInfoLog(s, sizeof log, nullptr, log);
    glDeleteShader(s);
    throw std::runtime_error(std::string("viewer: shader does not compile: ") + log);
  }
  return s;
}

}  // namespace

ImageView::ImageView() {
  const GLuint v = compile(GL_VERTEX_SHADER, shaders::kImageVert);
  const GLuint f = compile(GL_FRAGMENT_SHADER, shaders::kImageFrag);
  prog_ = glCreateProgram();
  glAttachShader(prog_, v);
  glAttachShader(prog_, f);
  glLinkProgram(prog_);
  glDeleteShader(v);
  glDeleteShader(f);
  GLint ok = 0;
  glGetProgramiv(prog_, GL_LINK_STATUS, &ok);
  if (!ok) {
    char log[2048] = {};
    glGetProgramInfoLog(prog_, sizeof log, nullptr, log);
    throw std::runtime_error(std::string("viewer: shader program does not link: ") + log);
  }
  glGenVertexArrays(1, &vao_);
  glGenTextures(1, &tex_);
  glBindTexture(GL_TEXTURE_2D, tex_);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
}

ImageView::~ImageView() {
  glDeleteTextures(1, &tex_);
  glDeleteVertexArrays(1, &vao_);
  glDeleteProgram(prog_);
}

void ImageView::upload(const std::vector<float>& pixels, int n) {
  glBindTexture(GL_TEXTURE_2D, tex_);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  if (n != n_) {
    glTexImage2D(GL_TEXTURE_2D, 0, GL_R32F, n, n, 0, GL_RED, GL_FLOAT, pixels.data());
    n_ = n;
  } else {
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, n, n, GL_RED, GL_FLOAT, pixels.data());
  }
}

Rect ImageView::placement(const Display& d, const Rect& a) const {
  const float side = std::min(a.w, a.h) * d.zoom;  // square pixels: the image is square
  Rect r;
  r.w = r.h = side;
  r.x = a.x + 0.5f * (a.w - side) + d.pan_x * side;
  r.y = a.y + 0.5f * (a.h - side) + d.pan_y * side;
  return r;
}

void ImageView::draw(const Display& d, const Rect& area, int fb_w, int fb_h) const {
  if (!n_) return;
  const Rect r = placement(d, area);
  // Scissor to the image area; the quad in NDC of the whole framebuffer.
  glEnable(GL_SCISSOR_TEST);
  glScissor(GLint(area.x), GLint(fb_h - area.y - area.h), GLsizei(area.w), GLsizei(area.h));
  glViewport(0, 0, fb_w, fb_h);
  glUseProgram(prog_);
  const float cx = (r.x + 0.5f * r.w) / float(fb_w) * 2.f - 1.f;
  const float cy = 1.f - (r.y + 0.5f * r.h) / float(fb_h) * 2.f;
  glUniform2f(glGetUniformLocation(prog_, "u_center"), cx, cy);
  glUniform2f(glGetUniformLocation(prog_, "u_half"), r.w / float(fb_w), r.h / float(fb_h));
  glUniform1f(glGetUniformLocation(prog_, "u_low"), d.low);
  glUniform1f(glGetUniformLocation(prog_, "u_high"), d.high);
  glUniform1f(glGetUniformLocation(prog_, "u_gamma"), d.gamma);
  glUniform1i(glGetUniformLocation(prog_, "u_colormap"), d.colormap);
  glUniform1i(glGetUniformLocation(prog_, "u_image"), 0);
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, tex_);
  glBindVertexArray(vao_);
  glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
  glBindVertexArray(0);
  glUseProgram(0);
  glDisable(GL_SCISSOR_TEST);
}

}  // namespace radstream::viewer
