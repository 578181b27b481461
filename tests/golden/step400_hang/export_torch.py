#!/usr/bin/env python3
"""step400-hang: Rank 0 all-reduces the loss to log it every 400 steps; no other rank does.

Exported by `fleetsim export torch` from scenarios/step400_hang.yaml: the scenario as a PyTorch job.
Run one process per rank with torchrun (NCCL on GPUs, gloo on CPUs):

    torchrun --nproc-per-node 32 step400_hang.py [--backend gloo] [--time-scale 0.1] [--bytes-scale 0.001] [--timeout 5]

32 ranks: tp 8 x dp 4 x pp 1 (tp fastest, as Megatron lays them out), 8 per node.
On a timeout every rank dumps its flight recorder into --dump-dir: the pickle as PyTorch's dump on
timeout writes it, and JSON under json/.
"""
STEPS = 1000
SEED = 1
TP, DP, PP = 8, 4, 1
GPUS_PER_NODE = 8
GROUP_KINDS = ["world", "tp", "dp"]
TIMEOUT_S = 600.0  # job.watchdog: the collective timeout
DUMP_WAIT_S = 60.0  # after a timeout, the wait for every rank's dump
FR_ENTRIES = 2000  # TORCH_FR_BUFFER_SIZE
BACKEND = "auto"
TIME_SCALE = 1.0
BYTES_SCALE = 1.0
ABSENT_RANKS = ()  # fault `absent`: never join

import argparse
import datetime
import importlib.metadata
import os
import random
import signal
import sys
import threading
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=["auto", "nccl", "gloo"], default=BACKEND,
                   help="nccl on GPUs, gloo on CPUs (auto: nccl when CUDA is available)")
    p.add_argument("--time-scale", type=float, default=TIME_SCALE, help="every compute/cpu time times this")
    p.add_argument("--bytes-scale", type=float, default=BYTES_SCALE, help="every collective's bytes times this")
    p.add_argument("--timeout", type=float, default=TIMEOUT_S, help="collective timeout (the watchdog), seconds")
    p.add_argument("--steps", type=int, default=STEPS, help="steps to run")
    p.add_argument("--dump-dir", default="fr_dumps", help="where flight-recorder dumps go")
    p.add_argument("--dump-wait", type=float, default=DUMP_WAIT_S,
                   help="after a timeout, seconds to wait for every rank's dump before exiting")
    p.add_argument("--events", default="", help=argparse.SUPPRESS)  # fleetsim validate: per-rank event files
    return p.parse_args()


ARGS = parse_args()
# The flight recorder as production sets it up, before torch creates a process group:
# a ring of entries per process, a dump on a watchdog timeout, and where dumps go.
os.makedirs(ARGS.dump_dir, exist_ok=True)
DUMP_PREFIX = os.path.join(os.path.abspath(ARGS.dump_dir), "nccl_trace_rank_")
_TORCH = tuple(int(x) for x in importlib.metadata.version("torch").split(".")[:2])
if _TORCH >= (2, 9):
    os.environ.setdefault("TORCH_FR_BUFFER_SIZE", str(FR_ENTRIES))
    os.environ.setdefault("TORCH_FR_DUMP_TEMP_FILE", DUMP_PREFIX)
else:  # the names before torch 2.9
    os.environ.setdefault("TORCH_NCCL_TRACE_BUFFER_SIZE", str(FR_ENTRIES))
    os.environ.setdefault("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", DUMP_PREFIX)
os.environ.setdefault("TORCH_NCCL_DUMP_ON_TIMEOUT", "1")
os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "3")  # tear down after the dump, as torchtitan does

import torch  # noqa: E402  (after the flight recorder's environment)
import torch.distributed as dist  # noqa: E402

