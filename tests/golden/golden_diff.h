// A short unified-style diff of two texts, for golden-file failures: the hunks
// around the differing lines ("-" the golden file, "+" what was printed now),
// cut after a few lines so that a failure message stays readable.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace fleetsim::test_support {

// The lines of `text`, each with its '\n' (the last one may lack it).
inline std::vector<std::string> split_keeping_newlines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    const size_t end = nl == std::string::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

// One line of an edit script: ' ' kept, '-' only in the first text, '+' only in the second.
struct DiffLine {
  char op;
  std::string text;
};

// The edit script turning `a` into `b` (longest common subsequence of lines;
// past a size bound the differing middle is shown as removed then added).
inline std::vector<DiffLine> diff_lines(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) ++suf;
  const size_t n = a.size() - pre - suf, m = b.size() - pre - suf;
  std::vector<DiffLine> out;
  for (size_t i = 0; i < pre; ++i) out.push_back({' ', a[i]});
  constexpr size_t kMaxCells = size_t{1} << 22;
  if ((n + 1) * (m + 1) <= kMaxCells) {
    // lcs[i][j]: the LCS length of a's middle from i and b's middle from j.
    std::vector<std::vector<unsigned>> lcs(n + 1, std::vector<unsigned>(m + 1, 0));
    for (size_t i = n; i-- > 0;)
      for (size_t j = m; j-- > 0;)
        lcs[i][j] = a[pre + i] == b[pre + j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[pre + i] == b[pre + j]) {
        out.push_back({' ', a[pre + i++]});
        ++j;
      } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
        out.push_back({'-', a[pre + i++]});  // removals first, as diff -u shows a changed line
      } else {
        out.push_back({'+', b[pre + j++]});
      }
    }
  } else {
    for (size_t i = 0; i < n; ++i) out.push_back({'-', a[pre + i]});
    for (size_t j = 0; j < m; ++j) out.push_back({'+', b[pre + j]});
  }
  for (size_t i = a.size() - suf; i < a.size(); ++i) out.push_back({' ', a[i]});
  return out;
}

// "" when the texts are equal; otherwise "--- label_a\n+++ label_b\n" and the
// hunks ("@@ -l,s +l,s @@", two lines of context), at most `max_lines` lines of them.
inline std::string short_diff(const std::string& a, const std::string& b, const std::string& label_a,
                              const std::string& label_b, size_t max_lines = 30) {
  if (a == b) return "";
  const std::vector<DiffLine> script = diff_lines(split_keeping_newlines(a), split_keeping_newlines(b));
  constexpr size_t kContext = 2;
  std::string out = "--- " + label_a + "\n+++ " + label_b + "\n";
  size_t shown = 0;
  size_t k = 0;
  while (k < script.size()) {
    while (k < script.size() && script[k].op == ' ') ++k;
    if (k == script.size()) break;
    // The hunk: from kContext lines before this change to kContext lines after the
    // last change that follows within 2 * kContext kept lines.
    const size_t begin = k >= kContext ? k - kContext : 0;
    size_t end = k;
    for (size_t kept = 0; end < script.size() && kept <= 2 * kContext; ++end)
      kept = script[end].op == ' ' ? kept + 1 : 0;
    while (end > k && script[end - 1].op == ' ') --end;
    end = std::min(script.size(), end + kContext);
    size_t line_a = 1, line_b = 1, count_a = 0, count_b = 0;
    for (size_t x = 0; x < begin; ++x) {
      line_a += script[x].op != '+';
      line_b += script[x].op != '-';
    }
    for (size_t x = begin; x < end; ++x) {
      count_a += script[x].op != '+';
      count_b += script[x].op != '-';
    }
    out += "@@ -" + std::to_string(line_a) + "," + std::to_string(count_a) + " +" + std::to_string(line_b) + "," +
           std::to_string(count_b) + " @@\n";
    for (size_t x = begin; x < end; ++x, ++shown) {
      if (shown == max_lines) return out + "... (diff cut after " + std::to_string(max_lines) + " lines)\n";
      const std::string& t = script[x].text;
      out += script[x].op + t;
      if (t.empty() || t.back() != '\n') out += "\n\\ No newline at end of file\n";
    }
    k = end;
  }
  return out;
}

}  // namespace fleetsim::test_support
