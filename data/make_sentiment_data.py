"""Writes data/sentiment/: a small, deterministic sentiment data set in the GLUE SST-2 layout.

    python data/make_sentiment_data.py      # rewrites data/sentiment/{train,dev,test}.tsv

Short English review sentences built from templates and word lists; label 1 = positive, 0 = negative.
train.tsv and dev.tsv ("sentence\\tlabel") use *disjoint* templates, subjects and sentiment words, so the
dev accuracy measures generalization (from what the pretrained checkpoint knows about words), not
memorization. test.tsv ("index\\tsentence", unlabelled as GLUE's) uses the dev vocabulary with yet other
templates. The output depends only on the seed below.
"""

import os
import random

SEED = 20181011  # BERT's arXiv date

TRAIN = {
    "templates": [
        "{subject} was {adjective} .",
        "i thought {subject} was {adjective} .",
        "honestly , {subject} is {adjective} .",
        "{subject} felt {adjective} from start to finish .",
        "all in all , {subject} was really {adjective} .",
    ],
    "subjects": ["the movie", "this film", "the plot", "the acting", "the soundtrack", "the story"],
    "positive": ["great", "wonderful", "excellent", "fantastic", "delightful", "brilliant", "charming",
                 "enjoyable", "superb", "lovely", "beautiful", "touching"],
    "negative": ["terrible", "awful", "boring", "dreadful", "dull", "horrible", "tedious", "disappointing",
                 "poor", "bland", "ugly", "stupid"],
}

DEV = {
    "templates": [
        "we found {subject} {adjective} .",
        "{subject} is simply {adjective} , in my opinion .",
        "my friends agreed that {subject} was {adjective} .",
        "to be fair , {subject} seemed {adjective} to me .",
    ],
    "subjects": ["the show", "the novel", "the performance", "the ending", "the dialogue", "the series"],
    "positive": ["amazing", "terrific", "marvelous", "outstanding", "splendid", "pleasant", "magnificent",
                 "impressive", "stunning", "fun"],
    "negative": ["horrendous", "miserable", "unbearable", "lousy", "painful", "annoying", "pathetic",
                 "mediocre", "clumsy", "forgettable"],
}

TEST_TEMPLATES = ["in short , {subject} was {adjective} .", "{subject} ? {adjective} , if you ask me ."]


def _sentences(spec, templates, label, rng, count):
    words = spec["positive"] if label == 1 else spec["negative"]
    pool = sorted({t.format(subject=s, adjective=w) for t in templates for s in spec["subjects"] for w in words})
    return [(sentence, label) for sentence in rng.sample(pool, count)]


def build(num_train=480, num_dev=160, num_test=100):
    """(train, dev, test) lists: train/dev of (sentence, label), test of sentences; balanced classes."""
    rng = random.Random(SEED)
    train = _sentences(TRAIN, TRAIN["templates"], 1, rng, num_train // 2)
    train += _sentences(TRAIN, TRAIN["templates"], 0, rng, num_train // 2)
    dev = _sentences(DEV, DEV["templates"], 1, rng, num_dev // 2) + _sentences(DEV, DEV["templates"], 0, rng, num_dev // 2)
    test = _sentences(DEV, TEST_TEMPLATES, 1, rng, num_test // 2) + _sentences(DEV, TEST_TEMPLATES, 0, rng, num_test // 2)
    rng.shuffle(train)
    rng.shuffle(dev)
    rng.shuffle(test)
    return train, dev, [sentence for sentence, _ in test]


def main():
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sentiment")
    os.makedirs(out_dir, exist_ok=True)
    train, dev, test = build()
    for name, rows in (("train", train), ("dev", dev)):
        with open(os.path.join(out_dir, f"{name}.tsv"), "w", encoding="utf-8", newline="\n") as f:
            f.write("sentence\tlabel\n")
            f.writelines(f"{sentence}\t{label}\n" for sentence, label in rows)
    with open(os.path.join(out_dir, "test.tsv"), "w", encoding="utf-8", newline="\n") as f:
        f.write("index\tsentence\n")
        f.writelines(f"{i}\t{sentence}\n" for i, sentence in enumerate(test))
    print(f"wrote {len(train)} train, {len(dev)} dev, {len(test)} test sentences to {out_dir}")


if __name__ == "__main__":
    main()
