"""Writes data/qa/train.json and data/qa/dev.json: a small synthetic SQuAD v2.0 set, deterministically.

Every paragraph tells facts about an invented person (birth place and year, job, a move to another town
and its population, a pet) plus one distractor person, in varied sentence templates and orders. Questions
are answered by spans of the paragraph; about one in four is unanswerable (`is_impossible`): it asks
about a fact the paragraph does not state (a pet, a job, a move that is not mentioned) or about the
distractor's job.

The answers of the dev questions are never seen in training: people, towns, rivers, pets, years,
populations and jobs are drawn from disjoint pools for the two files (checked below and by the tests).

    python data/make_qa_data.py            # rewrites data/qa/*.json (byte-identical on every run)
"""

import json
import os
import random

SEED = 20181011  # BERT's arXiv date
NUM_TRAIN_PARAGRAPHS = 400
NUM_DEV_PARAGRAPHS = 25

_ONSETS = ["b", "br", "d", "dr", "f", "g", "gr", "k", "kr", "l", "m", "n", "p", "r", "s", "st", "t", "tr", "v", "z",
           "th", "sh", "h", "j"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ei", "ou", "ia"]
_CODAS = ["", "", "n", "r", "l", "s", "m", "th", "nd", "rk"]
_JOBS = ["baker", "carpenter", "teacher", "fisherman", "blacksmith", "tailor", "librarian", "sailor", "miner",
         "painter", "surgeon", "glassblower", "weaver", "clockmaker", "shepherd", "chemist", "lawyer",
         "architect", "potter", "brewer", "jeweler", "butcher", "mapmaker", "gardener", "printer", "banker",
         "pharmacist", "veterinarian", "astronomer", "locksmith", "beekeeper", "dentist", "engineer",
         "journalist", "violinist", "goldsmith", "bookbinder", "cartographer", "innkeeper", "judge"]
_PETS = ["dog", "cat", "horse", "parrot", "goat"]


def _word(rng, syllables):
    text = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables)) + rng.choice(_CODAS)
    return text.capitalize()


def _pool(rng, count, syllables, taken):
    """`count` new invented words, none in `taken` (which grows)."""
    out = []
    while len(out) < count:
        word = _word(rng, rng.choice(syllables))
        if word not in taken and len(word) >= 4:
            taken.add(word)
            out.append(word)
    return out


def _split(items, dev_fraction, rng):
    items = list(items)
    rng.shuffle(items)
    cut = int(len(items) * dev_fraction)
    return items[cut:], items[:cut]


def _pools(rng):
    taken = set()
    first = _pool(rng, 400, [2, 3], taken)
    last = _pool(rng, 400, [2, 3], taken)
    towns = _pool(rng, 300, [2, 3], taken)
    rivers = _pool(rng, 120, [2], taken)
    pets = _pool(rng, 200, [2], taken)
    years = list(range(1620, 1990))
    populations = set()
    while len(populations) < 400:
        populations.add(f"{rng.randint(1, 98)},{rng.randint(0, 999):03d}")
    pools = {}
    for name, items in [("first", first), ("last", last), ("towns", towns), ("rivers", rivers), ("pets", pets),
                        ("years", years), ("populations", sorted(populations)), ("jobs", _JOBS)]:
        pools[name] = _split(items, 0.25, rng)
    return {"train": {k: v[0] for k, v in pools.items()}, "dev": {k: v[1] for k, v in pools.items()}}


class _Paragraph:
    """Builds a context sentence by sentence, remembering where each answer span starts."""

    def __init__(self):
        self.text = ""
        self.spans = {}

    def add(self, template, **values):
        """Appends `template` formatted with values; records the char offset of each `{key}` value."""
        if self.text:
            self.text += " "
        pieces = template.split("{")
        self.text += pieces[0]
        for piece in pieces[1:]:
            key, rest = piece.split("}", 1)
            self.spans.setdefault(key, (len(self.text), values[key]))
            self.text += values[key] + rest


