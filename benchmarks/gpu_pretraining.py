"""bert_base pretraining throughput on a GPU, with model-FLOPs utilization: ours against keras-hub and transformers.

    python benchmarks/gpu_pretraining.py                  # on a machine with an NVIDIA GPU (5 min on an H200)
    python benchmarks/gpu_pretraining.py --smoke          # tiny shapes on any machine: checks the plumbing

For each backend of `--backends` that is installed and each sequence length, one `bench_case.py` process
(`--workload pretrain`) builds our `BertPretrainer`, keras-hub's backbone with its masked-LM head and an NSP
Dense, and on torch transformers' `BertForPreTraining` (SDPA attention), all under mixed_bfloat16 (torch
autocast to bfloat16 for transformers), and times one MLM+NSP training step of each in turn, round by round.
The shapes are the sequence lengths of the paper's two pretraining phases, at 8,192 tokens a step on one
GPU: 64 x 128 with 20 masked positions a sequence, 16 x 512 with 80 (`max_predictions_per_seq`: about
max_seq_length x masked_lm_prob 0.15, as google-research/bert's README advises). Beside ours each process
times `VARIANTS`: ours with one of its GPU paths replaced (bench_case.OURS_VARIANTS), which measures what
that path saves.

MFU = model FLOPs of a step / median step seconds / the GPU's dense bfloat16 peak (`PEAK_BF16_TFLOPS`, the
vendor's datasheet; `--peak_tflops` for another GPU). Model FLOPs count the matrix products of the forward
pass (`pretraining_step_flops`) times 3 for forward and backward, as in the PaLM paper's MFU: no recomputation,
no elementwise work. The run also times one 8192 x 8192 x 8192 bfloat16 matmul on the GPU, the ceiling the
machine reaches in practice.

Writes `results.json` and `results.md` under `--out` after every case; until the last case has run, the
markdown's title says the run is partial. Not a test: tests/test_benchmarks.py runs `--smoke` on the CPU.
"""

import argparse
import datetime
import importlib.util
import json
import os
import shlex
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_case import SIZES, VOCAB  # noqa: E402
from run_benchmarks import _run_bench_case, versions, write_text  # noqa: E402

BACKENDS = ("jax", "torch", "tensorflow")
# (batch, seq, masked positions a sequence): the sequence lengths of the paper's two pretraining phases, at
# 8,192 tokens a step.
SHAPES = ((64, 128, 20), (16, 512, 80))
SMOKE_SHAPES = ((2, 32, 5),)
# Timed beside ours on each backend: the peers, and ours with one of its GPU paths replaced
# (bench_case.OURS_VARIANTS): what each path saves.
VARIANTS = {"torch": ["transformers", "ours_unfused_attention", "ours_keras_adamw"],
            "jax": ["ours_float32_epilogue"]}
# Dense bfloat16 tensor-core peaks, TFLOP/s, from the vendors' datasheets (without sparsity). H100 SXM and
# H200 share the chip; an H100 PCIe is 756.
PEAK_BF16_TFLOPS = {"H100 80GB HBM3": 989.4, "H100 PCIe": 756.5, "H200": 989.4, "A100": 312.0}


def pretraining_step_flops(size, batch, seq, predictions, vocab=VOCAB):
    """Model FLOPs of one MLM+NSP training step: 3 x the forward pass's matrix products.

    Per sequence and layer: the query/key/value/output projections 4 x 2 T H^2, the feed-forward
    2 x 2 T H I, and attention's two products 2 x 2 T^2 H; the pooler 2 H^2 and NSP 2 H 2 per sequence;
    the masked-LM head (transform 2 H^2, tied output 2 H V) per masked position.

    >>> pretraining_step_flops("bert_base", 1, 128, 20) / 1e9
    69.928989696
    """
    layers, hidden, _, intermediate = SIZES[size]
    per_layer = 8 * seq * hidden ** 2 + 4 * seq * hidden * intermediate + 4 * seq ** 2 * hidden
    per_sequence = layers * per_layer + 2 * hidden ** 2 + 4 * hidden
    per_sequence += predictions * (2 * hidden ** 2 + 2 * hidden * vocab)
    return 3 * batch * per_sequence


def gpu_name():
    """The GPU's name as torch reports it, or None without a CUDA GPU (or without torch)."""
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def peak_tflops(name):
    return next((peak for key, peak in PEAK_BF16_TFLOPS.items() if name and key in name), None)


def matmul_tflops(n=8192, repeats=10):
    """Measured bfloat16 matmul rate on the GPU (torch; the mean of `repeats` products after 3 warm-ups)."""
    import torch

    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    torch.cuda.synchronize()
    rate = 2 * n ** 3 * repeats / (time.perf_counter() - start) / 1e12
    del a, b
    torch.cuda.empty_cache()
    return round(rate, 1)


