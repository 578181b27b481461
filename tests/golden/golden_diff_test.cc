// The golden tests' diff: equal texts give nothing; a changed line shows as a
// "-" / "+" pair inside its hunk with two lines of context; long diffs are cut.
#include "tests/golden/golden_diff.h"

#include <gtest/gtest.h>

#include <string>

namespace fleetsim::test_support {
namespace {

TEST(GoldenDiff, EqualTextsGiveNothing) { EXPECT_EQ(short_diff("a\nb\n", "a\nb\n", "x", "y"), ""); }

TEST(GoldenDiff, OneChangedLineWithContext) {
  const std::string a = "1\n2\n3\n4\n5\n6\n7\n8\n";
  const std::string b = "1\n2\n3\n4\nfive\n6\n7\n8\n";
  EXPECT_EQ(short_diff(a, b, "golden", "now"),
            "--- golden\n+++ now\n"
            "@@ -3,5 +3,5 @@\n 3\n 4\n-5\n+five\n 6\n 7\n");
}

TEST(GoldenDiff, InsertionsDeletionsAndTwoHunks) {
  const std::string a = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n";
  const std::string b = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n";
  EXPECT_EQ(short_diff(a, b, "g", "n"), "--- g\n+++ n\n@@ -10,2 +10,3 @@\n j\n k\n+l\n");
  const std::string c = "b\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n";  // a removed at the top, l added at the end
  EXPECT_EQ(short_diff(a, c, "g", "n"),
            "--- g\n+++ n\n@@ -1,3 +1,2 @@\n-a\n b\n c\n@@ -10,2 +9,3 @@\n j\n k\n+l\n");
}

TEST(GoldenDiff, AMissingFinalNewlineIsShown) {
  EXPECT_EQ(short_diff("a\n", "a", "g", "n"), "--- g\n+++ n\n@@ -1,1 +1,1 @@\n-a\n+a\n\\ No newline at end of file\n");
}

TEST(GoldenDiff, LongDiffsAreCut) {
  std::string a, b;
  for (int i = 0; i < 100; ++i) {
    a += "old " + std::to_string(i) + "\n";
    b += "new " + std::to_string(i) + "\n";
  }
  const std::string d = short_diff(a, b, "g", "n", 5);
  EXPECT_EQ(d, "--- g\n+++ n\n@@ -1,100 +1,100 @@\n-old 0\n-old 1\n-old 2\n-old 3\n-old 4\n"
               "... (diff cut after 5 lines)\n");
}

}  // namespace
}  // namespace fleetsim::test_support
