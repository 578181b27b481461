// Scenario scaling for real runs (see scaling.h).
#include "validate/scaling.h"

#include <cmath>
#include <cstdlib>

namespace fleetsim::validate {

int64_t scale_bytes(int64_t bytes, double scale, int dtype_bytes) {
  const double elems = std::round(static_cast<double>(bytes) * scale / dtype_bytes);
  return std::max<int64_t>(1, static_cast<int64_t>(elems)) * dtype_bytes;
}

namespace {
void scale_ops(std::vector<Op>& ops, const Scaling& k) {
  for (Op& op : ops) {
    op.time = round_to_duration(op.time.to_seconds() * k.time_scale);
    if (op.bytes > 0) op.bytes = scale_bytes(op.bytes, k.bytes_scale, dtype_bytes(op.dtype));
    scale_ops(op.then_ops, k);
    scale_ops(op.else_ops, k);
  }
}
}  // namespace

Scenario scale_scenario(const Scenario& s, const Scaling& k) {
  Scenario out = s;
  scale_ops(out.step, k);
  for (Fault& f : out.faults)
    if (f.bytes) f.bytes = scale_bytes(*f.bytes, k.bytes_scale, dtype_bytes(f.dtype.value_or(DType::kFloat)));
  out.job.watchdog = k.timeout;
  out.job.dump_wait = k.dump_wait;
  out.job.telemetry_period = k.telemetry_period;
  out.job.crash_detect = k.crash_detect;
  return out;
}

bool parse_scale(const std::string& text, double* out) {
  const size_t slash = text.find('/');
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (slash != std::string::npos) {
    if (end != text.c_str() + slash) return false;
    const std::string den = text.substr(slash + 1);
    char* end2 = nullptr;
    const double d = std::strtod(den.c_str(), &end2);
    if (den.empty() || *end2 != '\0' || d <= 0) return false;
    v /= d;
  } else if (text.empty() || *end != '\0') {
    return false;
  }
  if (!(v > 0) || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace fleetsim::validate
