#!/usr/bin/env python3
"""Writes the flight-recorder dumps of a large hung job, one file per rank, in the shape PyTorch writes
them (docs/flight-recorder-formats.md), without running the job or the simulator: the scale case of
docs/performance.md. The job is the founding case: tp x dp ranks, a tp and a dp all-reduce every step, and
at the last step rank 0 alone all-reduces the loss on the world group and hangs there; its tp peers wait for
it in the next step's tp all-reduce, every other rank in the next dp all-reduce. Each dump holds the last
--entries ring entries (PyTorch's default buffer is 2000), timing off (entries scheduled, then completed).

  scripts/make-scale-dumps.py --ranks 16384 --format json --out /tmp/fr16k
  build/fleetsim diagnose /tmp/fr16k    # culprit rank 0, extra_collective

--format pickle writes `comm_lib_trace_rank_<r>` as PyTorch's pickler does (protocol 2, memoized strings
and shared frame dicts, frames innermost first); --format json writes `rank_<r>.json` as
_dump_nccl_trace_json does (keys sorted, no frames, pg_status values and unknown times as strings and 0).
"""
import argparse
import json
import multiprocessing
import os
import pickle

BASE_NS = 1_790_000_000_000_000_000
STEP_NS = 500_000_000  # one training step
TIMEOUT_MS = 600_000

# Frames as a training script shows them, innermost first (the op, then the job's own lines). The frame
# dicts are shared by every entry of one op, as PyTorch's recorder shares them: the pickle memoizes them.
C10D = "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"
LOGGER = "/opt/venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py"
TRAIN = "/job/train.py"


def frames_for(what):
    job = {"tp": [("tensor_parallel_forward", 212), ("forward_step", 301)],
           "dp": [("finish_grad_sync", 88), ("train_step", 340)],
           "loss": [("log_loss", 412), ("train_step", 355)]}[what]
    out = [{"name": "all_reduce", "filename": C10D, "line": 2806},
           {"name": "wrapper", "filename": LOGGER, "line": 83}]
    out += [{"name": n, "filename": TRAIN, "line": ln} for n, ln in job]
    out += [{"name": "train", "filename": TRAIN, "line": 480}, {"name": "<module>", "filename": TRAIN, "line": 520}]
    return out


FRAMES = {w: frames_for(w) for w in ("tp", "dp", "loss")}
SIZES = {"tp": [[4096, 8192]], "dp": [[25165824]], "loss": [[1]]}
DTYPES = {"tp": ["BFloat16"], "dp": ["BFloat16"], "loss": ["Float"]}


