// The flight recorder: per rank, a ring buffer of the last N collective and p2p
// records, dumped as PyTorch dumps it (docs/run-record.md, "fr/"): by default a
// pickle named fr/comm_lib_trace_rank_<r>, timing off; JSON (fr/rank_<r>.json) and
// the other dump modes as `job.flight_recorder` asks. A rank dumps when it receives
// the dump signal, or at the end of the run if it never did; a crashed rank writes
// nothing, as a dead process would not.
#pragma once

#include <string>
#include <vector>

#include "fleetsim/observer.h"

namespace fleetsim {

class FlightRecorder final : public Observer {
 public:
  // `dir`: folder to write the dumps into. `capacity`: entries per rank.
  FlightRecorder(const Plan& plan, std::string dir, int capacity);

  void on_work_enqueued(const WorkRecord& w) override;
  void on_work_started(const WorkRecord& w) override;
  void on_work_completed(const WorkRecord& w) override;
  void on_timeout(const WorkRecord& w, SimTime t) override;
  void on_fault(int rank, SimTime t, const Fault& f) override;
  void on_dump(int rank, SimTime t) override;
  void on_end(SimTime t, Outcome o) override;

  // "" or the first dump file that could not be written, with why ("PATH: REASON").
  const std::string& write_error() const { return write_error_; }

  // Rank's dump as of time t, in the format and mode the scenario asks for (exposed
  // for tests), and its file name under fr/.
  std::string dump(int rank, SimTime t) const;
  std::string file_name(int rank) const;

 private:
  struct Slot {
    WorkRecord w;
    uint32_t id = 0;  // the recorder's own record id (gloo records no p2p, so ids can differ)
  };
  Slot* find(const WorkRecord& w);
  bool records(const WorkRecord& w) const;
  size_t pg_index(int rank, GroupKind g) const {
    return static_cast<size_t>(rank) * kGroupKinds + static_cast<size_t>(g);
  }

  const Plan& plan_;
  std::string dir_;
  size_t cap_;
  // Per rank, a ring of at most cap_ records, grown as records come: memory
  // follows the records made, not ranks x capacity up front.
  std::vector<std::vector<Slot>> ring_;
  std::vector<uint32_t> count_;        // records ever made, per rank
  std::vector<uint8_t> written_, dead_;
  std::vector<int64_t> last_enq_, last_start_, last_done_;  // pg_status, per rank and group
  std::string write_error_;
};

}  // namespace fleetsim
