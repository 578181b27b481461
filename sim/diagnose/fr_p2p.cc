// Point-to-point alignment. NCCL pairs a send with the peer's recv by order on
// each directed pair of ranks, so fleetsim aligns p2p entries per (process group,
// sender, receiver): the i-th send from a to b with the i-th recv on b from a.
// PyTorch names them "nccl:send A->B" / "nccl:recv A<-B" with group ranks (the
// reader also accepts global ranks); `p2p_seq_id` counts a rank's p2p ops in a group.
// A pair whose counts differ diverges; the side that differs from its sibling pairs
// in the same group kind is the culprit, whichever dump is read first.
#include <algorithm>
#include <map>
#include <tuple>

#include "sim/diagnose/fr_analyzer.h"

namespace fleetsim::diagnose {
namespace {

struct P2pOp {
  int self = -1;  // global ranks
  int peer = -1;
  bool send = false;
};

// Parses "nccl:send 0->1" / "nccl:recv 1<-0" (any backend: "gloo:send 0->1") on
// `rank`, mapping group ranks to global ranks through the group's member list when
// that is what they are.
std::optional<P2pOp> parse_p2p(const FrEntry& e, int rank, const std::vector<int>& members) {
  const std::string& p = e.profiling_name();
  P2pOp op;
  const size_t colon = p.find(':');
  if (colon == std::string::npos) return std::nullopt;
  size_t at = colon + 6;
  if (p.compare(colon, 6, ":send ") == 0) {
    op.send = true;
  } else if (p.compare(colon, 6, ":recv ") != 0) {
    return std::nullopt;
  }
  const std::string arrow = op.send ? "->" : "<-";
  const size_t a = p.find(arrow, at);
  if (a == std::string::npos) return std::nullopt;
  int x = -1, y = -1;
  try {
    x = std::stoi(p.substr(at, a - at));
    y = std::stoi(p.substr(a + 2));
  } catch (...) {
    return std::nullopt;
  }
  const auto n = static_cast<int>(members.size());
  if (x >= 0 && x < n && y >= 0 && y < n && members[static_cast<size_t>(x)] == rank) {
    op.self = rank;
    op.peer = members[static_cast<size_t>(y)];
  } else if (x == rank) {
    op.self = rank;
    op.peer = y;
  } else {
    return std::nullopt;
  }
  return op;
}

int mode(const std::vector<int64_t>& v) {
  std::map<int64_t, int> n;
  for (int64_t x : v) ++n[x];
  int64_t best = -1;
  int best_n = 0;
  for (const auto& [x, c] : n) {
    if (c > best_n) {
      best = x;
      best_n = c;
    }
  }
  return best_n * 2 > static_cast<int>(v.size()) ? static_cast<int>(best) : -1;
}

}  // namespace

std::optional<P2pPeer> p2p_peer(const FrEntry& e, int rank, const std::vector<int>& members) {
  std::optional<P2pOp> op = parse_p2p(e, rank, members);
  if (!op) return std::nullopt;
  return P2pPeer{op->peer, op->send};
}

std::vector<Divergence> find_p2p_divergences(const std::map<int, FrDump>& dumps) {
  // (pg, sender, receiver) -> the sender's sends and the receiver's recvs, in ring order.
  using Key = std::tuple<std::string, int, int>;
  std::map<Key, std::vector<const FrEntry*>> sends, recvs;
  std::map<std::string, std::string> desc;
  for (const auto& [rank, dump] : dumps) {
    for (const FrEntry& e : dump.entries) {
      if (!e.is_p2p) continue;
      const FrGroup* g = group_config(dump, e.pg_name());
      const std::vector<int> none;
      std::optional<P2pOp> op = parse_p2p(e, rank, g ? g->ranks : none);
      if (!op) continue;
      desc[e.pg_name()] = !e.pg_desc().empty() ? e.pg_desc() : g ? g->desc : "";
      if (op->send) {
        sends[{e.pg_name(), op->self, op->peer}].push_back(&e);
      } else {
        recvs[{e.pg_name(), op->peer, op->self}].push_back(&e);
      }
    }
  }
  // Counts per pair, and the typical count per group kind (pairs of one pg name
  // are siblings: every pipeline stage pair does the same sends each step).
  std::map<std::string, std::vector<int64_t>> send_counts, recv_counts;
  std::vector<Key> pairs;
  for (const auto& [key, v] : sends) pairs.push_back(key);
  for (const auto& [key, v] : recvs) {
    if (!sends.count(key)) pairs.push_back(key);
  }
  for (const Key& key : pairs) {
    const auto& [pg, a, b] = key;
    if (!dumps.count(a) || !dumps.count(b)) continue;
    send_counts[pg].push_back(static_cast<int64_t>(sends[key].size()));
    recv_counts[pg].push_back(static_cast<int64_t>(recvs[key].size()));
  }
  std::vector<Divergence> out;
  for (const Key& key : pairs) {
    const auto& [pg, a, b] = key;
    if (!dumps.count(a) || !dumps.count(b)) continue;
    const std::vector<const FrEntry*>& s = sends[key];
    const std::vector<const FrEntry*>& r = recvs[key];
    if (s.size() == r.size()) continue;
    const int typical_s = mode(send_counts[pg]);
    const int typical_r = mode(recv_counts[pg]);
    Divergence d;
    d.pg_name = pg;
    d.pg_desc = desc[pg];
    d.members = {std::min(a, b), std::max(a, b)};
    d.kind = DivergenceKind::kPresence;
    d.p2p = true;
    const bool more_sends = s.size() > r.size();
    // Who is off: the side whose count differs from its sibling pairs; with no
    // siblings to compare, the side with fewer ops (it never posted its half).
    int culprit = more_sends ? b : a;
    bool extra = false;
    if (more_sends && typical_s >= 0 && static_cast<int>(s.size()) > typical_s && static_cast<int>(r.size()) == typical_r) {
      culprit = a;
      extra = true;
    } else if (!more_sends && typical_r >= 0 && static_cast<int>(r.size()) > typical_r &&
               static_cast<int>(s.size()) == typical_s) {
      culprit = b;
      extra = true;
    }
    d.minority = {culprit};
    d.majority = {culprit == a ? b : a};
    d.minority_has_entry = extra;
    // The first op the other side holds that has no partner: its p2p_seq_id and step.
    const std::vector<const FrEntry*>& longer = more_sends ? s : r;
    const std::vector<const FrEntry*>& shorter = more_sends ? r : s;
    size_t i = 0;
    // With step frames, the first step the longer side has that the shorter lacks.
    while (i < shorter.size() && (longer[i]->step() < 0 || longer[i]->step() == shorter[i]->step())) ++i;
    if (i >= longer.size()) i = shorter.size();
    const FrEntry& odd = *longer[std::min(i, longer.size() - 1)];
    d.seq = odd.p2p_seq_id;
    d.op = odd.profiling_name();
    if (!extra) {  // name the half the culprit never posted: "nccl:send 0->1" pairs with "nccl:recv 1<-0"
      const size_t sp = d.op.find(' '), ar = d.op.find(more_sends ? "->" : "<-");
      if (sp != std::string::npos && ar != std::string::npos && ar > sp) {
        d.partner_op = std::string(more_sends ? "nccl:recv " : "nccl:send ") + d.op.substr(ar + 2) +
               (more_sends ? "<-" : "->") + d.op.substr(sp + 1, ar - sp - 1);
      }
    }
    d.op_name = odd.op_name();
    d.when = odd.when();
    d.time_ns = odd.time_created_ns;
    d.found = std::to_string(culprit == a ? s.size() : r.size()) + (culprit == a ? " sends" : " recvs");
    d.expected = std::to_string(culprit == a ? r.size() : s.size()) + (culprit == a ? " recvs" : " sends");
    d.step = odd.step();
    out.push_back(d);
  }
  return out;
}

}  // namespace fleetsim::diagnose
