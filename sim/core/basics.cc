// Small shared definitions behind the public headers: time formatting,
// diagnostics, the normal draw, and the names of ops, dtypes and faults.
#include <cmath>
#include <cstdio>

#include "fleetsim/rng.h"
#include "fleetsim/scenario.h"
#include "fleetsim/status.h"
#include "fleetsim/time.h"

namespace fleetsim {

std::string format_seconds(int64_t ns) {
  const bool neg = ns < 0;
  const uint64_t mag = neg ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s%llu.%09llu", neg ? "-" : "",
                static_cast<unsigned long long>(mag / 1000000000ULL),
                static_cast<unsigned long long>(mag % 1000000000ULL));
  return buf;
}

std::string Diagnostic::to_string() const {
  std::string s;
  if (!loc.file.empty()) {
    s += loc.file;
    if (loc.line > 0) {
      s += ":" + std::to_string(loc.line);
      if (loc.col > 0) s += ":" + std::to_string(loc.col);
    }
    s += ": ";
  }
  return s + "error: " + message;
}

namespace detail {

namespace {
double uniform53(uint64_t v) { return (static_cast<double>(v >> 11) + 0.5) * 0x1.0p-53; }
}  // namespace

// Marsaglia and Tsang's ziggurat beyond the fast path. An attempt in layer k
// (position x = j * width) that fell outside the next layer's edge is either in
// the base's tail (k = 0: x >= R, sampled by Marsaglia's exponential method) or
// in a wedge, kept when a height uniform between f(x[k]) and f(x[k+1]) lies
// under f(x). Rejected attempts start over with new words from a SplitMix64
// walk seeded by `second`. An attempt fails with probability 0.67%, so the
// bound of 64 is never met in practice (the return after it keeps the function
// total and deterministic).
double draw_normal_slow(uint64_t first, uint64_t second) {
  using namespace normal_tables;
  constexpr int kAttempts = 64;
  uint64_t walk = second;
  auto next = [&walk] { return mix64(walk += 0x9e3779b97f4a7c15ULL); };
  uint64_t w = first, h = second;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    if (attempt > 0) {
      w = next();
      h = next();
    }
    const uint64_t k = w & 0xff, j = w >> 11;
    const double sign = (w & 0x100) ? -1.0 : 1.0;
    const double x = static_cast<double>(j) * kWidth[k];
    if (j < kAccept[k]) return sign * x;
    if (k == 0) {
      for (int t = 0; t < kAttempts; ++t) {
        const double a = -std::log(uniform53(t == 0 ? h : next())) / kR;
        const double b = -std::log(uniform53(next()));
        if (b + b > a * a) return sign * (kR + a);
      }
      continue;
    }
    if (kF[k] + uniform53(h) * (kF[k + 1] - kF[k]) < std::exp(-0.5 * x * x)) return sign * x;
  }
  return 0.0;
}

}  // namespace detail

bool is_collective(OpKind k) {
  switch (k) {
    case OpKind::kAllReduce: case OpKind::kAllGather: case OpKind::kReduceScatter:
    case OpKind::kBroadcast: case OpKind::kReduce: case OpKind::kAllToAll:
    case OpKind::kBarrier: case OpKind::kSend: case OpKind::kRecv:
      return true;
    default:
      return false;
  }
}

const char* op_yaml_name(OpKind k) {
  switch (k) {
    case OpKind::kCompute: return "compute";
    case OpKind::kCpu: return "cpu";
    case OpKind::kAllReduce: return "allreduce";
    case OpKind::kAllGather: return "allgather";
    case OpKind::kReduceScatter: return "reducescatter";
    case OpKind::kBroadcast: return "broadcast";
    case OpKind::kReduce: return "reduce";
    case OpKind::kAllToAll: return "alltoall";
    case OpKind::kBarrier: return "barrier";
    case OpKind::kSend: return "send";
    case OpKind::kRecv: return "recv";
    case OpKind::kSync: return "sync";
    case OpKind::kStoreBarrier: return "store_barrier";
    case OpKind::kLog: return "log";
    case OpKind::kWhen: return "when";
  }
  return "?";
}

const char* op_profiling_name(OpKind k) {
  switch (k) {
    case OpKind::kAllReduce: return "nccl:all_reduce";
    case OpKind::kAllGather: return "nccl:all_gather";
    case OpKind::kReduceScatter: return "nccl:reduce_scatter";
    case OpKind::kBroadcast: return "nccl:broadcast";
    case OpKind::kReduce: return "nccl:reduce";
    case OpKind::kAllToAll: return "nccl:all_to_all";
    case OpKind::kBarrier: return "nccl:all_reduce_barrier";
    case OpKind::kSend: return "nccl:send";
    case OpKind::kRecv: return "nccl:recv";
    default: return "";
  }
}

const char* op_watchdog_name(OpKind k) {
  switch (k) {
    case OpKind::kAllReduce: return "ALLREDUCE";
    case OpKind::kAllGather: return "ALLGATHER";
    case OpKind::kReduceScatter: return "REDUCE_SCATTER";
    case OpKind::kBroadcast: return "BROADCAST";
    case OpKind::kReduce: return "REDUCE";
    case OpKind::kAllToAll: return "ALLTOALL";
    case OpKind::kBarrier: return "BARRIER";
    case OpKind::kSend: return "SEND";
    case OpKind::kRecv: return "RECV";
    default: return "";
  }
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kFloat: return "Float";
    case DType::kBFloat16: return "BFloat16";
    case DType::kHalf: return "Half";
    case DType::kDouble: return "Double";
    case DType::kInt: return "Int";
    case DType::kLong: return "Long";
    case DType::kByte: return "Byte";
    case DType::kFloat8: return "Float8_e4m3fn";
  }
  return "?";
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::kFloat: case DType::kInt: return 4;
    case DType::kBFloat16: case DType::kHalf: return 2;
    case DType::kDouble: case DType::kLong: return 8;
    case DType::kByte: case DType::kFloat8: return 1;
  }
  return 1;
}

}  // namespace fleetsim
