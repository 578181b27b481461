// The nccl-tests log reader on the published logs committed under
// tests/fixtures/nccl-tests-logs/ (op, sizes, times, busbw, GPU, ranks, nodes,
// NCCL version) and on every bad or truncated form, each with its line.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "sim/io/nccl_tests_log.h"

namespace fleetsim {
namespace {

const std::string kDir = std::string(FLEETSIM_SOURCE_DIR) + "/tests/fixtures/nccl-tests-logs/";

std::string slurp(const std::string& name) {
  std::ifstream in(kDir + name, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<NcclTestsTable> read_ok(const std::string& name) {
  auto r = read_nccl_tests_log(kDir + name);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.errors()[0].to_string());
  return r.ok() ? *r : std::vector<NcclTestsTable>{};
}

// The first diagnostic for `text` (which must not parse).
Diagnostic bad(const std::string& text, const std::string& file = "log.txt") {
  auto r = parse_nccl_tests_log(text, file);
  EXPECT_FALSE(r.ok());
  return r.ok() ? Diagnostic{} : r.errors()[0];
}

// Replaces the first occurrence of `from` in `s` by `to`.
std::string edit(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? s : s.replace(at, from.size(), to);
}

TEST(NcclTestsLog, DgxH100OneNodeAllReduce) {
  const auto t = read_ok("dgx-h100-1node-all_reduce.log");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].op, OpKind::kAllReduce);
  EXPECT_EQ(t[0].op_source, "file name");
  EXPECT_EQ(t[0].ranks, 8);
  EXPECT_EQ(t[0].nodes(), 1);
  EXPECT_EQ(t[0].gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_FALSE(t[0].mixed_gpus);
  EXPECT_EQ(t[0].gpus_per_thread, 1);  // nGpus 1: one process per GPU
  EXPECT_EQ(t[0].nccl_version, "");
  EXPECT_EQ(t[0].line, 14);
  ASSERT_EQ(t[0].rows.size(), 32u);
  EXPECT_EQ(t[0].rows[0].bytes, 8);
  EXPECT_EQ(t[0].rows[0].line, 16);
  EXPECT_DOUBLE_EQ(t[0].rows[0].time_us, 13.67);
  EXPECT_DOUBLE_EQ(*t[0].rows[0].in_place_time_us, 13.03);
  EXPECT_EQ(t[0].rows.back().bytes, int64_t{17179869184});
  EXPECT_DOUBLE_EQ(t[0].rows.back().time_us, 62648);
  EXPECT_DOUBLE_EQ(t[0].rows.back().busbw_GBps, 479.90);
  EXPECT_DOUBLE_EQ(*t[0].rows.back().in_place_busbw_GBps, 479.99);
  EXPECT_DOUBLE_EQ(*t[0].avg_busbw_GBps, 159.151);
  EXPECT_EQ(t[0].out_of_bounds, 0);
}

TEST(NcclTestsLog, DgxA100TwoNodesAllReduceAfterKubectlNoise) {
  const auto t = read_ok("dgx-a100-2node-all_reduce.log");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].op, OpKind::kAllReduce);
  EXPECT_EQ(t[0].ranks, 16);
  EXPECT_EQ(t[0].nodes(), 2);
  EXPECT_EQ(t[0].hosts[1], "nccl-allreduce-job0-mpiworker-1");
  EXPECT_EQ(t[0].gpu, "NVIDIA A100-SXM4-40GB");
  ASSERT_EQ(t[0].rows.size(), 31u);
  EXPECT_DOUBLE_EQ(t[0].rows[21].time_us, 282.7);  // 16 MiB
  EXPECT_EQ(t[0].rows[21].bytes, 16777216);
  EXPECT_DOUBLE_EQ(t[0].rows.back().busbw_GBps, 237.94);
}

