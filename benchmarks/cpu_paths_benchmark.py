"""Every CPU path of each backend (`keras_bert_impl/backends/cpu_paths.py`) against keras-hub, interleaved:

    python benchmarks/cpu_paths_benchmark.py                     # all three backends (~1 h on an idle 2-core CPU)
    python benchmarks/cpu_paths_benchmark.py --backends=torch --repeats=30

Per backend, one process per workload (`bench_case.py`) builds keras-hub's model and ours once for every
combination of that backend's paths (`ours@dense=blas@attention=fused`, forced with `cpu_paths.forced`),
and times one step of each in turn, round by round, the first moving by one each round: the bert_base
forward at 8 x 128 (`predict_on_batch`) and the bert_small classifier's training step at 16 x 128 (the
workloads and targets of issue 54: >= 1.0x and >= 1.2x keras-hub). The forward is timed over the paths
of products without a gradient (`dense_inference`) and of the attention; the training step over the dense
paths with a gradient (`dense`) alone: it applies BERT's dropout to the attention probabilities, which only
the explicit attention does. Reports, per combination, the median seconds, and keras-hub's time over ours:
the ratio of the medians, and the median, lowest and highest of the rounds' own ratios (each round's
keras-hub step over that round's step of ours), with the combination this CPU chooses marked. Writes
`benchmarks/results/cpu_paths/results.json` and `results.md` with the command, the date, the CPU and its
instruction set. Not a test.
"""

import argparse
import datetime
import itertools
import os
import shlex
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from run_benchmarks import (BACKENDS, _run_bench_case, cpu_paths_module, machine, report_header,  # noqa: E402
                            versions, write_report)

# workload: (size, batch, seq, target ratio vs keras-hub, the operations whose paths it times)
WORKLOADS = {
    "forward": ("bert_base", 8, 128, 1.0, ("dense_inference", "attention")),
    "train_step": ("bert_small", 16, 128, 1.2, ("dense",)),
}


def combinations(backend, operations):
    """Every combination of `backend`'s paths for `operations`, as {operation: path} dicts."""
    paths = {op: names for op, names in cpu_paths_module().PATHS[backend].items() if op in operations}
    return [dict(zip(paths, chosen)) for chosen in itertools.product(*paths.values())]


def library_name(paths):
    """{"dense": "blas"} -> "ours@dense=blas" (bench_case.py's name of ours with those paths forced)."""
    return "@".join(["ours", *(f"{op}={path}" for op, path in paths.items())])


def summarize(times, hub_times):
    """Median seconds and keras-hub's time over these: the ratio of medians, and the rounds' own ratios."""
    rounds = [hub / ours for hub, ours in zip(hub_times, times)]
    return {"median_s": round(statistics.median(times), 4),
            "ratio_vs_keras_hub": round(statistics.median(hub_times) / statistics.median(times), 3),
            "round_ratio_median": round(statistics.median(rounds), 3), "round_ratio_min": round(min(rounds), 3),
            "round_ratio_max": round(max(rounds), 3), "times": [round(t, 4) for t in times]}


def run_backend(backend, args):
    cpu_paths = cpu_paths_module()
    chosen = cpu_paths.chosen_paths(backend)
    rows = []
    for workload in args.workloads:
        size, batch, seq, target, operations = WORKLOADS[workload]
        variants = combinations(backend, operations)
        libraries = ["keras_hub"] + [library_name(paths) for paths in variants]
        if args.smoke:
            size, batch, seq = "bert_tiny", 2, 16
        flags = [f"--size={size}", f"--batch={batch}", f"--seq={seq}", f"--warmup={args.warmup}",
                 f"--repeats={args.repeats}"]
        results = {r["library"]: r for r in _run_bench_case([workload], libraries, backend, flags)}
        hub = results["keras_hub"]
        for paths in variants:
            ours = results[library_name(paths)]
            rows.append({"backend": backend, "workload": workload, "size": size, "batch": batch, "seq": seq,
                         "target": target, "paths": paths, "cpu_paths_taken": ours.get("cpu_paths"),
                         "chosen_here": all(chosen[op] == path for op, path in paths.items()),
                         "keras_hub_median_s": round(hub["median_s"], 4), **summarize(ours["times"], hub["times"])})
        rows[-len(variants):] = sorted(rows[-len(variants):], key=lambda r: not r["chosen_here"])
    return rows


