"""The benchmark suite: keras_bert_impl against keras-hub and transformers, side by side, one script.

    python benchmarks/run_benchmarks.py                       # everything (~25 min on a 2-core CPU)
    python benchmarks/run_benchmarks.py --backends jax --workloads forward,epoch
    python benchmarks/run_benchmarks.py --smoke               # tiny shapes, one repeat: checks the plumbing
    python benchmarks/run_benchmarks.py --interleave --workloads forward,user_head_pooled,user_head_tokens

Every measurement runs in a fresh process (`benchmarks/bench_case.py`, one backend per process, as Keras
needs; `--smoke` runs a library's workloads in one process), one after another, so that cases do not share
caches, threads or memory; each reports the median over repeated runs after warm-up and its peak resident
memory. With `--interleave`, the forward and step workloads instead build every library's model in one process
per backend and time one step of each in turn, round by round: a drift of the machine's speed during the run
then falls on every library alike, which matters where two libraries differ by a few percent. The ratios are "their seconds / our
seconds" (> 1 means we are faster) between cases of the same run on the same machine. Writes
`benchmarks/results/results.json` and `benchmarks/results/results.md` (the table docs/performance.md links), with
the machine, the versions and the command line. Not a test: CI runs only `--smoke` (tests/test_benchmarks.py).

Targets (issue 7), each checked in the table:
  forward      bert_base 8 x 128 fp32: >= 1.0x keras-hub on each backend, >= 1.0x transformers on torch
  train_step   bert_small classifier 16 x 128: >= 1.2x keras-hub on each backend
  epoch        bert_small fine-tuning epoch, realistic lengths, our bucketing vs keras-hub fixed 128: >= 2x
  forward_bf16 bert_base 8 x 128, mixed_bfloat16 vs our own fp32: >= 2x
  train_step_bf16  bert_small classifier 16 x 128, mixed_bfloat16, against keras-hub in mixed_bfloat16: >= 1.0x
               (not a target of the issue: a guard, since a 50x slowdown of bf16 training on TensorFlow once
               went unseen by every other row); the ratio to our own fp32 step is reported too
  pretrain     bert_small MLM+NSP step 16 x 128, 20 predictions, against transformers BertForPreTraining
  user_head_pooled, user_head_tokens (issue 20)
               a user's functional Dense(2) head on the backbone's pooled_output / sequence_output,
               bert_small 16 x 128, Keras' AdamW: >= 1.1x keras-hub on each backend
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BACKENDS = ("tensorflow", "jax", "torch")

# workload: (size, batch, seq, extra flags, compared libraries, target ratio, what the target compares)
WORKLOADS = {
    "forward": ("bert_base", 8, 128, [], ("keras_hub", "transformers"), 1.0, "vs keras-hub and transformers"),
    "train_step": ("bert_small", 16, 128, [], ("keras_hub", "transformers"), 1.2, "vs keras-hub"),
    "epoch": ("bert_small", 16, 128, ["--examples=256"], ("keras_hub",), 2.0, "vs keras-hub fixed-length"),
    "forward_bf16": ("bert_base", 8, 128, [], (), 2.0, "bf16 vs our fp32"),
    "train_step_bf16": ("bert_small", 16, 128, [], ("keras_hub",), 1.0, "vs keras-hub, both bf16"),
    "pretrain": ("bert_small", 16, 128, ["--predictions=20"], ("transformers",), None, "vs transformers"),
    "user_head_pooled": ("bert_small", 16, 128, [], ("keras_hub", "transformers"), 1.1, "vs keras-hub"),
    "user_head_tokens": ("bert_small", 16, 128, [], ("keras_hub", "transformers"), 1.1, "vs keras-hub"),
}
# The workloads `--interleave` times in one process per backend, every library's step in turn
# (bench_case.STEPS).
INTERLEAVABLE = ("forward", "train_step", "pretrain", "pretrain_fit", "user_head_pooled", "user_head_tokens")
SMOKE = {"size": "bert_tiny", "batch": 8, "seq": 32, "examples": 32, "warmup": 1, "repeats": 1}


def case_flags(workload, args):
    """bench_case.py's shape and timing flags for `workload` (the tiny ones with --smoke)."""
    if args.smoke:
        return [f"--size={SMOKE['size']}", f"--batch={SMOKE['batch']}", f"--seq={SMOKE['seq']}",
                f"--examples={SMOKE['examples']}", f"--warmup={SMOKE['warmup']}", f"--repeats={SMOKE['repeats']}"]
    size, batch, seq, extra, _, _, _ = WORKLOADS[workload]
    repeats = args.repeats if workload != "epoch" else max(1, args.repeats // 2)
    return [f"--size={size}", f"--batch={batch}", f"--seq={seq}", f"--warmup={args.warmup}",
            f"--repeats={repeats}", *extra]


def run_case(workload, library, backend, args):
    """One measurement in a fresh process. With --smoke, the first case of a library and backend runs every
    workload of the run that compares that library in one process (tiny shapes: the process start is most of
    the time), and later cases read the stored result."""
    if args.smoke:
        key = (library, backend)
        if key not in args.smoke_results:
            workloads = [w for w in args.workloads if library == "ours" or library in WORKLOADS[w][4]]
            results = _run_bench_case(workloads, [library], backend, case_flags(None, args))
            args.smoke_results[key] = {result["workload"]: result for result in results}
        return args.smoke_results[key][workload]
    return _run_bench_case([workload], [library], backend, case_flags(workload, args))[0]


def run_interleaved(workload, libraries, backend, args):
    """`libraries`' steps of `workload` timed in turn in one fresh process; returns {library: its RESULT}. With
    --smoke, one process times every interleavable workload of the run, and later cases read its results."""
    if args.smoke:
        key = (tuple(libraries), backend)
        if key not in args.smoke_results:
            workloads = [w for w in args.workloads if w in INTERLEAVABLE]
            args.smoke_results[key] = _run_bench_case(workloads, libraries, backend, case_flags(None, args))
        results = [r for r in args.smoke_results[key] if r["workload"] == workload]
    else:
        results = _run_bench_case([workload], libraries, backend, case_flags(workload, args))
    return {result["library"]: result for result in results}


def _run_bench_case(workloads, libraries, backend, flags, timeout=None):
    """Runs bench_case.py for `workloads` and `libraries` in one process; returns its RESULT dicts. Raises
    RuntimeError when the process fails, reports fewer results, or runs past `timeout` seconds."""
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    command = [sys.executable, os.path.join(HERE, "bench_case.py"), f"--workload={','.join(workloads)}",
               f"--library={','.join(libraries)}", *flags]
    print(f"[{backend}] {','.join(workloads)} {','.join(libraries)} ...", flush=True)
    try:
        proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{' '.join(command)} (KERAS_BACKEND={backend}) timed out after {timeout} s") from None
    results = [json.loads(line[len("RESULT "):]) for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or len(results) != len(workloads) * len(libraries):
        raise RuntimeError(f"{' '.join(command)} (KERAS_BACKEND={backend}) failed:\n{proc.stderr[-3000:]}")
    for result in results:
        print(f"    {result['workload']} {result['library']}: median {result['median_s']:.4f} s, "
              f"peak RSS {result['peak_rss_mb']:.0f} MB", flush=True)
    return results


def ratio(theirs, ours):
    return round(theirs / ours, 3) if theirs and ours else None


def run_suite(args):
    rows = []
    transformers_done = {}
    for workload in args.workloads:
        _, _, _, _, compared, target, target_text = WORKLOADS[workload]
        for backend in args.backends:
            libraries = ["ours"] + [library for library in ("keras_hub", "transformers") if library in compared
                                    and (library != "transformers" or backend == "torch")]
            if args.interleave and workload in INTERLEAVABLE:
                results = run_interleaved(workload, libraries, backend, args)
            else:
                results = {"ours": run_case(workload, "ours", backend, args)}
                if "keras_hub" in libraries:
                    results["keras_hub"] = run_case(workload, "keras_hub", backend, args)
                if "transformers" in libraries:
                    if workload not in transformers_done:
                        transformers_done[workload] = run_case(workload, "transformers", "torch", args)
                    results["transformers"] = transformers_done[workload]
            ours = results["ours"]
            row = {"workload": workload, "backend": backend, "ours": ours, "target": target,
                   "target_compares": target_text, "interleaved": "interleaved_with" in ours}
            if "float32_median_s" in ours:
                row["ratio_vs_our_fp32"] = ratio(ours["float32_median_s"], ours["median_s"])
            for library in ("keras_hub", "transformers"):
                if library in results:
                    row[library] = results[library]
                    row[f"ratio_vs_{library}"] = ratio(results[library]["median_s"], ours["median_s"])
            row["target_met"] = target_met(row)
            rows.append(row)
    return rows


def target_met(row):
    target = row["target"]
    if target is None:
        return None
    if row["workload"] == "forward_bf16":
        return row["ratio_vs_our_fp32"] >= target
    checks = [row["ratio_vs_keras_hub"]] if "ratio_vs_keras_hub" in row else []
    if row["workload"] == "forward" and "ratio_vs_transformers" in row:
        checks.append(row["ratio_vs_transformers"])
    return all(r is not None and r >= target for r in checks) if checks else None


def tokenization(args):
    if args.smoke or "tokenization" not in args.extras:
        return None
    output = os.path.join(args.output_dir, "tokenization.json")
    subprocess.run([sys.executable, os.path.join(HERE, "tokenization_benchmark.py"), f"--output={output}"],
                   check=True, cwd=REPO, env={**os.environ, "KERAS_BACKEND": "tensorflow"})
    with open(output) as f:
        return json.load(f)


PACKAGES = ("keras", "keras-hub", "tensorflow", "tensorflow-text", "jax", "torch", "transformers", "tokenizers")


def versions(packages=PACKAGES):
    """Python's version and each package's (None where it is not installed)."""
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for name in packages:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


def cpu_paths_module():
    """`keras_bert_impl/backends/cpu_paths.py` (standard library only), loaded from its file: importing the
    package would import Keras into the process that only starts the measuring ones."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("keras_bert_impl_cpu_paths",
                                                  os.path.join(REPO, "keras_bert_impl", "backends", "cpu_paths.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def machine():
    """The machine a benchmark ran on, for its JSON: the platform, the CPU's model, kind ("avx512", "avx2",
    "other") and instruction-set flags (`keras_bert_impl.backends.cpu_paths`, which chooses the CPU paths from
    them), the cores and the load average."""
    cpu = cpu_paths_module().describe_cpu()
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"platform": platform.platform(), "cpu": cpu["model"], "cpu_kind": cpu["kind"], "cpu_flags": cpu["flags"],
            "cpu_count": os.cpu_count(), "load_average_at_start": load}


def machine_line(machine_record):
    """A results table's "Machine:" line from `machine()`'s record."""
    cpu = {"model": machine_record["cpu"], "kind": machine_record.get("cpu_kind", "other"),
           "flags": machine_record.get("cpu_flags", [])}
    load = machine_record.get("load_average_at_start")
    load = "" if load is None else f" (load average at start: {', '.join(f'{x:.2f}' for x in load)})"
    return f"Machine: {cpu_paths_module().describe_cpu_line(cpu)}; {machine_record['cpu_count']} cores{load}"


def write_text(path, text):
    """`text` as the file `path`, written under a temporary name and renamed, so that a half-written table
    never looks complete. (The package's `utils.file_io.atomic_open` does the same; importing the package
    here would import a Keras backend into the process that only starts the measuring ones.)"""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def write_report(output_dir, name, report, table):
    """`report` as `output_dir/name.json` and its markdown `table` as `name.md`, each written whole."""
    for ext, text in (("json", json.dumps(report, indent=1) + "\n"), ("md", table)):
        write_text(os.path.join(output_dir, f"{name}.{ext}"), text)


def report_header(title, report):
    """A results table's first lines: its title, then the command, date, machine and versions `report` records."""
    return [
        f"# {title}",
        "",
        f"Command: `{report['command']}`  ",
        f"Date: {report['date']}  ",
        machine_line(report["machine"]) + "  ",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items() if v),
        "",
    ]


