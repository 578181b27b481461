// Running a command from a test: its exit status and everything it printed
// (stdout and stderr merged), for the CLI tests.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace fleetsim::test_support {

struct CommandResult {
  int exit_code = -1;  // -1 if it could not start or did not exit normally
  std::string out;
};

// Runs `cmd` through the shell with stderr redirected into stdout.
inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  std::FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  while (const size_t n = std::fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The project's Python: the .venv in the source tree (docs/testing.md).
inline std::string venv_python() { return std::string(FLEETSIM_SOURCE_DIR) + "/.venv/bin/python"; }

// Whether that Python imports `module`.
inline bool python_imports(const std::string& module) {
  return run_command("'" + venv_python() + "' -c 'import " + module + "'").exit_code == 0;
}

}  // namespace fleetsim::test_support