def _make_paragraph(rng, pool, index, prefix):
    person = f"{rng.choice(pool['first'])} {rng.choice(pool['last'])}"
    other = f"{rng.choice(pool['first'])} {rng.choice(pool['last'])}"
    short = person.split()[1]
    town, new_town, other_town = rng.sample(pool["towns"], 3)
    river = rng.choice(pool["rivers"])
    year, other_year = rng.sample(pool["years"], 2)
    job = rng.choice(pool["jobs"])
    population = rng.choice(pool["populations"])
    pet_kind = rng.choice(_PETS)
    pet_name = rng.choice(pool["pets"])
    facts = {"job", "move", "pet"}
    missing = rng.choice(sorted(facts) + ["other_job"])  # the fact an unanswerable question asks about
    facts.discard(missing)

    p = _Paragraph()
    birth = rng.choice([
        "{person} was born in {town} in {year}.",
        "Born in {year} in the town of {town}, {person} grew up near the {river} River.",
        "In {year}, {person} was born in {town}, a village on the {river} River.",
    ])
    sentences = [(birth, dict(person=person, town=town, year=str(year), river=river))]
    if "job" in facts:
        sentences.append((rng.choice([
            "{short} worked as {article} {job} for many years.",
            "As an adult, {short} became {article} {job}.",
            "{short} earned a living as {article} {job}.",
        ]), dict(short=short, job=job, article="an" if job[0] in "aeiou" else "a")))
    if "move" in facts:
        sentences.append((rng.choice([
            "Later {short} moved to {new_town}, a town of {population} people.",
            "In middle age {short} settled in {new_town}, which had {population} inhabitants.",
        ]), dict(short=short, new_town=new_town, population=population)))
    if "pet" in facts:
        sentences.append((rng.choice([
            "{short} kept a {pet_kind} named {pet_name}.",
            "The family {pet_kind}, {pet_name}, followed {short} everywhere.",
        ]), dict(short=short, pet_kind=pet_kind, pet_name=pet_name)))
    distractor = ("{other} was born in {other_town} in {other_year}.",
                  dict(other=other, other_town=other_town, other_year=str(other_year)))
    rng.shuffle(sentences)  # any order
    sentences.insert(rng.randint(0, len(sentences)), distractor)
    for template, values in sentences:
        p.add(template, **values)

    asked = [("Where was {person} born?", "town"), ("In which year was {person} born?", "year")]
    if "river" in p.spans:
        asked.append(("Which river flows by the birthplace of {person}?", "river"))
    if "job" in facts:
        asked.append((rng.choice(["What did {person} work as?", "What was the job of {person}?"]), "job"))
    if "move" in facts:
        asked.append(("To which town did {person} move?", "new_town"))
        asked.append(("How many people lived in {new_town}?", "population"))
    if "pet" in facts:
        asked.append(("What was the name of the {pet_kind} of {person}?", "pet_name"))
    asked.append(("In what year was {other} born?", "other_year"))
    rng.shuffle(asked)
    values = dict(person=person, other=other, new_town=new_town, pet_kind=pet_kind)
    qas = []
    for q, (question, key) in enumerate(asked[:3]):
        start, text = p.spans[key]
        qas.append({"id": f"{prefix}-{index:03d}-{q}", "question": question.format(**values),
                    "answers": [{"text": text, "answer_start": start}], "is_impossible": False})
    impossible = {
        "job": f"What did {person} work as?",
        "move": f"To which town did {person} move?",
        "pet": f"What was the name of the {pet_kind} of {person}?",
        "other_job": f"What was the job of {other}?",
    }[missing]
    qas.append({"id": f"{prefix}-{index:03d}-3", "question": impossible, "answers": [], "is_impossible": True})
    return {"context": p.text, "qas": qas}


def make_split(rng, pool, count, prefix):
    paragraphs = [_make_paragraph(rng, pool, i, prefix) for i in range(count)]
    return {"version": "v2.0", "data": [{"title": f"synthetic_{prefix}", "paragraphs": paragraphs}]}


def main(out_dir=None):
    rng = random.Random(SEED)
    pools = _pools(rng)
    train = make_split(rng, pools["train"], NUM_TRAIN_PARAGRAPHS, "train")
    dev = make_split(rng, pools["dev"], NUM_DEV_PARAGRAPHS, "dev")
    # The dev answers are spans never seen in training.
    train_text = json.dumps(train)
    for paragraph in dev["data"][0]["paragraphs"]:
        for qa in paragraph["qas"]:
            for answer in qa["answers"]:
                assert answer["text"] not in train_text, answer["text"]
                assert paragraph["context"][answer["answer_start"]:].startswith(answer["text"])
    out_dir = out_dir or os.path.join(os.path.dirname(os.path.abspath(__file__)), "qa")
    os.makedirs(out_dir, exist_ok=True)
    for name, split in [("train", train), ("dev", dev)]:
        with open(os.path.join(out_dir, f"{name}.json"), "w", encoding="utf-8") as f:
            json.dump(split, f, indent=1, ensure_ascii=False)
            f.write("\n")


if __name__ == "__main__":
    main()
