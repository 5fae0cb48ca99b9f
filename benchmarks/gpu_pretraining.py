"""BERT pretraining throughput on a GPU, with model-FLOPs utilization: ours against keras-hub and transformers.

    python benchmarks/gpu_pretraining.py                  # on a machine with an NVIDIA GPU (5 min on an H200)
    python benchmarks/gpu_pretraining.py --fit            # inside model.fit, at the batch sizes of pretraining
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

With `--fit` (workload `pretrain_fit`) the steps run inside `model.fit` with `steps_per_execution` =
`--steps_per_execution`, so the host waits for the losses once per execution instead of once per step (Keras on
torch accepts only 1: there a fit call runs that many one-step executions; transformers: that many steps in a loop,
synchronized once), at the batch sizes pretraining uses (`FIT_SHAPES`): bert_base 256 x 128 and
64 x 512, bert_large 256 x 128. `--smoke` times both ways at tiny shapes in one process per backend.

MFU = model FLOPs of a step / median step seconds / the GPU's dense bfloat16 peak (`PEAK_BF16_TFLOPS`, the
vendor's datasheet; `--peak_tflops` for another GPU). Model FLOPs count the matrix products of the forward
pass (`pretraining_step_flops`) times 3 for forward and backward, as in the PaLM paper's MFU: no recomputation,
no elementwise work. The run also times one 8192 x 8192 x 8192 bfloat16 matmul on the GPU, the ceiling the
machine reaches in practice; `mfu_vs_matmul` is the model FLOP rate over that measured rate.

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
from run_benchmarks import _run_bench_case, machine, machine_line, versions, write_text  # noqa: E402

BACKENDS = ("jax", "torch", "tensorflow")
# (batch, seq, masked positions a sequence): the sequence lengths of the paper's two pretraining phases, at
# 8,192 tokens a step.
SHAPES = ((64, 128, 20), (16, 512, 80))
SMOKE_SHAPES = ((2, 32, 5),)
# (size, batch, seq, masked positions a sequence) for --fit: the batches users pretrain with on one GPU.
FIT_SHAPES = (("bert_base", 256, 128, 20), ("bert_base", 64, 512, 80), ("bert_large", 256, 128, 20))
SMOKE_STEPS_PER_EXECUTION = 2
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


def run_case(backend, workloads, size, batch, seq, predictions, args):
    """One bench_case.py process timing every library of `backend` in turn for each of `workloads` ("pretrain":
    train_on_batch, "pretrain_fit": inside fit); returns its RESULT dicts, or raises RuntimeError with the
    process's last output."""
    libraries = ["ours", "keras_hub"] + (VARIANTS.get(backend, []) if args.variants is None else args.variants.split(","))
    flags = [f"--size={size}", f"--batch={batch}", f"--seq={seq}", f"--predictions={predictions}",
             "--policy=mixed_bfloat16", f"--warmup={args.warmup}", f"--repeats={args.repeats}",
             f"--steps_per_execution={args.steps_per_execution}"]
    return _run_bench_case(workloads, libraries, backend, flags, timeout=args.case_timeout)


def row(result, peak, matmul=None):
    flops = pretraining_step_flops(result["size"], result["batch"], result["seq"], result["predictions"])
    seconds = result["median_s"]
    rate = flops / seconds / 1e12  # model TFLOP/s
    return {"backend": result["backend"], "library": result["library"], "batch": result["batch"],
            "seq": result["seq"], "predictions": result["predictions"], "median_s": seconds,
            "times": result["times"], "sequences_per_s": round(result["batch"] / seconds, 1),
            "tflops": round(rate, 1), "mfu": None if peak is None else round(rate / peak, 4),
            "size": result["size"], "timing": "fit" if result["workload"] == "pretrain_fit" else "train_on_batch",
            "steps_per_execution": result.get("steps_per_execution", 1),
            "steps_per_call": result.get("steps_per_call", 1),
            "mfu_vs_matmul": None if matmul is None else round(rate / matmul, 4)}


