// How NCCL actually runs the (algorithm, protocol) its tuning model chose: the
// channels it really uses at a size (P2P: per peer), NVLS chunking and
// pipeline fill, per-step synchronisation and the host launch of the kernels. The tuning model
// (nccl_tuning.cc) still makes the choice; this times it. Terms and sources:
// docs/collectives.md ("Execution timing").
#pragma once

#include <cstdint>

#include "fleetsim/cost_model.h"
#include "sim/model/nccl_tables.h"

namespace fleetsim::nccl {

struct Fabric;
struct Graphs;
struct Table;
enum class Coll : uint8_t;

// The size-dependent terms of the execution model, as named parameters of one
// system (defaults per preset: exec_terms_for()). Facts from NCCL's source are
// marked [src]; fitted figures say which published table they were fitted on.
struct ExecTerms {
  // Channel reduction (enqueue.cc topoGetAlgoInfo) [src]: while
  // S < nc * threads * threshold, NCCL drops a channel. Threads per CTA and
  // bytes-per-thread thresholds per protocol (LL, LL128, Simple); Ring LL's
  // threshold is multiplied by the rank count.
  double ring_threads[kNumProtos] = {512, 640, 512};
  double thread_threshold[kNumProtos] = {8, 8, 64};
  // NVLS (single-node NVLS and the NVLS part of NVLSTree) [src]: default chunk
  // (NCCL_NVLS_CHUNKSIZE) and the 3-stage scatter / multimem-reduce / gather
  // pipeline each step goes through.
  double nvls_chunk_bytes = 128 * 1024;
  int nvls_stages = 3;
  // Per NVLS step: the cross-GPU synchronisation every step pays on top of
  // moving its data (fitted: 8x H100, nccl-tests 2.24.3 table; holds out the
  // nccl-tests #290 8x H100 table).
  double nvls_step_sync_us = 4.0;
  // Fixed cost of an NVLS kernel (launch, barrier): replaces the tuning
  // table's flat 25 us NVLink NVLS latency when timing (fitted as above).
  double nvls_base_us = 4.0;
  // Host launch: when one host thread drives several GPUs (nccl-tests -g N),
  // the kernels are launched one after another and the collective cannot end
  // before the last one started: (N-1) * this, added to the time (fitted on
  // the 8x H100 -g 8 table's small sizes; holds out the 8x A100 -g 8 table).
  double launch_us_per_gpu = 1.25;
  // Host floor of a call: nccl-tests launches its iterations back to back, so
  // one thread driving N GPUs completes at most one call per N x this (the
  // host's group launch of N kernels); the GPUs' work overlaps it.
  double call_floor_us_per_gpu = 4.15;
  // ... plus this per GPU for each channel the op's kernel runs beyond the
  // first: a kernel launches one CTA per channel with work and the host plans
  // the op channel by channel (enqueue.cc ncclLaunchKernel, grid = channels in
  // the plan's mask). Fitted on the 8x H100 -g 8 table's 64 KiB - 1 MiB rows
  // (2 to 24 Ring LL channels); holds out the -g 8 reduce-scatter and all-gather.
  double call_floor_us_per_channel = 0.03;
  // P2P step over NVLink (NCCL_P2P_NVL_CHUNKSIZE) [src]: a one-node send or
  // receive is cut into pieces of at least 1/8 and at most 32 of it, one piece
  // per channel.
  double p2p_nvl_chunk_bytes = 512 * 1024;
};

// The terms for a fabric's system: one set per GPU generation (Hopper's are
// the fitted ones; others start from Hopper's until a calibration sets them).
ExecTerms exec_terms_for(GpuArch arch);

// Channels NCCL runs a Ring/Tree op of `bytes` on (enqueue.cc): at most
// `channels`, at least 1.
int channels_used(const ExecTerms& x, int channels, int algo, int proto, int64_t bytes, int ranks);

// Channels that carry data when NCCL <= 2.19 runs a Ring LL/LL128 op of
// `bytes` on `channels`: each channel takes ranks x chunk bytes, and a chunk is
// a whole number of per-thread minimum chunks, so a mid-size op leaves the last
// channels empty [src: v2.19 and older all_reduce.h / all_gather.h]. Simple: `channels`.
int ring_active_channels(const ExecTerms& x, int channels, int proto, Coll coll, int64_t bytes, int ranks);

// NVLS chunk NCCL picks for `bytes` on `channels` x `heads` (enqueue.cc
// calcCollChunking, single-node unregistered buffers) [src].
int64_t nvls_chunk_bytes(const ExecTerms& x, int64_t bytes, int channels, int heads);

// Channels each peer's send (and receive) of a one-node P2P op of
// `per_peer_bytes` runs on, among `p2p_channels` P2P channels of a `ranks`-rank
// communicator whose peers each allow that many [src: enqueue.cc
// scheduleP2pTasksToPlan and calcP2pChunkSize].
int p2p_channels_per_peer(const ExecTerms& x, int p2p_channels, int ranks, int64_t per_peer_bytes);

// Share of the node's P2P bandwidth a one-node all-to-all over NVLink runs at:
// its (ranks - 1) x per-peer channels out of the P2P channels (the ring's
// channel count rounded up to a power of two, paths.cc
// ncclTopoComputeP2pChannels), each channel at 1/P2P-channels of the node's
// rate; 1 across nodes, without NVLink or when every channel is busy.
double alltoall_channel_share(const Fabric& f, const Graphs& g, const ExecTerms& x, int64_t bytes,
                              const GroupShape& s);

// The execution time (us) of (algo, proto) for `bytes`, from that entry of the
// tuning table `t`. < 0 if the entry is disabled. `gpus_per_thread` >= 1.
double exec_time_us(const Table& t, const Fabric& f, const Graphs& g, const Constants& c, const ExecTerms& x,
                    Coll coll, Algo algo, Proto proto, int64_t bytes, const GroupShape& s, int gpus_per_thread);

}  // namespace fleetsim::nccl
