// `when:` conditions as Python: the scenario's expression language (C-like
// operators on int64, include/fleetsim/expr.h) written as a Python expression
// with the same value for every rank and step, as readable as the source
// (`rank == 0 && step % 400 == 0` becomes `rank == 0 and step % 400 == 0`).
#pragma once

#include <string>
#include <string_view>

#include "fleetsim/status.h"

namespace fleetsim::exporter {

// The Python form of a valid `when` expression. Where the operands of `/` or `%`
// can be negative (the expression subtracts or negates), the script's _c_div and
// _c_mod helpers keep C's truncation; elsewhere `//` and `%` agree with it.
Result<std::string> when_to_python(std::string_view text);

}  // namespace fleetsim::exporter