def fmt(seconds):
    return "" if seconds is None else f"{seconds:.3f}"


def markdown(report):
    interleaved = sorted({row["workload"] for row in report["rows"] if row.get("interleaved")})
    lines = [
        *report_header("Benchmark results", report),
        "Seconds are medians per step (per epoch for `epoch`) after warm-up; a ratio is their time / our time "
        "(> 1: we are faster). Peak RSS is the whole process's, framework included.",
        *([""] + [f"Workloads timed interleaved (`--interleave`, marked ↔): {', '.join(interleaved)}. One process per "
                  "backend builds every library's model and times one step of each in turn, round by round; their "
                  "peak RSS is that process's, all models together."] if interleaved else []),
        "",
        "| workload | shape | backend | ours s | keras-hub s | × keras-hub | transformers s | × transformers "
        "| bf16 × our fp32 | target | met | peak RSS ours / hub MB |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for row in report["rows"]:
        ours, hub, hf = row["ours"], row.get("keras_hub"), row.get("transformers")
        shape = f"{ours['size']} {ours['batch']}×{ours['seq']}" + (" ↔" if row.get("interleaved") else "")
        met = {True: "yes", False: "**no**", None: ""}[row["target_met"]]
        target = "" if row["target"] is None else f"≥ {row['target']}× {row['target_compares']}"
        memory = f"{ours['peak_rss_mb']:.0f}" + (f" / {hub['peak_rss_mb']:.0f}" if hub else "")
        lines.append(
            f"| {row['workload']} | {shape} | {row['backend']} | {fmt(ours['median_s'])} | "
            f"{fmt(hub and hub['median_s'])} | {row.get('ratio_vs_keras_hub') or ''} | {fmt(hf and hf['median_s'])} | "
            f"{row.get('ratio_vs_transformers') or ''} | {row.get('ratio_vs_our_fp32') or ''} | {target} | {met} | {memory} |"
        )
    paths = {}
    for row in report["rows"]:
        paths.setdefault(row["backend"], row["ours"].get("cpu_paths"))
    if any(paths.values()):
        lines += ["", "CPU paths ours took (`keras_bert_impl/backends/cpu_paths.py`): " + "; ".join(
            f"{backend} " + ", ".join(f"{op}={path}" for op, path in chosen.items())
            for backend, chosen in paths.items() if chosen) + "."]
    epochs = [r for r in report["rows"] if r["workload"] == "epoch"]
    if epochs:
        e = epochs[0]
        lines += ["", f"`epoch`: {e['ours']['examples']} examples, mean length {e['ours']['mean_length']:.1f} tokens; "
                  f"our bucketed batches hold {e['ours']['padded_tokens']} token slots for {e['ours']['real_tokens']} "
                  f"real tokens, keras-hub's fixed-length batches {e['keras_hub']['padded_tokens']}."]
    bf16 = [r for r in report["rows"] if r["workload"] == "forward_bf16"]
    for r in bf16:
        lines.append(f"`forward_bf16` ({r['backend']}): max |bf16 - fp32| of the sequence output "
                     f"{r['ours']['max_abs_diff_sequence_output']:.3g}, mean {r['ours']['mean_abs_diff_sequence_output']:.3g} "
                     f"(outputs have std {r['ours']['sequence_output_std']:.2f}).")
        if "gemm_gflops" in r["ours"]:
            g = r["ours"]["gemm_gflops"]
            lines.append(f"  Its ceiling: a bare [1024, 768] x [768, 3072] matmul runs at {g['bfloat16']:.0f} GFLOP/s in bf16 "
                         f"and {g['float32']:.0f} in fp32 on this backend, {g['bfloat16'] / g['float32']:.2f}x.")
    if report.get("tokenization"):
        lines += ["", "## Tokenization (benchmarks/tokenization_benchmark.py)", "", "| method | tokens/s |", "|---|---:|"]
        lines += [f"| {r['method']} | {r['tokens_per_second']:,.0f} |" for r in report["tokenization"]["results"]]
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--extras", default="tokenization", help="Also run: tokenization (or empty).")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--smoke", action="store_true", help="bert_tiny, tiny shapes, one repeat (plumbing check).")
    p.add_argument("--interleave", action="store_true",
                   help=f"Time {', '.join(INTERLEAVABLE)} in one process per backend, every library's step in turn "
                        "round by round, instead of one process per library one after another.")
    p.add_argument("--output_dir", default=os.path.join(HERE, "results"))
    args = p.parse_args(argv)
    args.backends = [b for b in args.backends.split(",") if b]
    args.workloads = [w for w in args.workloads.split(",") if w]
    args.extras = [e for e in args.extras.split(",") if e]
    args.smoke_results = {}
    unknown = [b for b in args.backends if b not in BACKENDS] + [w for w in args.workloads if w not in WORKLOADS]
    if unknown:
        raise SystemExit(f"Unknown backends/workloads {unknown}; backends {BACKENDS}, workloads {tuple(WORKLOADS)}.")
    os.makedirs(args.output_dir, exist_ok=True)
    report = {
        "command": "python benchmarks/run_benchmarks.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": machine(),
        "versions": versions(),
        "smoke": args.smoke,
    }
    report["rows"] = run_suite(args)
    report["tokenization"] = tokenization(args)
    write_report(args.output_dir, "results_smoke" if args.smoke else "results", report, markdown(report))
    print(markdown(report))
    return report


if __name__ == "__main__":
    main()
