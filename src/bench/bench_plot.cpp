#include "bench/bench_plot.hpp"

#include <stb_easy_font.h>
#include <stb_image_write.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace radstream::app {
namespace {

using Rgb = std::array<unsigned char, 3>;

class Canvas {
 public:
  Canvas(int w, int h) : w_(w), h_(h), px_(std::size_t(w) * h * 3, 255) {}
  // Drawing outside [x0, x1] x [y0, y1] is dropped (the whole canvas unless set).
  void clip(int x0, int y0, int x1, int y1) { cx0_ = x0, cy0_ = y0, cx1_ = x1, cy1_ = y1; }
  void dot(int x, int y, Rgb c) {
    if (x < std::max(0, cx0_) || y < std::max(0, cy0_) || x >= std::min(w_, cx1_ + 1) ||
        y >= std::min(h_, cy1_ + 1))
      return;
    std::copy(c.begin(), c.end(), px_.begin() + (std::size_t(y) * w_ + x) * 3);
  }
  void rect(int x0, int y0, int x1, int y1, Rgb c) {
    for (int y = std::min(y0, y1); y <= std::max(y0, y1); ++y)
      for (int x = std::min(x0, x1); x <= std::max(x0, x1); ++x) dot(x, y, c);
  }
  void line(double x0, double y0, double x1, double y1, Rgb c, int thick = 1, int dash = 0) {
    const int steps = int(std::max(std::abs(x1 - x0), std::abs(y1 - y0))) + 1;
    for (int i = 0; i <= steps; ++i) {
      if (dash && (i / dash) % 2) continue;
      const double t = double(i) / steps;
      const int x = int(std::lround(x0 + t * (x1 - x0))), y = int(std::lround(y0 + t * (y1 - y0)));
      rect(x - thick / 2, y - thick / 2, x + (thick - 1) / 2, y + (thick - 1) / 2, c);
    }
  }
  // Text from stb_easy_font's quads, scaled; (x, y) is the top left.
  void text(double x, double y, const std::string& s, Rgb c, int scale = 2) {
    std::vector<char> buf(s.begin(), s.end());
    buf.push_back('\0');
    std::vector<float> quads(s.size() * 270 + 64);
    const int n =
        stb_easy_font_print(0, 0, buf.data(), nullptr, quads.data(), int(quads.size() * sizeof(float)));
    for (int q = 0; q < n; ++q) {
      const float* v = quads.data() + q * 16;  // 4 vertices of (x, y, z, rgba) = 4 floats each
      rect(int(x + v[0] * scale), int(y + v[1] * scale), int(x + v[8] * scale) - 1, int(y + v[9] * scale) - 1,
           c);
    }
  }
  static int text_width(const std::string& s, int scale = 2) {
    std::vector<char> buf(s.begin(), s.end());
    buf.push_back('\0');
    return stb_easy_font_width(buf.data()) * scale;
  }
  void save(const std::string& path) const {
    if (!stbi_write_png(path.c_str(), w_, h_, 3, px_.data(), w_ * 3))
      throw IoError(path + ": cannot write the plot");
  }

 private:
  int w_, h_;
  int cx0_ = 0, cy0_ = 0, cx1_ = 1 << 30, cy1_ = 1 << 30;
  std::vector<unsigned char> px_;
};

struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points;  // parameter, median frame ms
};

std::string number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, v >= 100 || v == std::floor(v) ? "%.0f" : (v >= 1 ? "%.1f" : "%.2g"), v);
  return b;
}

