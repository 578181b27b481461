// read_file_capped (include/fleetsim/file_read.h): opened without blocking (a
// FIFO must not wait for a writer), checked with fstat before reading, and read
// into the caller's buffer up to one byte past the cap, so a growing file is caught too.
// write_file_whole: a temporary file beside the target, renamed over it.
#include "fleetsim/file_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace fleetsim {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

constexpr size_t kReadStep = size_t{1} << 16;  // how much more a file that grew is read at a time

struct Fd {
  int fd;
  ~Fd() { if (fd >= 0) ::close(fd); }
};

}  // namespace

std::string format_cap(int64_t bytes) {
  if (bytes >= kGiB && bytes % kGiB == 0) return std::to_string(bytes / kGiB) + " GiB";
  if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes / 1024) + " KiB";
  return std::to_string(bytes) + " B";
}

namespace {

// read_file_capped_into, but `out` left as it is on an error.
std::optional<Diagnostic> read_into(const std::string& path, int64_t max_bytes, std::string_view what,
                                    std::string& out, size_t spare) {
  const std::string role(what);
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) {
    return Diagnostic::in_file(path, "cannot open " + role + " '" + path + "': " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) {
    return Diagnostic::in_file(path, "cannot read " + role + " '" + path + "': " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return Diagnostic::in_file(path, role + " '" + path + "' is " + kind_of(st.st_mode) + "; expected a regular file");
  }
  const std::string too_big = role + " '" + path + "' is larger than the " + format_cap(max_bytes) + " limit";
  if (st.st_size > max_bytes) return Diagnostic::in_file(path, too_big + " (" + std::to_string(st.st_size) + " bytes)");
  // Read straight into `out`, sized one byte past what fstat says so the end is seen
  // by a read of 0; a file that grows is read on in larger steps up to one byte past
  // the cap. Growing `out` zero-fills only what it did not hold before.
  const size_t cap = static_cast<size_t>(max_bytes) + 1;
  const size_t want = static_cast<size_t>(st.st_size) + 1;
  if (out.capacity() < want + spare) {  // grown before the bytes are in: the old ones are not copied
    out.clear();
    out.reserve(want + spare);
  }
  if (out.size() < want) out.resize(want);
  size_t len = 0;
  while (true) {
    if (len == out.size()) out.resize(std::min(cap, std::max(out.size() * 2, len + kReadStep)));
    const ssize_t n = ::read(f.fd, out.data() + len, out.size() - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Diagnostic::in_file(path, "cannot read " + role + " '" + path + "': " + std::strerror(errno));
    if (n == 0) break;
    len += static_cast<size_t>(n);
    if (len > static_cast<size_t>(max_bytes)) return Diagnostic::in_file(path, too_big + " (it grew while read)");
  }
  out.resize(len);
  if (out.capacity() < len + spare) out.reserve(len + spare);  // a file that grew while read
  return std::nullopt;
}

}  // namespace

std::optional<Diagnostic> read_file_capped_into(const std::string& path, int64_t max_bytes, std::string_view what,
                                                std::string& out, size_t spare) {
  std::optional<Diagnostic> err = read_into(path, max_bytes, what, out, spare);
  if (err) out.clear();
  return err;
}

Result<std::string> read_file_capped(const std::string& path, int64_t max_bytes, std::string_view what) {
  std::string text;
  if (std::optional<Diagnostic> err = read_file_capped_into(path, max_bytes, what, text)) return *err;
  return text;
}

std::optional<Diagnostic> write_file_whole(const std::string& path, std::string_view text, std::string_view what) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const auto fail = [&](int err) {
    ::unlink(tmp.c_str());
    return Diagnostic::in_file(path, "cannot write the " + std::string(what) + ": " + std::strerror(err));
  };
  Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
  if (f.fd < 0) return Diagnostic::in_file(path, "cannot write the " + std::string(what) + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(f.fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(n < 0 ? errno : ENOSPC);
    done += static_cast<size_t>(n);
  }
  const int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) return fail(errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return fail(errno);
  return std::nullopt;
}

}  // namespace fleetsim
