"""The token-classification pipeline (also "ner"): entities with their character spans, as transformers'.

    ner = pipeline("token-classification", model="output/ner/model", aggregation_strategy="simple")
    ner("Angela Merkel visited Paris.")
    # [{'entity_group': 'PER', 'score': 0.99, 'word': 'Angela Merkel', 'start': 0, 'end': 13}, {... 'LOC' ...}]

Words are the text's whitespace-separated words, as run_ner.py's CoNLL words, each WordPiece-tokenized on
its own; a word's tag is decided at its first sub-token by the model's `decode` (argmax, or with a CRF the
Viterbi path over the words of a window), as run_ner.py's test_predictions.txt and the SavedModel decide it.
A text longer than `max_seq_length` is cut into the recipe's windows of whole words
(`BertTokenClassifierPreprocessor`): every word is predicted once, by the window that holds it.

`aggregation_strategy`, transformers' (default "none"):

- "none": one entity per sub-token {"entity", "score", "index", "word", "start", "end"}: a word's first
  sub-token carries the word's tag; a continuation sub-token (`##...`, or a punctuation piece inside the
  word) its own argmax, as transformers shows it (the recipes train no label there);
- "simple": those entities grouped: adjacent entities of one type form a group (a "B-" tag starts a new one);
- "first": one entity per word, its tag the first sub-token's (the recipe's word tags), then grouped;
- "max": one entity per word, its tag that of the sub-token whose score is highest, then grouped.

A group is {"entity_group", "score" (the mean of its entities'), "word", "start", "end"}; `word` is the
text from `start` to `end` (transformers joins the tokens, lower-cased for an uncased model), `index` the
sub-token's position in the text's packed tokens ([CLS] is 0). Scores are the softmax of the logits at the
sub-token (with a CRF, of its emission scores). Entities whose tag (or group) is in `ignore_labels`
(default ["O"]) are left out.
"""

import re

import numpy as np

from keras_bert_impl.data import batching, conll_features
from keras_bert_impl.models.token_classifier import BertTokenClassifier
from keras_bert_impl.pipelines.base import Pipeline
from keras_bert_impl.data.class_scores import class_scores
from keras_bert_impl.utils.errors import UserInputError

AGGREGATION_STRATEGIES = ("none", "simple", "first", "max")
_WORD = re.compile(r"\S+")  # str.split()'s words


