"""CoNLL-2003 reading (documents, columns, errors with file:line), IOB1/BIO, first-sub-token features,
document-context windows, long-sentence splitting, mapping predictions back to words, and the data set."""

import importlib.util
import os

import numpy as np
import pytest

from keras_bert_impl.data import conll_data
from keras_bert_impl.data.conll_data import (
    ConllSentence,
    bio_to_iob1,
    build_label_list,
    check_labels,
    detect_tagging_scheme,
    iob1_to_bio,
    read_conll_file,
    resolve_tagging_scheme,
    write_predictions,
)
from keras_bert_impl.data.conll_features import (
    convert_sentences_to_features,
    features_to_arrays,
    features_to_lists,
    predictions_to_word_tags,
)
from keras_bert_impl.metrics.ner_metrics import get_entities
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

pytestmark = pytest.mark.backend_independent

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "john", "smith", "##ville", "lives", "in", "new", "york", ".",
         "un", "##believ", "##able", "a", "b", "c", "d", "e", "f", "g", "h", "i"]
LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


@pytest.fixture()
def tokenizer(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return BertTokenizer(str(path), do_lower_case=True)


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _sentence(words, labels=None, document=0):
    labels = labels or ["O"] * len(words)
    return ConllSentence(list(words), list(labels), document, list(range(1, len(words) + 1)), "mem.txt")


# ------------------------------------------------------------------------------------------- reading
def test_reader_splits_documents_and_sentences_and_takes_first_and_last_columns(tmp_path):
    path = _write(tmp_path, "train.txt", (
        "-DOCSTART- -X- -X- O\n"
        "\n"
        "EU NNP I-NP I-ORG\n"
        "rejects VBZ I-VP O\n"
        "German JJ I-NP I-MISC\n"
        "\n\n"
        "Peter NNP I-NP I-PER\n"
        "Blackburn NNP I-NP I-PER\n"
        "\n"
        "-DOCSTART- -X- -X- O\n"
        "\n"
        "BRUSSELS I-LOC\n"  # two columns are enough
        "1996-08-22 CD I-NP O"  # no newline at the end of the file
    ))
    sentences = read_conll_file(path)
    assert [s.words for s in sentences] == [["EU", "rejects", "German"], ["Peter", "Blackburn"], ["BRUSSELS", "1996-08-22"]]
    assert [s.labels for s in sentences] == [["I-ORG", "O", "I-MISC"], ["I-PER", "I-PER"], ["I-LOC", "O"]]
    assert [s.document for s in sentences] == [0, 0, 1]
    assert [s.starts_document for s in sentences] == [True, False, True]
    assert sentences[1].lines == [8, 9] and sentences[2].lines == [13, 14]
    assert all(s.path == path for s in sentences)


def test_reader_without_docstart_is_one_document(tmp_path):
    sentences = read_conll_file(_write(tmp_path, "a.txt", "a O\n\nb B-PER\nc I-PER\n\n"))
    assert [s.document for s in sentences] == [0, 0] and not any(s.starts_document for s in sentences)


def test_malformed_line_and_tag_name_the_file_and_line(tmp_path):
    path = _write(tmp_path, "bad.txt", "EU NNP I-NP I-ORG\nrejects\n")
    with pytest.raises(ValueError, match=r"bad\.txt:2: malformed line 'rejects'"):
        read_conll_file(path)
    path = _write(tmp_path, "badtag.txt", "EU NNP I-NP I-ORG\n\nx NN O O\ny NN O X-ORG\n")
    with pytest.raises(ValueError, match=r"badtag\.txt:4: malformed tag 'X-ORG'"):
        read_conll_file(path)


def test_unknown_dev_label_names_file_line_label_and_allowed_labels(tmp_path):
    train = read_conll_file(_write(tmp_path, "train.txt", "Peter I-PER\nin O\nParis I-LOC\n"))
    labels = build_label_list(train)
    assert labels == LABELS
    dev = read_conll_file(_write(tmp_path, "dev.txt", "Paris I-LOC\n\nEU I-ORG\n"))
    with pytest.raises(ValueError, match=r"dev\.txt:3: unknown label 'I-ORG'.*O, B-LOC, I-LOC, B-PER, I-PER"):
        check_labels(dev, labels)
    # A B- tag of a known type is fine in IOB1 files even if training only had I- tags.
    check_labels(read_conll_file(_write(tmp_path, "ok.txt", "Paris I-LOC\nLondon B-LOC\n")), labels)


# ----------------------------------------------------------------------------------- tagging schemes
def test_iob1_bio_conversions_keep_the_entities():
    iob1 = ["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-LOC", "I-MISC", "O", "B-ORG"]
    bio = iob1_to_bio(iob1)
    assert bio == ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC", "B-MISC", "O", "B-ORG"]
    assert iob1_to_bio(bio) == bio  # identity on BIO
    assert bio_to_iob1(bio) == ["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-LOC", "I-MISC", "O", "I-ORG"]
    assert get_entities(bio) == get_entities(iob1) == get_entities(bio_to_iob1(bio))


def test_scheme_detection_and_strict_bio(tmp_path):
    iob1 = [_sentence(["a", "b"], ["I-PER", "O"])]
    bio = [_sentence(["a", "b"], ["B-PER", "I-PER"])]
    assert detect_tagging_scheme(iob1) == "iob1" and detect_tagging_scheme(bio) == "bio"
    assert resolve_tagging_scheme("auto", iob1) == "iob1" and resolve_tagging_scheme("iob1", bio) == "iob1"
    with pytest.raises(ValueError, match=r"mem\.txt:1: tag 'I-PER' starts an entity"):
        resolve_tagging_scheme("bio", iob1)


# ------------------------------------------------------------------------------------------ features
def test_label_sits_on_the_first_sub_token_and_the_rest_is_masked(tokenizer):
    sentence = _sentence(["John", "Smithville", "lives", "in", "New", "York", "."],
                         ["I-PER", "I-PER", "O", "O", "I-LOC", "I-LOC", "O"])  # IOB1 in, BIO labels out
    (feature,) = convert_sentences_to_features([sentence], tokenizer, LABELS, max_seq_length=12)
    assert feature.tokens == ["[CLS]", "john", "smith", "##ville", "lives", "in", "new", "york", ".", "[SEP]"]
    assert feature.token_positions == [1, 2, 4, 5, 6, 7, 8] and feature.word_indices == list(range(7))
    #                                CLS   john smith ##ville lives in new york .  SEP  pad  pad
    assert feature.label_ids.tolist() == [-100, 3, 4, -100, 0, 0, 1, 2, 0, -100, -100, -100]
    assert feature.label_mask.tolist() == [0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 0]
    assert feature.padding_mask.tolist() == [1] * 10 + [0, 0]
    assert feature.token_ids[:3].tolist() == [2, 5, 6] and feature.token_ids[10:].tolist() == [0, 0]


def test_words_without_pieces_get_unk_and_unknown_words_are_unk(tokenizer):
    (feature,) = convert_sentences_to_features([_sentence(["john", "\x07", "zzz"])], tokenizer, LABELS, 8)
    assert feature.tokens == ["[CLS]", "john", "[UNK]", "[UNK]", "[SEP]"]
    assert feature.token_positions == [1, 2, 3]


def test_document_context_fills_the_window_around_the_centre_sentence(tokenizer):
    sentences = [_sentence(["a", "b"]), _sentence(["c", "d", "e"]), _sentence(["f", "g", "h", "i"]),
                 _sentence(["a", "b"], document=1)]
    features = convert_sentences_to_features(sentences, tokenizer, LABELS, max_seq_length=8, use_document_context=True)
    # Budget 6: the centre sentence, then as much context on each side as fits, split evenly.
    assert [f.tokens for f in features] == [
        ["[CLS]", "a", "b", "c", "d", "e", "f", "[SEP]"],  # no left context: the right side takes it all
        ["[CLS]", "b", "c", "d", "e", "f", "g", "[SEP]"],  # 1 left, 2 right
        ["[CLS]", "d", "e", "f", "g", "h", "i", "[SEP]"],  # no right context: the left side takes it all
        ["[CLS]", "a", "b", "[SEP]"],  # another document: no context from the first one
    ]
    assert [f.token_positions for f in features] == [[1, 2], [2, 3, 4], [3, 4, 5, 6], [1, 2]]
    assert features[1].label_mask.tolist() == [0, 0, 1, 1, 1, 0, 0, 0]  # context is never predicted
    # Without document context each window holds its sentence only.
    plain = convert_sentences_to_features(sentences, tokenizer, LABELS, max_seq_length=8)
    assert plain[1].tokens == ["[CLS]", "c", "d", "e", "[SEP]"] and plain[1].token_positions == [1, 2, 3]


def test_long_sentences_are_split_into_whole_word_pieces_so_every_word_is_predicted(tokenizer):
    sentence = _sentence(["unbelievable", "a", "b", "c", "d"], ["I-PER", "I-PER", "O", "I-LOC", "I-LOC"])
    features = convert_sentences_to_features([sentence], tokenizer, LABELS, max_seq_length=6)  # budget 4
    assert [f.tokens for f in features] == [["[CLS]", "un", "##believ", "##able", "a", "[SEP]"],
                                            ["[CLS]", "b", "c", "d", "[SEP]"]]
    assert [f.word_indices for f in features] == [[0, 1], [2, 3, 4]]
    assert [f.token_positions for f in features] == [[1, 4], [1, 2, 3]]
    with_context = convert_sentences_to_features([sentence], tokenizer, LABELS, 6, use_document_context=True)
    assert with_context[1].tokens == ["[CLS]", "a", "b", "c", "d", "[SEP]"] and with_context[1].token_positions == [2, 3, 4]
    # A word longer than the budget keeps its first pieces (its label is on the first one).
    (cut,) = convert_sentences_to_features([_sentence(["unbelievable"], ["I-PER"])], tokenizer, LABELS, 4)
    assert cut.tokens == ["[CLS]", "un", "##believ", "[SEP]"] and cut.label_ids[1] == 3


def test_predictions_map_back_to_one_tag_per_word_in_the_file_scheme(tokenizer):
    sentences = [_sentence(["unbelievable", "a", "b", "c", "d"]), _sentence(["john", "smithville"])]
    features = convert_sentences_to_features(sentences, tokenizer, LABELS, max_seq_length=6)
    assert [f.sentence_index for f in features] == [0, 0, 1]
    # Token-level predictions; only the first sub-token positions are read.
    predicted = [np.array([9, 3, 9, 9, 4, 9]), np.array([9, 0, 1, 1, 9]), np.array([9, 3, 4, 0, 9])]
    tags = predictions_to_word_tags(features, predicted, sentences, LABELS, scheme="bio")
    assert tags == [["B-PER", "I-PER", "O", "B-LOC", "B-LOC"], ["B-PER", "I-PER"]]
    iob1 = predictions_to_word_tags(features, predicted, sentences, LABELS, scheme="iob1")
    assert iob1 == [["I-PER", "I-PER", "O", "I-LOC", "B-LOC"], ["I-PER", "I-PER"]]
    # A word no window predicts (none here; defensive) would get "O".
    assert predictions_to_word_tags(features[:1], predicted[:1], sentences, LABELS)[0][2:] == ["O", "O", "O"]


def test_arrays_and_lists_keep_the_real_tokens(tokenizer):
    sentences = [_sentence(["john"]), _sentence(["a", "b", "c", "d", "e", "f", "g", "h", "i"])]
    features = convert_sentences_to_features(sentences, tokenizer, LABELS, max_seq_length=64)
    x, labels, label_mask = features_to_arrays(features, pad_to_multiple_of=8)
    assert x["token_ids"].shape == labels.shape == label_mask.shape == (2, 16)  # longest 11 -> 16, not 64
    x_lists, label_lists, _ = features_to_lists(features)
    assert [len(t) for t in x_lists["token_ids"]] == [3, 11] and label_lists[0] == [-100, 0, -100]


def test_write_predictions_is_conlleval_input(tmp_path):
    sentences = [_sentence(["Peter", "runs"], ["I-PER", "O"]), _sentence(["Paris"], ["I-LOC"], document=1)]
    sentences[0].starts_document = sentences[1].starts_document = True
    path = str(tmp_path / "pred.txt")
    write_predictions(path, sentences, [["I-PER", "O"], ["I-ORG"]])
    assert open(path, encoding="utf-8").read() == (
        "-DOCSTART- O O\n\nPeter I-PER I-PER\nruns O O\n\n-DOCSTART- O O\n\nParis I-LOC I-ORG\n\n"
    )
    assert [s.words for s in read_conll_file(path)] == [["Peter", "runs"], ["Paris"]]


# ---------------------------------------------------------------------------------------- the data set
def _load_generator():
    spec = importlib.util.spec_from_file_location("make_ner_data", os.path.join(REPO, "data", "make_ner_data.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_data_is_what_the_generator_writes(tmp_path):
    _load_generator().main(str(tmp_path))
    total = 0
    for split in ("train", "dev", "test"):
        committed = os.path.join(REPO, "data", "ner", f"{split}.txt")
        assert open(committed, encoding="utf-8").read() == (tmp_path / f"{split}.txt").read_text(encoding="utf-8")
        total += os.path.getsize(committed)
    assert total < 150_000


def test_held_out_entities_never_occur_in_training():
    splits = {s: read_conll_file(os.path.join(REPO, "data", "ner", f"{s}.txt")) for s in ("train", "dev", "test")}

    def entities(sentences):
        return {(t, " ".join(s.words[a : b + 1])) for s in sentences for t, a, b in get_entities(s.labels)}

    train, dev, test = (entities(splits[s]) for s in ("train", "dev", "test"))
    assert len(dev) > 50 and len(test) > 50 and not (train & dev) and not (train & test)
    # Person names, org roots and one-word places are never shared either (multi-word places may share
    # "New" / "San"; org suffixes like "Bank" are shared by design).
    def name_words(entities_):
        return {name.split()[0] for type_, name in entities_ if type_ in ("PER", "ORG", "MISC")}

    assert not (name_words(train) & (name_words(dev) | name_words(test)))
    assert {t for t, _ in dev} == {t for t, _ in test} == {"PER", "LOC", "ORG", "MISC"}
    assert any(len(name.split()) > 1 for _, name in dev)  # multi-token entities
    for sentences in splits.values():  # IOB1, with B- between adjacent same-type entities
        assert detect_tagging_scheme(sentences) == "iob1"
        assert any(tag.startswith("B-") for s in sentences for tag in s.labels)
        assert all(s.starts_document for s in sentences[:1]) and len({s.document for s in sentences}) > 5
    assert conll_data.build_label_list(splits["train"]) == [
        "O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER"]
