"""NER tagging schemes: the tags of a file in any scheme read as entity spans, and spans written in any scheme.

A tag is "O" (outside every entity) or "P-TYPE", a one-letter prefix and an entity type (CoNLL's PER,
GermEval's LOCderiv, CLUENER's address, ...). The schemes (`TAGGING_SCHEMES`, "auto" detecting one):

* "bio" (IOB2): B- begins every entity, I- continues it.
* "iob1" (the original CoNLL-2003 files): I- begins an entity; B- only one that directly follows an
  entity of the same type.
* "bioes" (IOBES): B- begins an entity of two or more tokens, I- continues it, E- ends it; S- is a
  one-token entity.
* "bmes" (Chinese NER's BMES / BMEO, the letters of word segmentation): as "bioes" with M- for I- (a BMEO
  file's one-token entity, a lone B-, is read alike and written back as S-).

Every tag sequence, valid or not, is read as entities by conlleval's rules (`tags_to_spans`, with M- read
as I-; `metrics.ner_metrics.get_entities`), which are also the scoring's. The NER model trains on BIO
labels (`to_bio`) and its predicted BIO tags are written back in the files' scheme (`from_bio`): for
valid tags of any scheme, `from_bio(to_bio(tags), scheme) == tags`, and spans -> tags -> spans is the
identity (`spans_to_tags`, `tags_to_spans`).

Detection (`detect_tagging_scheme`): "bmes" when some tag has the prefix M-, else "bioes" when some tag
has E- or S-, else "iob1" when some I- begins an entity (invalid in BIO), else "bio".

Examples:

>>> tags = ["B-PER", "M-PER", "E-PER", "O", "S-LOC"]
>>> tags_to_spans(tags)
[('PER', 0, 2), ('LOC', 4, 4)]
>>> to_bio(tags)
['B-PER', 'I-PER', 'I-PER', 'O', 'B-LOC']
>>> from_bio(to_bio(tags), "bioes")
['B-PER', 'I-PER', 'E-PER', 'O', 'S-LOC']
"""

from keras_bert_impl.metrics.ner_metrics import get_entities
from keras_bert_impl.utils.errors import UserInputError

TAGGING_SCHEMES = ("auto", "iob1", "bio", "bioes", "bmes")
# The prefixes a tag may have, over every scheme.
PREFIXES = ("B", "I", "E", "S", "M")
# Each scheme's letters: (begin, inside, end, single); None: the scheme has no such tag.
_LETTERS = {"bio": ("B", "I", None, None), "bioes": ("B", "I", "E", "S"), "bmes": ("B", "M", "E", "S")}


def is_tag(tag):
    """Whether `tag` is "O" or "P-TYPE" with P one of B, I, E, S, M and a non-empty TYPE.

    >>> is_tag("B-LOCderiv"), is_tag("O"), is_tag("PER"), is_tag("S-PER"), is_tag("X-PER")
    (True, True, False, True, False)
    """
    return tag == "O" or (len(tag) >= 3 and tag[0] in PREFIXES and tag[1] == "-")


def tag_type(tag):
    """The entity type of a tag ("B-PER" -> "PER"); None for "O"."""
    return tag[2:] if tag != "O" else None


def tags_to_spans(tags):
    """The entities of a tag sequence in any scheme, `(type, start, end)` with `end` inclusive, in order
    (conlleval's rules, M- read as I-).

    >>> tags_to_spans(["I-PER", "I-PER", "B-PER", "O", "B-LOC", "E-LOC"])
    [('PER', 0, 1), ('PER', 2, 2), ('LOC', 4, 5)]
    """
    return get_entities(["I" + tag[1:] if tag.startswith("M-") else tag for tag in tags])


def spans_to_tags(spans, length, scheme="bio"):
    """The tags of `length` tokens holding the entities `spans` (`(type, start, end)`, `end` inclusive, not
    overlapping) in `scheme` ("bio", "iob1", "bioes" or "bmes").

    >>> spans_to_tags([("PER", 0, 2), ("LOC", 3, 3)], 5, "bmes")
    ['B-PER', 'M-PER', 'E-PER', 'S-LOC', 'O']
    """
    if scheme == "iob1":
        return bio_to_iob1(spans_to_tags(spans, length, "bio"))
    begin, inside, end, single = _LETTERS[scheme]
    tags = ["O"] * length
    for type_, start, stop in spans:
        if stop == start and single:
            tags[start] = f"{single}-{type_}"
            continue
        tags[start] = f"{begin}-{type_}"
        for i in range(start + 1, stop + 1):
            tags[i] = f"{inside}-{type_}"
        if end:
            tags[stop] = f"{end}-{type_}"
    return tags


