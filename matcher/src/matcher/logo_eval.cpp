// The generated logo evaluation set and its scoring.
#include "fm/matcher/logo_eval.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <sstream>
#include <unistd.h>

#include "fm/core/timer.h"

namespace fm::matcher {

namespace fs = std::filesystem;

bool LogoEvalOptions::Check(std::string* why) const {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (scenes < 1) return bad("scenes must be >= 1");
  if (!(negative_fraction >= 0 && negative_fraction <= 1))
    return bad("negatives must be in [0, 1]");
  if (!(two_logo_fraction >= 0 && repeat_fraction >= 0 && two_logo_fraction + repeat_fraction <= 1))
    return bad("two-logo and repeat fractions must be >= 0 and sum to at most 1");
  if (scene_width < 160 || scene_height < 120) return bad("scenes must be at least 160x120");
  if (min_logo_width < 16 || max_logo_width < min_logo_width)
    return bad("logo widths must satisfy 16 <= min <= max");
  if (max_logo_width > scene_width / 2 || max_logo_width > scene_height / 2)
    return bad("the largest logo must fit twice into the scene (max width <= half the scene)");
  if (!(max_rotation_deg >= 0 && max_rotation_deg <= 180))
    return bad("rotation must be in [0, 180]");
  if (!(perspective >= 0 && perspective < 0.3)) return bad("perspective must be in [0, 0.3)");
  if (!(occlusion_probability >= 0 && occlusion_probability <= 1))
    return bad("occlusion probability must be in [0, 1]");
  if (!library.Check(why)) return false;
  if (!query.Check(why)) return false;
  return true;
}

std::string DefaultSampleDir() {
  if (const char* env = std::getenv("FM_SAMPLE_DATA")) return env;
  return "/usr/share/doc/opencv-doc/examples/data";
}

namespace {

cv::Mat ReadSample(const std::string& dir, const std::string& file, int flags = cv::IMREAD_COLOR) {
  const std::string path = (fs::path(dir) / file).string();
  cv::Mat m = cv::imread(path, flags);
  if (m.empty())
    throw LogoLibraryError("evaluation data missing: cannot read " + path +
                           " (install opencv-doc or set --data / FM_SAMPLE_DATA)");
  return m;
}

cv::Mat FitSide(const cv::Mat& m, int side) {
  const int s = std::max(m.cols, m.rows);
  if (s <= side) return m;
  cv::Mat out;
  const double f = static_cast<double>(side) / s;
  cv::resize(m, out, cv::Size(), f, f, cv::INTER_AREA);
  return out;
}

EvalLogo Opaque(const std::string& name, const std::string& origin, const cv::Mat& bgr) {
  EvalLogo l;
  l.name = name;
  l.origin = origin;
  l.image = bgr;
  l.mask = cv::Mat(bgr.size(), CV_8U, cv::Scalar(255));
  return l;
}

// Crop given as fractions of the image (x, y, w, h).
EvalLogo Crop(const std::string& dir, const std::string& file, const std::string& name,
              double fx, double fy, double fw, double fh) {
  cv::Mat m = ReadSample(dir, file);
  cv::Rect r(static_cast<int>(fx * m.cols), static_cast<int>(fy * m.rows),
             static_cast<int>(fw * m.cols), static_cast<int>(fh * m.rows));
  r &= cv::Rect(0, 0, m.cols, m.rows);
  return Opaque(name, "crop:" + file, FitSide(m(r).clone(), 320));
}

void Text(cv::Mat& m, const std::string& s, cv::Point org, int font, double scale,
          cv::Scalar color, int thick) {
  cv::putText(m, s, org, font, scale, color, thick, cv::LINE_AA);
}

std::vector<EvalLogo> DrawnLogos() {
  std::vector<EvalLogo> out;
  {
    cv::Mat m(200, 360, CV_8UC3, cv::Scalar(255, 255, 255));
    cv::circle(m, {70, 100}, 55, cv::Scalar(30, 30, 220), cv::FILLED, cv::LINE_AA);
    cv::circle(m, {70, 100}, 25, cv::Scalar(255, 255, 255), cv::FILLED, cv::LINE_AA);
    Text(m, "ACME", {140, 120}, cv::FONT_HERSHEY_DUPLEX, 1.9, cv::Scalar(20, 20, 20), 5);
    cv::rectangle(m, {140, 140}, {340, 150}, cv::Scalar(30, 30, 220), cv::FILLED);
    out.push_back(Opaque("acme", "drawn", m));
  }
  {
    cv::Mat m(210, 380, CV_8UC3, cv::Scalar(140, 70, 20));
    std::vector<cv::Point> mount = {{20, 150}, {80, 40}, {120, 110}, {160, 60}, {230, 150}};
    cv::fillPoly(m, std::vector<std::vector<cv::Point>>{mount}, cv::Scalar(255, 255, 255),
                 cv::LINE_AA);
    Text(m, "NORD", {240, 95}, cv::FONT_HERSHEY_TRIPLEX, 1.3, cv::Scalar(255, 255, 255), 3);
    Text(m, "WIND", {240, 150}, cv::FONT_HERSHEY_TRIPLEX, 1.3, cv::Scalar(80, 220, 255), 3);
    Text(m, "outdoor gear", {30, 195}, cv::FONT_HERSHEY_SIMPLEX, 0.8, cv::Scalar(230, 230, 230),
         2);
    out.push_back(Opaque("nordwind", "drawn", m));
  }
  {
    cv::Mat m(200, 340, CV_8UC3, cv::Scalar(15, 15, 15));
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c)
        if ((r * 3 + c * 5) % 3 != 0)
          cv::rectangle(m, {20 + c * 32, 30 + r * 36}, {46 + c * 32, 60 + r * 36},
                        cv::Scalar(0, 210, 255), cv::FILLED);
    Text(m, "QUBIT", {160, 115}, cv::FONT_HERSHEY_COMPLEX, 1.25, cv::Scalar(0, 210, 255), 3);
    out.push_back(Opaque("qubit", "drawn", m));
  }
  {
    cv::Mat m(220, 360, CV_8UC3, cv::Scalar(235, 250, 235));
    for (int r = 80; r > 10; r -= 18)
      cv::circle(m, {100, 110}, r, cv::Scalar(40, 150, 40), 6, cv::LINE_AA);
    std::vector<cv::Point> star;
    for (int i = 0; i < 10; ++i) {
      const double a = CV_PI / 5 * i - CV_PI / 2, rr = (i % 2) ? 14 : 34;
      star.emplace_back(100 + static_cast<int>(rr * std::cos(a)),
                        110 + static_cast<int>(rr * std::sin(a)));
    }
    cv::fillPoly(m, std::vector<std::vector<cv::Point>>{star}, cv::Scalar(20, 90, 200),
                 cv::LINE_AA);
    Text(m, "HELIX", {195, 105}, cv::FONT_HERSHEY_SIMPLEX, 1.3, cv::Scalar(30, 100, 30), 4);
    Text(m, "LABS", {205, 160}, cv::FONT_HERSHEY_PLAIN, 2.6, cv::Scalar(20, 90, 200), 3);
    out.push_back(Opaque("helix", "drawn", m));
  }
  {
    cv::Mat m(200, 360, CV_8UC3, cv::Scalar(20, 120, 245));
    std::vector<cv::Point> z = {{20, 30},  {140, 30},  {140, 60}, {70, 150},
                                {140, 150}, {140, 180}, {20, 180}, {20, 150},
                                {90, 60},  {20, 60}};
    cv::fillPoly(m, std::vector<std::vector<cv::Point>>{z}, cv::Scalar(255, 255, 255),
                 cv::LINE_AA);
    Text(m, "ZETA", {160, 110}, cv::FONT_HERSHEY_DUPLEX, 1.7, cv::Scalar(255, 255, 255), 4);
    Text(m, "since 1987", {165, 160}, cv::FONT_HERSHEY_SCRIPT_SIMPLEX, 1.0,
         cv::Scalar(60, 30, 0), 2);
    out.push_back(Opaque("zeta", "drawn", m));
  }
  {
    cv::Mat m(220, 360, CV_8UC3, cv::Scalar(250, 250, 250));
    for (int i = 0; i < 5; ++i) {
      std::vector<cv::Point> d = {{30 + i * 26, 110}, {43 + i * 26, 70 + (i % 2) * 20},
                                  {56 + i * 26, 110}, {43 + i * 26, 150 - (i % 2) * 20}};
      cv::fillPoly(m, std::vector<std::vector<cv::Point>>{d},
                   i % 2 ? cv::Scalar(160, 40, 120) : cv::Scalar(40, 40, 40), cv::LINE_AA);
    }
    Text(m, "KAPPA", {180, 100}, cv::FONT_HERSHEY_COMPLEX_SMALL, 2.0, cv::Scalar(160, 40, 120), 3);
    Text(m, "AIR", {200, 165}, cv::FONT_HERSHEY_TRIPLEX, 1.6, cv::Scalar(40, 40, 40), 3);
    cv::line(m, {20, 190}, {340, 190}, cv::Scalar(160, 40, 120), 4, cv::LINE_AA);
    out.push_back(Opaque("kappa", "drawn", m));
  }
  return out;
}

const char* kBackgrounds[] = {"building.jpg", "home.jpg",        "fruits.jpg",   "aero1.jpg",
                              "leuvenA.jpg",  "board.jpg",       "messi5.jpg",   "stuff.jpg",
                              "HappyFish.jpg", "orange.jpg",     "apple.jpg",    "rubberwhale1.png",
                              "basketball1.png", "aloeL.jpg",    "pic3.png",
                              "right05.jpg",  "Blender_Suzanne1.jpg"};

// Words and shapes that are not in the library, drawn into negative scenes.
EvalLogo RandomDistractor(cv::RNG& rng) {
  static const char* words[] = {"DELTA", "OMNI", "VEGA", "SOLAR", "PIXEL", "ORBIT", "MAPLE",
                                "TERRA", "LUMEN", "BOREAL"};
  const int fonts[] = {cv::FONT_HERSHEY_SIMPLEX, cv::FONT_HERSHEY_DUPLEX, cv::FONT_HERSHEY_COMPLEX,
                       cv::FONT_HERSHEY_TRIPLEX, cv::FONT_HERSHEY_PLAIN};
  auto color = [&] {
    return cv::Scalar(rng.uniform(0, 256), rng.uniform(0, 256), rng.uniform(0, 256));
  };
  cv::Mat m(200, 360, CV_8UC3, color());
  const int shapes = rng.uniform(1, 4);
  for (int i = 0; i < shapes; ++i) {
    const cv::Point c(rng.uniform(30, 130), rng.uniform(40, 160));
    if (rng.uniform(0, 2))
      cv::circle(m, c, rng.uniform(15, 50), color(), rng.uniform(0, 2) ? cv::FILLED : 5,
                 cv::LINE_AA);
    else
      cv::rectangle(m, c - cv::Point(25, 25), c + cv::Point(rng.uniform(10, 50), 25), color(),
                    cv::FILLED);
  }
  Text(m, words[rng.uniform(0, 10)], {140, rng.uniform(80, 130)}, fonts[rng.uniform(0, 5)],
       1.2 + rng.uniform(0.0, 0.6), color(), rng.uniform(2, 5));
  return Opaque("distractor", "drawn", m);
}

std::array<cv::Point2f, 4> MapQuad(const cv::Mat& H, double w, double h) {
  std::vector<cv::Point2f> src = {{0, 0}, {static_cast<float>(w), 0},
                                  {static_cast<float>(w), static_cast<float>(h)},
                                  {0, static_cast<float>(h)}},
                           dst;
  cv::perspectiveTransform(src, dst, H);
  return {dst[0], dst[1], dst[2], dst[3]};
}

// Pastes `logo` into `scene` under a random homography; returns the ground truth, or false when
// no free place was found.
bool Paste(cv::Mat& scene, const EvalLogo& logo, std::vector<cv::Rect>& taken, cv::RNG& rng,
           const LogoEvalOptions& o, EvalInstance* inst) {
  const double w = logo.image.cols, h = logo.image.rows;
  const double lo = std::log(o.min_logo_width), hi = std::log(o.max_logo_width);
  for (int attempt = 0; attempt < 60; ++attempt) {
    const double tw = std::exp(rng.uniform(lo, hi));
    const double th = tw * h / w;
    const double ang = rng.uniform(-o.max_rotation_deg, o.max_rotation_deg) * CV_PI / 180;
    const double cx = rng.uniform(0.0, static_cast<double>(scene.cols));
    const double cy = rng.uniform(0.0, static_cast<double>(scene.rows));
    const double ca = std::cos(ang), sa = std::sin(ang);
    std::vector<cv::Point2f> dst;
    const double px[4] = {-tw / 2, tw / 2, tw / 2, -tw / 2},
                 py[4] = {-th / 2, -th / 2, th / 2, th / 2};
    for (int i = 0; i < 4; ++i) {
      const double jx = rng.uniform(-o.perspective, o.perspective) * tw;
      const double jy = rng.uniform(-o.perspective, o.perspective) * tw;
      dst.emplace_back(static_cast<float>(cx + ca * px[i] - sa * py[i] + jx),
                       static_cast<float>(cy + sa * px[i] + ca * py[i] + jy));
    }
    const cv::Rect box = cv::boundingRect(dst);
    const int margin = 4;
    if (box.x < margin || box.y < margin || box.br().x > scene.cols - margin ||
        box.br().y > scene.rows - margin)
      continue;
    bool clash = false;
    for (const auto& t : taken)
      if ((t & box).area() > 0) clash = true;
    if (clash) continue;
    std::vector<cv::Point2f> src = {{0, 0}, {static_cast<float>(w), 0},
                                    {static_cast<float>(w), static_cast<float>(h)},
                                    {0, static_cast<float>(h)}};
    const cv::Mat H = cv::getPerspectiveTransform(src, dst);
    // Optical low-pass before shrinking (a camera integrates over each pixel).
    // The blurred copies go to fresh buffers: `logo` is shared by every scene of the set and
    // must stay as it is (blurring into a header of it would blur it again in each later scene).
    cv::Mat img, mask;
    const double scale = tw / w;
    if (scale < 0.8) {
      const double sigma = 0.45 / scale;
      cv::GaussianBlur(logo.image, img, cv::Size(), sigma);
      cv::GaussianBlur(logo.mask, mask, cv::Size(), sigma * 0.5);
    } else {
      img = logo.image;
      mask = logo.mask;
    }
    cv::Mat wimg, wmask;
    cv::warpPerspective(img, wimg, H, scene.size(), cv::INTER_LINEAR, cv::BORDER_CONSTANT);
    cv::warpPerspective(mask, wmask, H, scene.size(), cv::INTER_LINEAR, cv::BORDER_CONSTANT);
    cv::Mat a, sf, lf;
    wmask.convertTo(a, CV_32F, 1.0 / 255);
    cv::cvtColor(a, a, cv::COLOR_GRAY2BGR);
    scene.convertTo(sf, CV_32FC3);
    wimg.convertTo(lf, CV_32FC3);
    cv::Mat one(a.size(), CV_32FC3, cv::Scalar::all(1));
    sf = sf.mul(one - a) + lf.mul(a);
    sf.convertTo(scene, CV_8UC3);
    inst->name = logo.name;
    inst->quad = MapQuad(H, w, h);
    inst->width_px = 0.5 * (cv::norm(inst->quad[1] - inst->quad[0]) +
                            cv::norm(inst->quad[2] - inst->quad[3]));
    taken.push_back(box + cv::Size(8, 8) - cv::Point(4, 4));
    return true;
  }
  return false;
}

void Occlude(cv::Mat& scene, EvalInstance& inst, cv::RNG& rng) {
  std::vector<cv::Point2f> q(inst.quad.begin(), inst.quad.end());
  const cv::Rect box = cv::boundingRect(q);
  const double frac = rng.uniform(0.10, 0.25);
  const double aspect = rng.uniform(0.5, 2.0);
  const int ow = std::max(4, static_cast<int>(std::sqrt(frac * box.area() * aspect)));
  const int oh = std::max(4, static_cast<int>(std::sqrt(frac * box.area() / aspect)));
  // Anchor on a side of the box so the patch covers an edge of the logo, as a real occluder.
  int x, y;
  switch (rng.uniform(0, 4)) {
    case 0: x = box.x - ow / 3; y = rng.uniform(box.y, std::max(box.y + 1, box.br().y - oh)); break;
    case 1:
      x = box.br().x - 2 * ow / 3;
      y = rng.uniform(box.y, std::max(box.y + 1, box.br().y - oh));
      break;
    case 2: x = rng.uniform(box.x, std::max(box.x + 1, box.br().x - ow)); y = box.y - oh / 3; break;
    default:
      x = rng.uniform(box.x, std::max(box.x + 1, box.br().x - ow));
      y = box.br().y - 2 * oh / 3;
      break;
  }
  cv::Rect r(x, y, ow, oh);
  r &= cv::Rect(0, 0, scene.cols, scene.rows);
  if (r.area() <= 0) return;
  const cv::Scalar c(rng.uniform(0, 256), rng.uniform(0, 256), rng.uniform(0, 256));
  if (rng.uniform(0, 2))
    cv::rectangle(scene, r, c, cv::FILLED);
  else
    cv::ellipse(scene, (r.tl() + r.br()) / 2, r.size() / 2, rng.uniform(0.0, 180.0), 0, 360, c,
                cv::FILLED, cv::LINE_AA);
  inst.occluded = true;
}

void Photometric(cv::Mat& scene, cv::RNG& rng) {
  cv::Mat f;
  scene.convertTo(f, CV_32FC3);
  const double gain = rng.uniform(0.6, 1.4), bias = rng.uniform(-30.0, 30.0);
  const double gx = rng.uniform(-0.4, 0.4), gy = rng.uniform(-0.4, 0.4);
  cv::Mat ramp(scene.size(), CV_32F);
  for (int y = 0; y < ramp.rows; ++y) {
    float* p = ramp.ptr<float>(y);
    for (int x = 0; x < ramp.cols; ++x)
      p[x] = static_cast<float>(gain * (1 + gx * (static_cast<double>(x) / ramp.cols - 0.5) +
                                        gy * (static_cast<double>(y) / ramp.rows - 0.5)));
  }
  cv::Mat ramp3;
  cv::cvtColor(ramp, ramp3, cv::COLOR_GRAY2BGR);
  f = f.mul(ramp3) + cv::Scalar::all(bias);
  if (rng.uniform(0, 2)) cv::GaussianBlur(f, f, cv::Size(), rng.uniform(0.3, 1.5));
  cv::Mat noise(f.size(), CV_32FC3);
  rng.fill(noise, cv::RNG::NORMAL, 0, rng.uniform(0.0, 8.0));
  f += noise;
  f.convertTo(scene, CV_8UC3);  // saturates
}

uint64_t Mix(uint64_t a, uint64_t b) {
  uint64_t z = a * 0x9E3779B97F4A7C15ull + b + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const double pos = p * (v.size() - 1);
  const auto i = static_cast<std::size_t>(pos);
  const double f = pos - i;
  return i + 1 < v.size() ? v[i] * (1 - f) + v[i + 1] * f : v[i];
}

// Logistic regression of correctness on (1, ln inliers, inlier ratio), Newton's method with a
// small ridge. Returns {a, b, c}.
std::array<double, 3> FitLogistic(const std::vector<std::array<double, 3>>& x,
                                  const std::vector<int>& y) {
  std::array<double, 3> w = {0, 0, 0};
  for (int it = 0; it < 50; ++it) {
    cv::Matx33d Hm = cv::Matx33d::eye() * 1e-3;
    cv::Vec3d g(0, 0, 0);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double z = w[0] * x[i][0] + w[1] * x[i][1] + w[2] * x[i][2];
      const double p = 1 / (1 + std::exp(-z));
      for (int a = 0; a < 3; ++a) {
        g[a] += (p - y[i]) * x[i][a];
        for (int b = 0; b < 3; ++b) Hm(a, b) += p * (1 - p) * x[i][a] * x[i][b];
      }
    }
    for (int a = 0; a < 3; ++a) g[a] += 1e-3 * w[a];
    const cv::Vec3d step = Hm.solve(g, cv::DECOMP_SVD);
    for (int a = 0; a < 3; ++a) w[a] -= step[a];
    if (cv::norm(step) < 1e-9) break;
  }
  return w;
}

}  // namespace