TEST(NcclTestsLog, H100TwoNodesA3Mega) {
  const auto t = read_ok("h100-2node-a3mega-all_reduce.log");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].ranks, 16);
  EXPECT_EQ(t[0].nodes(), 2);
  EXPECT_EQ(t[0].gpu, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(t[0].rows.size(), 31u);
  EXPECT_DOUBLE_EQ(t[0].rows.back().time_us, 47535);
  EXPECT_DOUBLE_EQ(*t[0].avg_busbw_GBps, 70.742);
}

// NCCL 2.6 layout (redop, no root, `error` columns), no Group in the rank
// lines, NCCL_DEBUG=INFO lines before and inside the table, NCCL's version line.
TEST(NcclTestsLog, V100EfaNccl26WithInfoLines) {
  const auto t = read_ok("v100-2node-efa-nccl2.6-all_reduce.log");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].op, OpKind::kAllReduce);
  EXPECT_EQ(t[0].ranks, 2);
  EXPECT_EQ(t[0].nodes(), 2);
  EXPECT_EQ(t[0].gpu, "Tesla V100-SXM2-32GB");
  EXPECT_EQ(t[0].nccl_version, "2.6.4");
  EXPECT_EQ(t[0].columns.size(), 12u);
  ASSERT_EQ(t[0].rows.size(), 29u);
  EXPECT_EQ(t[0].rows[0].line, 66);
  EXPECT_DOUBLE_EQ(t[0].rows.back().time_us, 826687);
}

// Five programs in one file, each named by the command line before it; the
// oldest layouts: all_gather without redop, broadcast with root but no redop.
TEST(NcclTestsLog, DgxTwoLegacyFiveOps) {
  const auto t = read_ok("dgx2-v100-legacy-5ops.log");
  ASSERT_EQ(t.size(), 5u);
  const OpKind ops[] = {OpKind::kAllGather, OpKind::kAllReduce, OpKind::kBroadcast, OpKind::kReduce,
                        OpKind::kReduceScatter};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(t[i].op, ops[i]) << i;
    EXPECT_EQ(t[i].op_source, "program name");
    EXPECT_EQ(t[i].ranks, 12);
    EXPECT_EQ(t[i].nodes(), 1);
    EXPECT_EQ(t[i].gpu, "Tesla V100-SXM3-32GB");
    EXPECT_EQ(t[i].gpus_per_thread, 12) << i;  // "nThread 1 nGpus 12": one thread drives all 12
    EXPECT_EQ(t[i].rows.size(), 31u) << i;
  }
  EXPECT_EQ(t[0].columns.size(), 11u);
  EXPECT_EQ(t[0].out_of_bounds, 4);
  EXPECT_EQ(t[0].rows[3].bytes, 48);
  EXPECT_EQ(t[2].columns[3], "root");
  EXPECT_DOUBLE_EQ(t[3].rows[0].time_us, 58.15);
  EXPECT_DOUBLE_EQ(t[4].rows.back().busbw_GBps, 64.16);
}

// `nGpus` must be a positive count; the error points at the value.
TEST(NcclTestsLog, BadGpusPerThreadIsLocated) {
  const std::string log = slurp("dgx-h100-1node-all_reduce.log");
  for (const char* v : {"0", "x", "-3"}) {
    const Diagnostic d = bad(edit(log, "nGpus 1 ", std::string("nGpus ") + v + " "));
    EXPECT_EQ(d.loc.line, 1) << v;
    EXPECT_EQ(d.loc.col, 19) << v;
    EXPECT_NE(d.message.find("after 'nGpus'"), std::string::npos) << d.message;
  }
}