def run_case(backend, batch, seq, predictions, args):
    """One bench_case.py process timing every library of `backend` in turn; returns its RESULT dicts, or
    raises RuntimeError with the process's last output."""
    libraries = ["ours", "keras_hub"] + (VARIANTS.get(backend, []) if args.variants is None else args.variants.split(","))
    flags = [f"--size={args.size}", f"--batch={batch}", f"--seq={seq}", f"--predictions={predictions}",
             "--policy=mixed_bfloat16", f"--warmup={args.warmup}", f"--repeats={args.repeats}"]
    return _run_bench_case(["pretrain"], libraries, backend, flags, timeout=args.case_timeout)


def row(result, peak):
    flops = pretraining_step_flops(result["size"], result["batch"], result["seq"], result["predictions"])
    seconds = result["median_s"]
    return {"backend": result["backend"], "library": result["library"], "batch": result["batch"],
            "seq": result["seq"], "predictions": result["predictions"], "median_s": seconds,
            "times": result["times"], "sequences_per_s": round(result["batch"] / seconds, 1),
            "tflops": round(flops / seconds / 1e12, 1),
            "mfu": None if peak is None else round(flops / seconds / 1e12 / peak, 4)}


def markdown(report):
    complete = report["complete"]
    lines = [f"# bert_base pretraining on a GPU{'' if complete else ' (partial: the run did not finish)'}", "",
             f"Command: `{report['command']}`  ",
             f"Date: {report['date']}  ",
             f"GPU: {report['gpu']}; dense bf16 peak {report['peak_tflops']} TFLOP/s (datasheet), "
             f"measured 8192^3 bf16 matmul {report['matmul_tflops']} TFLOP/s  ",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items() if v), "",
             "MLM+NSP training step, mixed_bfloat16, median of the timed steps; MFU against the datasheet peak. "
             "`x ours` is the library's seconds / our seconds (> 1: we are faster).", "",
             "| backend | batch x seq | library | step (s) | sequences/s | model TFLOP/s | MFU | x ours |",
             "|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        ours = next((o for o in report["rows"] if o["library"] == "ours" and o["backend"] == r["backend"]
                     and o["seq"] == r["seq"]), None)
        speed = "" if ours is None else f"{r['median_s'] / ours['median_s']:.2f}"
        mfu = "" if r["mfu"] is None else f"{100 * r['mfu']:.1f}%"
        lines.append(f"| {r['backend']} | {r['batch']} x {r['seq']} | {r['library']} | {r['median_s']:.4f} | "
                     f"{r['sequences_per_s']} | {r['tflops']} | {mfu} | {speed} |")
    for failure in report["failures"]:
        lines.append(f"\nNot measured: {failure}")
    return "\n".join(lines) + "\n"


def write(report, out):
    os.makedirs(out, exist_ok=True)
    write_text(os.path.join(out, "results.json"), json.dumps(report, indent=1))
    write_text(os.path.join(out, "results.md"), markdown(report))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--out", default=os.path.join(HERE, "results", "gpu_pretraining"))
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--case_timeout", type=int, default=300, help="seconds one backend and shape may take")
    p.add_argument("--peak_tflops", type=float, default=None, help="the GPU's dense bf16 peak, if not in the table")
    p.add_argument("--seqs", default="128,512", help="the sequence lengths of SHAPES to run")
    p.add_argument("--variants", default=None,
                   help="what to time beside ours and keras-hub on every backend (comma-separated libraries of "
                        "bench_case.py) instead of VARIANTS")
    p.add_argument("--smoke", action="store_true", help="bert_tiny, 2 x 32, one step: any machine")
    args = p.parse_args(argv)
    args.size = "bert_tiny" if args.smoke else "bert_base"
    if args.smoke:
        args.warmup, args.repeats = 1, 1
    name = gpu_name()
    if name is None and not args.smoke:
        p.error("no CUDA GPU is visible to torch; --smoke runs the tiny shapes on the CPU")
    report = {"command": "python benchmarks/gpu_pretraining.py " + shlex.join(argv if argv is not None else sys.argv[1:]),
              "date": datetime.datetime.now().isoformat(timespec="seconds"), "gpu": name or "none (CPU)",
              "peak_tflops": args.peak_tflops or peak_tflops(name),
              "matmul_tflops": matmul_tflops() if name else None, "versions": versions(), "rows": [],
              "failures": [], "complete": False}
    backends = []
    for backend in args.backends.split(","):
        if importlib.util.find_spec(backend) is None:  # the backends' modules are named as the backends
            report["failures"].append(f"{backend}: not installed on this machine")
        else:
            backends.append(backend)
    write(report, args.out)
    shapes = SMOKE_SHAPES if args.smoke else [shape for shape in SHAPES if str(shape[1]) in args.seqs.split(",")]
    for batch, seq, predictions in shapes:
        for backend in backends:
            try:
                results = run_case(backend, batch, seq, predictions, args)
            except RuntimeError as error:
                report["failures"].append(f"{backend} {batch} x {seq}: {error}")
                print(f"    failed: {error}", flush=True)
            else:
                for result in results:
                    result["predictions"] = predictions
                    report["rows"].append(row(result, report["peak_tflops"]))
            write(report, args.out)
    report["complete"] = True
    write(report, args.out)
    print(markdown(report))
    return 1 if report["rows"] == [] else 0


if __name__ == "__main__":
    sys.exit(main())
