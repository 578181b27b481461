// Scaling a GPU scenario down to real processes on a CPU: durations times
// `time_scale`, bytes times `bytes_scale`, and the job's clocks (watchdog, dump
// wait, telemetry period, crash detection) set to real seconds. The MPI runner
// and the simulated side of `fleetsim validate` scale with the same function,
// so the two compare like with like.
#pragma once

#include <string>

#include "fleetsim/scenario.h"
#include "fleetsim/time.h"

namespace fleetsim::validate {

struct Scaling {
  double time_scale = 0.1;              // 150 ms of GPU compute -> 15 ms of CPU busy work
  double bytes_scale = 1.0 / 1024.0;    // 1.5 GiB of gradients -> 1.5 MiB over MPI
  Duration timeout = Duration::seconds(5);              // the watchdog, real time
  Duration dump_wait = Duration::seconds(1);            // from the first dump to the abort
  Duration telemetry_period = Duration::millis(100);    // /proc sampling period
  Duration crash_detect = Duration::millis(200);        // mpirun notices a dead rank about this fast
};

// Bytes after scaling: a whole number of elements of `dtype_bytes`, at least one.
int64_t scale_bytes(int64_t bytes, double scale, int dtype_bytes);

// The scenario as the real runner executes it (see Scaling). Names, groups,
// faults and the program's structure are unchanged.
Scenario scale_scenario(const Scenario& s, const Scaling& k);

// "0.1", "1/1024" -> value; false on anything else or a value <= 0.
bool parse_scale(const std::string& text, double* out);

}  // namespace fleetsim::validate