rank = int(os.environ.get("RANK", "0"))
world_size = int(os.environ.get("WORLD_SIZE", "1"))
# The scenario's fleet layout (node, local_rank), not torchrun's: `when` conditions read these.
node, local_rank = divmod(rank, GPUS_PER_NODE)
tp_rank, dp_rank, pp_rank = rank % TP, (rank // TP) % DP, rank // (TP * DP)
prev_stage, next_stage = rank - TP * DP, rank + TP * DP  # send/recv peers: neighbouring pipeline stages
rng = random.Random(SEED * 1000003 + rank)  # compute jitter: this rank's own stream
step = 0  # the step this rank is in


class Events:
    """fleetsim validate's per-rank event file (tab-separated, ns since the common start); off unless --events."""

    def __init__(self, folder):
        self.file = open(os.path.join(folder, f"rank_{rank}.tsv"), "a", buffering=1) if folder else None
        self.t0 = time.monotonic_ns()
        self.lock = threading.Lock()

    def now(self):
        return time.monotonic_ns() - self.t0

    def __call__(self, *fields):
        if self.file:
            with self.lock:
                self.file.write("\t".join(str(f) for f in fields) + "\n")


events = Events(ARGS.events)


def log(text):
    print(text, flush=True)
    events("L", events.now(), f"[rank{rank}]: {text}")


# --- the flight recorder's dump and the watchdog ---------------------------------
_dumped = threading.Lock()
_finished = threading.Event()  # every step done: the watchdog stops before the process group goes
_inflight = None  # (name, group, seq, created_ns, step) of the collective this rank waits in
DUMP_SIGNAL = "fr_dump_signal"  # a key in the job's TCPStore, as ProcessGroupNCCL's broadcastDumpSignal sets


def dump_flight_recorder(why):
    """Writes this rank's flight-recorder dump once (JSON, then the pickle as dump-on-timeout writes it)."""
    if not _dumped.acquire(blocking=False):
        return False
    c10d = torch._C._distributed_c10d
    events("stuck", step)
    data = c10d._dump_fr_trace_json(True, False)
    os.makedirs(os.path.join(ARGS.dump_dir, "json"), exist_ok=True)
    with open(os.path.join(ARGS.dump_dir, "json", f"nccl_trace_rank_{rank}.json"), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    if why == "timeout":  # every rank dumps: raise the signal before the (slower) pickle with stacks
        dist.distributed_c10d._get_default_store().set(DUMP_SIGNAL, str(rank))
    with open(f"{DUMP_PREFIX}{rank}", "wb") as f:
        f.write(c10d._dump_fr_trace(True, True, False))
    log(f"[Rank {rank}] flight recorder dumped to {DUMP_PREFIX}{rank} ({why})")
    return True


def watchdog():
    """ProcessGroupNCCL's watchdog, for gloo: every 100 ms, a collective in flight past the timeout is
    reported and every rank dumps its flight recorder (while the collective is still pending), then
    the process is taken down; a rank that sees another's dump signal dumps too."""
    store = dist.distributed_c10d._get_default_store()
    while not _finished.wait(0.1):
        work = _inflight
        if work and time.monotonic_ns() - events.t0 - work[3] > ARGS.timeout * 1e9:
            name, group, seq, created, at_step = work
            ran_ms = (time.monotonic_ns() - events.t0 - created) // 1_000_000
            log(f"[Rank {rank}] Watchdog caught collective operation timeout: {group} '{name}' "
                f"(SeqNum={seq}) at step {at_step} ran for {ran_ms} milliseconds before timing out "
                f"(timeout {ARGS.timeout * 1000:.0f} ms).")
            events("timeout", events.now(), group, seq, name, created, at_step)
            dump_flight_recorder("timeout")
            break
        try:
            if store.check([DUMP_SIGNAL]):
                if dump_flight_recorder("signal"):
                    log(f"[Rank {rank}] Observed flight recorder dump signal from another rank via TCPStore")
                break
        except Exception:  # the store went away: the job is ending
            return
    if _finished.is_set():
        return
    log(f"[Rank {rank}] To avoid data inconsistency, we are taking the entire process down.")
    time.sleep(ARGS.dump_wait)
    os._exit(134)  # as the abort after the dump


def collective_failed(name, group, seq, error):
    """A collective raised: a peer's lost connection, or a size mismatch gloo caught."""
    try:
        signalled = dist.distributed_c10d._get_default_store().check([DUMP_SIGNAL])
    except Exception:
        signalled = False
    if _dumped.locked() or signalled:  # a watchdog fired and takes the job down: peers leaving is expected
        stall_forever("the watchdog's dump wait")
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    log(f"[Rank {rank}] {group} collective '{name}' (seq {seq}) at step {step} failed: {type(error).__name__}: {text}")
    dump_flight_recorder("collective failed")
    raise error


# --- timed work -----------------------------------------------------------------
def _jitter(jitter):
    if not jitter:
        return 1.0
    kind, cv = jitter if isinstance(jitter, tuple) else ("normal", jitter)
    if kind == "normal":
        return max(0.0, 1.0 + cv * rng.gauss(0.0, 1.0))
    if kind == "lognormal":
        s2 = __import__("math").log(1.0 + cv * cv)
        return rng.lognormvariate(-s2 / 2, s2 ** 0.5)
    if kind == "gamma":
        return rng.gammavariate(1.0 / (cv * cv), cv * cv)
    knots = cv  # empirical: mean-1 inverse-CDF knots
    u = rng.random() * (len(knots) - 1)
    i = int(u)
    return knots[i] + (knots[min(i + 1, len(knots) - 1)] - knots[i]) * (u - i)


_paused_step = 0


def compute(name, seconds, jitter=0.0):
    """GPU work of `seconds` (a kernel that runs that long); on a CPU, busy matrix products."""
    global _paused_step
    t = seconds * _jitter(jitter) * slowdown(step)
    if _paused_step != step:  # a pause lands on the step's first compute
        _paused_step = step
        t += pause_seconds(step)
    t *= ARGS.time_scale
    if DEVICE.type == "cuda":
        torch.cuda._sleep(int(t * CYCLES_PER_S))
        return
    end = time.perf_counter() + t
    while time.perf_counter() < end:
        torch.mm(_A, _B)
        os.sched_yield()  # with more ranks than cores, let a peer's collective progress


def cpu(name, seconds):
    """CPU-side work (data loading, checkpoint I/O): the GPU idles."""
    time.sleep(seconds * ARGS.time_scale)


def stall_forever(where):
    """The rank's CPU enters `where` and never returns: its peers wait in their next collective."""
    while True:
        time.sleep(3600)


def crash():
    """The process dies at once, as an OOM kill or a segfault would: no dump, no goodbye."""
    events("crash", events.now(), step)
    os.kill(os.getpid(), signal.SIGKILL)


def never_join():
    """A rank that never joins the job (launched without its full gang)."""
    stall_forever("startup")


def synchronize():
    """The CPU waits for its GPU (loss.item()); nothing to wait for on a CPU."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def value(t):
    """A collective's result as a number (on a GPU this waits for it, like .item())."""
    return t.flatten()[0].float().item()


# --- collectives: torch.distributed's calls, remembering which op this rank is in ---
_seq = {}


def _run(name, group, fn, p2p=False):
    global _inflight
    key = (group, p2p)
    _seq[key] = _seq.get(key, 0) + 1
    _inflight = (name, group, 0 if p2p else _seq[key], events.now(), step)  # p2p ops have no collective seq
    try:
        fn()
    except RuntimeError as e:
        collective_failed(name, group, _seq[key], e)
    _inflight = None


def all_reduce(name, t, group):
    _run(name, group, lambda: dist.all_reduce(t, group=GROUPS[group]))


def all_gather(name, out, inp, group):
    _run(name, group, lambda: dist.all_gather_into_tensor(out, inp, group=GROUPS[group]))


def reduce_scatter(name, out, inp, group):
    _run(name, group, lambda: dist.reduce_scatter_tensor(out, inp, group=GROUPS[group]))


def broadcast(name, t, root, group):
    _run(name, group, lambda: dist.broadcast(t, group_src=root, group=GROUPS[group]))


def reduce(name, t, root, group):
    _run(name, group, lambda: dist.reduce(t, group_dst=root, group=GROUPS[group]))


def all_to_all(name, out, inp, group):
    _run(name, group, lambda: dist.all_to_all_single(out, inp, group=GROUPS[group]))


def barrier(name, group):
    _run(name, group, lambda: dist.barrier(group=GROUPS[group]))


def send(name, t, to, group):
    _run(name, group, lambda: dist.send(t, dst=to, group=GROUPS[group]), p2p=True)


def recv(name, t, frm, group):
    _run(name, group, lambda: dist.recv(t, src=frm, group=GROUPS[group]), p2p=True)


def store_barrier(name, step, timeout=None):
    """A CPU-side barrier of every rank through the job's TCPStore (the GPUs idle meanwhile)."""
    store = dist.distributed_c10d._get_default_store()
    key = f"store_barrier/{name}/{step}"
    store.add(key, 1)
    deadline = time.monotonic() + (ARGS.timeout if timeout is None else timeout)
    while store.add(key, 0) < world_size:
        if time.monotonic() > deadline:
            raise RuntimeError(f"store barrier '{name}' at step {step} timed out after {ARGS.timeout} s")
        time.sleep(0.001)


def _c_div(a, b):  # integer division as the scenario's `when` language does it (toward zero)
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _c_mod(a, b):
    return a - b * _c_div(a, b)


def elements(nbytes, dtype, multiple=1):
    """Elements of `dtype` in `nbytes` times --bytes-scale (at least one per member when split)."""
    n = max(1, round(nbytes * ARGS.bytes_scale / torch.empty((), dtype=dtype).element_size()))
    return max(multiple, n // multiple * multiple)


# --- the scenario ------------------------------------------------------------
def make_tensors():
    """One tensor per collective of the step, allocated once (bytes times --bytes-scale)."""
    T["tp_activations"] = torch.ones(elements(64 * 2**20, torch.float32), dtype=torch.float32, device=DEVICE)
    T["grads"] = torch.ones(elements(1536 * 2**20, torch.float32), dtype=torch.float32, device=DEVICE)
    T["loss"] = torch.ones(elements(4, torch.float32), dtype=torch.float32, device=DEVICE)


T = {}


def slowdown(step):
    """How many times longer this rank's compute runs at `step` (stragglers, throttling)."""
    x = 1.0
    return x


def pause_seconds(step):
    """Host pauses (GC, I/O) added to the step's first compute."""
    t = 0.0
    return t


def step_program(step):
    """One training step, as the scenario's `step:` lists it."""
    compute("forward", 0.15, jitter=0.01)
    all_reduce("tp_activations", T["tp_activations"], group="tp")
    compute("backward", 0.3, jitter=0.01)
    all_reduce("grads", T["grads"], group="dp")
    if rank == 0 and step % 400 == 0:
        all_reduce("loss", T["loss"], group="world")
        log(f"step {step} loss {value(T['loss']):.4f}")


def build_groups(timeout):
    """Every rank creates every group in one order (new_group is collective), ranks laid out as
    Megatron lays them out: tp fastest, then dp, then pp."""
    mine = {"world": dist.group.WORLD}
    layouts = {
        "tp": [[i * TP + j for j in range(TP)] for i in range(world_size // TP)],
        "dp": [[(i // TP) * TP * DP + j * TP + i % TP for j in range(DP)] for i in range(TP * PP)],
        "pp": [[j * TP * DP + i for j in range(PP)] for i in range(TP * DP)],
    }
    for kind in GROUP_KINDS[1:]:
        for members in layouts[kind]:
            g = dist.new_group(members, timeout=timeout, group_desc=kind)
            if rank in members:
                mine[kind] = g
    return mine


def main():
    global DEVICE, CYCLES_PER_S, GROUPS, step, _A, _B
    backend = ARGS.backend
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if rank in ABSENT_RANKS:
        never_join()
    DEVICE = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}" if backend == "nccl" else "cpu")
    if DEVICE.type == "cuda":
        torch.cuda.set_device(DEVICE)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(10_000_000)
        end.record()
        end.synchronize()
        CYCLES_PER_S = 10_000_000 / (start.elapsed_time(end) / 1000)
    _A = torch.randn(64, 64)
    _B = torch.randn(64, 64)
    # On gloo this script's watchdog fires at --timeout (and dumps at once); gloo's own timeout is a
    # backstop 2 s behind it, which the flight recorder's entries show as their timeout_ms.
    timeout = datetime.timedelta(seconds=ARGS.timeout + (2 if backend == "gloo" else 0))
    dist.init_process_group(backend, timeout=timeout, device_id=DEVICE if DEVICE.type == "cuda" else None)
    GROUPS = build_groups(timeout)
    make_tensors()
    store_barrier("start", 0)  # through the store: no collective before the first step's
    store = dist.distributed_c10d._get_default_store()
    if rank == 0:  # the common start: one machine has one monotonic clock
        store.set("t0", str(time.monotonic_ns()))
    events.t0 = int(store.get("t0"))
    dog = threading.Thread(target=watchdog, daemon=True)
    if backend == "gloo":  # ProcessGroupNCCL has its own watchdog and dump on timeout; gloo has neither
        dog.start()
    for step in range(1, ARGS.steps + 1):
        step_program(step)
        events("S", step, events.now())
    synchronize()
    events("done", events.now())
    # Leave together: a rank that exits early closes its peers' connections. A peer that hangs
    # instead raises the dump signal, and the watchdog takes this rank down after its dump.
    store_barrier("end", 0, timeout=float("inf"))
    _finished.set()
    if dog.is_alive():
        dog.join()
    dist.destroy_process_group()


DEVICE = torch.device("cpu")
CYCLES_PER_S = 1.0e9
GROUPS = {}
_A = _B = None

if __name__ == "__main__":
    main()
