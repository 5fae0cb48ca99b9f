"""Serving latency on a CPU: batch-1 p50 / p99 of a bert_base classifier (random weights) at 32 and 128 tokens,
every deployable path of ours against keras-hub's and transformers', in one process per backend.

    python benchmarks/serving_latency.py --backend tensorflow   # then jax, torch; each writes its JSON
    python benchmarks/serving_latency.py --table                # benchmarks/results/serving/results.md

Paths (each a callable on one [1, T] input of T real tokens; its outputs are checked against ours first):
  ours_predict     BertClassifier, `model.predict(x)` (every backend)
  ours_compiled    its direct compiled call: tf.function (TensorFlow), jax.jit of `stateless_call` (JAX),
                   the eager call under torch.inference_mode (torch)
  ours_xla         tf.function(jit_compile=True) (TensorFlow)
  ours_savedmodel  our SavedModel's `serving_token_ids` (export_saved_model), loaded with tf.saved_model.load
  ours_litert      our LiteRT file (export_litert) in the stock ai_edge_litert interpreter, all cores
  ours_onnx        our ONNX file (export_onnx) in onnxruntime, all graph optimizations
  ours_onnx_fused  the same file after `onnxruntime.transformers.optimizer.optimize_model` (model type
                   bert_tf: tf2onnx's graph; its attention, LayerNorm and GELU fusions)
  keras_hub_predict, keras_hub_compiled   keras-hub's BertTextClassifier, the same two ways as ours
  hf_eager         transformers' BertForSequenceClassification under torch.inference_mode (torch)
  hf_compiled      torch.compile of it (torch)
  hf_onnx_fused    it exported by torch.onnx (TorchScript exporter, dynamic axes) and fused by
                   `optimize_model(model_type="bert")`, in onnxruntime (torch)

The paths' calls are timed in turn, round by round (`--repeats` rounds after `--warmup`), so that every path
sees the same load on a shared machine. `--smoke` runs bert_tiny at 8 tokens, 3 rounds, into --output_dir
without torch.compile (tests/test_benchmarks.py). Not a test.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results", "serving")
SIZES = {"bert_base": dict(layers=12, hidden=768, heads=12, intermediate=3072),
         "bert_tiny": dict(layers=2, hidden=128, heads=2, intermediate=512)}
VOCAB, NUM_CLASSES = 30522, 2
DEPLOYABLE = ("ours_savedmodel", "ours_litert", "ours_onnx", "ours_onnx_fused")


def inputs(length, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, VOCAB, size=(1, length)).astype("int32")
    ids[0, 0] = 101
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}


def our_model(size):
    from keras_bert_impl import BertBackbone, BertClassifier
    from keras_bert_impl.config import BertConfig

    s = SIZES[size]
    config = BertConfig(vocab_size=VOCAB, hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                        num_attention_heads=s["heads"], intermediate_size=s["intermediate"])
    return BertClassifier(BertBackbone(config), num_classes=NUM_CLASSES)


def keras_hub_model(size):
    import keras_hub

    s = SIZES[size]
    backbone = keras_hub.models.BertBackbone(vocabulary_size=VOCAB, num_layers=s["layers"], num_heads=s["heads"],
                                             hidden_dim=s["hidden"], intermediate_dim=s["intermediate"])
    return keras_hub.models.BertTextClassifier(backbone, num_classes=NUM_CLASSES, preprocessor=None)


def keras_paths(prefix, model, x):
    """{name: fn} of a Keras model: predict, and the backend's direct compiled call."""
    import keras

    backend = keras.backend.backend()
    paths = {f"{prefix}_predict": lambda: model.predict(x, verbose=0)}
    if backend == "tensorflow":
        import tensorflow as tf

        graph = tf.function(lambda inputs: model(inputs, training=False))
        xla = tf.function(lambda inputs: model(inputs, training=False), jit_compile=True)
        tensors = {k: tf.constant(v) for k, v in x.items()}
        paths[f"{prefix}_compiled"] = lambda: graph(tensors).numpy()
        if prefix == "ours":
            paths[f"{prefix}_xla"] = lambda: xla(tensors).numpy()
    elif backend == "jax":
        import jax

        # Copies: predict() may donate the variables' own buffers.
        trainable = [jax.numpy.array(v.value, copy=True) for v in model.trainable_variables]
        non_trainable = [jax.numpy.array(v.value, copy=True) for v in model.non_trainable_variables]
        call = jax.jit(lambda tv, ntv, inputs: model.stateless_call(tv, ntv, inputs, training=False)[0])
        arrays = {k: jax.numpy.asarray(v) for k, v in x.items()}
        paths[f"{prefix}_compiled"] = lambda: call(trainable, non_trainable, arrays).block_until_ready()
    else:
        import torch

        tensors = {k: torch.as_tensor(v) for k, v in x.items()}

        def eager():
            with torch.inference_mode():
                return model(tensors, training=False)

        paths[f"{prefix}_compiled"] = eager
    return paths


