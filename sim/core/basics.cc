// Small shared definitions behind the public headers: time formatting,
// diagnostics, the normal draw, and the names of ops, dtypes and faults.
#include <cmath>
#include <cstdio>
#include <numbers>

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

double draw_normal(uint64_t stream, uint64_t counter) {
  // Two independent uniforms from one counter: the second uses a disjoint
  // counter space (top bit set), so draw k never overlaps draw k' != k.
  const double u1 = draw_uniform(stream, counter << 1);
  const double u2 = draw_uniform(stream, (counter << 1) | 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

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
