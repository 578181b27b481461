// The step model's longest paths: a ring's transfers in NCCL's order (each loop's
// chunks through every step before the next loop's) with bounded receive buffers
// (a send waits for the receiver to free the slot of the transfer `slots` before
// it), as a recurrence over every transfer (the reference and the forward run)
// and, for one chunk a step, a closed form in O(members x distinct hop times);
// a chain's (broadcast, reduce) by its recurrence, its buffers bounded the same way.
// docs/collectives.md ("The step model") writes the recurrence down.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "sim/model/ring_steps.h"

namespace fleetsim::nccl {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Exact time for the ring's longest paths: 2^-40 ns units in 128 bits, so sums
// never round and any evaluation order (the closed form, the recurrence) gives
// the same value. A weight converts with one rounding (< 2^-41 ns); 2^127
// units are 2^87 ns, far beyond any sum of at most 2^23 weights of <= 2^40 µs.
__extension__ typedef __int128 Ticks;
constexpr int kTickBits = 40;                    // ticks per ns = 2^40
constexpr double kMaxWeightUs = 1099511627776.0;  // 2^40 µs (12.7 days): a longer transfer is held at it
constexpr Ticks kNegTicks = -(Ticks{1} << 120);

// µs -> ticks, rounded to nearest (us = mant * 2^(e-53), so us * 1000 * 2^40 is
// mant * 1000 shifted by e - 13).
Ticks to_ticks(double us) {
  FLEETSIM_CHECK(!std::isnan(us));
  if (us < 0) return -to_ticks(-us);
  us = std::min(us, kMaxWeightUs);
  if (us == 0) return 0;
  int e = 0;
  const double f = std::frexp(us, &e);
  const Ticks v = static_cast<Ticks>(static_cast<int64_t>(std::ldexp(f, 53))) * 1000;
  const int shift = e - 53 + kTickBits;
  if (shift >= 0) return v << shift;
  if (shift <= -100) return 0;
  return (v + (Ticks{1} << (-shift - 1))) >> -shift;
}

double to_us(Ticks t) { return std::ldexp(static_cast<double>(t), -kTickBits) / 1000.0; }

// One member's transfers in NCCL's order, the same for every member: loop l
// carries chunks [l G, (l+1) G) (G = loop_chunks) through steps 0..S-1, a step's
// chunks in turn. For transfer u: whether it pays the step cost (chunk 0 of a
// step), the predecessor's transfer it waits for (`data`: the same chunk one step
// earlier, or for a loop's first transfer the predecessor's last of the loop
// before, which the member's final receive of that loop waits for), and the
// successor's transfer that frees the slot it reuses (`free`, for u >= slots:
// the successor's forward of transfer u - slots, or its last transfer of that
// loop when u - slots is a last-step transfer it only receives). -1: none.
struct RingOrder {
  std::vector<char> pays_step;
  std::vector<int> data, free;
  int reach = 1;  // the largest u - data[u] or u - free[u]
};

RingOrder ring_order(const StepSchedule& s) {
  const int S = s.steps, K = s.chunks, G = std::max(1, s.loop_chunks), b = s.slots;
  FLEETSIM_CHECK(S >= 1 && K >= 1 && b > G);
  const auto total = static_cast<size_t>(S) * static_cast<size_t>(K);
  RingOrder r;
  r.pays_step.assign(total, 0);
  r.data.assign(total, -1);
  r.free.assign(total, -1);
  std::vector<int> step_of(total), chunk_of(total), loop_last(total);
  std::vector<int> pos(total);  // pos[s * K + c]
  int u = 0;
  for (int l = 0; l * G < K; ++l) {
    const int g = std::min(G, K - l * G), first = u;
    for (int st = 0; st < S; ++st) {
      for (int q = 0; q < g; ++q, ++u) {
        const int c = l * G + q;
        pos[static_cast<size_t>(st) * K + c] = u;
        step_of[static_cast<size_t>(u)] = st;
        chunk_of[static_cast<size_t>(u)] = c;
        r.pays_step[static_cast<size_t>(u)] = c == 0;
        if (st > 0) r.data[static_cast<size_t>(u)] = pos[static_cast<size_t>(st - 1) * K + c];
        else if (q == 0 && l > 0) r.data[static_cast<size_t>(u)] = u - 1;
      }
    }
    for (int v = first; v < u; ++v) loop_last[static_cast<size_t>(v)] = u - 1;
  }
  for (size_t v = 0; v + static_cast<size_t>(b) < total; ++v) {
    const int st = step_of[v];
    r.free[v + static_cast<size_t>(b)] =
        st + 1 < S ? pos[static_cast<size_t>(st + 1) * K + static_cast<size_t>(chunk_of[v])] : loop_last[v];
  }
  for (size_t w = 0; w < total; ++w) {
    const int uw = static_cast<int>(w);
    if (r.data[w] >= 0) r.reach = std::max(r.reach, uw - r.data[w]);
    if (r.free[w] >= 0) r.reach = std::max(r.reach, uw - r.free[w]);
    FLEETSIM_DCHECK(r.data[w] < uw && r.free[w] < uw);
  }
  return r;
}

// Layers of a sweep over transfer indices, `depth` kept at a time: layer u of
// member i is at [(u mod depth) * n + i].
template <typename V>
struct Window {
  int n, depth;
  std::vector<V> cells;
  Window(int members, int d, V fill)
      : n(members), depth(d), cells(static_cast<size_t>(members) * static_cast<size_t>(d), fill) {}
  V* layer(int u) { return &cells[static_cast<size_t>(u % depth) * static_cast<size_t>(n)]; }
};

// The recurrence backwards over every transfer (the reference, O(S n K)):
// L(i, u) = weight(i, u) + the most of L over the transfers that wait for (i, u):
// (i, u+1) on its link, (i+1, u') whose data it is, (i-1, u'') whose slot it frees.
// span[i] = max(span[i], L(i, 0)).
void ring_spans_by_recurrence(const StepSchedule& s, const std::vector<Ticks>& tau, std::vector<Ticks>& span) {
  const RingOrder r = ring_order(s);
  const int n = s.ranks, last = s.steps * s.chunks - 1;
  const Ticks o = to_ticks(s.step_us);
  // Successors of u by data and by slot, as lists over u (the order is the same for every member).
  std::vector<std::vector<int>> data_to(static_cast<size_t>(last) + 1), free_to(static_cast<size_t>(last) + 1);
  for (int u = 0; u <= last; ++u) {
    if (r.data[static_cast<size_t>(u)] >= 0) data_to[static_cast<size_t>(r.data[static_cast<size_t>(u)])].push_back(u);
    if (r.free[static_cast<size_t>(u)] >= 0) free_to[static_cast<size_t>(r.free[static_cast<size_t>(u)])].push_back(u);
  }
  Window<Ticks> L(n, r.reach + 1, kNegTicks);
  for (int u = last; u >= 0; --u) {
    Ticks* cur = L.layer(u);
    const Ticks* link = u < last ? L.layer(u + 1) : nullptr;
    const Ticks pay = r.pays_step[static_cast<size_t>(u)] ? o : 0;
    for (int i = 0; i < n; ++i) {
      const int ip = i + 1 == n ? 0 : i + 1, im = i == 0 ? n - 1 : i - 1;
      Ticks v = link ? link[i] : 0;
      for (int d : data_to[static_cast<size_t>(u)]) v = std::max(v, L.layer(d)[ip]);
      for (int f : free_to[static_cast<size_t>(u)]) v = std::max(v, L.layer(f)[im]);
      cur[i] = v + pay + tau[static_cast<size_t>(i)];
    }
  }
  const Ticks* first = L.layer(0);
  for (int i = 0; i < n; ++i) span[static_cast<size_t>(i)] = std::max(span[static_cast<size_t>(i)], first[i]);
}

// Next strictly higher value to the right of each position of `v`, or v.size().
std::vector<int> next_higher(const std::vector<Ticks>& v) {
  const int len = static_cast<int>(v.size());
  std::vector<int> out(v.size()), stack;
  for (int p = len - 1; p >= 0; --p) {
    while (!stack.empty() && v[static_cast<size_t>(stack.back())] <= v[static_cast<size_t>(p)]) stack.pop_back();
    out[static_cast<size_t>(p)] = stack.empty() ? len : stack.back();
    stack.push_back(p);
  }
  return out;
}

// The same longest paths in closed form for one chunk a step (K = 1; every
// transfer weighs w_i = o + T_i). A path moves from (i, u) to (i, u+1) (its
// link), to (i+1, u+1) (the successor's next step) or, from u >= 1, to
// (i-1, u+b-1) (a sender waiting for a slot): it ends on the slowest hop it can
// reach and stays there. Forwards, j reaches p = j+d after d steps:
//   F_j = w_j + ... + w_(p-1) + (S - d) w_p,                    0 <= d < S;
// backwards (after one step at j, as no slot waits at u = 0) p = j-m after
// 1 + m(b-1) steps, skipping b-2 transfers a move:
//   B_j = 2 w_j + w_(j-1) + ... + w_(j-m) + (S - 2 - m(b-1)) w_p,  1 + m(b-1) <= S-1.
// Only hops slower than every hop before them can win, so each direction walks
// the chain of next slower hops: O(n x distinct hop times).
void ring_spans_closed_form(const StepSchedule& s, const std::vector<Ticks>& tau, std::vector<Ticks>& span) {
  const int n = s.ranks, S = s.steps, b = s.slots;
  const Ticks o = to_ticks(s.step_us);
  const int back_moves = S >= 3 ? (S - 2) / (b - 1) : 0;
  const int len = n + std::max(S, back_moves + 1);
  // fwd[x]: member x mod n; bwd[x]: member (n-1-x) mod n, so moving back from j by m is x = n-1-j+m.
  std::vector<Ticks> fwd(static_cast<size_t>(len)), bwd(static_cast<size_t>(len));
  for (int x = 0; x < len; ++x) {
    fwd[static_cast<size_t>(x)] = o + tau[static_cast<size_t>(x % n)];
    bwd[static_cast<size_t>(x)] = o + tau[static_cast<size_t>(((n - 1 - x) % n + n) % n)];
  }
  auto prefix = [len](const std::vector<Ticks>& w) {
    std::vector<Ticks> p(static_cast<size_t>(len) + 1, 0);
    for (int x = 0; x < len; ++x) p[static_cast<size_t>(x) + 1] = p[static_cast<size_t>(x)] + w[static_cast<size_t>(x)];
    return p;
  };
  const std::vector<Ticks> pf = prefix(fwd), pb = prefix(bwd);
  const std::vector<int> nf = next_higher(fwd), nb = next_higher(bwd);
  for (int j = 0; j < n; ++j) {
    Ticks best = 0;
    for (int p = j; p - j < S; p = nf[static_cast<size_t>(p)])
      best = std::max(best, pf[static_cast<size_t>(p)] - pf[static_cast<size_t>(j)] + (S - (p - j)) * fwd[static_cast<size_t>(p)]);
    const int x = n - 1 - j;
    for (int p = nb[static_cast<size_t>(x)]; p - x <= back_moves; p = nb[static_cast<size_t>(p)]) {
      const int m = p - x;
      best = std::max(best, bwd[static_cast<size_t>(x)] + pb[static_cast<size_t>(p) + 1] - pb[static_cast<size_t>(x)] +
                                Ticks{S - 2 - m * (b - 1)} * bwd[static_cast<size_t>(p)]);
    }
    span[static_cast<size_t>(j)] = std::max(span[static_cast<size_t>(j)], best);
  }
}

void ring_spans_fast(const StepSchedule& s, const std::vector<Ticks>& tau, std::vector<Ticks>& span) {
  if (s.chunks == 1) ring_spans_closed_form(s, tau, span);
  else ring_spans_by_recurrence(s, tau, span);
}

// A chain (broadcast, reduce) at position p = 0..n-1 over members (first + p)
// mod n: E(p, c) is when sender p's chunk c reaches p+1 (p < n-1), or when the
// last member has received chunk c. E(p, c) = max(E(p, c-1) or p's start,
// E(p-1, c), E(p+1, c-b) (the receiver's forward of chunk c-b frees its slot;
// the last member frees a slot by receiving it)) + step·[c = 0] + T; the last
// member's receives cost nothing. Completion is E(n-1, K-1).
struct Chain {
  const StepSchedule& s;
  const std::vector<double>& tau;
  int member(int p) const { return (s.chain_first + p) % s.ranks; }
  double weight(int p, int c) const {
    return p + 1 == s.ranks ? 0.0 : tau[static_cast<size_t>(member(p))] + (c == 0 ? s.step_us : 0.0);
  }
};

// The chain's spans: the recurrence backwards, chunk by chunk (O(n K)), in µs.
void chain_spans_us(const StepSchedule& s, const std::vector<double>& tau, std::vector<double>& span) {
  const Chain ch{s, tau};
  const int n = s.ranks, K = s.chunks, b = s.slots;
  Window<double> L(n, b + 1, kNegInf);
  for (int c = K - 1; c >= 0; --c) {
    double* cur = L.layer(c);
    for (int p = n - 1; p >= 0; --p) {
      double v = c + 1 < K ? L.layer(c + 1)[p] : (p + 1 == n ? 0.0 : kNegInf);
      if (p + 1 < n) v = std::max(v, cur[p + 1]);
      if (p >= 1 && c + b < K) v = std::max(v, L.layer(c + b)[p - 1]);
      cur[p] = v + ch.weight(p, c);
    }
  }
  for (int p = 0; p < n; ++p) {
    const auto m = static_cast<size_t>(ch.member(p));
    span[m] = std::max(span[m], s.base_us + L.layer(0)[p]);
  }
}
using RingSpans = void (*)(const StepSchedule&, const std::vector<Ticks>&, std::vector<Ticks>&);

std::vector<double> spans_us(const StepSchedule& s, RingSpans ring_spans) {
  std::vector<double> out(static_cast<size_t>(s.ranks), kNegInf);
  if (s.kind == StepSchedule::Kind::kChain) {
    for (const std::vector<double>& tau : s.chunk_us) chain_spans_us(s, tau, out);
    return out;
  }
  std::vector<Ticks> span(static_cast<size_t>(s.ranks), kNegTicks);
  for (const std::vector<double>& us : s.chunk_us) {
    std::vector<Ticks> tau(us.size());
    for (size_t i = 0; i < us.size(); ++i) tau[i] = to_ticks(us[i]);
    ring_spans(s, tau, span);
  }
  const Ticks base = to_ticks(s.base_us);
  for (size_t i = 0; i < span.size(); ++i) out[i] = to_us(base + span[i]);
  return out;
}

// The ring forward: E(i, u) = max(E(i, u-1) or i's start, E(i-1, data), E(i+1, free))
// + step cost + T_i; completion is the last transfer's end.
double ring_forward_us(const StepSchedule& s, const std::vector<double>& tau, std::span<const double> arrival_us) {
  const RingOrder r = ring_order(s);
  const int n = s.ranks, last = s.steps * s.chunks - 1;
  Window<double> E(n, r.reach + 1, kNegInf);
  for (int u = 0; u <= last; ++u) {
    double* cur = E.layer(u);
    const double* prev = u > 0 ? E.layer(u - 1) : nullptr;
    const int d = r.data[static_cast<size_t>(u)], f = r.free[static_cast<size_t>(u)];
    const double* in = d >= 0 ? E.layer(d) : nullptr;
    const double* freed = f >= 0 ? E.layer(f) : nullptr;
    const double pay = r.pays_step[static_cast<size_t>(u)] ? s.step_us : 0.0;
    for (int i = 0; i < n; ++i) {
      double t = prev ? prev[i] : arrival_us[static_cast<size_t>(i)] + s.base_us;
      if (in) t = std::max(t, in[i == 0 ? n - 1 : i - 1]);
      if (freed) t = std::max(t, freed[i + 1 == n ? 0 : i + 1]);
      cur[i] = t + pay + tau[static_cast<size_t>(i)];
    }
  }
  double done = kNegInf;
  for (int i = 0; i < n; ++i) done = std::max(done, E.layer(last)[i]);
  return done;
}

double chain_forward_us(const StepSchedule& s, const std::vector<double>& tau, std::span<const double> arrival_us) {
  const Chain ch{s, tau};
  const int n = s.ranks, K = s.chunks, b = s.slots;
  Window<double> E(n, b + 1, kNegInf);
  for (int c = 0; c < K; ++c) {
    double* cur = E.layer(c);
    for (int p = 0; p < n; ++p) {
      double t = c > 0 ? E.layer(c - 1)[p] : arrival_us[static_cast<size_t>(ch.member(p))] + s.base_us;
      if (p >= 1) t = std::max(t, cur[p - 1]);
      if (p + 1 < n && c >= b) t = std::max(t, E.layer(c - b)[p + 1]);
      cur[p] = t + ch.weight(p, c);
    }
  }
  return E.layer(K - 1)[n - 1];
}

}  // namespace

std::vector<double> completion_spans_us(const StepSchedule& s) { return spans_us(s, ring_spans_fast); }

std::vector<double> completion_spans_reference_us(const StepSchedule& s) {
  return spans_us(s, ring_spans_by_recurrence);
}

double simulate_us(const StepSchedule& s, std::span<const double> arrival_us) {
  FLEETSIM_CHECK(static_cast<int>(arrival_us.size()) == s.ranks);
  double done = kNegInf;
  for (const std::vector<double>& tau : s.chunk_us)
    done = std::max(done, s.kind == StepSchedule::Kind::kRing ? ring_forward_us(s, tau, arrival_us)
                                                              : chain_forward_us(s, tau, arrival_us));
  for (int i = 0; i < s.ranks; ++i) done = std::max(done, arrival_us[static_cast<size_t>(i)] + s.base_us);
  return done;
}

}  // namespace fleetsim::nccl