std::vector<EvalLogo> MakeEvalLogos(const std::string& data_dir) {
  const std::string dir = data_dir.empty() ? DefaultSampleDir() : data_dir;
  std::vector<EvalLogo> out;
  {
    cv::Mat m = ReadSample(dir, "opencv-logo.png", cv::IMREAD_UNCHANGED);
    m = FitSide(m, 320);
    EvalLogo l;
    l.name = "opencv";
    l.origin = "sample:opencv-logo.png";
    if (m.channels() == 4) {
      std::vector<cv::Mat> ch;
      cv::split(m, ch);
      l.mask = ch[3].clone();
      cv::Mat bgr;
      cv::merge(std::vector<cv::Mat>{ch[0], ch[1], ch[2]}, bgr);
      // The library keeps the logo on white; in scenes the transparent part shows the background.
      cv::Mat white(bgr.size(), CV_8UC3, cv::Scalar::all(255));
      bgr.copyTo(white, l.mask);
      l.image = white;
    } else {
      cv::Mat bgr = m.channels() == 1 ? cv::Mat() : m;
      if (m.channels() == 1) cv::cvtColor(m, bgr, cv::COLOR_GRAY2BGR);
      l.image = bgr;
      l.mask = cv::Mat(bgr.size(), CV_8U, cv::Scalar(255));
    }
    out.push_back(l);
  }
  out.push_back(
      Opaque("linux", "sample:LinuxLogo.jpg", FitSide(ReadSample(dir, "LinuxLogo.jpg"), 320)));
  out.push_back(Opaque("windows", "sample:WindowsLogo.jpg",
                       FitSide(ReadSample(dir, "WindowsLogo.jpg"), 320)));
  out.push_back(Opaque("box", "sample:box.png", FitSide(ReadSample(dir, "box.png"), 320)));
  out.push_back(Crop(dir, "baboon.jpg", "baboon", 0.15, 0.05, 0.7, 0.5));
  out.push_back(Crop(dir, "graf1.png", "graffiti", 0.3, 0.25, 0.4, 0.45));
  out.push_back(Crop(dir, "starry_night.jpg", "starry", 0.05, 0.05, 0.45, 0.5));
  out.push_back(Crop(dir, "butterfly.jpg", "butterfly", 0.2, 0.2, 0.6, 0.6));
  out.push_back(Crop(dir, "squirrel_cls.jpg", "squirrel", 0.2, 0.15, 0.6, 0.7));
  for (auto& l : DrawnLogos()) out.push_back(std::move(l));
  return out;
}