// With no name in the file or its name, the layout and busbw/algbw decide.
TEST(NcclTestsLog, CollectiveFromTheColumnLayout) {
  auto r = parse_nccl_tests_log(slurp("dgx-h100-1node-all_reduce.log"), "run.txt");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].op, OpKind::kAllReduce);
  EXPECT_EQ((*r)[0].op_source, "column layout");
  const std::string five = slurp("dgx2-v100-legacy-5ops.log");
  std::string broadcast = five.substr(five.find("Running: CUDA_VISIBLE_DEVICES=1,2,6,7,8,9,10,11,12,13,14,15 "
                                                "LD_PRELOAD=/home/jgwohlbier/nccl/build/lib/libnccl.so.2 ./build/broadcast"));
  broadcast = broadcast.substr(broadcast.find('\n') + 1);
  broadcast = broadcast.substr(0, broadcast.find("Running:"));
  r = parse_nccl_tests_log(broadcast, "run.txt");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].op, OpKind::kBroadcast);
  // all_gather and alltoall print the same layout and factor: left open.
  std::string gather = five.substr(five.find("# nThread"));
  gather = gather.substr(0, gather.find("Running:"));
  r = parse_nccl_tests_log(gather, "run.txt");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].op.has_value());
  EXPECT_EQ((*r)[0].op_name, "");
}

TEST(NcclTestsLog, NamedCollectiveMustMatchBusbwOverAlgbw) {
  const Diagnostic d = bad(slurp("dgx-h100-1node-all_reduce.log"), "h100-all_gather.log");
  EXPECT_EQ(d.loc.line, 14);
  EXPECT_NE(d.message.find("but all_gather on 8 ranks gives 0.875"), std::string::npos) << d.message;
}

TEST(NcclTestsLog, TruncatedMidRow) {
  const std::string text = slurp("dgx-h100-1node-all_reduce.log");
  const Diagnostic d = bad(text.substr(0, text.find("  1073741824     268435456") + 40));
  EXPECT_EQ(d.loc.line, 43);
  EXPECT_NE(d.message.find("truncated row: 3 of the 13 columns"), std::string::npos) << d.message;
}

TEST(NcclTestsLog, TruncatedAtARowEnd) {
  const std::string text = slurp("dgx-h100-1node-all_reduce.log");
  const Diagnostic d = bad(text.substr(0, text.find("# Out of bounds")));
  EXPECT_EQ(d.loc.line, 47);
  EXPECT_NE(d.message.find("ends without nccl-tests' closing '# Avg bus bandwidth'"), std::string::npos);
}

TEST(NcclTestsLog, BadNumbersGiveLineAndColumn) {
  const std::string text = slurp("dgx-h100-1node-all_reduce.log");
  Diagnostic d = bad(edit(text, "   20.43   12.83", "   2O.43   12.83"));
  EXPECT_EQ(d.loc.line, 31);
  EXPECT_EQ(d.loc.col, 57);
  EXPECT_NE(d.message.find("expected the out-of-place time (us) as a number >= 0, got '2O.43'"), std::string::npos);
  d = bad(edit(text, "13.67    0.00", "0.00    0.00"));
  EXPECT_EQ(d.loc.line, 16);
  EXPECT_NE(d.message.find("the time must be > 0"), std::string::npos);
  d = bad(edit(text, "           8             2", "99999999999999999999999 2"));
  EXPECT_EQ(d.loc.line, 16);
  EXPECT_EQ(d.loc.col, 1);
  d = bad(edit(text, "13.03    0.00    0.00      0", "13.03    0.00    0.00      0    7"));
  EXPECT_EQ(d.loc.line, 16);
  EXPECT_NE(d.message.find("row has 14 columns, the header at line 14 has 13"), std::string::npos);
}

TEST(NcclTestsLog, NewRunBeforeTheTableEnded) {
  const std::string five = slurp("dgx2-v100-legacy-5ops.log");
  const Diagnostic d = bad(edit(five, "# Avg bus bandwidth    : 30.2993", "# (cut)"));
  EXPECT_EQ(d.loc.line, 58);
  EXPECT_NE(d.message.find("a new run starts before the table at line 21 ended"), std::string::npos) << d.message;
}

