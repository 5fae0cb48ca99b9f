"""Writes data/ner/: a small, deterministic named-entity data set in the CoNLL-2003 format.

    python data/make_ner_data.py      # rewrites data/ner/{train,dev,test}.txt

News-like English sentences built from templates, with person (PER), location (LOC), organization
(ORG) and miscellaneous (MISC: nationalities) names drawn from word lists. The name lists are split
three ways: dev.txt and test.txt only use names that NEVER occur in train.txt (and differ from each
other), so the held-out entity F1 measures generalization from context, not memorization.

The files look like the original CoNLL-2003 ones: `-DOCSTART- -X- -X- O` lines between documents of
4-8 sentences, one `token POS chunk NER` line per token, a blank line after every sentence, and the
original's IOB1 tagging: entity tokens are `I-X`; `B-X` only marks an entity that directly follows
another entity of the same type (the "{MISC} {MISC} summit" template; nationalities are one word, so the
two entities can be told apart without knowing the names).
Many entities span two tokens ("New Zealand", "Anna Weber", "Atlas Airlines"). The POS / chunk
columns are rough (NNP for names, CD for numbers, the character for punctuation, NN otherwise) and
unused by the NER recipe. The output depends only on the seed below.
"""

import os
import random

SEED = 20181011  # BERT's arXiv date
NUM_SENTENCES = {"train": 300, "dev": 80, "test": 80}

