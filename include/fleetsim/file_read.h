// Bounded reads of input files, and whole writes of single output files. Every
// file fleetsim reads as input (a scenario, a jitter CSV, a calibration file, a
// record's files) must be a regular file no larger than a cap: a FIFO, a device or
// a folder is refused before it is opened for reading, and a file that grows past
// its cap while read is refused too. A file fleetsim writes outside a run folder
// (a report page, an exported script, a calibration) appears whole or not at all.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fleetsim/status.h"

namespace fleetsim {

inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

// Caps on the files fleetsim reads (docs/scenario-format.md "Limits", docs/diagnose.md).
inline constexpr int64_t kScenarioFileMax = 16 * kMiB;     // a scenario YAML file
inline constexpr int64_t kJitterCsvMax = 64 * kMiB;        // an empirical jitter CSV
inline constexpr int64_t kCalibrationFileMax = 16 * kMiB;  // a `calibration:` file
inline constexpr int64_t kRecordJsonMax = 256 * kMiB;      // each JSON file diagnose reads (summary, model, a dump)
inline constexpr int64_t kRecordTextMax = 2 * kGiB;        // each CSV, log or trace diagnose reads

// "16 MiB", "2 GiB", "100 B": a cap for a message.
std::string format_cap(int64_t bytes);

// The whole of `path`, which must be a regular file of at most `max_bytes`.
// `what` names the file's role in messages ("scenario file"). Errors are one
// Diagnostic located at the path, naming the file and, for size, the cap.
Result<std::string> read_file_capped(const std::string& path, int64_t max_bytes, std::string_view what);
// As read_file_capped, the bytes into `out` (what it held is replaced, its capacity
// kept: a caller reading many files reuses one buffer and its pages), with room for at
// least `spare` more bytes allocated past them (a parser that reads past the end).
// nullopt when read; on an error, the same Diagnostic, and `out` empty.
std::optional<Diagnostic> read_file_capped_into(const std::string& path, int64_t max_bytes, std::string_view what,
                                                std::string& out, size_t spare = 0);

// Writes `text` to `path` through a temporary file beside it, renamed into place
// once every byte is written and closed: a full disk or a missing folder leaves
// no partial file. `what` names the file's role ("report page"). On failure, one
// Diagnostic located at the path ("cannot write the report page: No space ...").
std::optional<Diagnostic> write_file_whole(const std::string& path, std::string_view text, std::string_view what);

}  // namespace fleetsim
