// Tests for diagnose's healthy-model interface: what diagnose asks a caller's model
// about each timed group collective, the evidence line and slow_link verdict it draws
// from the answers, and the caller's note when it has no model.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "sim/diagnose/diagnose.h"
#include "tests/support/files.h"

namespace fleetsim::diagnose {
namespace {

std::string fixture(const std::string& name) {
  return test_support::fixture_path("fr/" + name);
}

// Answers every question with one time and remembers what it was asked.
class FixedModel : public HealthyModel {
 public:
  explicit FixedModel(std::optional<double> ms) : ms_(ms) {}
  std::optional<double> healthy_ms(const GroupCollective& c) const override {
    asked.push_back(c);
    return ms_;
  }
  std::string describe() const override { return "fixed model, test"; }
  mutable std::vector<GroupCollective> asked;

 private:
  std::optional<double> ms_;
};

Record read_fixture(const std::string& name) {
  Result<Record> rec = read_record(fixture(name));
  EXPECT_TRUE(rec.ok());
  return rec.ok() ? *rec : Record{};
}

bool has_evidence(const Diagnosis& d, int step, const std::string& text) {
  for (const Evidence& e : d.evidence) {
    if (e.step == step && e.text == text) return true;
  }
  return false;
}

bool mentions_model(const Diagnosis& d) {
  for (const Evidence& e : d.evidence) {
    if (e.text.rfind("model (", 0) == 0) return true;
  }
  return false;
}

// diagnose asks about each timed group collective by its op name, profiling name,
// group kind (default_pg is the world group) and members.
TEST(HealthyModel, AskedAboutEachTimedGroupCollective) {
  const Record rec = read_fixture("healthy");
  const FixedModel model(1.0);  // the fixture's collectives take 1 ms
  const Diagnosis d = diagnose_record(rec, &model);
  ASSERT_EQ(model.asked.size(), 1u);
  EXPECT_EQ(model.asked[0].op_name, "grad_allreduce");
  EXPECT_EQ(model.asked[0].profiling_name, "nccl:all_reduce");
  EXPECT_EQ(model.asked[0].group_kind, "world");
  EXPECT_EQ(model.asked[0].members, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(has_evidence(d, 4, "model (fixed model, test): every group's collectives within 1.25x of the "
                                 "healthy fabric's time"));
  EXPECT_EQ(d.verdict, Verdict::kHealthy);
}

// Collectives twice as slow as the model expects are a slow link on that group.
TEST(HealthyModel, SlowerThanTheModelIsASlowLink) {
  const Record rec = read_fixture("healthy");
  const FixedModel model(0.5);
  const Diagnosis d = diagnose_record(rec, &model);
  EXPECT_EQ(d.verdict, Verdict::kSlow);
  EXPECT_EQ(d.cause, Cause::kSlowLink);
  EXPECT_EQ(d.culprit_ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(has_evidence(d, 4, "model (fixed model, test): 1 of 1 default_pg group(s) slower than 0.8x the "
                                 "healthy fabric's bandwidth"));
}

// A model that cannot say judges nothing slow.
TEST(HealthyModel, NoAnswerJudgesNothing) {
  const Record rec = read_fixture("healthy");
  const FixedModel model(std::nullopt);
  const Diagnosis d = diagnose_record(rec, &model);
  EXPECT_EQ(d.cause, Cause::kNone);
  EXPECT_TRUE(has_evidence(d, 4, "model (fixed model, test): every group's collectives within 1.25x of the "
                                 "healthy fabric's time"));
}

// Without a model nothing mentions one: groups are judged against their siblings.
TEST(HealthyModel, NoModelMentionsNoModel) {
  EXPECT_FALSE(mentions_model(diagnose_record(read_fixture("healthy"))));
}

// With no flight-recorder dumps there is nothing to time: the model is not asked.
TEST(HealthyModel, NotUsedWithoutDumps) {
  Record rec;
  rec.dir = "in-memory";
  const FixedModel model(0.5);
  EXPECT_FALSE(mentions_model(diagnose_record(rec, &model)));
  EXPECT_TRUE(model.asked.empty());
}

}  // namespace
}  // namespace fleetsim::diagnose