def markdown(report):
    lines = [
        *report_header("CPU paths against keras-hub", report),
        f"Each backend's workload in one process: keras-hub's model and ours under every combination of the "
        f"backend's CPU paths (`keras_bert_impl/backends/cpu_paths.py`, forced), one step of each in turn, "
        f"{report['repeats']} rounds after {report['warmup']} of warm-up. Seconds are medians; × keras-hub is "
        "keras-hub's median over ours, and the rounds' own ratios (keras-hub's step over ours in the same round) "
        "as median [lowest, highest]. ✔ marks the paths this CPU chooses. The forward differs in the products "
        "without a gradient (`dense_inference`) and the attention; the training step in the products with one "
        "(`dense`) alone: it applies dropout to the attention probabilities, which the explicit attention does "
        "on every backend.",
        "",
        "| backend | workload | paths | chosen here | ours s | keras-hub s | × keras-hub | rounds' ratio median [min, max] "
        "| target |",
        "|---|---|---|---|---:|---:|---:|---|---|",
    ]
    for r in report["rows"]:
        paths = ", ".join(f"{op}={path}" for op, path in r["paths"].items()) or "(one path)"
        met = "met" if r["ratio_vs_keras_hub"] >= r["target"] else "**not met**"
        lines.append(f"| {r['backend']} | {r['workload']} {r['size']} {r['batch']}×{r['seq']} | {paths} | "
                     f"{'✔' if r['chosen_here'] else ''} | {r['median_s']:.3f} | {r['keras_hub_median_s']:.3f} | "
                     f"{r['ratio_vs_keras_hub']:.3f} | {r['round_ratio_median']:.3f} [{r['round_ratio_min']:.3f}, "
                     f"{r['round_ratio_max']:.3f}] | ≥ {r['target']}× ({met}) |")
    if report["failures"]:
        lines += ["", "Not measured: " + "; ".join(report["failures"])]
    missing = [b for b in report["backends"] if b not in report["backends_done"]]
    if missing:
        lines += ["", f"**Incomplete**: {', '.join(missing)} not measured yet."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--output_dir", default=os.path.join(HERE, "results", "cpu_paths"))
    p.add_argument("--smoke", action="store_true", help="bert_tiny at 2 x 16 (checks the plumbing).")
    args = p.parse_args(argv)
    args.backends = [b for b in args.backends.split(",") if b]
    args.workloads = [w for w in args.workloads.split(",") if w]
    unknown = [b for b in args.backends if b not in BACKENDS] + [w for w in args.workloads if w not in WORKLOADS]
    if unknown:
        raise SystemExit(f"Unknown backends/workloads {unknown}; backends {BACKENDS}, workloads {tuple(WORKLOADS)}.")
    report = {"command": shlex.join(["python", "benchmarks/cpu_paths_benchmark.py",
                                     *(argv if argv is not None else sys.argv[1:])]),
              "date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine(),
              "versions": versions(), "warmup": args.warmup, "repeats": args.repeats, "smoke": args.smoke,
              "backends": args.backends, "backends_done": [], "rows": [], "failures": []}
    os.makedirs(args.output_dir, exist_ok=True)
    for backend in args.backends:
        try:
            report["rows"] += run_backend(backend, args)
        except RuntimeError as error:  # one backend's failure leaves the others' rows
            report["failures"].append(f"{backend}: {str(error).splitlines()[0]}")
        report["backends_done"].append(backend)
        write_report(args.output_dir, "results", report, markdown(report))
    print(markdown(report))
    return report


if __name__ == "__main__":
    main()
