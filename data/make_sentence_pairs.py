"""Writes data/sentence_pairs/: a small, deterministic paraphrase set for sentence-embedding training.

    python data/make_sentence_pairs.py      # rewrites data/sentence_pairs/{train,test}.jsonl, dev_scored.jsonl

Each pair says one fact twice in other words (an anchor and its paraphrase, the positive), built from
templates and word lists. train.jsonl ("anchor", "positive") and test.jsonl (the same columns: held-out pairs
for retrieval, each anchor's partner among all positives) use *disjoint* templates, people, objects and
places, so what a model retrieves on test.jsonl measures generalization, not memorization.
dev_scored.jsonl ("sentence1", "sentence2", "score" from 0 to 5, as STS-B) holds, on the test vocabulary,
paraphrases (5), the same kind of fact about another person or thing (2) and unrelated facts (0). The output
depends only on the seed below.
"""

import json
import os
import random

SEED = 20190827  # Sentence-BERT's arXiv date

TRAIN = {
    "templates": [
        ("{person} bought a new {thing} yesterday .", "yesterday {person} purchased a new {thing} ."),
        ("the {place} closes at {hour} on weekends .", "on weekends the {place} shuts at {hour} ."),
        ("{person} lost the {thing} on the way to the {place} .",
         "on the way to the {place} , {person} misplaced the {thing} ."),
        ("{person} is waiting for you at the {place} .", "at the {place} , {person} waits for you ."),
        ("the {thing} that {person} repaired works again .", "{person} fixed the {thing} , and it runs again ."),
    ],
    "person": ["anna", "the teacher", "my brother", "our neighbour", "the doctor", "james", "the old farmer",
               "my aunt"],
    "thing": ["bicycle", "laptop", "camera", "umbrella", "guitar", "lamp", "watch", "kettle"],
    "place": ["library", "bakery", "museum", "station", "pharmacy", "stadium"],
    "hour": ["six", "nine", "noon", "midnight", "five"],
}

TEST = {
    "templates": [
        ("{person} painted the {thing} in the {place} .", "in the {place} , {person} gave the {thing} a coat of paint ."),
        ("{person} forgot the {thing} at the {place} again .", "again , {person} left the {thing} behind at the {place} ."),
        ("the {place} will open a day later because of the {thing} .",
         "because of the {thing} , the {place} opens one day late ."),
        ("{person} gave a {thing} to her daughter for her birthday .",
         "for her birthday , the daughter of {person} received a {thing} ."),
    ],
    "person": ["maria", "the nurse", "my grandmother", "the mayor", "sophie", "the engineer"],
    "thing": ["fence", "wallet", "piano", "blanket", "kite", "telescope"],
    "place": ["garden", "airport", "school", "harbour", "hospital"],
    "hour": ["seven"],
}


def fill(template, rng, words):
    values = {key: rng.choice(words[key]) for key in ("person", "thing", "place", "hour")}
    return tuple(part.format(**values) for part in template), values


def pairs(words, count, rng):
    """`count` distinct (anchor, positive, template index) triples."""
    seen, out = set(), []
    while len(out) < count:
        index = rng.randrange(len(words["templates"]))
        (anchor, positive), _ = fill(words["templates"][index], rng, words)
        if anchor not in seen:
            seen.add(anchor)
            out.append((anchor, positive, index))
    return out


def write_jsonl(path, records):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def main():
    rng = random.Random(SEED)
    directory = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sentence_pairs")
    os.makedirs(directory, exist_ok=True)
    write_jsonl(os.path.join(directory, "train.jsonl"),
                [{"anchor": a, "positive": p} for a, p, _ in pairs(TRAIN, 160, rng)])
    test = pairs(TEST, 48, rng)
    write_jsonl(os.path.join(directory, "test.jsonl"), [{"anchor": a, "positive": p} for a, p, _ in test])
    scored = []
    for i, (anchor, positive, index) in enumerate(test[:30]):
        scored.append({"sentence1": anchor, "sentence2": positive, "score": 5.0})
        same_kind = next(p for a, p, j in test[i + 1:] + test[:i] if j == index and p != positive)
        scored.append({"sentence1": anchor, "sentence2": same_kind, "score": 2.0})
        other = next(p for a, p, j in test[i + 1:] + test[:i] if j != index)
        scored.append({"sentence1": anchor, "sentence2": other, "score": 0.0})
    write_jsonl(os.path.join(directory, "dev_scored.jsonl"), scored)


if __name__ == "__main__":
    main()
