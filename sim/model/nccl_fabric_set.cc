// Command-line edits of an NCCL fabric (`--set KEY=VALUE`) and the small unit
// parsers they need: sizes ("16GiB", nccl-tests' "16G" = 16 GiB) and rates
// ("400Gb/s", "50GB/s"). Kept here so the model does not depend on sim/io.
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

#include "sim/model/nccl_fabric.h"

namespace fleetsim::nccl {
namespace {

// A bound as the user would write it: 0, 1, 2.5.
std::string format_bound(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "1.5GiB" into 1.5 and "GiB" (a sign is kept: the callers set their own bounds).
// nullopt if there is no leading number.
std::optional<std::pair<double, std::string_view>> split_number(std::string_view t) {
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end == t.data() || !std::isfinite(v)) return std::nullopt;
  std::string_view unit(end, static_cast<size_t>(t.data() + t.size() - end));
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  return std::make_pair(v, unit);
}

std::optional<double> parse_double(std::string_view t) {
  auto r = split_number(t);
  if (!r || !r->second.empty()) return std::nullopt;
  return r->first;
}

std::optional<int> parse_int(std::string_view t) {
  auto d = parse_double(t);
  if (!d || *d != std::floor(*d) || *d > 1e9) return std::nullopt;
  return static_cast<int>(*d);
}

std::optional<bool> parse_bool(std::string_view t) {
  const std::string s = lower(t);
  if (s == "true" || s == "on" || s == "1" || s == "yes") return true;
  if (s == "false" || s == "off" || s == "0" || s == "no") return false;
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> parse_size_bytes(std::string_view text) {
  auto r = split_number(text);
  if (!r || r->first < 0) return std::nullopt;
  const std::string u = lower(r->second);
  double mult = 0;
  if (u.empty() || u == "b") mult = 1;
  else if (u == "k" || u == "kib") mult = 1024.0;                 // nccl-tests: K/M/G are binary
  else if (u == "m" || u == "mib") mult = 1024.0 * 1024;
  else if (u == "g" || u == "gib") mult = 1024.0 * 1024 * 1024;
  else if (u == "t" || u == "tib") mult = 1024.0 * 1024 * 1024 * 1024;
  else if (u == "kb") mult = 1e3;
  else if (u == "mb") mult = 1e6;
  else if (u == "gb") mult = 1e9;
  else if (u == "tb") mult = 1e12;
  else return std::nullopt;
  const double bytes = r->first * mult;
  if (bytes != std::floor(bytes) || bytes > 9.0e18) return std::nullopt;  // whole bytes only
  return static_cast<int64_t>(bytes);
}

std::optional<double> parse_rate_GBps(std::string_view text) {
  auto r = split_number(text);
  if (!r || r->first < 0) return std::nullopt;
  std::string u(r->second);
  if (u.empty()) return r->first;  // plain number: GB/s
  if (u.size() > 2 && u.compare(u.size() - 2, 2, "/s") == 0) u.resize(u.size() - 2);
  else if (u.size() > 2 && u.compare(u.size() - 2, 2, "ps") == 0) u.resize(u.size() - 2);
  else return std::nullopt;
  if (u == "GB") return r->first;
  if (u == "MB") return r->first / 1e3;
  if (u == "TB") return r->first * 1e3;
  if (u == "Gb") return r->first / 8.0;
  if (u == "Mb") return r->first / 8e3;
  if (u == "Tb") return r->first * 1e3 / 8.0;
  return std::nullopt;
}

std::string set_fabric_field(Fabric* f, std::string_view key, std::string_view value) {
  const std::string k = lower(key);
  auto need = [&](const char* what) { return "--set " + k + ": expected " + what + " (got '" +
                                             std::string(value) + "')"; };
  auto set_int = [&](int* dst, int min) -> std::string {
    auto v = parse_int(value);
    if (!v || *v < min) return need(min > 0 ? "a positive integer" : "an integer >= 0");
    *dst = *v;
    return "";
  };
  auto set_rate = [&](double* dst, double scale) -> std::string {  // scale: GB/s -> field unit
    auto v = parse_rate_GBps(value);
    if (!v || *v < 0) return need("a bandwidth such as 400Gb/s or 50GB/s");
    *dst = *v * scale;
    return "";
  };
  auto set_num = [&](double* dst, double min) -> std::string {
    auto v = parse_double(value);
    if (!v) return need("a number");
    if (*v < min) return need(("a number >= " + format_bound(min)).c_str());
    *dst = *v;
    return "";
  };
  auto set_bool = [&](bool* dst) -> std::string {
    auto v = parse_bool(value);
    if (!v) return need("true or false");
    *dst = *v;
    return "";
  };
  if (k == "nodes") return set_int(&f->nodes, 1);
  if (k == "gpus_per_node") return set_int(&f->gpus_per_node, 1);
  if (k == "nics" || k == "nics_per_node") return set_int(&f->nics_per_node, 1);
  if (k == "gpus_per_nic") return set_int(&f->gpus_per_nic, 1);
  if (k == "nodes_per_leaf") return set_int(&f->nodes_per_leaf, 1);
  if (k == "channels") return set_int(&f->channels, 1);
  if (k == "nvls_channels") return set_int(&f->nvls_channels, 2);
  if (k == "nvlink_bandwidth") return set_rate(&f->nvlink_bandwidth_GBps, 1.0);
  if (k == "nic_bandwidth") return set_rate(&f->nic_bandwidth_Gbps, 8.0);
  if (k == "host_bandwidth") return set_rate(&f->host_bandwidth_GBps, 1.0);
  if (k == "bw_intra") return set_rate(&f->bw_intra_GBps, 1.0);
  if (k == "bw_inter") return set_rate(&f->bw_inter_GBps, 1.0);
  if (k == "nvls_bw") return set_rate(&f->nvls_bw_GBps, 1.0);
  if (k == "oversubscription") return set_num(&f->oversubscription, 1.0);
  if (k == "net_latency") return set_num(&f->net_latency_us, 0.0);
  if (k == "net_overhead") return set_num(&f->net_overhead_us, 0.0);
  if (k == "nvlink_hop_extra") return set_num(&f->nvlink_hop_extra_us, -1e9);
  if (k == "net_hop_extra") return set_num(&f->net_hop_extra_us, -1e9);
  if (k == "nvls_step_sync") return set_num(&f->exec.nvls_step_sync_us, 0.0);
  if (k == "nvls_base") return set_num(&f->exec.nvls_base_us, 0.0);
  if (k == "launch_per_gpu") return set_num(&f->exec.launch_us_per_gpu, 0.0);
  if (k == "call_floor_per_gpu") return set_num(&f->exec.call_floor_us_per_gpu, 0.0);
  if (k == "call_floor_per_channel") return set_num(&f->exec.call_floor_us_per_channel, 0.0);
  if (k == "gpudirect") return set_bool(&f->gpudirect);
  if (k == "nvls") return set_bool(&f->nvls);
  if (k == "collnet") return set_bool(&f->collnet);
  if (k == "arch") {
    const std::string v = lower(value);
    if (v == "volta") f->arch = GpuArch::kVolta;
    else if (v == "ampere") f->arch = GpuArch::kAmpere;
    else if (v == "hopper") f->arch = GpuArch::kHopper;
    else if (v == "blackwell") f->arch = GpuArch::kBlackwell;
    else return need("volta, ampere, hopper or blackwell");
    return "";
  }
  if (k == "cpu") {
    const std::string v = lower(value);
    if (v == "intel") f->cpu = CpuVendor::kIntel;
    else if (v == "amd") f->cpu = CpuVendor::kAmd;
    else return need("intel or amd");
    return "";
  }
  return "--set: unknown key '" + k + "' (expected one of nodes, gpus_per_node, arch, cpu, "
         "nvlink_bandwidth, nics, nic_bandwidth, gpus_per_nic, oversubscription, nodes_per_leaf, "
         "gpudirect, host_bandwidth, nvls, collnet, net_latency, net_overhead, nvlink_hop_extra, net_hop_extra, "
         "channels, bw_intra, "
         "bw_inter, nvls_channels, nvls_bw, nvls_step_sync, nvls_base, launch_per_gpu, call_floor_per_gpu, "
         "call_floor_per_channel)";
}

}  // namespace fleetsim::nccl