class TokenClassificationPipeline(Pipeline):
    """`pipeline("token-classification")` (also "ner"): see the module docstring."""

    task = "token-classification"
    default_model = BertTokenClassifier  # and BertFeatureBasedTagger, registered with this pipeline too
    options = {"aggregation_strategy": "none", "ignore_labels": ("O",), "label_names": None}

    def run(self, inputs, settings):
        strategy = settings["aggregation_strategy"]
        if strategy not in AGGREGATION_STRATEGIES:
            raise UserInputError(f"aggregation_strategy must be one of {', '.join(AGGREGATION_STRATEGIES)}, got "
                                 f"{strategy!r}.")
        texts = list(inputs)
        words = [[(m.start(), m.group()) for m in _WORD.finditer(text)] for text in texts]
        tokens = self.token_predictions(words, settings)
        ignored = set(settings["ignore_labels"] or ())
        answers = []
        for text, text_tokens in zip(texts, tokens):
            if strategy == "none":
                entities = [{key: t[key] for key in ("entity", "score", "index", "word", "start", "end")}
                            for t in text_tokens]
                answers.append([e for e in entities if e["entity"] not in ignored])
                continue
            units = text_tokens if strategy == "simple" else _word_entities(text_tokens, strategy)
            answers.append([g for g in group_entities(units, text) if g["entity_group"] not in ignored])
        return answers

    def token_predictions(self, words, settings):
        """Per text, its sub-tokens with their tag, score, index, token, character span and word (see
        `aggregation_strategy` "none"); `words`: per text, its (start, word) pairs."""
        preprocessor = self.preprocessor(settings)
        features = preprocessor.windows([[w for _, w in text_words] for text_words in words])
        if not features:
            return [[] for _ in words]
        x, _, label_masks = conll_features.features_to_lists(features)
        width = int(batching.example_lengths(x).max())
        logits = self.predict(x, settings, output_length=width)  # [W, width, K]
        label_mask = batching.pad_batch({"m": label_masks}, np.arange(len(features)), length=width)["m"]
        tag_ids = self.model.decode(logits, label_mask)  # [W, width]: the words' tags, -100 elsewhere
        names = self.label_names(settings, logits.shape[-1])
        budget = preprocessor.sequence_length - 2
        tokens = [[] for _ in words]
        for w, feature in enumerate(features):
            scores = class_scores(logits[w], "softmax")  # [width, K]
            for word, position in zip(feature.word_indices, feature.token_positions):
                start, text = words[feature.sentence_index][word]
                for k, (piece, (piece_start, piece_end)) in enumerate(_pieces(self.tokenizer, text)[:budget]):
                    label = int(tag_ids[w, position]) if k == 0 else int(np.argmax(scores[position + k]))
                    tokens[feature.sentence_index].append({
                        "entity": names[label], "score": float(scores[position + k, label]), "word": piece,
                        "start": start + piece_start, "end": start + piece_end, "word_index": word})
        for text_tokens in tokens:  # a text's sub-tokens in order, numbered as packed after [CLS]
            text_tokens.sort(key=lambda t: (t["word_index"], t["start"]))
            for index, token in enumerate(text_tokens, 1):
                token["index"] = index
        return tokens


def _pieces(tokenizer, word):
    """(sub-token, (start, end) in the word) of one word, as `conll_features.word_pieces` tokenizes it; an
    `[UNK]` token is shown as the word's text, as transformers shows it."""
    pieces, offsets = tokenizer.tokenize_with_offsets(word)
    if not pieces:
        return [(word, (0, len(word)))]  # a word that normalizes to nothing: one [UNK] position
    return [(word[s:e] if p == "[UNK]" else p, (s, e)) for p, (s, e) in zip(pieces, offsets)]


def _word_entities(tokens, strategy):
    """One entity per word ("first": its first sub-token's tag and score; "max": those of its sub-token
    with the highest score), spanning the word's sub-tokens."""
    entities = []
    for token in tokens:
        if entities and entities[-1]["word_index"] == token["word_index"]:
            entity = entities[-1]
            entity["end"] = token["end"]
            if strategy == "max" and token["score"] > entity["score"]:
                entity["entity"], entity["score"] = token["entity"], token["score"]
        else:
            entities.append({key: token[key] for key in ("entity", "score", "start", "end", "word_index")})
    return entities


def _tag(entity_name):
    """("B" or "I", type) of a tag; a tag without a B-/I- prefix continues its type ("I")."""
    if entity_name.startswith(("B-", "I-")):
        return entity_name[0], entity_name[2:]
    return "I", entity_name


def group_entities(entities, text):
    """Adjacent entities of one type as groups {"entity_group", "score", "word", "start", "end"}: an entity
    joins the group before it when its type is the group's and its tag is not a "B-" (transformers' rule);
    the group's score is the mean of its entities', its word the text it spans."""
    groups, current = [], []
    for entity in entities:
        bi, tag = _tag(entity["entity"])
        if current and tag == _tag(current[-1]["entity"])[1] and bi != "B":
            current.append(entity)
            continue
        if current:
            groups.append(_group(current, text))
        current = [entity]
    if current:
        groups.append(_group(current, text))
    return groups


def _group(entities, text):
    start, end = entities[0]["start"], entities[-1]["end"]
    return {"entity_group": _tag(entities[0]["entity"])[1], "score": float(np.mean([e["score"] for e in entities])),
            "word": text[start:end], "start": start, "end": end}
