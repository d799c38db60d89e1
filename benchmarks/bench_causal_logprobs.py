"""Benchmark: ``autograder.reference.causal_response_logprobs`` against the plain formula.

The plain formula is what the seed's solution does: convert every shifted logit to float64,
take a log-softmax over the whole ``[B, L-1, V]`` block, then ``take_along_axis``. The
reference must give the same values while being faster and never holding a float64
``[B, L, V]`` array.

Both methods run in the same process on the same float32 logits (``[4, 1024, 32000]``,
~524 MB, generated once from a seeded RNG), so the numbers are ratios against a baseline
measured in the same run, not absolute timings:

* speed: median wall time of ``--repeats`` calls each, reported as plain / reference;
* peak extra memory: the highest allocation above what existed before the call, measured
  with ``tracemalloc`` (NumPy reports its buffers to it) and, independently, as the growth
  of the peak resident size (VmHWM) in a fresh subprocess per method; both as a multiple of
  the logits' bytes;
* agreement: the largest absolute difference between the two results (must be <= 1e-10).

Targets: speed ratio >= 2 and reference extra memory < 0.1 x the input. The exit status is
0 when the values agree and both targets are met, 1 otherwise.

Run by hand from the repository root::

    .venv/bin/python benchmarks/bench_causal_logprobs.py            # full size
    .venv/bin/python benchmarks/bench_causal_logprobs.py --vocab 4000 --repeats 2   # quick look
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.reference import causal_response_logprobs  # noqa: E402

SPEED_TARGET = 2.0
MEMORY_TARGET = 0.1
AGREEMENT = 1e-10


def plain_formula(model_logits, input_ids, response_token_mask):
    """The direct translation of the definition: float64 everywhere, then gather."""
    logits = np.asarray(model_logits, dtype=np.float64)[:, :-1, :]
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    targets = np.asarray(input_ids)[:, 1:]
    selected = np.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]
    return selected, np.asarray(response_token_mask, dtype=bool)[:, 1:]


METHODS = {"plain": plain_formula, "reference": causal_response_logprobs}


def make_inputs(batch: int, length: int, vocab: int, seed: int):
    rng = np.random.default_rng(seed)
    # Generated straight into float32 (no float64 temporary) and scaled in place.
    logits = rng.standard_normal((batch, length, vocab), dtype=np.float32)
    logits *= np.float32(4.0)
    input_ids = rng.integers(0, vocab, size=(batch, length), dtype=np.int64)
    mask = np.zeros((batch, length), dtype=np.int64)
    mask[:, length // 4 :] = 1
    return logits, input_ids, mask


def time_method(method, inputs, repeats: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        method(*inputs)
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def traced_peak_extra(method, inputs) -> int:
    """Bytes allocated at peak during one call, above what was live before it."""
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = method(*inputs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return peak - before


def peak_rss_bytes() -> int:
    """This process's peak resident set size (VmHWM).

    Not ``ru_maxrss``: on Linux that survives exec, so a child would start from its parent's
    peak (here: the parent's ~0.5-5 GB) and report no growth at all.
    """
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def rss_child(method_name: str, path: str, shape: list[int]) -> None:
    """Entry point of the fresh subprocess: load the inputs, report the peak-RSS growth."""
    # Plain .npy files are read straight into their arrays, so loading peaks at the input's
    # own size and cannot hide a method's peak behind a larger loading peak.
    inputs = tuple(np.load(os.path.join(path, f"{name}.npy")) for name in ("logits", "input_ids", "mask"))
    assert list(inputs[0].shape) == shape
    gc.collect()
    before = peak_rss_bytes()
    METHODS[method_name](*inputs)
    after = peak_rss_bytes()
    print(json.dumps({"extra_bytes": after - before}))


def rss_extra(method_name: str, path: str, shape) -> int:
    completed = subprocess.run(
        [sys.executable, __file__, "--rss-child", method_name, path, json.dumps(list(shape))],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )
    return int(json.loads(completed.stdout.strip().splitlines()[-1])["extra_bytes"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--length", type=int, default=1024)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--no-rss", action="store_true", help="skip the fresh-subprocess peak-RSS measurement")
    parser.add_argument("--rss-child", nargs=3, metavar=("METHOD", "PATH", "SHAPE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_child:
        method_name, path, shape = args.rss_child
        rss_child(method_name, path, json.loads(shape))
        return 0

    inputs = make_inputs(args.batch, args.length, args.vocab, args.seed)
    input_bytes = inputs[0].nbytes
    print(f"logits float32 {inputs[0].shape}: {input_bytes / 2**20:.0f} MiB; "
          f"{os.cpu_count()} CPUs; numpy {np.__version__}")

    plain_selected, plain_mask = plain_formula(*inputs)
    reference_selected, reference_mask = causal_response_logprobs(*inputs)
    difference = float(np.max(np.abs(plain_selected - reference_selected)))
    agree = (
        reference_selected.dtype == np.float64
        and reference_selected.shape == plain_selected.shape
        and np.array_equal(reference_mask, plain_mask)
        and difference <= AGREEMENT
    )
    print(f"agreement: max |plain - reference| = {difference:.3e} (limit {AGREEMENT:g}) -> {'ok' if agree else 'MISMATCH'}")
    del plain_selected, plain_mask, reference_selected, reference_mask

    results = {}
    for name, method in METHODS.items():
        median, times = time_method(method, inputs, args.repeats)
        traced = traced_peak_extra(method, inputs)
        results[name] = {"median_s": median, "times_s": times, "traced_extra": traced}
        print(f"{name:>9}: median {median:.3f} s over {args.repeats} ({', '.join(f'{t:.3f}' for t in times)}); "
              f"tracemalloc peak extra {traced / 2**20:.1f} MiB = {traced / input_bytes:.3f} x input")

    if not args.no_rss:
        with tempfile.TemporaryDirectory(prefix="bench_causal_") as directory:
            for name, array in zip(("logits", "input_ids", "mask"), inputs):
                np.save(os.path.join(directory, f"{name}.npy"), array)
            path = directory
            shape = inputs[0].shape
            del inputs
            gc.collect()
            for name in METHODS:
                extra = rss_extra(name, path, shape)
                results[name]["rss_extra"] = extra
                print(f"{name:>9}: peak RSS growth in a fresh process {extra / 2**20:.1f} MiB = "
                      f"{extra / input_bytes:.3f} x input")

    speed = results["plain"]["median_s"] / results["reference"]["median_s"]
    memory = max(results["reference"]["traced_extra"], results["reference"].get("rss_extra", 0)) / input_bytes
    plain_memory = results["plain"]["traced_extra"] / input_bytes
    speed_ok, memory_ok = speed >= SPEED_TARGET, memory < MEMORY_TARGET
    print(f"speed ratio plain/reference = {speed:.2f}x (target >= {SPEED_TARGET:g}x) -> {'ok' if speed_ok else 'MISSED'}")
    print(f"reference peak extra = {memory:.3f} x input (target < {MEMORY_TARGET:g}x) -> {'ok' if memory_ok else 'MISSED'}; "
          f"plain formula: {plain_memory:.2f} x input")
    return 0 if (agree and speed_ok and memory_ok) else 1


if __name__ == "__main__":
    sys.exit(main())