// One plot: log-log, the series, and (work_power > 0) the work line of that slope through the first series'
// middle point. x ticks at the data's x values, or at decades when x_decades.
void draw(const std::string& path, const std::string& title, const std::string& xlabel,
          const std::vector<Series>& series, double work_power,
          const std::string& ylabel = "frame ms (median)", bool x_decades = false) {
  constexpr int W = 760, H = 480, L = 90, R = 30, T = 64, B = 70;
  Canvas c(W, H);
  double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
  for (const auto& s : series)
    for (const auto& [x, y] : s.points)
      xmin = std::min(xmin, x), xmax = std::max(xmax, x), ymin = std::min(ymin, y), ymax = std::max(ymax, y);
  const double lx0 = x_decades ? std::floor(std::log10(xmin)) : std::log10(xmin) - 0.1;
  const double lx1 = x_decades ? std::ceil(std::log10(xmax)) : std::log10(xmax) + 0.1;
  const double ly0 = std::floor(std::log10(ymin) - 0.05), ly1 = std::ceil(std::log10(ymax) + 0.05);
  const auto px = [&](double x) { return L + (std::log10(x) - lx0) / (lx1 - lx0) * (W - L - R); };
  const auto py = [&](double y) { return H - B - (std::log10(y) - ly0) / (ly1 - ly0) * (H - T - B); };
  const Rgb black{0, 0, 0}, grey{200, 200, 200}, dark{90, 90, 90};
  for (double d = ly0; d <= ly1 + 1e-9; d += 1) {  // decades
    c.line(L, py(std::pow(10, d)), W - R, py(std::pow(10, d)), grey);
    const std::string t = number(std::pow(10, d));
    c.text(L - 10 - Canvas::text_width(t), py(std::pow(10, d)) - 7, t, dark);
  }
  std::vector<double> xs;
  if (x_decades)
    for (double d = lx0; d <= lx1 + 1e-9; d += 1) xs.push_back(std::pow(10, d));
  else
    for (const auto& s : series)
      for (const auto& p : s.points) xs.push_back(p.first);
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  for (double x : xs) {
    c.line(px(x), T, px(x), H - B, grey, 1, 4);
    char e[16];
    std::snprintf(e, sizeof e, "1e%d", int(std::lround(std::log10(x))));
    const std::string t = x_decades ? std::string(e) : number(x);
    c.text(px(x) - Canvas::text_width(t) / 2.0, H - B + 8, t, dark);
  }
  c.line(L, H - B, W - R, H - B, black, 2);
  c.line(L, T, L, H - B, black, 2);
  c.text(L, 6, title, black);
  c.text((W - Canvas::text_width(xlabel)) / 2.0, H - 30, xlabel, black);
  c.text(8, 34, ylabel, black);
  const Rgb colours[] = {{20, 90, 200},  {210, 80, 20}, {20, 150, 60},
                         {150, 40, 160}, {0, 150, 160}, {120, 100, 20}};
  int legend_x = W - R - 250;  // right-aligned to the widest label
  for (const auto& s : series) legend_x = std::min(legend_x, W - R - 8 - Canvas::text_width(s.label));
  legend_x = std::max(legend_x, L + 10);
  int k = 0;
  for (const auto& s : series) {
    const Rgb col = colours[k % 6];
    for (std::size_t i = 0; i + 1 < s.points.size(); ++i)
      c.line(px(s.points[i].first), py(s.points[i].second), px(s.points[i + 1].first),
             py(s.points[i + 1].second), col, 3);
    for (const auto& [x, y] : s.points)
      c.rect(int(px(x)) - 4, int(py(y)) - 4, int(px(x)) + 4, int(py(y)) + 4, col);
    c.text(legend_x, T + 8 + 22 * k, s.label, col);
    ++k;
  }
  if (work_power > 0 && !series.empty() &&
      series[0].points.size() >= 2) {  // the work line through the first series' middle point
    const auto [xm, ym] = series[0].points[series[0].points.size() / 2];
    const auto at = [&](double x) { return ym * std::pow(x / xm, work_power); };
    c.clip(L, T, W - R, H - B);
    c.line(px(xs.front()), py(at(xs.front())), px(xs.back()), py(at(xs.back())), dark, 1, 6);
    c.clip(0, 0, W, H);
    c.text(legend_x, T + 8 + 22 * k, work_power == 1 ? "- - grows like x" : "- - grows like x^2", dark);
  }
  c.save(path);
}

