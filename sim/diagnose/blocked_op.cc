// The wording of what blocked a job (blocked_op.h): one place for diagnose's fix and
// the drill's closing lesson, so both say the same thing the same way.
#include "sim/diagnose/blocked_op.h"

#include <cmath>
#include <cstdio>

namespace fleetsim::diagnose {
namespace {

std::string step_phrase(const BlockedOp& b) { return b.step >= 0 ? " at step " + std::to_string(b.step) : ""; }

// How long the waiters waited, as the watchdog's log line says.
std::string waited_phrase(const BlockedOp& b) {
  return b.waited_ms >= 0 ? " (the watchdog's line: ran for " + std::to_string(b.waited_ms) + " ms)" : "";
}

std::string never_returned(const BlockedOp& b) {
  std::string out = "rank " + std::to_string(b.rank) + "'s CPU entered " + op_phrase(b) + step_phrase(b) +
                    " and never returned";
  if (b.length_s >= 0) out += " (still in it " + length_phrase(b.length_s) + " later, when the record ends)";
  out += ", against " + watchdog_phrase(b) + ". ";
  if (b.store_barrier) {
    return out + "The other ranks wait in " + (b.waiting_in.empty() ? "a TCPStore barrier, which" : "`" + b.waiting_in + "`, a TCPStore barrier that") +
           " launches no NCCL kernel, so no watchdog fires and every GPU idles: find the blocked call with py-spy, "
           "and give CPU-side work like this a timeout of its own (or make it asynchronous).";
  }
  return out + "Its peers wait for it inside NCCL" + (b.waiting_in.empty() ? "" : " (in `" + b.waiting_in + "`)") +
         " until the watchdog fires" + waited_phrase(b) + ".";
}

std::string outlasts_watchdog(const BlockedOp& b) {
  std::string out = b.rank >= 0 ? "rank " + std::to_string(b.rank) + "'s CPU is in " + op_phrase(b) + step_phrase(b) +
                                      ", which takes "
                                : op_phrase(b) + " takes ";
  return out + length_phrase(b.length_s) + ", longer than " + watchdog_phrase(b) + ": the ranks waiting for it" +
         (b.waiting_in.empty() ? "" : " in `" + b.waiting_in + "`") + " time out first" + waited_phrase(b) +
         ". Raise the process group's timeout above it, or take it off the critical path (an asynchronous save).";
}

std::string rank_only_sync(const BlockedOp& b) {
  return "rank " + std::to_string(b.rank) + " is in " + op_phrase(b) + step_phrase(b) +
         (b.sync ? ", a call that waits on its peers, which" : ", which") +
         " the other ranks do not run: they wait in NCCL until " + watchdog_phrase(b) + " fires" + waited_phrase(b) +
         ". A collective, barrier, checkpoint save or metric sync belongs on every rank; gate only the print (the "
         "rank-local part) on the condition.";
}

}  // namespace

std::string op_phrase(const BlockedOp& b) {
  std::string more;
  for (const std::string& part : {b.site, b.when.empty() ? std::string() : "under `" + b.when + "`", b.note}) {
    if (!part.empty()) more += (more.empty() ? "" : ", ") + part;
  }
  return "`" + b.name + "`" + (more.empty() ? "" : " (" + more + ")");
}

std::string length_phrase(double seconds) {
  char buf[48];
  if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.0f s", seconds);
  } else {
    std::snprintf(buf, sizeof buf, "%g min", std::round(seconds / 6) / 10);
  }
  return buf;
}

std::string watchdog_phrase(const BlockedOp& b) {
  if (b.watchdog_off) return "no watchdog (it is off)";
  if (b.watchdog_s < 0) return "the watchdog";
  const std::string len = length_phrase(b.watchdog_s);
  // "the 10-minute watchdog", "the 45-second watchdog"
  const size_t sp = len.find(' ');
  return "the " + len.substr(0, sp) + (len.compare(sp + 1, 3, "min") == 0 ? "-minute" : "-second") + " watchdog";
}

std::string blocked_text(const BlockedOp& b) {
  switch (b.kind) {
    case BlockedOp::Kind::kNeverReturned: return never_returned(b);
    case BlockedOp::Kind::kOutlastsWatchdog: return outlasts_watchdog(b);
    case BlockedOp::Kind::kRankOnlySync: return rank_only_sync(b);
  }
  return "";
}

}  // namespace fleetsim::diagnose