TEST(NcclTestsLog, HeaderWithoutBusbwAndEmptyTables) {
  const std::string text = slurp("dgx-h100-1node-all_reduce.log");
  Diagnostic d = bad(edit(text, "algbw   busbw #wrong     time   algbw   busbw", "algbw   xx #wrong     time   algbw   yy"));
  EXPECT_NE(d.message.find("column header without 'busbw'"), std::string::npos);
  const std::string header = text.substr(0, text.find("           8             2"));
  d = bad(header + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0\n");
  EXPECT_EQ(d.loc.line, 17);
  EXPECT_NE(d.message.find("the table at line 14 has no rows"), std::string::npos);
  d = bad("");
  EXPECT_EQ(d.loc.line, 0);
  EXPECT_NE(d.message.find("no nccl-tests table found"), std::string::npos);
  d = bad("NCCL INFO nothing here\nsome text\n");
  EXPECT_NE(d.message.find("no nccl-tests table found"), std::string::npos);
}

// mpirun's --tag-output prefixes and CRLF line ends read like plain lines.
TEST(NcclTestsLog, PrefixesAndCrlf) {
  std::string text = slurp("dgx-h100-1node-all_reduce.log"), tagged;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) tagged += "[1,0]<stdout>:" + line + "\r\n";
  auto r = parse_nccl_tests_log(tagged, "x-all_reduce.log");
  ASSERT_TRUE(r.ok()) << r.errors()[0].to_string();
  EXPECT_EQ((*r)[0].rows.size(), 32u);
  EXPECT_EQ((*r)[0].gpu, "NVIDIA H100 80GB HBM3");
  const Diagnostic d = bad(edit(tagged, "   20.43   12.83", "   2O.43   12.83"), "x-all_reduce.log");
  EXPECT_EQ(d.loc.col, 57 + 14);
}

// A pasted excerpt without its closing line reads as truncated; with it, the
// command line names sendrecv and the in-place `#wrong` may be N/A.
TEST(NcclTestsLog, SendrecvExcerpt) {
  const std::string text = slurp("a100-8gpu-sendrecv-excerpt.log");
  const Diagnostic d = bad(text, "a100-8gpu-sendrecv-excerpt.log");
  EXPECT_EQ(d.loc.line, 9);
  EXPECT_NE(d.message.find("the table at line 4 ends without"), std::string::npos) << d.message;
  auto r = parse_nccl_tests_log(text + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 171.8\n", "x.log");
  ASSERT_TRUE(r.ok()) << r.errors()[0].to_string();
  EXPECT_EQ((*r)[0].op, OpKind::kSend);
  EXPECT_EQ((*r)[0].op_name, "sendrecv");
  EXPECT_EQ((*r)[0].ranks, 0);
  ASSERT_EQ((*r)[0].rows.size(), 4u);
  EXPECT_DOUBLE_EQ(*(*r)[0].rows[3].in_place_busbw_GBps, 195.56);
}

// Rank lines cut to "..." still give the rank count (the highest rank + 1).
TEST(NcclTestsLog, ElidedRankLines) {
  std::string text = slurp("h100-2node-a3mega-all_reduce.log");
  const size_t from = text.find("#  Rank  2 "), to = text.find("#  Rank 14 ");
  text = text.substr(0, from) + "...\n" + text.substr(to);
  auto r = parse_nccl_tests_log(text, "a-all_reduce.log");
  ASSERT_TRUE(r.ok()) << r.errors()[0].to_string();
  EXPECT_EQ((*r)[0].ranks, 16);
  EXPECT_EQ((*r)[0].ranks_listed, 4);
  EXPECT_EQ((*r)[0].nodes(), 2);
}

TEST(NcclTestsLog, NcclTestsVersionLineAndMissingFile) {
  const std::string text = "# nccl-tests version 2.18.3 nccl-headers=23003 nccl-library=23003\n"
                           "# Collective test starting: alltoall_perf\n" +
                           slurp("dgx-h100-1node-all_reduce.log");
  const Diagnostic d = bad(text);  // alltoall's factor is 0.875, the table's 1.75
  EXPECT_NE(d.message.find("the program name names alltoall"), std::string::npos) << d.message;
  auto r = parse_nccl_tests_log(edit(text, "alltoall_perf", "all_reduce_perf"), "log.txt");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].nccl_version, "2.30.3");
  EXPECT_FALSE(read_nccl_tests_log(kDir + "no-such.log").ok());
}

}  // namespace
}  // namespace fleetsim