// The sweep cases' time-versus-error curves: per geometry and direction, the settings no other setting beats
// on both time and error (the front a user picks from), one PNG per case.
std::vector<std::string> plot_sweeps(const nlohmann::json& js, const std::filesystem::path& base,
                                     const std::filesystem::path& dir) {
  std::vector<std::string> written;
  const std::string device = js.value("gpu", std::string("?"));
  for (const auto& c : js.value("cases", nlohmann::json::array())) {
    if (c.value("kind", "") != "nufft-sweep") continue;
    std::map<std::string, std::vector<std::pair<double, double>>> by_curve;
    for (const auto& r : c["rows"]) {
      const double e = r.value("relative_error", 0.0), ms = r.value("ms", 0.0);
      if (e > 0 && ms > 0)
        by_curve[r.value("geometry", "") + ", " + r.value("direction", "").substr(0, 7)].push_back({e, ms});
    }
    std::vector<Series> series;
    for (auto& [label, pts] : by_curve) {
      std::vector<std::pair<double, double>> front;
      for (const auto& p : pts)
        if (std::none_of(pts.begin(), pts.end(),
                         [&](const auto& q) { return q != p && q.first <= p.first && q.second <= p.second; }))
          front.push_back(p);
      std::sort(front.begin(), front.end());
      series.push_back({label, front});
    }
    if (series.empty()) continue;
    const std::string name = c.value("case", "sweep");
    const std::string path = (dir / (base.stem().string() + "-" + name + ".png")).string();
    draw(path, "radstream " + name + ": time vs accuracy - " + device,
         "relative error against the exact NUDFT (W 2..8, sigma 1.25 / 2)", series, 0,
         "ms per transform (median)", true);
    written.push_back(path);
  }
  return written;
}

}  // namespace

std::vector<std::string> plot_bench_scaling(const std::string& json_path, const std::string& out_dir) {
  std::ifstream in(json_path);
  if (!in) throw IoError(json_path + ": cannot read the benchmark result");
  nlohmann::json js;
  try {
    js = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw IoError(json_path + ": not a benchmark result (" + e.what() + ")");
  }
  // name -> (parameter, series): R7-coils-8 -> coils 8; R1 is 32 coils, 256 spokes, matrix 256.
  std::map<std::string, std::map<std::string, std::vector<std::pair<double, double>>>> plots;
  for (const auto& c : js.value("cases", nlohmann::json::array())) {
    const std::string name = c.value("case", "");
    if (!c.contains("frame_ms")) continue;
    const double ms = c["frame_ms"].value("median", 0.0);
    if (!(ms > 0)) continue;
    const std::string backend = c.value("backend", "");
    if (name == "R1") {
      plots["coils"]["gridding " + backend].push_back({32, ms});
      plots["spokes"]["gridding " + backend].push_back({256, ms});
      plots["matrix"]["gridding " + backend].push_back({256, ms});
      continue;
    }
    for (const auto& [prefix, param, method] :
         std::vector<std::array<std::string, 3>>{{"R7-fbp-spokes-", "spokes", "fbp"},
                                                 {"R7-coils-", "coils", "gridding"},
                                                 {"R7-spokes-", "spokes", "gridding"},
                                                 {"R7-matrix-", "matrix", "gridding"}})
      if (name.rfind(prefix, 0) == 0) {
        plots[param][method + " " + backend].push_back({std::stod(name.substr(prefix.size())), ms});
        break;
      }
  }
  const std::filesystem::path base(json_path);
  const std::filesystem::path dir = out_dir.empty() ? base.parent_path() : std::filesystem::path(out_dir);
  std::vector<std::string> written = plot_sweeps(js, base, dir);
  if (plots.empty() && written.empty())
    throw ConfigError(
        json_path +
        ": no scaling case (R7-*) with a frame time and no nufft-sweep case; run `radstream bench` "
        "with them first");
  const std::string device = js.value("gpu", std::string("?"));
  for (auto& [param, by_series] : plots) {
    std::vector<Series> series;
    for (auto& [label, pts] : by_series) {
      std::sort(pts.begin(), pts.end());
      if (pts.size() >= 2) series.push_back({label, pts});
    }
    if (series.empty()) continue;
    std::sort(series.begin(), series.end(),
              [](const Series& a, const Series& b) { return a.label > b.label; });
    const std::string path = (dir / (base.stem().string() + "-scaling-" + param + ".png")).string();
    const std::string x = param == "matrix" ? "matrix N (N x N image; 256 spokes x 2N samples)"
                                            : param + (param == "coils" ? " (256 spokes x 512 samples, 256^2)"
                                                                        : " (512 samples x 32 coils, 256^2)");
    draw(path, "radstream R7: frame time vs " + param + " - " + device, x, series,
         param == "matrix" ? 2.0 : 1.0);
    written.push_back(path);
  }
  return written;
}

}  // namespace radstream::app
