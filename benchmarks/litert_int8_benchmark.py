"""LiteRT float32 against LiteRT's dynamic-range int8 of a fine-tuned classifier: file size, batch-1 latency in
the stock interpreter and dev accuracy on the shipped sentiment set, beside the Keras model.

    python benchmarks/litert_int8_benchmark.py --model_dir /tmp/lora_bench/full/model

`--model_dir`: a classifier directory written by recipes/run_glue.py on data/sentiment (the full fine-tuning
run of benchmarks/lora_benchmark.py). Each dev sentence is tokenized by the model directory's `BertTokenizer`
(up to 64 tokens, no padding) and classified one at a time: by the Keras model (TensorFlow), by
`export_litert` of it in float32 and with `quantization="dynamic_int8"` (int8 weights, activations
quantized on the fly), each in `ai_edge_litert`'s stock interpreter on every core. Latency: the median and
p99 of the per-sentence times (the real lengths of the dev set). Writes
benchmarks/results/litert_int8/results.json and prints the markdown rows of its results.md. Not a test.
"""

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def dev_set(max_length, tokenizer):
    import numpy as np

    rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(REPO, "data", "sentiment", "dev.tsv"))][1:]
    examples = []
    for text, label in rows:
        ids = {k: np.asarray(v, "int32") for k, v in tokenizer([text], max_length=max_length).items()}
        mask = ids["padding_mask"][0] == 1
        examples.append(({k: v[:, mask] for k, v in ids.items()}, int(label)))
    return examples


def score(predict, examples):
    import numpy as np

    times, correct = [], 0
    for x, label in examples:
        start = time.perf_counter()
        logits = predict(x)
        times.append(time.perf_counter() - start)
        correct += int(np.argmax(logits) == label)
    times.sort()
    return {"accuracy": round(correct / len(examples), 4), "p50_ms": round(times[len(times) // 2] * 1e3, 2),
            "p99_ms": round(times[int(0.99 * (len(times) - 1))] * 1e3, 2)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--max_length", type=int, default=64)
    parser.add_argument("--output_dir", default=os.path.join(HERE, "results", "litert_int8"))
    args = parser.parse_args(argv)
    os.environ["KERAS_BACKEND"] = "tensorflow"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path.insert(0, REPO)
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    from keras_bert_impl import BertClassifier
    from keras_bert_impl.export.tf_litert import export_litert
    from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

    model = BertClassifier.from_pretrained(args.model_dir, num_classes=2)
    tokenizer = BertTokenizer.from_pretrained(args.model_dir)
    examples = dev_set(args.max_length, tokenizer)
    from run_benchmarks import machine, machine_line

    report = {"model_dir": args.model_dir, "command": " ".join(["python", *sys.argv]), "examples": len(examples),
              "machine": machine()}
    print(machine_line(report["machine"]))
    report["keras"] = score(lambda x: np.asarray(model.predict_on_batch(x)), examples)
    with tempfile.TemporaryDirectory() as work:
        for name, quantization in (("litert_float32", None), ("litert_dynamic_int8", "dynamic_int8")):
            path = export_litert(model, os.path.join(work, f"{name}.tflite"), quantization=quantization)
            runner = Interpreter(model_path=path, num_threads=os.cpu_count()).get_signature_runner()
            report[name] = {"file_mb": round(os.path.getsize(path) / 2**20, 2),
                            **score(lambda x: runner(**x)["logits"], examples)}
            print(name, report[name], flush=True)
    agree = report["litert_dynamic_int8"]["accuracy"] - report["litert_float32"]["accuracy"]
    report["int8_accuracy_change"] = round(agree, 4)
    os.makedirs(args.output_dir, exist_ok=True)
    with open(os.path.join(args.output_dir, "results.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    for name in ("keras", "litert_float32", "litert_dynamic_int8"):
        row = report[name]
        print(f"| {name} | {row.get('file_mb', '')} | {row['p50_ms']} / {row['p99_ms']} | {row['accuracy']:.4f} |")
    return report


if __name__ == "__main__":
    main()
