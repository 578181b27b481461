// The run folder's safety rules (out_dir.h): which --out paths may be written or
// replaced, the marked DIR.tmp-PID folder a run is written into, the sweep of
// stale ones, and the SIGINT/SIGTERM cleanup (a self-pipe and a watcher thread).
#include "sim/run/out_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace fleetsim {

namespace {

// `path` is `base` or lies inside it (both absolute and normal).
bool is_within(const fs::path& path, const fs::path& base) {
  auto p = path.begin(), b = base.begin();
  for (; b != base.end(); ++b, ++p) {
    if (b->empty()) continue;  // a trailing separator
    if (p == path.end() || *p != *b) return false;
  }
  return true;
}

fs::path resolved(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::absolute(p).lexically_normal() : r;
}

// Why `abs` may never be a run folder, or "".
std::string forbidden(const fs::path& abs, const std::string& scenario_file) {
  if (abs == abs.root_path()) return "is the root folder";
  if (const char* home = std::getenv("HOME"); home && *home && abs == resolved(home)) return "is the home folder";
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (!ec && is_within(resolved(cwd), abs)) return "is the current folder or one of its parents";
  if (!scenario_file.empty() && is_within(resolved(scenario_file), abs))
    return "is the scenario file " + scenario_file + " or a folder holding it";
  return "";
}

std::string strip_trailing_slashes(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// The operating form of a checked --out: normal, without a trailing separator.
std::string normal_form(const std::string& out) {
  return strip_trailing_slashes(fs::path(out).lexically_normal().string());
}

std::string marker_text() { return std::string("fleetsim run folder, written by fleetsim ") + FLEETSIM_VERSION + "\n"; }

bool process_alive(long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

// The PID in `name` if it is `base`.tmp-PID or `base`.tmp-PID.old, else 0.
long stale_pid(const std::string& name, const std::string& base) {
  const std::string prefix = base + ".tmp-";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return 0;
  std::string rest = name.substr(prefix.size());
  if (rest.size() > 4 && rest.compare(rest.size() - 4, 4, ".old") == 0) rest.resize(rest.size() - 4);
  if (rest.empty() || rest.size() > 9 || !std::all_of(rest.begin(), rest.end(), [](unsigned char c) { return c >= '0' && c <= '9'; })) return 0;
  return std::strtol(rest.c_str(), nullptr, 10);
}

// Removes DIR.tmp-PID folders next to `dir` whose process is gone, if fleetsim
// wrote them (marked, or empty: killed before the marker).
void sweep_stale(const fs::path& dir) {
  const fs::path parent = dir.has_parent_path() ? dir.parent_path() : fs::path(".");
  const std::string base = dir.filename().string();
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(parent, ec)) {
    const std::string name = e.path().filename().string();
    const long pid = stale_pid(name, base);
    if (pid <= 0 || pid == ::getpid() || process_alive(pid)) continue;
    std::error_code e2;
    if (!e.is_directory(e2) || e.is_symlink(e2)) continue;
    if (!is_run_dir(e.path().string()) && !fs::is_empty(e.path(), e2)) continue;
    fs::remove_all(e.path(), e2);
    if (!e2)
      std::fprintf(stderr, "note: removed %s, left unfinished by process %ld, which is gone\n",
                   (dir.has_parent_path() ? e.path().string() : name).c_str(), pid);
  }
}

// --- SIGINT/SIGTERM: the handler writes the signal's number to a pipe; the
// watcher thread removes the registered folders and exits 128 + signal.

std::mutex g_mu;
std::vector<std::string>* g_dirs = nullptr;  // registered folders (never freed)
int g_pipe[2] = {-1, -1};
constexpr int kSignals[] = {SIGINT, SIGTERM};

void on_signal(int sig) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] const ssize_t n = ::write(g_pipe[1], &b, 1);
  errno = saved;
}

void remove_hard(const std::string& dir) {
  // The main thread may still be writing: retry until the folder stays gone.
  for (int i = 0; i < 100; ++i) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (!fs::exists(fs::symlink_status(dir, ec))) return;
  }
}

[[noreturn]] void interrupted(int sig) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_dirs->empty()) {  // no run is being written: what the signal did before
    ::signal(sig, SIG_DFL);
    ::kill(::getpid(), sig);
    ::pause();
  }
  std::string names;
  for (const std::string& d : *g_dirs) {
    remove_hard(d);
    names += (names.empty() ? "" : ", ") + d;
  }
  std::fprintf(stderr, "fleetsim: interrupted by %s; removed the unfinished run folder %s\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", names.c_str());
  std::fflush(stderr);
  ::_exit(128 + sig);
}

void watch() {
  for (;;) {
    unsigned char b = 0;
    const ssize_t n = ::read(g_pipe[0], &b, 1);
    if (n == 1) interrupted(b);
    if (n < 0 && errno != EINTR) return;
  }
}

