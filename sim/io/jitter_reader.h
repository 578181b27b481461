// Reads a jitter distribution from YAML: `2%` (normal with that coefficient of
// variation) or a mapping {dist: normal|lognormal|gamma|empirical, cv: 2%,
// file: times.csv}. An empirical CSV (one measured time per line, first column,
// an optional header) is read relative to the scenario file and normalized to
// mean 1. Shared by the step program and the intermittent-straggler fault.
#pragma once

#include <string>
#include <string_view>

#include "fleetsim/scenario.h"
#include "sim/io/node_reader.h"

namespace fleetsim {

// Reads `n` into *out; every problem becomes a diagnostic in `r`. With
// `parametric_only`, only normal and lognormal are accepted. False on error.
bool read_jitter(NodeReader& r, const YamlNode& n, const std::string& what, bool parametric_only, Jitter* out);

// Parses CSV text of measured times into sorted, mean-1 inverse-CDF knots and
// their coefficient of variation. On error returns false and sets *error to
// "LINE: what was wrong".
bool parse_empirical_times(std::string_view csv, Jitter* out, std::string* error);

}  // namespace fleetsim