def markdown(report):
    complete = report["complete"]
    lines = [f"# BERT pretraining on a GPU{'' if complete else ' (partial: the run did not finish)'}", "",
             f"Command: `{report['command']}`  ",
             f"Date: {report['date']}  ",
             f"GPU: {report['gpu']}; dense bf16 peak {report['peak_tflops']} TFLOP/s (datasheet), "
             f"measured 8192^3 bf16 matmul {report['matmul_tflops']} TFLOP/s  ",
             *([machine_line(report["machine"]) + "  "] if "machine" in report else []),
             "Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items() if v), "",
             "MLM+NSP training step, mixed_bfloat16, median of the timed steps; MFU against the datasheet peak and "
             "against the measured matmul. Timing `train_on_batch`: one step a call, its losses read each step; "
             "`fit/K`: a `fit` call of `steps_per_call` steps with steps_per_execution=K, seconds per step. "
             "`x ours` is the library's seconds / our seconds (> 1: we are faster).", "",
             "| backend | size | batch x seq | timing | library | step (s) | sequences/s | model TFLOP/s | MFU | "
             "of matmul | x ours |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]

    def percent(share):
        return "" if share is None else f"{100 * share:.1f}%"

    def case(r):  # the rows of one measured case share these (rows written before --fit lack size and timing)
        return r["backend"], r.get("size", "bert_base"), r["batch"], r["seq"], r.get("timing", "train_on_batch")

    for r in report["rows"]:
        ours = next((o for o in report["rows"] if o["library"] == "ours" and case(o) == case(r)), None)
        speed = "" if ours is None else f"{r['median_s'] / ours['median_s']:.2f}"
        backend, size, batch, seq, timing = case(r)
        timing = f"fit/{r['steps_per_execution']}" if timing == "fit" else timing
        lines.append(f"| {backend} | {size} | {batch} x {seq} | {timing} | {r['library']} | {r['median_s']:.4f} | "
                     f"{r['sequences_per_s']} | {r['tflops']} | {percent(r['mfu'])} | "
                     f"{percent(r.get('mfu_vs_matmul'))} | {speed} |")
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
    p.add_argument("--fit", action="store_true",
                   help="time steps inside model.fit with steps_per_execution at FIT_SHAPES instead of "
                        "train_on_batch at SHAPES")
    p.add_argument("--steps_per_execution", type=int, default=10, help="--fit: the steps of one fit call")
    p.add_argument("--smoke", action="store_true",
                   help="bert_tiny, 2 x 32, one train_on_batch step and one fit call of 2 steps: any machine")
    args = p.parse_args(argv)
    if args.smoke:
        args.warmup, args.repeats, args.steps_per_execution = 1, 1, SMOKE_STEPS_PER_EXECUTION
    name = gpu_name()
    if name is None and not args.smoke:
        p.error("no CUDA GPU is visible to torch; --smoke runs the tiny shapes on the CPU")
    report = {"command": "python benchmarks/gpu_pretraining.py " + shlex.join(argv if argv is not None else sys.argv[1:]),
              "date": datetime.datetime.now().isoformat(timespec="seconds"), "gpu": name or "none (CPU)",
              "peak_tflops": args.peak_tflops or peak_tflops(name),
              "matmul_tflops": matmul_tflops() if name else None, "machine": machine(), "versions": versions(),
              "rows": [], "failures": [], "complete": False}
    backends = []
    for backend in args.backends.split(","):
        if importlib.util.find_spec(backend) is None:  # the backends' modules are named as the backends
            report["failures"].append(f"{backend}: not installed on this machine")
        else:
            backends.append(backend)
    write(report, args.out)
    if args.smoke:  # (workloads, size, batch, seq, predictions)
        cases = [(["pretrain", "pretrain_fit"], "bert_tiny", *shape) for shape in SMOKE_SHAPES]
    elif args.fit:
        cases = [(["pretrain_fit"], *shape) for shape in FIT_SHAPES if str(shape[2]) in args.seqs.split(",")]
    else:
        cases = [(["pretrain"], "bert_base", *shape) for shape in SHAPES if str(shape[1]) in args.seqs.split(",")]
    for workloads, size, batch, seq, predictions in cases:
        for backend in backends:
            try:
                results = run_case(backend, workloads, size, batch, seq, predictions, args)
            except RuntimeError as error:
                report["failures"].append(f"{backend} {batch} x {seq}: {error}")
                print(f"    failed: {error}", flush=True)
            else:
                for result in results:
                    result["predictions"] = predictions
                    report["rows"].append(row(result, report["peak_tflops"], report["matmul_tflops"]))
            write(report, args.out)
    report["complete"] = True
    write(report, args.out)
    print(markdown(report))
    return 1 if report["rows"] == [] else 0


if __name__ == "__main__":
    sys.exit(main())
