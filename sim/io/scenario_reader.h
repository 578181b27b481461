// Reads a YamlNode tree into a Scenario, section by section, recording every
// problem found. Sections that later ones depend on (fleet size, parallel
// groups, job steps, op names) record whether they are valid, so a bad fleet
// does not cascade into a wall of follow-on errors. Internal to sim/io.
#pragma once

#include <string>
#include <vector>

#include "fleetsim/scenario.h"
#include "sim/io/node_reader.h"
#include "sim/io/yaml_tree.h"

namespace fleetsim {

class ScenarioReader : public NodeReader {
 public:
  // Reads the whole scenario; check has_errors() afterwards.
  Scenario read(const YamlNode& root);

 private:
  // scenario_loader.cc
  void read_fleet(const YamlNode& n, Fleet* fleet);
  void read_parallel(const YamlNode* n, const SourceLoc& root_loc, Parallel* par);
  void read_job(const YamlNode& n, Job* job);
  void read_nccl(const YamlNode& n, Job* job);
  void read_flight_recorder(const YamlNode& n, FlightRecorderSettings* fr);
  void read_fabric_fault(const YamlNode& body, const std::string& what, Fault* f);
  void read_expect(const YamlNode& n, Expect* expect);

  // step_reader.cc
  void read_program(const YamlNode& n, std::string_view what, std::vector<Op>* out);
  std::optional<Op> read_op(const YamlNode& n);
  std::optional<Op> read_when(const YamlNode& n);
  void read_op_fields(const YamlNode& value, Op* op);
  void read_comm_fields(const YamlNode& value, std::string_view what, Op* op);
  void check_logs();
  int group_size(std::string_view group) const;
  Names group_names() const;

  // fault_reader.cc
  void read_faults(const YamlNode& n, std::vector<Fault>* out);
  std::optional<Fault> read_fault(const YamlNode& n);
  void read_fault_rank(const YamlNode& map, std::string_view what, Fault* f);
  void read_fault_step(const YamlNode& map, std::string_view key, std::string_view what, bool required,
                       int64_t* dst);
  void read_fault_op(const YamlNode& map, std::string_view what, bool collective_only, Fault* f);
  const Op* find_op(const std::vector<Op>& ops, std::string_view name) const;

  // What later sections check against; `*_ok` is false when that section was invalid.
  Scenario s_;
  bool fleet_ok_ = false;
  bool parallel_ok_ = false;
  bool job_ok_ = true;
  struct PendingLog {
    std::string text;
    SourceLoc text_loc;  // of the text's first character
  };
  std::vector<PendingLog> logs_;
};

}  // namespace fleetsim