TEMPLATES = [
    "{PER} said on {DAY} that {ORG} would open an office in {LOC} .",
    "{ORG} shares rose 3 percent in {LOC} trading on {DAY} .",
    "The {MISC} striker {PER} scored twice against {LOC} .",
    "{PER} , a spokesman for {ORG} , declined to comment .",
    "Police in {LOC} arrested two men on {DAY} .",
    "{LOC} beat {LOC} 2-1 in the final on {DAY} .",
    "Leaders attended the {MISC} {MISC} summit in {LOC} .",
    "{PER} told reporters in {LOC} that talks with {PER} had failed .",
    "The {MISC} government said it would buy a stake in {ORG} .",
    "{ORG} named {PER} as its new chief executive .",
    "Floods hit northern {LOC} , killing 12 people .",
    "Shares of {ORG} fell after the {MISC} central bank raised rates .",
    "{PER} arrived in {LOC} on {DAY} for two days of talks .",
    "Officials from {ORG} and {ORG} met in {LOC} .",
    "{MISC} troops crossed the border into {LOC} overnight .",
    "Visitors to {LOC} rose sharply last year , {ORG} said .",
    "Coach {PER} said the {MISC} team was ready for the match .",
    "{PER} and {PER} will meet in {LOC} next week .",
    "Work on the pipeline from {LOC} to {LOC} will start in May , {PER} said .",
    "The deal between {ORG} and the {MISC} firm was signed in {LOC} .",
    "Trading was quiet on {DAY} as investors waited for the figures .",
    "Prices of wheat rose for the third week in a row .",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

FIRST_NAMES = [
    "Peter", "Anna", "Thomas", "Maria", "John", "Elena", "Michael", "Sarah", "David", "Laura", "Carlos",
    "Yuki", "Ahmed", "Ingrid", "Pavel", "Lucia", "Hans", "Fatima", "Marco", "Olga", "James", "Nadia",
    "Kenji", "Sofia", "Robert", "Amina", "Lars", "Chloe", "Pedro", "Helga", "Daniel", "Irina", "Omar",
    "Greta", "Victor", "Leila",
]
LAST_NAMES = [
    "Weber", "Tanaka", "Kowalski", "Rossi", "Haddad", "Larsen", "Novak", "Moreau", "Fischer", "Silva",
    "Ivanov", "Okafor", "Jensen", "Conti", "Becker", "Kim", "Horvath", "Duval", "Schmidt", "Ortega",
    "Petrov", "Nakamura", "Lindqvist", "Mendes", "Kaplan", "Vargas", "Brennan", "Sato", "Keller", "Dubois",
    "Reyes", "Yilmaz", "Hoffman", "Castillo", "Murphy", "Nielsen",
]
LOCATIONS = [
    "Germany", "France", "Brazil", "New Zealand", "Kenya", "Tokyo", "Madrid", "Canada", "South Africa",
    "Chicago", "Norway", "Lima", "Hong Kong", "Egypt", "Warsaw", "Sri Lanka", "Vienna", "Chile", "Mumbai",
    "Portugal", "Buenos Aires", "Denmark", "Cairo", "Australia", "Porto Alegre", "Finland", "Boston",
    "Peru", "Santa Cruz", "Prague", "Ghana", "Oslo", "Costa Rica", "Turkey", "Seoul", "Ireland",
    "New Delhi", "Los Angeles", "San Francisco", "Cape Town", "Abu Dhabi", "Kuala Lumpur", "Tel Aviv",
    "El Salvador", "North Korea", "Las Vegas", "Sao Paulo", "Puerto Rico", "Sierra Leone", "Nova Scotia",
    "San Diego", "New Mexico", "Santo Domingo", "West Virginia",
]
ORG_ROOTS = [
    "Atlas", "Vanguard", "Northwind", "Meridian", "Orion", "Sunridge", "Pioneer", "Sterling", "Harbor",
    "Falcon", "Beacon", "Crescent", "Titan", "Evergreen", "Horizon", "Redwood", "Keystone", "Lakeside",
    "Granite", "Silverline", "Cobalt", "Nimbus", "Oakridge", "Polaris", "Sapphire", "Trident", "Zenith",
    "Bluewater", "Ironbridge", "Westfield",
]
ORG_SUFFIXES = ["Bank", "Group", "Airlines", "Motors", "Corp", "Holdings", "Energy", "Telecom"]
NATIONALITIES = [
    "German", "French", "British", "Italian", "Spanish", "Dutch", "Belgian", "Swiss", "Austrian", "Swedish",
    "Norwegian", "Danish", "Finnish", "Polish", "Czech", "Hungarian", "Russian", "Greek", "Turkish",
    "Israeli", "Egyptian", "Iranian", "Indian", "Pakistani", "Chinese", "Japanese", "Korean", "Thai",
    "Brazilian", "Argentine", "Mexican", "Canadian", "Australian", "Kenyan", "Nigerian", "Irish",
]
PUNCTUATION = {",", ".", ";", ":"}


def split_three(names, rng):
    """Shuffles a copy of `names` and splits it 60/20/20 into disjoint train/dev/test pools."""
    names = list(names)
    rng.shuffle(names)
    a, b = int(len(names) * 0.6), int(len(names) * 0.8)
    return {"train": names[:a], "dev": names[a:b], "test": names[b:]}


def make_pools(rng):
    first, last = split_three(FIRST_NAMES, rng), split_three(LAST_NAMES, rng)
    locations, roots = split_three(LOCATIONS, rng), split_three(ORG_ROOTS, rng)
    nationalities = split_three(NATIONALITIES, rng)
    return {
        split: {
            "first": first[split],
            "last": last[split],
            "LOC": locations[split],
            "ORG_ROOT": roots[split],
            "MISC": nationalities[split],
        }
        for split in ("train", "dev", "test")
    }


def sample_entity(kind, pool, rng):
    """The words of one entity of type `kind` from `pool`."""
    if kind == "PER":
        if rng.random() < 0.3:
            return [rng.choice(pool["last"])]
        return [rng.choice(pool["first"]), rng.choice(pool["last"])]
    if kind == "LOC":
        return rng.choice(pool["LOC"]).split()
    if kind == "ORG":
        return [rng.choice(pool["ORG_ROOT"]), rng.choice(ORG_SUFFIXES)]
    if kind == "MISC":
        return [rng.choice(pool["MISC"])]
    raise ValueError(kind)


def make_sentence(template, pool, rng):
    """(words, IOB1 tags) of one sentence from `template`."""
    words, tags = [], []
    previous_type = None  # type of the entity just written, when the last word closed one
    used = set()
    for part in template.split():
        if part == "{DAY}":
            words.append(rng.choice(DAYS))
            tags.append("O")
            previous_type = None
        elif part.startswith("{") and part.endswith("}"):
            kind = part[1:-1]
            entity = sample_entity(kind, pool, rng)
            while " ".join(entity) in used:  # two different names in one sentence
                entity = sample_entity(kind, pool, rng)
            used.add(" ".join(entity))
            # IOB1: B- only for an entity right after another entity of the same type.
            first_prefix = "B-" if previous_type == kind else "I-"
            words += entity
            tags += [first_prefix + kind] + ["I-" + kind] * (len(entity) - 1)
            previous_type = kind
        else:
            words.append(part)
            tags.append("O")
            previous_type = None
    return words, tags


def pos_and_chunk(word, tag):
    if tag != "O":
        return "NNP", "I-NP"
    if word in PUNCTUATION:
        return word, "O"
    if any(ch.isdigit() for ch in word):
        return "CD", "I-NP"
    return ("NNP" if word[0].isupper() else "NN"), "I-NP"


def write_split(path, sentences, rng):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        i = 0
        while i < len(sentences):
            f.write("-DOCSTART- -X- -X- O\n\n")
            size = rng.randint(4, 8)
            for words, tags in sentences[i : i + size]:
                for word, tag in zip(words, tags):
                    pos, chunk = pos_and_chunk(word, tag)
                    f.write(f"{word} {pos} {chunk} {tag}\n")
                f.write("\n")
            i += size


def main(out_dir=None):
    """Writes {train,dev,test}.txt into `out_dir` (default: data/ner next to this script)."""
    rng = random.Random(SEED)
    pools = make_pools(rng)
    out_dir = out_dir or os.path.join(os.path.dirname(os.path.abspath(__file__)), "ner")
    os.makedirs(out_dir, exist_ok=True)
    for split, count in NUM_SENTENCES.items():
        # Every template appears; the rest are drawn at random.
        templates = [TEMPLATES[i % len(TEMPLATES)] for i in range(count)]
        rng.shuffle(templates)
        sentences = [make_sentence(t, pools[split], rng) for t in templates]
        write_split(os.path.join(out_dir, f"{split}.txt"), sentences, rng)
        print(f"{split}: {len(sentences)} sentences")


if __name__ == "__main__":
    main()
