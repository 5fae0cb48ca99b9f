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

Order faults of BIOES and BMES (`tag_order_faults`: an E- no B- began, an I- / M- outside an entity, a B-
or I- / M- whose entity no E- ends) are a warning naming the first one by file and line and counting them
(`warn_tag_order_faults`), not an error: conlleval and seqeval (its default mode) read such sequences
without a word, by the rules this package reads and scores them by (`tags_to_spans`), and the public
Chinese NER files are annotated by hand, so refusing a slip would refuse the whole file; silently training
on it, though, hides what the model learns (an `E-` alone is read as a one-token entity).

Examples:

>>> tags = ["B-PER", "M-PER", "E-PER", "O", "S-LOC"]
>>> tags_to_spans(tags)
[('PER', 0, 2), ('LOC', 4, 4)]
>>> to_bio(tags)
['B-PER', 'I-PER', 'I-PER', 'O', 'B-LOC']
>>> from_bio(to_bio(tags), "bioes")
['B-PER', 'I-PER', 'E-PER', 'O', 'S-LOC']
"""

import warnings

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


def tag_order_faults(tags, scheme):
    """`[(index, reason)]` of the tags of one sentence that break the order of `scheme` ("bioes" or "bmes";
    other schemes: none): an E- that no B- of its type began, an I- / M- outside an entity of its type, a B-
    (BIOES; BMES reads a lone B- as a one-token entity) or an I- / M- whose entity the next tag does not go on.

    Examples:

    >>> tag_order_faults(["O", "E-PER", "B-LOC", "M-LOC", "O", "M-ORG", "E-ORG"], "bmes")
    [(1, "'E-PER' ends an entity that no B-PER began"), (3, "'M-LOC' is not followed by the E-LOC that ends its entity"), (5, "'M-ORG' continues an entity that no B-ORG began")]
    """
    if scheme not in ("bioes", "bmes"):
        return []
    inside = "M" if scheme == "bmes" else "I"
    faults = []
    for i, tag in enumerate(tags):
        letter, kind = tag[0], tag_type(tag)
        previous = tags[i - 1] if i else "O"
        following = tags[i + 1] if i + 1 < len(tags) else "O"
        continued_from = previous[0] in ("B", inside) and tag_type(previous) == kind
        goes_on = following[0] in (inside, "E") and tag_type(following) == kind
        if letter == "E" and not continued_from:
            faults.append((i, f"{tag!r} ends an entity that no B-{kind} began"))
        elif letter == inside and not continued_from:
            faults.append((i, f"{tag!r} continues an entity that no B-{kind} began"))
        elif letter == inside and not goes_on or letter == "B" and scheme == "bioes" and not goes_on:
            faults.append((i, f"{tag!r} is not followed by the E-{kind} that ends its entity"))
    return faults


def warn_tag_order_faults(sentences, scheme):
    """One warning when the tags of `sentences` (with `labels`, `lines`, `path`) break the order of
    `scheme` (`tag_order_faults`), naming the first fault's file and line and counting them all; returns
    the count. Why a warning and not an error: the module docstring."""
    faults = [(sentence, index, reason) for sentence in sentences
              for index, reason in tag_order_faults(sentence.labels, scheme)]
    if faults:
        sentence, index, reason = faults[0]
        warnings.warn(f"{sentence.path}:{sentence.lines[index]}: {reason} ({scheme.upper()}); {len(faults)} such "
                      f"tag-order fault{'s' * (len(faults) > 1)} in the data read, each read by conlleval's rules",
                      stacklevel=2)
    return len(faults)
