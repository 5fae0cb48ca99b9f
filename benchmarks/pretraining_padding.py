"""The share of padding tokens in pretraining data made by `recipes/create_pretraining_data.py`.

    python benchmarks/pretraining_padding.py          # about 2 minutes on one CPU core

Runs the package's pretraining data generator (`pretraining_documents.read_documents`, then
`pretraining_instances.create_training_instances` and `instance_to_features`, with the recipe's defaults:
seed 12345, dupe_factor 10, short_seq_prob 0.1, masked_lm_prob 0.15, 1,000 documents a shard) at each
max_seq_length of `--seqs` on two corpora, and counts the positions whose `input_mask` is 0 among all
positions of the written examples:

- chinese: `data/chinese/corpus.txt` with `data/chinese/vocab.txt` (shipped in the repository);
- english: the corpus `benchmarks/pretraining_corpus.py` builds from the documentation of the installed Python
  packages (`--english_mb` MB; the repository ships no English corpus) with an 8,192-piece uncased WordPiece
  vocabulary `recipes/learn_vocab.py` learns on it, as `benchmarks/pretraining_experiment.py` does.

Writes `results.json` and `results.md` under `--out`. Not a test.
"""

import argparse
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

# max_seq_length: max_predictions_per_seq (about max_seq_length x 0.15, as google-research/bert's README advises)
PREDICTIONS = {128: 20, 512: 80}
# Above this share of padding the issue asks for sequence packing (not built: see the markdown).
PACKING_THRESHOLD = 0.10


def padding_share(corpus, vocab, max_seq_length, do_lower_case=True):
    """Padding positions / all positions of the examples the generator writes for `corpus`, with counts."""
    from keras_bert_impl.data import pretraining_documents, pretraining_instances
    from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

    tokenizer = BertTokenizer(vocab, do_lower_case=do_lower_case)
    documents = pretraining_documents.read_documents([corpus], tokenizer)
    instances = pretraining_instances.create_training_instances(
        documents, list(tokenizer.vocab.keys()), random.Random(12345), max_seq_length=max_seq_length,
        dupe_factor=10, short_seq_prob=0.1, masked_lm_prob=0.15,
        max_predictions_per_seq=PREDICTIONS[max_seq_length], shard_size_documents=1000)
    examples = real = 0
    for instance in instances:
        features = pretraining_instances.instance_to_features(instance, tokenizer, max_seq_length,
                                                              PREDICTIONS[max_seq_length])
        examples += 1
        real += int(features["input_mask"].sum())
    positions = examples * max_seq_length
    return {"max_seq_length": max_seq_length, "examples": examples, "positions": positions,
            "real_tokens": real, "padding_tokens": positions - real,
            "padding_share": round((positions - real) / positions, 4),
            "mean_tokens_per_example": round(real / examples, 1)}


def english_corpus(work_dir, megabytes):
    """Builds the English corpus and learns its vocabulary under `work_dir`; returns (corpus, vocab) paths."""
    corpus_dir, vocab = os.path.join(work_dir, "corpus"), os.path.join(work_dir, "vocab.txt")
    subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "pretraining_corpus.py"),
                    f"--output_dir={corpus_dir}", f"--max_mb={megabytes}"], check=True)
    corpus = os.path.join(corpus_dir, "train.txt")
    subprocess.run([sys.executable, os.path.join(REPO, "recipes", "learn_vocab.py"), f"--input_files={corpus}",
                    f"--output_file={vocab}", "--vocab_size=8192", "--quiet"], check=True)
    return corpus, vocab


def markdown(report):
    lines = ["# Padding in pretraining data", "",
             f"Command: `{report['command']}`", "",
             "Examples written by the package's `create_pretraining_data` generator (the recipe's defaults: seed "
             "12345, dupe_factor 10, short_seq_prob 0.1); padding share = positions with `input_mask` 0 / all "
             "positions.", "",
             "| corpus | max_seq_length | examples | mean tokens / example | padding share |",
             "|---|---|---|---|---|"]
    for r in report["rows"]:
        lines.append(f"| {r['corpus']} | {r['max_seq_length']} | {r['examples']} | {r['mean_tokens_per_example']} "
                     f"| {100 * r['padding_share']:.1f}% |")
    lines += ["", "Corpora: " + "; ".join(f"{name}: {source}" for name, source in report["corpora"].items()) + ".", ""]
    above = [r for r in report["rows"] if r["padding_share"] > PACKING_THRESHOLD]
    if above:
        cases = ", ".join(f"{r['corpus']} at {r['max_seq_length']}" for r in above)
        lines.append(f"The padding share is above {PACKING_THRESHOLD:.0%} (issue 46's threshold for building "
                     f"sequence packing) for {cases}. Sequence packing for pretraining is not built: on these corpora "
                     "that share of every step's positions is padding, computed and then discarded.")
    else:
        lines.append(f"The padding share is at most {PACKING_THRESHOLD:.0%} everywhere; sequence packing is not built.")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=os.path.join(REPO, "benchmarks", "results", "padding"))
    p.add_argument("--seqs", default="128,512")
    p.add_argument("--english_mb", type=float, default=1.0, help="size of the English corpus built")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as work_dir:
        english, english_vocab = english_corpus(work_dir, args.english_mb)
        corpora = {"chinese": (os.path.join(REPO, "data", "chinese", "corpus.txt"),
                               os.path.join(REPO, "data", "chinese", "vocab.txt")),
                   "english": (english, english_vocab)}
        report = {"command": shlex.join(["python", "benchmarks/pretraining_padding.py",
                                         *(argv if argv is not None else sys.argv[1:])]),
                  "corpora": {"chinese": "data/chinese/corpus.txt with data/chinese/vocab.txt",
                              "english": f"benchmarks/pretraining_corpus.py --max_mb={args.english_mb} (the "
                                         "installed packages' documentation) with an 8,192-piece WordPiece "
                                         "vocabulary learned on it"},
                  "packing_threshold": PACKING_THRESHOLD, "packing_built": False, "rows": []}
        for name, (corpus, vocab) in corpora.items():
            for seq in [int(s) for s in args.seqs.split(",")]:
                report["rows"].append({"corpus": name, **padding_share(corpus, vocab, seq)})
                print(report["rows"][-1], flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
