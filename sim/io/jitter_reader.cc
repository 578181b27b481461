// Jitter parsing and the empirical distribution's normalization. The knots
// define X by linear interpolation of the sorted samples at u * (m - 1); the
// mean of that distribution is the trapezoid average of the knots, which the
// normalization divides out so that E[X] = 1 exactly.
#include "sim/io/jitter_reader.h"
#include "sim/io/units.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "fleetsim/file_read.h"

namespace fleetsim {

bool parse_empirical_times(std::string_view csv, Jitter* out, std::string* error) {
  std::vector<double> v;
  std::istringstream in{std::string(csv)};
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    const std::string cell = line.substr(0, line.find(','));
    const size_t b = cell.find_first_not_of(" \t\r"), e = cell.find_last_not_of(" \t\r");
    if (b == std::string::npos || cell[b] == '#') continue;
    const std::string text = cell.substr(b, e - b + 1);
    char* end = nullptr;
    const double x = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) {
      if (v.empty() && no == 1) continue;  // a header
      *error = std::to_string(no) + ": expected a time (a positive number), got " + quote_value(text);
      return false;
    }
    if (!(x > 0) || !std::isfinite(x)) {
      *error = std::to_string(no) + ": times must be positive, got " + quote_value(text);
      return false;
    }
    v.push_back(x);
  }
  if (v.size() < 2) {
    *error = "0: expected at least 2 measured times, found " + std::to_string(v.size());
    return false;
  }
  std::sort(v.begin(), v.end());
  double mean = 0, sq = 0;
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    mean += 0.5 * (v[i] + v[i + 1]);
    sq += (v[i] * v[i] + v[i] * v[i + 1] + v[i + 1] * v[i + 1]) / 3.0;
  }
  const auto segs = static_cast<double>(v.size() - 1);
  mean /= segs;
  sq /= segs * mean * mean;
  for (double& x : v) x /= mean;
  out->dist = JitterDist::kEmpirical;
  out->samples = std::move(v);
  out->cv = std::sqrt(std::max(0.0, sq - 1.0));
  return true;
}

namespace {

bool read_empirical(NodeReader& r, const YamlNode& file, const std::string& what, Jitter* out) {
  const auto name = r.as_string(file, what + ".file");
  if (!name) return false;
  std::filesystem::path p(*name);
  if (p.is_relative() && file.loc.file.rfind("--set", 0) != 0)
    p = std::filesystem::path(file.loc.file).parent_path() / p;
  Result<std::string> text = read_file_capped(p.string(), kJitterCsvMax, "jitter CSV");
  if (!text.ok()) {
    const std::string& why = text.errors().front().message;
    if (why.rfind("cannot open", 0) == 0)
      r.error(file.loc, "cannot read '" + p.string() + "'; expected a CSV of measured times (path relative to the scenario)");
    else
      r.error(file.loc, why);
    return false;
  }
  std::string err;
  if (!parse_empirical_times(*text, out, &err)) {
    r.error(file.loc, p.string() + ":" + err);
    return false;
  }
  out->file = *name;
  return true;
}

}  // namespace

bool read_jitter(NodeReader& r, const YamlNode& n, const std::string& what, bool parametric_only, Jitter* out) {
  const size_t before = r.error_count();
  if (n.is_scalar()) {
    if (auto p = r.as_percent(n, what)) out->cv = *p;
    return r.error_count() == before;
  }
  if (!r.check_map(n, what, {"dist", "cv", "file"})) return false;
  Jitter j;
  if (const YamlNode* d = n.find("dist")) {
    const Names all = {"normal", "lognormal", "gamma", "empirical"};
    const Names names = parametric_only ? Names{"normal", "lognormal"} : all;
    const auto s = r.as_string(*d, what + ".dist");
    if (!s) return false;
    const auto it = std::find(names.begin(), names.end(), *s);
    if (it == names.end()) {
      r.unknown_name(d->loc, "distribution", *s, names);
      return false;
    }
    j.dist = static_cast<JitterDist>(std::find(all.begin(), all.end(), *s) - all.begin());
  }
  const YamlNode* cv = n.find("cv");
  const YamlNode* file = n.find("file");
  if (j.dist == JitterDist::kEmpirical) {
    if (cv) r.error(cv->loc, "'" + what + ".cv' does not apply to an empirical distribution (its spread comes from 'file')");
    if (const YamlNode* f = r.require(n, "file", what)) read_empirical(r, *f, what, &j);
  } else {
    if (file) r.error(file->loc, "'" + what + ".file' needs 'dist: empirical'");
    if (const YamlNode* c = r.require(n, "cv", what)) {
      if (auto p = r.as_percent(*c, what + ".cv")) j.cv = *p;
    }
  }
  if (r.error_count() != before) return false;
  *out = std::move(j);
  return true;
}

}  // namespace fleetsim