def _has_span_letters(tags):
    """Whether some tag has an E-, S- or M- prefix (a BIOES / BMES sequence)."""
    return any(tag[:2] in ("E-", "S-", "M-") for tag in tags)


def to_bio(tags):
    """The BIO tags of the same entities (the model's labels): IOB1 and BIO through `iob1_to_bio`, BIOES and
    BMES through their spans.

    >>> to_bio(["I-PER", "B-PER", "S-LOC"])
    ['B-PER', 'B-PER', 'B-LOC']
    """
    if _has_span_letters(tags):
        return spans_to_tags(tags_to_spans(tags), len(tags), "bio")
    return iob1_to_bio(tags)


def from_bio(tags, scheme):
    """BIO tags (the model's) written in `scheme` ("bio": unchanged).

    >>> from_bio(["B-PER", "I-PER", "B-LOC"], "bmes")
    ['B-PER', 'E-PER', 'S-LOC']
    """
    if scheme == "bio":
        return list(tags)
    if scheme == "iob1":
        return bio_to_iob1(tags)
    return spans_to_tags(tags_to_spans(tags), len(tags), scheme)


def conlleval_tags(tags):
    """The tags as conlleval's rules score them (`metrics.ner_metrics`): M- read as I- (BMES as BIOES)."""
    return ["I" + tag[1:] if tag.startswith("M-") else tag for tag in tags]


def iob1_to_bio(tags):
    """IOB1 -> BIO: an `I-X` that starts an entity (after `O` or another type) becomes `B-X`.

    The identity on valid BIO tags.

    Examples:

    >>> iob1_to_bio(["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-MISC"])
    ['B-PER', 'I-PER', 'O', 'B-LOC', 'B-LOC', 'B-MISC']
    """
    return _retag(tags, "I-", "B-")


def bio_to_iob1(tags):
    """BIO -> IOB1: `B-X` stays `B-X` only right after a token of type X, else becomes `I-X`.

    A stray `I-X` (after `O` or another type) is read as starting an entity, as conlleval does.

    Examples:

    >>> bio_to_iob1(["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "B-MISC"])
    ['I-PER', 'I-PER', 'O', 'I-LOC', 'B-LOC', 'I-MISC']
    """
    return _retag(tags, "B-", "I-")


def _retag(tags, prefix, new_prefix):
    """`tags` with `prefix` replaced by `new_prefix` on each tag whose type differs from the previous tag's."""
    out = []
    previous = "O"
    for tag in tags:
        if tag.startswith(prefix) and tag_type(previous) != tag_type(tag):
            tag = new_prefix + tag[2:]
        out.append(tag)
        previous = tag
    return out


def detect_tagging_scheme(sentences):
    """The scheme of the tags of `sentences` (objects with `labels`): see the module docstring.

    >>> from types import SimpleNamespace as Sentence
    >>> detect_tagging_scheme([Sentence(labels=["B-PER", "E-PER", "S-LOC"])])
    'bioes'
    """
    tags = [tag for sentence in sentences for tag in sentence.labels]
    if any(tag.startswith("M-") for tag in tags):
        return "bmes"
    if _has_span_letters(tags):
        return "bioes"
    for sentence in sentences:
        if iob1_to_bio(sentence.labels) != list(sentence.labels):
            return "iob1"
    return "bio"


def resolve_tagging_scheme(scheme, sentences):
    """The scheme to use: `scheme` itself, or, for "auto", the one detected in `sentences`.

    With "bio", an `I-X` that starts an entity raises `UserInputError` naming its file and line.
    """
    if scheme not in TAGGING_SCHEMES:
        raise UserInputError(f"unknown tagging scheme {scheme!r}; expected one of {TAGGING_SCHEMES}.")
    if scheme == "auto":
        return detect_tagging_scheme(sentences)
    if scheme == "bio":
        for sentence in sentences:
            previous = "O"
            for tag, line in zip(sentence.labels, sentence.lines):
                if tag.startswith("I-") and (previous == "O" or tag_type(previous) != tag_type(tag)):
                    raise UserInputError(
                        f"{sentence.path}:{line}: tag {tag!r} starts an entity, which BIO does not allow; "
                        "use --tagging_scheme=iob1 (or auto)."
                    )
                previous = tag
    return scheme
