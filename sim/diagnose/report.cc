// Renders a Diagnosis: the human transcript (numbered isolation-order steps, then
// Verdict/Cause/Culprit/Where/Fix) and one JSON object for tools.
#include <nlohmann/json.hpp>

#include "sim/diagnose/diagnose.h"
#include "fleetsim/isolation.h"
#include "sim/diagnose/fr_analyzer.h"

namespace fleetsim::diagnose {
namespace {

// A section's heading: an isolation-order step by its number and name (the one
// table, include/fleetsim/isolation.h), or a conclusion, unnumbered.
std::string section_heading(int section) {
  if (const int step = isolation_step_of(section); step > 0)
    return std::to_string(step) + ". " + std::string(kIsolationSteps[step - 1].name);
  return section == 5 ? "Culprit" : section == 6 ? "Fix" : "?";
}

std::string where_text(const Diagnosis& d) {
  if (d.pg_name.empty() && d.collective_seq_id < 0 && d.p2p_seq_id < 0 && d.op.empty()) return "-";
  std::string t = "pg " + (d.pg_name.empty() ? "?" : d.pg_name);
  if (!d.pg_desc.empty()) t += " (" + d.pg_desc + ")";
  if (d.collective_seq_id >= 0) t += ", seq " + std::to_string(d.collective_seq_id);
  if (d.p2p_seq_id >= 0) t += ", p2p_seq_id " + std::to_string(d.p2p_seq_id);
  if (!d.op.empty()) t += ", " + d.op;
  if (!d.op_name.empty()) t += " (op " + d.op_name + ")";
  return t;
}

}  // namespace

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::kHealthy: return "healthy";
    case Verdict::kSlow: return "slow";
    case Verdict::kHang: return "hang";
    case Verdict::kCrash: return "crash";
  }
  return "?";
}

std::string_view to_string(Cause c) { return cause_name(c); }

std::string format_human(const Diagnosis& d) {
  PhaseTimer t("report");
  std::string out;
  int step = 0;
  for (const Evidence& e : d.evidence) {
    if (e.step != step) {
      step = e.step;
      out += section_heading(step) + "\n";
    }
    out += "   - " + e.text + "\n";
  }
  out += "Verdict: " + std::string(to_string(d.verdict)) + "\n";
  out += "Cause:   " + std::string(to_string(d.cause)) + "\n";
  out += "Culprit: " + (d.culprit_ranks.empty() ? std::string("-") : "rank(s) " + format_ranks(d.culprit_ranks)) + "\n";
  out += "Where:   " + where_text(d) + "\n";
  std::string fix = d.advice;
  for (size_t i = fix.find('\n'); i != std::string::npos; i = fix.find('\n', i + 1)) {
    fix.insert(i + 1, "         ");
  }
  out += "Fix:     " + fix + "\n";
  return out;
}

std::string format_json(const Diagnosis& d) {
  PhaseTimer t("report");
  nlohmann::ordered_json j;
  j["verdict"] = to_string(d.verdict);
  j["cause"] = to_string(d.cause);
  j["culprit_ranks"] = d.culprit_ranks;
  j["process_group"] = {{"name", d.pg_name}, {"desc", d.pg_desc}};
  j["collective_seq_id"] = d.collective_seq_id;
  j["p2p_seq_id"] = d.p2p_seq_id;
  j["op"] = {{"profiling_name", d.op}, {"name", d.op_name}};
  j["evidence"] = nlohmann::ordered_json::array();
  for (const Evidence& e : d.evidence)
    j["evidence"].push_back({{"step", e.step}, {"isolation_step", isolation_step_of(e.step)}, {"text", e.text}});
  if (d.blocked_op) {
    const BlockedOp& b = *d.blocked_op;
    static constexpr const char* kKinds[] = {"never_returned", "outlasts_watchdog", "rank_only_sync"};
    nlohmann::ordered_json o;
    o["kind"] = kKinds[static_cast<int>(b.kind)];
    o["rank"] = b.rank;
    o["name"] = b.name;
    o["site"] = b.site;
    o["when"] = b.when;
    o["step"] = b.step;
    o["length_s"] = b.length_s >= 0 ? nlohmann::ordered_json(b.length_s) : nlohmann::ordered_json();
    o["watchdog_s"] = b.watchdog_s >= 0 ? nlohmann::ordered_json(b.watchdog_s) : nlohmann::ordered_json();
    o["waiting_in"] = b.waiting_in;
    j["blocked_op"] = o;
  } else {
    j["blocked_op"] = nullptr;
  }
  j["advice"] = d.advice;
  // Evidence quotes log lines as found: bytes that are not UTF-8 are replaced, never a throw.
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace fleetsim::diagnose
