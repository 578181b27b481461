// mpirun as a child in its own process group; a poll loop watches it, and on the
// deadline SIGTERM then SIGKILL go to the group and to every descendant found in
// /proc (OpenMPI may move ranks into groups of their own).
#include "validate/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "sim/io/units.h"

namespace fs = std::filesystem;

namespace fleetsim::validate {

std::optional<std::string> find_runner(const std::string& name) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  for (const fs::path& p : {self.parent_path() / name, self.parent_path() / "validate" / name})
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  return std::nullopt;
}

std::string hostfile_unreadable(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  const std::string shown = quote_value(path);
  if (!std::filesystem::exists(st)) return shown + " does not exist";
  if (std::filesystem::is_directory(st)) return shown + " is a folder, not a hostfile";
  std::ifstream in(path);
  if (!in) return "cannot read " + shown + ": " + std::strerror(errno);
  return "";
}

std::vector<std::string> mpirun_argv(const LaunchSpec& spec) {
  std::vector<std::string> a = {"mpirun"};
  if (::geteuid() == 0) a.push_back("--allow-run-as-root");
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (!spec.hostfile.empty()) {
    a.insert(a.end(), {"--hostfile", spec.hostfile});
  } else if (spec.ranks > cores) {
    a.insert(a.end(), {"--oversubscribe", "--bind-to", "none"});
  }
  // Containers often forbid the cross-memory-attach copy (ptrace rules); its
  // fallback made 2 MiB messages ~100x slower here, so plain copies it is.
  a.insert(a.end(), {"--mca", "btl_vader_single_copy_mechanism", "none"});
  a.insert(a.end(), {"-np", std::to_string(spec.ranks), spec.runner});
  a.insert(a.end(), spec.args.begin(), spec.args.end());
  return a;
}

std::vector<int> descendants(int pid) {
  std::vector<std::pair<int, int>> procs;  // (pid, ppid)
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    const size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 4 > stat.size()) continue;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 2, "%*c %d", &ppid) == 1) procs.emplace_back(std::stoi(name), ppid);
  }
  std::vector<int> out = {pid};
  for (size_t i = 0; i < out.size(); ++i)
    for (const auto& [p, pp] : procs)
      if (pp == out[i]) out.push_back(p);
  out.erase(out.begin());
  return out;
}

namespace {

uintmax_t tree_bytes(const std::string& dir, const std::string& suffix) {
  uintmax_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec) && it->path().string().ends_with(suffix)) total += it->file_size(ec);
  return total;
}

// The job's environment: this process's, with TMPDIR set to `tmp` (when there is one).
std::vector<std::string> job_environment(const std::string& tmp) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (tmp.empty() || std::strncmp(*e, "TMPDIR=", 7) != 0) env.emplace_back(*e);
  if (!tmp.empty()) env.push_back("TMPDIR=" + tmp);
  return env;
}

// A fresh folder for the job's temporary files, in this process's temporary directory
// ("" if none can be made: the job then uses that directory itself).
std::string make_job_tmp() {
  std::error_code ec;
  const fs::path base = fs::temp_directory_path(ec);
  if (ec) return "";
  std::string templ = (base / "fleetsim-job.XXXXXX").string();
  return ::mkdtemp(templ.data()) != nullptr ? templ : "";
}

// Runs argv (searched in PATH) with `env` as its environment, its output into log_file.
[[noreturn]] void exec_child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                             const std::string& log_file) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // if the launcher dies, mpirun (and its ranks) go too
  if (!log_file.empty()) {
    const int fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
  }
  std::vector<char*> c, e;
  for (const std::string& s : argv) c.push_back(const_cast<char*>(s.c_str()));
  c.push_back(nullptr);
  for (const std::string& s : env) e.push_back(const_cast<char*>(s.c_str()));
  e.push_back(nullptr);
  ::execvpe(c[0], c.data(), e.data());
  std::fprintf(stderr, "error: cannot run %s\n", c[0]);
  ::_exit(127);
}

void kill_tree(pid_t child) {
  for (int sig : {SIGTERM, SIGKILL}) {
    std::vector<int> pids = descendants(child);
    ::kill(-child, sig);
    for (int p : pids) ::kill(p, sig);
    ::kill(child, sig);
    if (sig == SIGTERM) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  }
}

}  // namespace

std::optional<LaunchResult> launch(const LaunchSpec& spec) {
  LaunchResult res;
  const std::vector<std::string> argv = spec.argv.empty() ? mpirun_argv(spec) : spec.argv;
  for (const std::string& s : argv) res.command += (res.command.empty() ? "" : " ") + s;
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphaned ranks become our children, never init's
  // The job's TMPDIR, removed once nothing of the job is left: mpirun keeps its session
  // folder (ompi.HOST.UID) there and leaves it behind when it is killed.
  const std::string job_tmp = make_job_tmp();
  const std::vector<std::string> env = job_environment(job_tmp);  // made before the fork: the child only execs
  const auto start = std::chrono::steady_clock::now();
  const pid_t child = ::fork();
  if (child < 0) {
    std::error_code ec;
    if (!job_tmp.empty()) fs::remove_all(job_tmp, ec);
    return std::nullopt;
  }
  if (child == 0) exec_child(argv, env, spec.log_file);
  ::setpgid(child, child);
  auto last_growth = start;
  uintmax_t last_bytes = 0;
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(child, &status, WNOHANG);
    if (w == child) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (spec.on_poll) spec.on_poll();
    const auto now = std::chrono::steady_clock::now();
    if (!spec.watch_dir.empty()) {
      const uintmax_t b = tree_bytes(spec.watch_dir, spec.watch_suffix);
      if (b != last_bytes) { last_bytes = b; last_growth = now; }
    }
    const double idle = std::chrono::duration<double>(now - last_growth).count();
    const double total = std::chrono::duration<double>(now - start).count();
    if (idle > spec.idle_limit_s || total > spec.hard_limit_s) {
      res.killed = true;
      kill_tree(child);
      ::waitpid(child, &status, 0);
      break;
    }
  }
  for (int i = 0; i < 100; ++i) {  // nothing of the job may outlive it: kill and reap stragglers
    const std::vector<int> left = descendants(::getpid());
    if (left.empty()) break;
    for (int p : left) ::kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {}
  }
  if (!job_tmp.empty()) {
    std::error_code ec;
    fs::remove_all(job_tmp, ec);
  }
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  res.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return res;
}

}  // namespace fleetsim::validate

namespace fleetsim::validate {

std::string nccl_backend_unavailable() {
  const auto runner = find_runner("fleetsim-nccl-runner");
  if (!runner)
    return "fleetsim-nccl-runner: not found next to the fleetsim executable (built only where CMake finds CUDA, "
           "NCCL and MPI)";
  // coreutils' timeout bounds a driver that hangs in its initialisation.
  const std::string cmd = "timeout 60 '" + *runner + "' probe 2>&1";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return "fleetsim-nccl-runner: cannot run probe";
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int st = ::pclose(p);
  const int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (rc == 0) return "";
  std::string first = out.substr(0, out.find('\n'));
  if (rc == 124) first = "probe timed out after 60 s";
  return "fleetsim-nccl-runner: " + (first.empty() ? "probe failed (exit " + std::to_string(rc) + ")" : first);
}

}  // namespace fleetsim::validate
