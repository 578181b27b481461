// What held a job up, named: the op a rank blocked in (a CPU op that never returned or
// outlasts the watchdog, a collective only some ranks run) and its length against
// the watchdog. One wording, used by diagnose's fix and by the drill's closing lesson.
#pragma once

#include <cstdint>
#include <string>

namespace fleetsim::diagnose {

struct BlockedOp {
  enum class Kind {
    kNeverReturned,     // a rank's CPU entered the op and never left it
    kOutlastsWatchdog,  // the op returns, but only after the watchdog's limit
    kRankOnlySync,      // an op under a condition the other ranks do not take
  };
  Kind kind = Kind::kNeverReturned;
  int rank = -1;           // the rank in it; -1: the wording names the op alone
  std::string name;        // the op as the program names it
  std::string site;        // where the job calls it ("train.py:26"), or ""
  std::string when;        // the condition it runs under, or ""
  std::string note;        // more about it ("only rank 0 runs it"), or ""
  int64_t step = -1;       // the step it blocked in, -1 unknown
  double length_s = -1;    // how long it ran (or had run when the evidence ends); < 0 unknown
  double watchdog_s = -1;  // the process group's timeout; < 0 unknown
  bool watchdog_off = false;
  std::string waiting_in;  // the op the other ranks wait in, or ""
  bool store_barrier = false;  // they wait in a TCPStore barrier: no NCCL kernel, no watchdog
  bool sync = false;           // kRankOnlySync: the op itself waits on its peers
  int64_t waited_ms = -1;      // how long the waiters had waited when the watchdog fired, -1 unknown
};

// "`save_checkpoint` (train.py:26, under `rank == 0`)".
std::string op_phrase(const BlockedOp& b);
// "the 10-minute watchdog", "no watchdog (it is off)", or "the watchdog" (unknown).
std::string watchdog_phrase(const BlockedOp& b);
// A length as the lesson states it: "12 min", "45 s".
std::string length_phrase(double seconds);
// The explanation: which op, where, for how long against the watchdog, what the
// others do meanwhile, and the remedy. One paragraph, no trailing newline.
std::string blocked_text(const BlockedOp& b);

}  // namespace fleetsim::diagnose