def onnx_session(path):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def fused_onnx(path, model_type, size):
    """The ONNX file fused by onnxruntime's transformer optimizer; returns (path, fused op counts)."""
    from onnxruntime.transformers.optimizer import optimize_model

    s = SIZES[size]
    optimized = optimize_model(path, model_type=model_type, num_heads=s["heads"], hidden_size=s["hidden"])
    out = path.replace(".onnx", f"_{model_type}_fused.onnx")
    optimized.save_model_to_file(out)
    return out, {k: v for k, v in optimized.get_fused_operator_statistics().items() if v}


def export_in_subprocess(model_dir, export_dir, export_format):
    """recipes/export_savedmodel.py in its own process (a bert_base conversion holds several copies of the
    weights: in one process with the timed models, it ran out of this machine's 24 GB); returns its peak MB."""
    command = [sys.executable, os.path.join(REPO, "recipes", "export_savedmodel.py"), f"--model_dir={model_dir}",
               f"--export_dir={export_dir}", f"--format={export_format}"]
    env = {**os.environ, "PYTHONPATH": REPO}
    with open(os.path.join(os.path.dirname(export_dir), f"{export_format}.log"), "w") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    if status:
        raise RuntimeError(f"{' '.join(command)} failed: see {log.name}")
    return round(usage.ru_maxrss / 1024)


def tensorflow_deployables(model, x, size, work):
    """{name: fn} of our SavedModel, LiteRT and ONNX files (TensorFlow backend), each exported from the model's
    directory by the export recipe, and notes on them."""
    import numpy as np
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

    notes, paths = {}, {}
    model_dir = os.path.join(work, "model")
    if not os.path.isdir(model_dir):
        vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(VOCAB - 5)]
        model.save_pretrained(model_dir, label_names=["a", "b"])
        BertTokenizer(vocabulary).save_pretrained(model_dir)
        for export_format in ("savedmodel", "litert", "onnx"):
            notes[f"{export_format}_export_peak_mb"] = export_in_subprocess(
                model_dir, os.path.join(work, export_format), export_format)
    signature = tf.saved_model.load(os.path.join(work, "savedmodel")).signatures["serving_token_ids"]
    tensors = {k: tf.constant(v) for k, v in x.items()}
    paths["ours_savedmodel"] = lambda: signature(**tensors)

    litert = os.path.join(work, "litert", "model.tflite")
    runner = Interpreter(model_path=litert, num_threads=os.cpu_count()).get_signature_runner()
    paths["ours_litert"] = lambda: runner(**x)

    onnx_path = os.path.join(work, "onnx", "model.onnx")
    plain = onnx_session(onnx_path)
    paths["ours_onnx"] = lambda: plain.run(None, x)
    fused_path, notes["ours_onnx_fused"] = fused_onnx(onnx_path, "bert_tf", size)
    fused = onnx_session(fused_path)
    paths["ours_onnx_fused"] = lambda: fused.run(None, x)
    notes["ours_litert_file_mb"] = round(os.path.getsize(litert) / 2**20, 1)
    reference = np.asarray(model(x, training=False))
    for name in ("ours_litert", "ours_onnx", "ours_onnx_fused"):
        out = paths[name]()
        out = out["output_0"] if isinstance(out, dict) else out[0]
        notes[f"{name}_max_abs_diff"] = float(np.abs(np.asarray(out) - reference).max())
    return paths, notes