void install_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_dirs = new std::vector<std::string>();
    FLEETSIM_CHECK(::pipe2(g_pipe, O_CLOEXEC) == 0);
    std::thread(watch).detach();
    for (int sig : kSignals) {
      struct sigaction old {};
      ::sigaction(sig, nullptr, &old);
      if (old.sa_handler == SIG_IGN) continue;  // e.g. a background job of a script
      struct sigaction sa {};
      sa.sa_handler = on_signal;
      sa.sa_flags = SA_RESTART;
      sigemptyset(&sa.sa_mask);
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

}  // namespace

bool is_run_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return false;
  return fs::is_regular_file(fs::symlink_status(fs::path(dir) / kRunMarker, ec));
}

void remove_run_dir(const std::string& dir) {
  std::error_code ec;
  if (is_run_dir(dir)) fs::remove_all(dir, ec);
}

Result<std::string> check_out_dir(const std::string& out, bool force, const std::string& scenario_file) {
  if (out.empty()) return Diagnostic::in_file("--out", "expected a folder name");
  const std::string dir = strip_trailing_slashes(out);
  const fs::path abs = resolved(normal_form(out));
  if (const std::string why = forbidden(abs, scenario_file); !why.empty())
    return Diagnostic::in_file(dir, "refusing to write the run here: it " + why + "; give --out a new folder");
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(normal_form(out), ec);
  if (!fs::exists(st)) return dir;
  if (fs::is_symlink(st))
    return Diagnostic::in_file(dir, "exists and is a symbolic link; give --out a new folder");
  if (!fs::is_directory(st))
    return Diagnostic::in_file(dir, "exists and is not a folder; remove it or give --out a new folder");
  if (!is_run_dir(normal_form(out)))
    return Diagnostic::in_file(dir, std::string("exists and is not a fleetsim run folder (no ") + kRunMarker +
                              "); remove it yourself or give --out a new folder");
  if (!force)
    return Diagnostic::in_file(dir, "holds an earlier fleetsim run; give --force to replace it, or --out a new folder");
  return dir;
}

RemoveOnInterrupt::RemoveOnInterrupt(std::string dir) : dir_(std::move(dir)) {
  install_once();
  std::lock_guard<std::mutex> lock(g_mu);
  g_dirs->push_back(dir_);
}

RemoveOnInterrupt::~RemoveOnInterrupt() {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = std::find(g_dirs->rbegin(), g_dirs->rend(), dir_);
  if (it != g_dirs->rend()) g_dirs->erase(std::next(it).base());
}

StagedRunDir::StagedRunDir(std::string dir, std::string tmp, bool force)
    : dir_(std::move(dir)), tmp_(std::move(tmp)), force_(force), guard_(std::make_unique<RemoveOnInterrupt>(tmp_)) {}

StagedRunDir::StagedRunDir(StagedRunDir&& o) noexcept
    : dir_(std::move(o.dir_)), tmp_(std::move(o.tmp_)), force_(o.force_), done_(o.done_), guard_(std::move(o.guard_)) {
  o.done_ = true;
}

StagedRunDir::~StagedRunDir() {
  if (done_) return;
  std::error_code ec;
  fs::remove_all(tmp_, ec);
}

Result<StagedRunDir> StagedRunDir::open(const std::string& out, bool force, const std::string& scenario_file) {
  Result<std::string> dir = check_out_dir(out, force, scenario_file);
  if (!dir.ok()) return dir.errors();
  const std::string target = normal_form(out);
  sweep_stale(target);
  StagedRunDir staged(*dir, target + ".tmp-" + std::to_string(::getpid()), force);
  std::error_code ec;
  fs::remove_all(staged.tmp_, ec);  // ours: this process's own PID
  fs::create_directories(staged.tmp_, ec);
  if (ec) return Diagnostic::in_file(*dir, "cannot create the output folder " + staged.tmp_ + ": " + ec.message());
  std::ofstream marker(fs::path(staged.tmp_) / kRunMarker, std::ios::binary);
  marker << marker_text();
  marker.close();
  if (!marker) return Diagnostic::in_file(*dir, "cannot write " + staged.tmp_ + "/" + kRunMarker + ": " + std::strerror(errno));
  return staged;
}

Result<std::string> StagedRunDir::commit() {
  FLEETSIM_CHECK(!done_);
  done_ = true;  // from here the finished run is never removed
  guard_.reset();
  const std::string target = normal_form(dir_);
  const std::string kept = "; the finished run is kept in " + tmp_;
  std::error_code ec;
  std::string aside;
  if (fs::exists(fs::symlink_status(target, ec))) {
    if (!force_ || !is_run_dir(target))
      return Diagnostic::in_file(dir_, "appeared during the run and is not an earlier run this one may replace" + kept);
    aside = tmp_ + ".old";
    fs::rename(target, aside, ec);
    if (ec) return Diagnostic::in_file(dir_, "cannot move the earlier run aside: " + ec.message() + kept);
  }
  fs::rename(tmp_, target, ec);
  if (ec) {
    std::error_code ec2;
    if (!aside.empty()) fs::rename(aside, target, ec2);
    return Diagnostic::in_file(dir_, "cannot move the finished run into place: " + ec.message() + kept);
  }
  if (!aside.empty()) fs::remove_all(aside, ec);
  return dir_;
}

}  // namespace fleetsim