cv::Mat LibraryImage(const EvalLogo& logo) {
  if (cv::countNonZero(logo.mask != 255) == 0) return logo.image;
  cv::Mat bgra;
  std::vector<cv::Mat> ch;
  cv::split(logo.image, ch);
  ch.push_back(logo.mask);
  cv::merge(ch, bgra);
  return bgra;
}

std::vector<std::pair<std::string, cv::Mat>> LoadEvalBackgrounds(const std::string& data_dir) {
  const std::string dir = data_dir.empty() ? DefaultSampleDir() : data_dir;
  std::vector<std::pair<std::string, cv::Mat>> out;
  for (const char* f : kBackgrounds) {
    cv::Mat m = cv::imread((fs::path(dir) / f).string(), cv::IMREAD_COLOR);
    if (!m.empty()) out.emplace_back(f, m);
  }
  if (out.size() < 5)
    throw LogoLibraryError("evaluation data missing: fewer than 5 background photographs in " +
                           dir + " (install opencv-doc or set --data / FM_SAMPLE_DATA)");
  return out;
}

EvalScene MakeEvalScene(const std::vector<const EvalLogo*>& logos,
                        const std::pair<std::string, cv::Mat>& background, bool repeat_first,
                        bool distractors, cv::RNG& rng, const LogoEvalOptions& o) {
  EvalScene s;
  s.background = background.first;
  const cv::Mat& bg = background.second;
  const double f = std::max(static_cast<double>(o.scene_width) / bg.cols,
                            static_cast<double>(o.scene_height) / bg.rows) *
                   rng.uniform(1.0, 1.5);
  cv::Mat big;
  cv::resize(bg, big, cv::Size(), f, f, f < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
  const int x0 = rng.uniform(0, big.cols - o.scene_width + 1);
  const int y0 = rng.uniform(0, big.rows - o.scene_height + 1);
  s.image = big(cv::Rect(x0, y0, o.scene_width, o.scene_height)).clone();
  if (rng.uniform(0, 2)) cv::flip(s.image, s.image, 1);

  std::vector<cv::Rect> taken;
  std::vector<const EvalLogo*> todo = logos;
  if (repeat_first && !logos.empty()) todo.push_back(logos[0]);
  for (const EvalLogo* l : todo) {
    EvalInstance inst;
    if (Paste(s.image, *l, taken, rng, o, &inst)) s.truth.push_back(inst);
  }
  if (distractors) {
    s.distractors = true;
    const int n = rng.uniform(1, 3);
    for (int i = 0; i < n; ++i) {
      EvalInstance ignored;
      Paste(s.image, RandomDistractor(rng), taken, rng, o, &ignored);
    }
  }
  for (auto& inst : s.truth)
    if (rng.uniform(0.0, 1.0) < o.occlusion_probability) Occlude(s.image, inst, rng);
  Photometric(s.image, rng);
  return s;
}

double QuadCornerError(const std::array<cv::Point2f, 4>& a, const std::array<cv::Point2f, 4>& b) {
  double e = 0;
  for (int i = 0; i < 4; ++i) e += cv::norm(a[i] - b[i]);
  return e / 4;
}

double QuadOverlap(const std::array<cv::Point2f, 4>& a, const std::array<cv::Point2f, 4>& b) {
  std::vector<cv::Point2f> pa(a.begin(), a.end()), pb(b.begin(), b.end()), hull_a, hull_b, inter;
  cv::convexHull(pa, hull_a);
  cv::convexHull(pb, hull_b);
  const double ia = cv::contourArea(hull_a), ib = cv::contourArea(hull_b);
  if (ia <= 0 || ib <= 0) return 0;
  const float i = cv::intersectConvexConvex(hull_a, hull_b, inter, true);
  if (i <= 0) return 0;
  return i / (ia + ib - i);
}

LogoEvalReport RunLogoEval(const LogoEvalOptions& o, std::unique_ptr<core::KnnBackend> backend,
                           const std::function<void(int, int)>& progress,
                           const std::atomic<bool>* cancel) {
  std::string why;
  if (!o.Check(&why)) throw std::invalid_argument("evaluation options: " + why);
  const auto logos = MakeEvalLogos(o.data_dir);
  const auto backgrounds = LoadEvalBackgrounds(o.data_dir);

  // The library lives in a temporary file: the evaluation goes through the same storage as users.
  const fs::path tmp = fs::temp_directory_path() /
                       ("featmatch-logo-eval-" + std::to_string(::getpid()) + "-" +
                        std::to_string(o.seed) + ".db");
  std::error_code ec;
  fs::remove(tmp, ec);
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code e;
      fs::remove(p, e);
    }
  } cleanup{tmp};
  nlohmann::json lib_json = nlohmann::json::array();
  LogoLibrary lib = LogoLibrary::Create(tmp.string(), o.library);
  for (const auto& l : logos) {
    const auto info = lib.Add(l.name, LibraryImage(l), l.origin);
    lib_json.push_back({{"name", l.name},
                        {"origin", l.origin},
                        {"width", info.width},
                        {"height", info.height},
                        {"features", info.num_features}});
  }
  if (backend) lib.SetBackend(std::move(backend));
  if (!o.draw_dir.empty()) fs::create_directories(o.draw_dir, ec);

  struct Det {
    double conf;
    int inliers;
    double ratio;
    bool tp;
  };
  std::vector<Det> dets;
  int positives = 0, negatives = 0, top1 = 0, top1_name = 0, gt_total = 0, tp = 0, fp = 0,
      fp_neg = 0, neg_with_fp = 0, done = 0;
  int neg_distract = 0, neg_distract_fp = 0;
  std::vector<double> corner_err, extract_ms, knn_ms, verify_ms, total_ms;
  // Recall by logo width and by occlusion; per-logo recall and wrong labels.
  const double bins[] = {0, 80, 120, 180, 1e9};
  int bin_gt[4] = {0}, bin_tp[4] = {0}, occ_gt = 0, occ_tp = 0;
  std::map<std::string, std::array<int, 3>> per_logo;  // gt, tp, fp (as this name)
  nlohmann::json scenes_json = nlohmann::json::array();
  bool cancelled = false;

  for (int i = 0; i < o.scenes; ++i) {
    if (cancel && cancel->load()) {
      cancelled = true;
      break;
    }
    cv::RNG rng(Mix(o.seed, static_cast<uint64_t>(i)));
    const bool negative = rng.uniform(0.0, 1.0) < o.negative_fraction;
    const auto& bg = backgrounds[static_cast<std::size_t>(
        rng.uniform(0, static_cast<int>(backgrounds.size())))];
    std::vector<const EvalLogo*> chosen;
    bool repeat = false, distract = false;
    if (negative) {
      distract = rng.uniform(0, 2) == 1;
    } else {
      const int n = static_cast<int>(logos.size());
      const int a = rng.uniform(0, n);
      chosen.push_back(&logos[static_cast<std::size_t>(a)]);
      const double u = rng.uniform(0.0, 1.0);
      if (u < o.two_logo_fraction) {
        int b = rng.uniform(0, n - 1);
        if (b >= a) ++b;
        chosen.push_back(&logos[static_cast<std::size_t>(b)]);
      } else if (u < o.two_logo_fraction + o.repeat_fraction) {
        repeat = true;
      }
    }
    EvalScene scene = MakeEvalScene(chosen, bg, repeat, distract, rng, o);
    core::Stopwatch sw;
    LogoQueryResult r = lib.QueryImage(scene.image, o.query);
    total_ms.push_back(sw.ElapsedMs());
    extract_ms.push_back(r.extract_ms);
    knn_ms.push_back(r.knn_ms);
    verify_ms.push_back(r.verify_ms);

    const bool is_neg = scene.truth.empty();
    std::vector<bool> used(scene.truth.size(), false);
    nlohmann::json sj = {{"index", i}, {"background", scene.background}};
    nlohmann::json tj = nlohmann::json::array(), dj = nlohmann::json::array();
    for (const auto& t : scene.truth) {
      tj.push_back({{"name", t.name}, {"width_px", t.width_px}, {"occluded", t.occluded}});
      per_logo[t.name][0]++;
    }
    int scene_fp = 0;
    bool first_tp = false, first_name = false;
    for (std::size_t di = 0; di < r.detections.size(); ++di) {
      const auto& d = r.detections[di];
      int best = -1;
      double best_iou = 0;
      for (std::size_t ti = 0; ti < scene.truth.size(); ++ti) {
        if (used[ti] || scene.truth[ti].name != d.name) continue;
        const double iou = QuadOverlap(d.quad, scene.truth[ti].quad);
        if (iou > best_iou) best_iou = iou, best = static_cast<int>(ti);
      }
      const bool ok = best >= 0 && best_iou >= 0.5;
      nlohmann::json one = {{"name", d.name},
                            {"confidence", d.confidence},
                            {"inliers", d.inliers},
                            {"inlier_ratio", d.inlier_ratio},
                            {"correct", ok}};
      if (ok) {
        used[static_cast<std::size_t>(best)] = true;
        const auto& t = scene.truth[static_cast<std::size_t>(best)];
        const double err = QuadCornerError(d.quad, t.quad);
        corner_err.push_back(err);
        one["corner_error_px"] = err;
        ++tp;
        per_logo[d.name][1]++;
        for (int b = 0; b < 4; ++b)
          if (t.width_px >= bins[b] && t.width_px < bins[b + 1]) bin_tp[b]++;
        if (t.occluded) ++occ_tp;
      } else {
        ++fp;
        ++scene_fp;
        per_logo[d.name][2]++;
      }
      if (di == 0) {
        first_tp = ok;
        for (const auto& t : scene.truth) first_name |= t.name == d.name;
      }
      dets.push_back({d.confidence, d.inliers, d.inlier_ratio, ok});
      dj.push_back(one);
    }
    for (const auto& t : scene.truth) {
      for (int b = 0; b < 4; ++b)
        if (t.width_px >= bins[b] && t.width_px < bins[b + 1]) bin_gt[b]++;
      if (t.occluded) ++occ_gt;
    }
    gt_total += static_cast<int>(scene.truth.size());
    if (is_neg) {
      ++negatives;
      fp_neg += scene_fp;
      if (scene_fp > 0) ++neg_with_fp;
      if (scene.distractors) {
        ++neg_distract;
        if (scene_fp > 0) ++neg_distract_fp;
      }
    } else {
      ++positives;
      if (first_tp) ++top1;
      if (first_name) ++top1_name;
    }
    sj["truth"] = tj;
    sj["detections"] = dj;
    sj["distractors"] = scene.distractors;
    scenes_json.push_back(sj);

    const bool missed = std::find(used.begin(), used.end(), false) != used.end();
    if (!o.draw_dir.empty() && (missed || scene_fp > 0)) {
      cv::Mat canvas = DrawLogoDetections(scene.image, r.detections);
      for (const auto& t : scene.truth) {
        std::vector<cv::Point> poly;
        for (const auto& p : t.quad) poly.emplace_back(cvRound(p.x), cvRound(p.y));
        cv::polylines(canvas, poly, true, cv::Scalar(255, 0, 0), 1, cv::LINE_AA);
      }
      cv::imwrite((fs::path(o.draw_dir) / ("scene_" + std::to_string(i) + ".png")).string(),
                  canvas);
    }
    ++done;
    if (progress) progress(done, o.scenes);
  }

  LogoEvalReport rep;
  rep.cancelled = cancelled;
  auto frac = [](int a, int b) { return b > 0 ? static_cast<double>(a) / b : std::nan(""); };
  rep.top1 = frac(top1, positives);
  rep.precision = frac(tp, tp + fp);
  rep.recall = frac(tp, gt_total);
  rep.fp_per_negative = frac(fp_neg, negatives);
  rep.false_positive_rate = frac(neg_with_fp, negatives);
  rep.median_corner_error = Percentile(corner_err, 0.5);

  // Calibration: reliability table and a logistic fit of correctness on the same features the
  // confidence model uses.
  nlohmann::json cal = nlohmann::json::array();
  double ece = 0;
  for (int b = 0; b < 10; ++b) {
    const double lo = b / 10.0, hi = (b + 1) / 10.0;
    int n = 0, c = 0;
    double sum = 0;
    for (const auto& d : dets)
      if (d.conf >= lo && (d.conf < hi || (b == 9 && d.conf <= 1))) ++n, c += d.tp, sum += d.conf;
    if (n == 0) continue;
    ece += std::abs(sum / n - static_cast<double>(c) / n) * n;
    cal.push_back({{"from", lo}, {"to", hi}, {"detections", n}, {"mean_confidence", sum / n},
                   {"fraction_correct", static_cast<double>(c) / n}});
  }
  ece = dets.empty() ? std::nan("") : ece / static_cast<double>(dets.size());
  std::vector<std::array<double, 3>> xs;
  std::vector<int> ys;
  for (const auto& d : dets) {
    xs.push_back({1.0, std::log(std::max(1, d.inliers)), d.ratio});
    ys.push_back(d.tp ? 1 : 0);
  }
  const auto fit = FitLogistic(xs, ys);

  using nlohmann::json;
  json bins_json = json::array();
  const char* bin_names[] = {"< 80 px", "80-120 px", "120-180 px", ">= 180 px"};
  for (int b = 0; b < 4; ++b)
    bins_json.push_back({{"width", bin_names[b]}, {"instances", bin_gt[b]},
                         {"recall", frac(bin_tp[b], bin_gt[b])}});
  json logos_json = json::object();
  for (const auto& [n, v] : per_logo)
    logos_json[n] = {{"instances", v[0]}, {"found", v[1]}, {"false_detections", v[2]},
                     {"recall", frac(v[1], v[0])}};
  const auto& qo = o.query;
  rep.json = {
      {"benchmark", "logo retrieval evaluation"},
      {"cancelled", cancelled},
      {"settings",
       {{"seed", o.seed}, {"scenes", o.scenes}, {"negative_fraction", o.negative_fraction},
        {"two_logo_fraction", o.two_logo_fraction}, {"repeat_fraction", o.repeat_fraction},
        {"scene_size", {o.scene_width, o.scene_height}},
        {"logo_width_px", {o.min_logo_width, o.max_logo_width}},
        {"max_rotation_deg", o.max_rotation_deg}, {"perspective", o.perspective},
        {"occlusion_probability", o.occlusion_probability},
        {"sift", json::parse(o.library.sift.ToJson())},
        {"query", {{"k", qo.k}, {"ratio", qo.ratio}, {"min_inliers", qo.min_inliers},
                   {"min_confidence", qo.min_confidence}, {"threshold_px", qo.threshold},
                   {"usac", UsacMethodName(qo.usac)}, {"max_candidates", qo.max_candidates},
                   {"max_instances", qo.max_instances}, {"max_anisotropy", qo.max_anisotropy},
                   {"guided", qo.guided}, {"guided_ratio", qo.guided_ratio},
                   {"guided_min_matches", qo.guided_min_matches},
                   {"guided_radius", qo.guided_radius},
                   {"guided_min_evidence", qo.guided_min_evidence}}},
        {"backend", lib.backend().description()}}},
      {"library", {{"logos", lib_json}, {"descriptors", lib.num_descriptors()}}},
      {"counts", {{"scenes", done}, {"positive_scenes", positives}, {"negative_scenes", negatives},
                  {"negative_scenes_with_distractors", neg_distract},
                  {"logo_instances", gt_total}, {"detections", tp + fp},
                  {"true_detections", tp}, {"false_detections", fp}}},
      {"metrics",
       {{"top1_accuracy", rep.top1}, {"top1_name_accuracy", frac(top1_name, positives)},
        {"precision", rep.precision}, {"recall", rep.recall},
        {"false_positives_per_negative_scene", rep.fp_per_negative},
        {"false_positive_rate", rep.false_positive_rate},
        {"false_positive_rate_distractor_scenes", frac(neg_distract_fp, neg_distract)},
        {"median_corner_error_px", rep.median_corner_error},
        {"p90_corner_error_px", Percentile(corner_err, 0.9)},
        {"recall_occluded", frac(occ_tp, occ_gt)}}},
      {"targets", {{"top1_accuracy", 0.95}, {"false_positive_rate", 0.02},
                   {"median_corner_error_px", 5.0}}},
      {"recall_by_width", bins_json},
      {"per_logo", logos_json},
      {"calibration", {{"bins", cal}, {"expected_calibration_error", ece},
                       {"logistic_fit", {{"a", fit[0]}, {"b_ln_inliers", fit[1]},
                                         {"c_inlier_ratio", fit[2]}}}}},
      {"times_ms", {{"median_query_total", Percentile(total_ms, 0.5)},
                    {"median_extract", Percentile(extract_ms, 0.5)},
                    {"median_knn", Percentile(knn_ms, 0.5)},
                    {"median_verify", Percentile(verify_ms, 0.5)}}},
      {"scenes", scenes_json}};

  std::ostringstream md;
  char buf[512];
  // A share of nothing (no instance in a bin) is not a number; the table says so in words.
  auto share = [](double v) {
    if (std::isnan(v)) return std::string("n/a");
    char s[32];
    std::snprintf(s, sizeof s, "%.1f %%", 100.0 * v);
    return std::string(s);
  };
  md << "# Logo retrieval evaluation\n\n";
  std::snprintf(buf, sizeof buf,
                "Seed %llu, %d scenes (%d with logos, %d without; %d of those with drawn text and "
                "shapes not in the library), %d logo instances, library of %lld logos / %lld "
                "descriptors. Backend: %s.%s\n\n",
                static_cast<unsigned long long>(o.seed), done, positives, negatives, neg_distract,
                gt_total, static_cast<long long>(lib.size()),
                static_cast<long long>(lib.num_descriptors()), lib.backend().description().c_str(),
                cancelled ? " **Stopped before the end.**" : "");
  md << buf;
  md << "| metric | value | target |\n|---|---|---|\n";
  std::snprintf(buf, sizeof buf, "| top-1 accuracy (positive scenes) | %s (%d / %d) | >= 95 %% |\n",
                share(rep.top1).c_str(), top1, positives);
  md << buf;
  std::snprintf(buf, sizeof buf, "| precision (all detections) | %s (%d / %d) | |\n",
                share(rep.precision).c_str(), tp, tp + fp);
  md << buf;
  std::snprintf(buf, sizeof buf, "| recall (all logo instances) | %s (%d / %d) | |\n",
                share(rep.recall).c_str(), tp, gt_total);
  md << buf;
  std::snprintf(buf, sizeof buf,
                "| false positive rate (negative scenes with any detection) | %s (%d / %d) | "
                "<= 2 %% |\n",
                share(rep.false_positive_rate).c_str(), neg_with_fp, negatives);
  md << buf;
  if (std::isnan(rep.fp_per_negative)) {
    std::snprintf(buf, sizeof buf, "| false positives per negative scene | n/a | |\n");
  } else {
    std::snprintf(buf, sizeof buf, "| false positives per negative scene | %.3f | |\n",
                  rep.fp_per_negative);
  }
  md << buf;
  if (corner_err.empty()) {
    std::snprintf(buf, sizeof buf, "| median corner error (true detections) | n/a | <= 5 px |\n");
  } else {
    std::snprintf(buf, sizeof buf,
                  "| median corner error (true detections) | %.2f px (p90 %.2f) | <= 5 px |\n",
                  rep.median_corner_error, Percentile(corner_err, 0.9));
  }
  md << buf;
  md << "\nRecall by logo width in the scene: ";
  for (int b = 0; b < 4; ++b) {
    std::snprintf(buf, sizeof buf, "%s %s (%d)%s", bin_names[b],
                  share(frac(bin_tp[b], bin_gt[b])).c_str(), bin_gt[b], b < 3 ? ", " : ".\n");
    md << buf;
  }
  std::snprintf(buf, sizeof buf, "Recall of occluded instances: %s (%d).\n\n",
                share(frac(occ_tp, occ_gt)).c_str(), occ_gt);
  md << buf;
  md << "| logo | instances | found | false detections |\n|---|---|---|---|\n";
  for (const auto& [n, v] : per_logo) {
    std::snprintf(buf, sizeof buf, "| %s | %d | %d | %d |\n", n.c_str(), v[0], v[1], v[2]);
    md << buf;
  }
  std::snprintf(buf, sizeof buf,
                "\nConfidence calibration over all %zu detections: expected calibration error "
                "%.3f; logistic refit on this set: a = %.2f, b(ln inliers) = %.2f, c(inlier "
                "ratio) = %.2f.\n\n",
                dets.size(), ece, fit[0], fit[1], fit[2]);
  md << buf;
  md << "| confidence | detections | mean confidence | fraction correct |\n|---|---|---|---|\n";
  for (const auto& c : cal) {
    std::snprintf(buf, sizeof buf, "| %.1f-%.1f | %d | %.3f | %.3f |\n", c["from"].get<double>(),
                  c["to"].get<double>(), c["detections"].get<int>(),
                  c["mean_confidence"].get<double>(), c["fraction_correct"].get<double>());
    md << buf;
  }
  std::snprintf(buf, sizeof buf,
                "\nMedian time per scene: %.1f ms (SIFT %.1f, kNN %.2f, verification %.2f).\n",
                Percentile(total_ms, 0.5), Percentile(extract_ms, 0.5), Percentile(knn_ms, 0.5),
                Percentile(verify_ms, 0.5));
  md << buf;
  rep.markdown = md.str();
  return rep;
}

}  // namespace fm::matcher
