// The phase timer of record.h: with FLEETSIM_PHASES=1 each phase of a diagnosis (read,
// alignment, each check, report) prints its wall and CPU time to stderr, so the serial
// work after the read can be measured without a profiler. Unset or 0 leaves them off;
// any other value leaves them off too, with one warning on stderr.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <string_view>

#include "sim/diagnose/record.h"

namespace fleetsim::diagnose {
namespace {

bool phases_on() {
  static const bool on = [] {
    const char* v = std::getenv("FLEETSIM_PHASES");
    if (v == nullptr || std::string_view(v) == "0") return false;
    if (std::string_view(v) == "1") return true;
    std::string shown(v);  // one line whatever the value holds
    for (char& c : shown) c = static_cast<unsigned char>(c) < 0x20 ? '?' : c;
    std::fprintf(stderr, "fleetsim: FLEETSIM_PHASES=%s ignored (1 prints the phase times, 0 or unset does not)\n",
                 shown.c_str());
    return false;
  }();
  return on;
}

double clock_s(clockid_t id) {
  timespec t{};
  clock_gettime(id, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

}  // namespace

PhaseTimer::PhaseTimer(const char* name) : name_(name) {
  if (!phases_on()) return;
  wall_s_ = clock_s(CLOCK_MONOTONIC);
  cpu_s_ = clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

PhaseTimer::~PhaseTimer() {
  if (!phases_on()) return;
  std::fprintf(stderr, "phase %s: wall %.3f s, cpu %.3f s\n", name_, clock_s(CLOCK_MONOTONIC) - wall_s_,
               clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu_s_);
}

}  // namespace fleetsim::diagnose
