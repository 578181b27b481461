// The run folder's safety rules, shared by everything that writes a RunRecord
// folder (run, validate, the drill): fleetsim deletes only what it wrote (a
// folder carrying the `.fleetsim-run` marker), never `.`, `/`, the home folder
// or an ancestor of the current folder or the scenario; it writes into a sibling
// DIR.tmp-PID, sweeps those of dead processes, and removes its own on SIGINT/SIGTERM.
#pragma once

#include <memory>
#include <string>

#include "fleetsim/status.h"

namespace fleetsim {

// The marker file every run folder carries; its text names the fleetsim version.
inline constexpr const char* kRunMarker = ".fleetsim-run";

// True if `dir` is a folder (not a link) holding the marker: a folder fleetsim wrote.
bool is_run_dir(const std::string& dir);

// Removes `dir` if it is a run folder (is_run_dir); leaves anything else alone.
void remove_run_dir(const std::string& dir);

// Checks, before anything runs, that `out` may be written: refused (even with
// `force`) are `/`, the home folder, the current folder or an ancestor of it or
// of `scenario_file`; refused are an existing file, link or folder that is not a
// run folder, and a run folder unless `force`. Returns `out` without trailing
// slashes (the folder to write).
Result<std::string> check_out_dir(const std::string& out, bool force, const std::string& scenario_file);

// While alive, SIGINT and SIGTERM remove `dir` (and every other folder so
// registered), print one line on stderr and exit 128 + the signal. The handler
// only writes to a pipe; a watcher thread does the removal in ordinary code.
// A signal that was ignored when the first guard was made stays ignored.
class RemoveOnInterrupt {
 public:
  explicit RemoveOnInterrupt(std::string dir);
  ~RemoveOnInterrupt();
  RemoveOnInterrupt(const RemoveOnInterrupt&) = delete;
  RemoveOnInterrupt& operator=(const RemoveOnInterrupt&) = delete;

 private:
  std::string dir_;
};

// A run folder being written: DIR.tmp-PID next to DIR, marked, removed when this
// object dies uncommitted, and on SIGINT/SIGTERM while it lives. Opening it sweeps
// stale DIR.tmp-PID folders of dead processes (one line on stderr each).
class StagedRunDir {
 public:
  // check_out_dir, then the temp folder created and marked.
  static Result<StagedRunDir> open(const std::string& out, bool force, const std::string& scenario_file);
  StagedRunDir(StagedRunDir&& o) noexcept;
  StagedRunDir& operator=(StagedRunDir&&) = delete;
  StagedRunDir(const StagedRunDir&) = delete;
  ~StagedRunDir();

  const std::string& dir() const { return dir_; }  // the final folder (no trailing slash)
  const std::string& tmp() const { return tmp_; }  // where the run is written
  // Moves the finished run into place, replacing an earlier run folder when
  // forced. On failure the finished run stays in tmp() and the error says so.
  Result<std::string> commit();

 private:
  StagedRunDir(std::string dir, std::string tmp, bool force);
  std::string dir_, tmp_;
  bool force_ = false;
  bool done_ = false;  // committed or kept: nothing to remove
  std::unique_ptr<RemoveOnInterrupt> guard_;
};

}  // namespace fleetsim