def transformers_paths(size, x, work, compile_model=True):
    """{name: fn} of transformers' BertForSequenceClassification: eager, torch.compile (`compile_model`), fused
    ONNX."""
    import torch
    import transformers

    s = SIZES[size]
    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                                     num_attention_heads=s["heads"], intermediate_size=s["intermediate"],
                                     num_labels=NUM_CLASSES)
    model = transformers.BertForSequenceClassification(config).eval()
    feed = {"input_ids": torch.as_tensor(x["token_ids"], dtype=torch.long),
            "attention_mask": torch.as_tensor(x["padding_mask"], dtype=torch.long),
            "token_type_ids": torch.as_tensor(x["segment_ids"], dtype=torch.long)}
    def run(m):
        with torch.inference_mode():
            return m(**feed).logits

    paths = {"hf_eager": lambda: run(model)}
    if compile_model:
        compiled = torch.compile(model)
        paths["hf_compiled"] = lambda: run(compiled)
    notes = {}
    onnx_path = os.path.join(work, "hf.onnx")
    names = list(feed)
    axes = {name: {0: "batch", 1: "sequence"} for name in names}
    torch.onnx.export(model, (feed["input_ids"], feed["attention_mask"], feed["token_type_ids"]), onnx_path,
                      input_names=names, output_names=["logits"], dynamic_axes=axes, opset_version=17, dynamo=False)
    fused_path, notes["hf_onnx_fused"] = fused_onnx(onnx_path, "bert", size)
    session = onnx_session(fused_path)
    numpy_feed = {k: v.numpy() for k, v in feed.items()}
    paths["hf_onnx_fused"] = lambda: session.run(None, numpy_feed)
    return paths, notes


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def measure(paths, warmup, repeats):
    """{name: [seconds]}: every path `warmup` times, then `repeats` rounds, each path once a round in turn."""
    for fn in paths.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in paths}
    names = list(paths)
    for round_index in range(repeats):
        for name in names[round_index % len(names):] + names[:round_index % len(names)]:
            start = time.perf_counter()
            paths[name]()
            times[name].append(time.perf_counter() - start)
    return times


def run_backend(args):
    import keras

    sys.path.insert(0, HERE)
    from run_benchmarks import machine

    backend = keras.backend.backend()
    report = {"backend": backend, "size": args.size, "lengths": {}, "notes": {}, "machine": machine(),
              "command": " ".join(["python", *sys.argv])}
    ours, peer = our_model(args.size), keras_hub_model(args.size)
    with tempfile.TemporaryDirectory() as work:
        for length in args.lengths:
            x = inputs(length)
            paths = {**keras_paths("ours", ours, x), **keras_paths("keras_hub", peer, x)}
            if backend == "tensorflow":
                extra, notes = tensorflow_deployables(ours, x, args.size, work)
                paths.update(extra)
                report["notes"].update(notes)
            if backend == "torch":
                extra, notes = transformers_paths(args.size, x, work, compile_model=not args.smoke)
                paths.update(extra)
                report["notes"].update(notes)
            times = measure(paths, args.warmup, args.repeats)
            report["lengths"][str(length)] = {
                name: {"p50_ms": round(percentile(t, 50) * 1e3, 2), "p99_ms": round(percentile(t, 99) * 1e3, 2)}
                for name, t in times.items()}
            print(json.dumps({"length": length, **report["lengths"][str(length)]}), flush=True)
    import importlib.metadata as metadata

    report["versions"] = {p: metadata.version(p) for p in ("keras", "keras-hub", "tensorflow", "jax", "torch",
                                                             "transformers", "onnxruntime", "ai-edge-litert")}
    os.makedirs(args.output_dir, exist_ok=True)
    with open(os.path.join(args.output_dir, f"latency_{backend}.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    return report


def table(output_dir):
    """benchmarks/results/serving/results.md from the backends' JSON files."""
    sys.path.insert(0, HERE)
    from run_benchmarks import machine_line

    reports = [json.load(open(os.path.join(output_dir, name))) for name in sorted(os.listdir(output_dir))
               if name.startswith("latency_") and name.endswith(".json")]
    # A report written before the machine record had its CPU's architecture as a string.
    machines = {machine_line(r["machine"]) if isinstance(r["machine"], dict) else f"Machine: {r['machine']}"
                for r in reports}
    lines = [*sorted(machines), "",
             "| backend | path | 32 tokens p50 / p99 ms | 128 tokens p50 / p99 ms |", "| --- | --- | --- | --- |"]
    for report in reports:
        lengths = sorted(report["lengths"], key=int)
        for name in report["lengths"][lengths[0]]:
            cells = [f"{report['lengths'][n][name]['p50_ms']} / {report['lengths'][n][name]['p99_ms']}" for n in lengths]
            lines.append(f"| {report['backend']} | {name} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(output_dir, "results.md"), "w") as f:
        f.write(text)
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default=None, help="tensorflow, jax or torch (sets KERAS_BACKEND).")
    parser.add_argument("--size", default="bert_base", choices=sorted(SIZES))
    parser.add_argument("--lengths", default="32,128")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--output_dir", default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="bert_tiny, 8 tokens, 3 rounds (tests).")
    parser.add_argument("--table", action="store_true", help="Only write results.md from the JSON files.")
    args = parser.parse_args(argv)
    if args.table:
        return table(args.output_dir)
    if args.smoke:
        args.size, args.lengths, args.warmup, args.repeats = "bert_tiny", "8", 1, 3
    args.lengths = [int(n) for n in str(args.lengths).split(",")]
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path.insert(0, REPO)
    return run_backend(args)


if __name__ == "__main__":
    main()
