"""Runs one command once per seed and writes each metric's mean ± standard deviation over the runs.

    python benchmarks/seed_runs.py --seeds 42,43,44 --results output/msra/{seed}/eval_results.json \
        --metrics f1,precision,recall --output benchmarks/results/seeds/msra_ner -- \
        python recipes/run_ner.py --data_dir data/chinese/msra ... --output_dir output/msra/{seed} --seed {seed}

Every `{seed}` in the command and in `--results` is replaced by the run's seed. After each run the script
reads `--results` (a JSON object, e.g. a recipe's eval_results.json) and keeps the numeric values named by
`--metrics` (all of its top-level numbers when not given), then writes `OUTPUT.json` (every run's values and
wall time, the mean and the sample standard deviation (n - 1) of each metric, the command,
the date and the machine: CPU model, instruction-set extensions, core count, library versions) and
`OUTPUT.md` (the same as a table of `mean ± std`). A run that fails stops the script with its exit status and
writes nothing. This file is not a test; `tests/test_seed_runs.py` checks it with a trivial command.
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The machine (CPU model, its instruction-set kind and flags, which choose the oneDNN / MKL / XLA kernels and so
# the order of floating-point sums: what makes results move between CPUs), the library versions, the writer.
from run_benchmarks import machine, machine_line, versions, write_text  # noqa: E402


def summarize(values):
    """`{"mean", "std", "n"}` of a list of numbers: the sample standard deviation (0.0 for one value)."""
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"mean": statistics.fmean(values), "std": std, "n": len(values)}


def read_metrics(path, names):
    with open(path, encoding="utf-8") as f:
        results = json.load(f)
    if not isinstance(results, dict):
        raise SystemExit(f"error: {path}: expected a JSON object of metrics, got {type(results).__name__}")
    if names is None:
        return {k: float(v) for k, v in results.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    missing = [n for n in names if not isinstance(results.get(n), (int, float))]
    if missing:
        raise SystemExit(f"error: {path}: no numeric metric {', '.join(missing)} (it has: {', '.join(sorted(results))})")
    return {n: float(results[n]) for n in names}


def markdown(report):
    lines = [f"# {report['name']}: mean ± std over {len(report['runs'])} seeds", "",
             f"Seeds {', '.join(str(r['seed']) for r in report['runs'])}; {report['date']}; "
             f"{machine_line(report['machine'])}; KERAS_BACKEND={report['backend']}; "
             + ", ".join(f"{k} {v}" for k, v in report["versions"].items() if v) + ".", "",
             "```bash", " ".join(report["command"]), "```", "",
             "| metric | mean ± std | " + " | ".join(f"seed {r['seed']}" for r in report["runs"]) + " |",
             "| --- | --- | " + " | ".join("---" for _ in report["runs"]) + " |"]
    rows = dict(report["metrics"], wall_s=report["wall_s"])
    for name, s in rows.items():
        per_seed = [r["wall_s"] if name == "wall_s" else r["metrics"][name] for r in report["runs"]]
        lines.append(f"| {name} | {s['mean']:.4f} ± {s['std']:.4f} | " + " | ".join(f"{v:.4f}" for v in per_seed) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--" not in argv:
        raise SystemExit("error: give the command after `--`, e.g. -- python recipes/run_glue.py ... --seed {seed}")
    split = argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="42,43,44", help="Comma-separated seeds, one run each (default 42,43,44).")
    parser.add_argument("--results", required=True, help="The JSON file of metrics a run writes ({seed} replaced).")
    parser.add_argument("--metrics", default=None, help="Comma-separated metric names (default: every number).")
    parser.add_argument("--output", required=True, help="Writes OUTPUT.json and OUTPUT.md.")
    args = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    if not command:
        raise SystemExit("error: the command after `--` is empty")
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        raise SystemExit(f"error: --seeds: expected comma-separated integers, got {args.seeds!r}") from None
    names = args.metrics.split(",") if args.metrics else None

    runs = []
    for seed in seeds:
        run_command = [part.replace("{seed}", str(seed)) for part in command]
        print(f"seed {seed}: {' '.join(run_command)}", flush=True)
        start = time.perf_counter()
        rc = subprocess.call(run_command)
        wall = time.perf_counter() - start
        if rc != 0:
            print(f"error: seed {seed}: the command exited with status {rc}", file=sys.stderr)
            return rc
        metrics = read_metrics(args.results.replace("{seed}", str(seed)), names)
        runs.append({"seed": seed, "metrics": metrics, "wall_s": wall})
        print(f"seed {seed}: " + ", ".join(f"{k}={v:.4f}" for k, v in metrics.items()) + f" ({wall:.1f} s)", flush=True)

    report = {
        "name": os.path.basename(args.output),
        "command": command,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "backend": os.environ.get("KERAS_BACKEND", "tensorflow"),
        "machine": machine(),
        "versions": versions(),
        "runs": runs,
        "metrics": {name: summarize([r["metrics"][name] for r in runs]) for name in runs[0]["metrics"]},
        "wall_s": summarize([r["wall_s"] for r in runs]),
    }
    directory = os.path.dirname(args.output)
    if directory:
        os.makedirs(directory, exist_ok=True)
    write_text(args.output + ".json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    write_text(args.output + ".md", markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
