// The torch backend's launcher command and the conversion of what PyTorch wrote
// into the RunRecord's files (the flight-recorder dumps; the event files' names).
#include "validate/torch_backend.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "validate/real_record.h"

namespace fs = std::filesystem;

namespace fleetsim::validate {

std::string torch_backend_unavailable(const std::string& python) {
  if (::access(python.c_str(), X_OK) != 0)
    return "no Python at '" + python + "' (create .venv with scripts/venv.sh, or pass --python)";
  const std::string cmd = "timeout 120 '" + python + "' -c 'import torch, torch.distributed' 2>&1";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return "cannot run " + python;
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int st = ::pclose(p);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return "";
  std::string last = out;
  while (!last.empty() && last.back() == '\n') last.pop_back();
  last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
  return python + " cannot import torch" + (last.empty() ? "" : ": " + last);
}

std::vector<std::string> torchrun_argv(const std::string& python, int ranks, const std::string& log_dir,
                                       const std::string& script, const std::vector<std::string>& script_args) {
  std::vector<std::string> a = {python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                                std::to_string(ranks), "--log-dir", log_dir, script};
  a.insert(a.end(), script_args.begin(), script_args.end());
  return a;
}

std::string torch_group_name(const Plan& plan, GroupKind g, int rank) {
  int base = 1;  // "0" is the default group
  for (int k = 1; k < static_cast<int>(g); ++k)
    if (plan.group_exists(static_cast<GroupKind>(k))) base += plan.group_count(static_cast<GroupKind>(k));
  return g == GroupKind::kWorld ? "0" : std::to_string(base + plan.group_instance(g, rank));
}

namespace {

int group_of(const std::string& name) {
  for (int g = 0; g < kGroupKinds; ++g)
    if (name == group_name(static_cast<GroupKind>(g))) return g;
  return -1;
}

std::string members(const Plan& plan, GroupKind g, int rank) {
  std::string s = "[";
  const int inst = plan.group_instance(g, rank);
  for (int i = 0; i < plan.group_size(g); ++i) s += (i ? ", " : "") + std::to_string(plan.group_member(g, inst, i));
  return s + "]";
}

}  // namespace

void translate_events(const Plan& plan, const std::string& real_dir) {
  for (int r = 0; r < plan.ranks; ++r) {
    const std::string path = part_path(real_dir, r);
    std::ifstream in(path);
    if (!in) continue;
    std::string text, line;
    while (std::getline(in, line)) {
      // timeout <t> <group> <seq> <op name> <created> <step>
      std::vector<std::string> f;
      std::stringstream ss(line);
      for (std::string cell; std::getline(ss, cell, '\t');) f.push_back(cell);
      if (f.size() == 7 && f[0] == "timeout" && group_of(f[2]) >= 0) {
        const int g = group_of(f[2]);
        uint32_t op = 0;
        for (uint32_t i = 0; i < plan.ops.size(); ++i)
          if (plan.sources[plan.ops[i].source].name == f[4] && static_cast<int>(plan.ops[i].group) == g) {
            op = i;
            break;
          }
        line = f[0] + "\t" + f[1] + "\t" + std::to_string(g) + "\t" + f[3] + "\t" + std::to_string(op) + "\t" + f[5] +
               "\t" + f[6];
      }
      text += line + "\n";
    }
    in.close();
    std::ofstream(path, std::ios::binary) << text;
  }
}

Result<std::vector<int>> convert_torch_dumps(const Plan& plan, const std::string& json_dir, const std::string& fr_dir) {
  using Json = nlohmann::ordered_json;
  std::vector<int> found;
  for (int r = 0; r < plan.ranks; ++r) {
    const std::string src = json_dir + "/nccl_trace_rank_" + std::to_string(r) + ".json";
    std::ifstream in(src, std::ios::binary);
    if (!in) continue;
    Json j;
    try {
      j = Json::parse(in);
    } catch (const Json::exception& e) {
      Diagnostic d;
      d.loc.file = src;
      d.message = std::string("PyTorch's flight-recorder dump is not JSON: ") + e.what();
      return d;
    }
    Json cfg = Json::object(), status = Json::object();
    std::map<std::string, int64_t> done;  // group name -> last completed seq
    for (int g = 0; g < kGroupKinds; ++g) {
      const auto kind = static_cast<GroupKind>(g);
      if (!plan.group_exists(kind)) continue;
      const std::string name = torch_group_name(plan, kind, r);
      cfg[name] = {{"name", name}, {"desc", g == 0 ? "default_pg" : group_name(kind)}, {"ranks", members(plan, kind, r)}};
      // pg_status is keyed by this rank's pg_id: its groups in creation order, one per kind.
      if (j.contains("pg_status") && j["pg_status"].contains(std::to_string(g))) {
        Json st = j["pg_status"][std::to_string(g)];
        status[name] = st;
        const Json& c = st["last_completed_collective"];
        done[name] = c.is_string() ? std::stoll(c.get<std::string>()) : c.get<int64_t>();
      }
    }
    if (j.contains("entries"))
      for (Json& e : j["entries"]) {
        const std::string prof = e.value("profiling_name", "");
        const std::string pg = e["process_group"].is_array() ? e["process_group"][0].get<std::string>() : "";
        if (prof.rfind("gloo:", 0) == 0 && !e.value("is_p2p", false) && done.count(pg) &&
            e.value("collective_seq_id", int64_t{-1}) <= done[pg])
          e["state"] = "completed";
      }
    j["pg_config"] = cfg;
    j["pg_status"] = status;
    std::ofstream(fr_dir + "/rank_" + std::to_string(r) + ".json", std::ios::binary) << j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    found.push_back(r);
  }
  return found;
}

}  // namespace fleetsim::validate