class Job:
    def __init__(self, ranks, tp, entries):
        if ranks % tp:
            raise SystemExit("--ranks must be a multiple of --tp")
        self.ranks, self.tp, self.dp, self.entries = ranks, tp, ranks // tp, entries
        # Global names as PyTorch counts groups: the world is "0", then every tp group, then every dp group.
        self.world_ranks = "[" + ", ".join(map(str, range(ranks))) + "]"

    def tp_group(self, r):
        t = r // self.tp
        return str(1 + t), list(range(t * self.tp, (t + 1) * self.tp))

    def dp_group(self, r):
        d = r % self.tp
        return str(1 + self.dp + d), list(range(d, self.ranks, self.tp))

    def program(self, r):
        """Rank r's ops, oldest first: (kind, step, pending). The hang step is the last full one."""
        steps = self.entries // 2 + 2
        ops = []
        for step in range(1, steps + 1):
            ops.append(("tp", step, False))
            ops.append(("dp", step, False))
        ops.append(("loss", steps, True) if r == 0 else ("tp", steps + 1, r < self.tp))
        if r >= self.tp:
            ops.append(("dp", steps + 1, True))
        return ops

    def dump(self, r):
        tp_name, tp_ranks = self.tp_group(r)
        dp_name, dp_ranks = self.dp_group(r)
        groups = {"tp": (tp_name, "tp", 1), "dp": (dp_name, "dp", 2), "loss": ("0", "default_pg", 0)}
        seq = {"0": 0, tp_name: 0, dp_name: 0}
        done = dict(seq)
        entries = []
        # Sequence numbers count every op issued; the ring keeps the newest `entries`.
        for i, (kind, step, pending) in enumerate(self.program(r)):
            name, desc, pg_id = groups[kind]
            seq[name] += 1
            if not pending:
                done[name] = seq[name]
            created = BASE_NS + step * STEP_NS + {"tp": 0, "dp": 200_000_000, "loss": 300_000_000}[kind]
            created += (r * 7919 % 1000) * 1000
            entries.append({
                "frames": list(FRAMES[kind]), "record_id": i, "pg_id": pg_id, "process_group": (name, desc),
                "thread_name": "pt_main_thread", "thread_id": "139872318924608", "collective_seq_id": seq[name],
                "p2p_seq_id": 0, "op_id": seq[name], "profiling_name": "nccl:all_reduce", "time_created_ns": created,
                "input_sizes": [list(t) for t in SIZES[kind]], "input_dtypes": list(DTYPES[kind]),
                "output_sizes": [list(t) for t in SIZES[kind]], "output_dtypes": list(DTYPES[kind]), "state": "scheduled" if pending else "completed",
                "time_discovered_started_ns": None,
                "time_discovered_completed_ns": None if pending else created + 150_000_000,
                "retired": not pending, "timeout_ms": TIMEOUT_MS, "is_p2p": False})
        entries = entries[-self.entries:] if self.entries else []
        pg_config = {"0": {"name": "0", "desc": "default_pg", "ranks": self.world_ranks},
                     tp_name: {"name": tp_name, "desc": "tp", "ranks": str(tp_ranks)},
                     dp_name: {"name": dp_name, "desc": "dp", "ranks": str(dp_ranks)}}
        pg_status = {str(pg): {"last_enqueued_collective": seq[name] if seq[name] else -1,
                               "last_started_collective": -1,
                               "last_completed_collective": done[name] if done[name] else -1}
                     for name, _, pg in (groups["loss"], groups["tp"], groups["dp"])}
        return {"version": "2.10", "pg_config": pg_config, "comm_lib_version": "2.21.5", "pg_status": pg_status,
                "entries": entries}


def to_json(d):
    entries = []
    for e in d["entries"]:
        e = {k: v for k, v in e.items() if k != "frames"}
        e["process_group"] = list(e["process_group"])
        for k in ("time_discovered_started_ns", "time_discovered_completed_ns"):
            e[k] = e[k] or 0
        entries.append(e)
    status = {pg: {k: str(v) for k, v in s.items()} for pg, s in d["pg_status"].items()}
    out = {"comm_lib_version": d["comm_lib_version"], "entries": entries, "nccl_comm_state": {},
           "pg_config": d["pg_config"], "pg_status": status, "version": d["version"]}
    return json.dumps(out, sort_keys=True, separators=(",", ":")).encode()


def write_rank(args):
    job, out, fmt, r = args
    d = job.dump(r)
    if fmt == "pickle":
        data, name = pickle.dumps(d, protocol=2), f"comm_lib_trace_rank_{r}"
    else:
        data, name = to_json(d), f"rank_{r}.json"
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
    return len(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=16384)
    ap.add_argument("--tp", type=int, default=8)
    ap.add_argument("--entries", type=int, default=2000, help="ring entries per rank (PyTorch's default 2000)")
    ap.add_argument("--format", choices=("json", "pickle"), default="json")
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    job = Job(a.ranks, a.tp, a.entries)
    with multiprocessing.Pool(a.jobs) as pool:
        total = sum(pool.imap_unordered(write_rank, ((job, a.out, a.format, r) for r in range(a.ranks)), 16))
    print(f"{a.ranks} ranks x {a.entries} entries ({a.format}) in {a.out}: {total / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
