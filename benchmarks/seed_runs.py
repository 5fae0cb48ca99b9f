"""Runs one command once per seed and writes each metric's mean ± standard deviation over the runs.

    python benchmarks/seed_runs.py --seeds 42,43,44 --results output/msra/{seed}/eval_results.json \
        --metrics f1,precision,recall --output benchmarks/results/seeds/msra_ner -- \
        python recipes/run_ner.py --data_dir data/chinese/msra ... --output_dir output/msra/{seed} --seed {seed}

Every `{seed}` in the command and in `--results` is replaced by the run's seed. After each run the script
reads `--results` (a JSON object, e.g. a recipe's eval_results.json) and keeps the numeric values named by
`--metrics` (all of its top-level numbers when not given), then writes `OUTPUT.json` (every run's values,
wall time and exit status, the mean and the sample standard deviation (n - 1) of each metric, the command,
the date and the machine: CPU model, instruction-set extensions, core count, library versions) and
`OUTPUT.md` (the same as a table of `mean ± std`). A run that fails stops the script with its exit status and
writes nothing. This file is not a test; `tests/test_seed_runs.py` checks it with a trivial command.
"""

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import time

# The instruction-set extensions that decide which oneDNN / MKL / XLA kernels a CPU runs (and so the order in
# which floating-point sums are taken): what makes results move between CPUs.
ISA_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_tile", "amx_bf16")
LIBRARIES = ("keras", "tensorflow", "jax", "torch", "numpy")


def cpu_description():
    """The CPU's model name, its ISA extensions of `ISA_FLAGS`, and the cores this process may use."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": model, "isa": [f for f in ISA_FLAGS if f in flags], "cores": cores,
            "machine": platform.machine(), "system": platform.system()}


def library_versions():
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return versions


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
             f"{report['machine']['cpu']} ({report['machine']['cores']} cores; ISA: "
             f"{' '.join(report['machine']['isa']) or 'none of ' + ' '.join(ISA_FLAGS)}); "
             f"KERAS_BACKEND={report['backend']}; "
             + ", ".join(f"{k} {v}" for k, v in report["versions"].items()) + ".", "",
             "```bash", " ".join(report["command"]), "```", "",
             "| metric | mean ± std | " + " | ".join(f"seed {r['seed']}" for r in report["runs"]) + " |",
             "| --- | --- | " + " | ".join("---" for _ in report["runs"]) + " |"]
    rows = dict(report["metrics"], wall_s=report["wall_s"])
    for name, s in rows.items():
        per_seed = [r["wall_s"] if name == "wall_s" else r["metrics"][name] for r in report["runs"]]
        lines.append(f"| {name} | {s['mean']:.4f} ± {s['std']:.4f} | " + " | ".join(f"{v:.4f}" for v in per_seed) + " |")
    return "\n".join(lines) + "\n"


def write_atomically(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


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
        "machine": cpu_description(),
        "versions": library_versions(),
        "runs": runs,
        "metrics": {name: summarize([r["metrics"][name] for r in runs]) for name in runs[0]["metrics"]},
        "wall_s": summarize([r["wall_s"] for r in runs]),
    }
    directory = os.path.dirname(args.output)
    if directory:
        os.makedirs(directory, exist_ok=True)
    write_atomically(args.output + ".json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    write_atomically(args.output + ".md", markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
