"""`keras_bert_impl.pipeline`: answers in the shape of transformers' pipelines, long inputs through their windows,
your own labels from run_glue.py (two at least, or a regression asked for), the settings a model directory was
saved with; options outside their range, inputs that are not texts and empty texts refused in one line; a cut
input said once per pipeline.

(The pipelines' answers equal the recipes' prediction files and the SavedModel's on the shipped data:
tests/test_tf_export.py, which exports and serves them.)
"""

import json
import re
import warnings

import numpy as np
import pytest

from keras_bert_impl import pipeline
from keras_bert_impl.config import BertConfig
from keras_bert_impl.data.glue_data import InputExample
from keras_bert_impl.data.text_classification_data import label_ids, label_set
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.models.pretrainer import BertPretrainer
from keras_bert_impl.models.span_qa import BertSpanQA
from keras_bert_impl.models.token_classifier import BertTokenClassifier
from keras_bert_impl.pipelines.token_classification import group_entities
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils.errors import UserInputError
from tests.backend_utils import inference, to_numpy
from tests.finetuning_files import load_run_glue

WORDS = ["the", "city", "of", "paris", "london", "rome", "is", "a", "river", "old", "where", "tower", "?", ".",
         "cheerful", "gloomy", "day", "night", "sun", "rain", "##s"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
TAGS = ["O", "B-LOC", "I-LOC"]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return BertTokenizer(str(path))


def _backbone(**kwargs):
    return BertBackbone(BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=32, max_position_embeddings=128, hidden_dropout_prob=0.0,
                                   attention_probs_dropout_prob=0.0), **kwargs)


def _save(model, directory, tokenizer, **kwargs):
    model.save_pretrained(str(directory), **kwargs)
    tokenizer.save_pretrained(str(directory))
    return str(directory)


def _spread(variable, seed, scale=1.0):
    variable.assign(np.random.default_rng(seed).normal(0.0, scale, tuple(variable.shape)).astype("float32"))


# ------------------------------------------------------------------------------ question answering
def _pointing_qa(word_id):
    """A span QA model whose start and end logits are large at the token `word_id` and small elsewhere: one
    layer that passes the embeddings through (its attention and feed-forward outputs zero), the token's
    embedding alone on feature 0, which the span layer reads."""
    model = BertSpanQA(_backbone())
    for variable in model.weights:
        if re.search(r"(attention_output|output_dense|position_embeddings|token_type_embeddings)/", variable.path):
            variable.assign(np.zeros(tuple(variable.shape), "float32"))
    embeddings = np.random.default_rng(0).normal(0.0, 1.0, (len(VOCAB), 16)).astype("float32")
    embeddings[:, 0] = 0.0
    embeddings[word_id] = 0.0
    embeddings[word_id, 0] = 10.0
    model.backbone.token_embedding.embeddings.assign(embeddings)
    kernel = np.zeros((16, 2), "float32")
    kernel[0] = 3.0
    model.qa_outputs.kernel.assign(kernel)
    return model


def test_qa_pipeline_finds_the_answer_in_a_later_window_of_a_long_context(tokenizer, tmp_path):
    """A context of several windows whose answer ("paris") is in its last one: the pipeline answers it, with its
    characters, by the best span across the windows (run_squad.py's); one window would not hold it."""
    directory = _save(_pointing_qa(tokenizer.vocab["paris"]), tmp_path / "qa", tokenizer,
                      settings={"max_seq_length": 24, "squad": {"doc_stride": 8, "max_query_length": 8}})
    context = "the old city of rome is old . " * 6 + "the tower is in paris ."
    qa = pipeline("question-answering", model=directory)
    answer = qa(question="where is the tower ?", context=context)
    assert answer["answer"] == "paris" and context[answer["start"]:answer["end"]] == "paris"
    assert answer["start"] > 150 and answer["score"] > 0.5
    # The windows: 24 tokens, 8 of them the question and [CLS] [SEP] [SEP]: 18 context tokens each.
    examples, features = qa.model.preprocessor.windows((["where is the tower ?"], [context]))
    assert len(features) > 4 and "paris" not in features[0].tokens
    # A list of questions answers a list; top_k answers the n best, best first.
    answers = qa({"question": "where?", "context": context}, top_k=3)
    assert [a["answer"] for a in answers][0] == "paris" and len(answers) == 3
    assert answers[0]["score"] >= answers[1]["score"] >= answers[2]["score"]
    assert qa(question=["where?", "where?"], context=["paris is a city", "a city"])[0]["answer"] == "paris"


def test_span_qa_from_pretrained_takes_the_saved_windows_and_the_pipeline_the_saved_decoding(tokenizer, tmp_path):
    squad = {"doc_stride": 5, "max_query_length": 7, "n_best_size": 3, "max_answer_length": 2,
             "version_2_with_negative": True, "null_score_diff_threshold": 1.5}
    directory = _save(BertSpanQA(_backbone()), tmp_path / "qa", tokenizer,
                      settings={"max_seq_length": 20, "squad": squad})
    preprocessor = BertSpanQA.from_pretrained(directory).preprocessor
    assert (preprocessor.sequence_length, preprocessor.doc_stride, preprocessor.max_query_length) == (20, 5, 7)
    qa = pipeline("question-answering", model=directory)
    assert (qa.settings["max_seq_length"], qa.settings["doc_stride"], qa.settings["max_query_length"]) == (20, 5, 7)
    # SQuAD v2.0 (saved): a call's threshold replaces the saved one: "" when the null score wins by more.
    assert qa(question="where?", context="the city", null_score_diff_threshold=-1e9)["answer"] == ""
    assert qa(question="where?", context="the city", null_score_diff_threshold=1e9,
              n_best_size=20)["answer"] in ("the", "city", "the city")


# ------------------------------------------------------------------------------ token classification
def test_ner_pipeline_tags_every_word_of_a_text_longer_than_max_seq_length(tokenizer, tmp_path):
    """60 words at max_seq_length 10: the recipe's windows of whole words; every word is tagged once, by its
    window (aggregation "none": every sub-token once, a word's tag at its first), as `decode` tags it there."""
    model = BertTokenClassifier(_backbone(), num_classes=len(TAGS), dropout=0.0, use_crf=True)
    _spread(model.classifier.kernel, 1)
    _spread(model.crf.transitions, 2)
    directory = _save(model, tmp_path / "ner", tokenizer, label_names=TAGS, settings={"max_seq_length": 10})
    text = " ".join(["paris", "is", "a", "city", "rivers", "london"] * 10)
    ner = pipeline("ner", model=directory, ignore_labels=[])
    entities = ner(text)
    assert len(entities) == len(tokenizer.tokenize(text)) == 70  # "rivers": river ##s
    firsts = {e["start"]: e for e in entities}
    words = list(re.finditer(r"\S+", text))
    assert all(m.start() in firsts for m in words)
    # Each window's decode (its own Viterbi path) gives its words' tags.
    windows = ner.model.preprocessor.windows([text])
    assert len(windows) >= 8 and sum(len(w.word_indices) for w in windows) == 60
    for window in windows:
        x = {k: getattr(window, k)[None] for k in ("token_ids", "segment_ids", "padding_mask")}
        tags = model.decode(inference(ner.model, x), window.label_mask[None])[0]
        for word, position in zip(window.word_indices, window.token_positions):
            assert firsts[words[word].start()]["entity"] == TAGS[tags[position]]
    # "first": a word's tag is its first sub-token's; groups span whole words.
    groups = ner(text, aggregation_strategy="first")
    assert sum(len(g["word"].split()) for g in groups) == 60
    assert all(text[g["start"]:g["end"]] == g["word"] for g in groups)


def test_token_classification_aggregation_groups_as_transformers():
    text = "Angela Merkel visited New York ."
    tokens = [  # (entity, score, start, end, word index)
        ("B-PER", 0.9, 0, 6, 0), ("I-PER", 0.8, 7, 13, 1), ("O", 0.99, 14, 21, 2), ("B-LOC", 0.7, 22, 25, 3),
        ("I-LOC", 0.6, 26, 28, 4), ("B-LOC", 0.95, 28, 30, 4), ("O", 0.9, 31, 32, 5)]
    entities = [{"entity": e, "score": s, "start": a, "end": b, "word_index": w} for e, s, a, b, w in tokens]
    assert [(g["entity_group"], g["word"], round(g["score"], 3)) for g in group_entities(entities, text)] == [
        ("PER", "Angela Merkel", 0.85), ("O", "visited", 0.99), ("LOC", "New Yo", 0.65), ("LOC", "rk", 0.95),
        ("O", ".", 0.9)]
    from keras_bert_impl.pipelines.token_classification import _word_entities

    first = group_entities(_word_entities(entities, "first"), text)
    assert [(g["entity_group"], g["word"]) for g in first if g["entity_group"] != "O"] == [
        ("PER", "Angela Merkel"), ("LOC", "New York")]
    highest = _word_entities(entities, "max")
    assert [(e["entity"], e["score"]) for e in highest][4] == ("B-LOC", 0.95)  # "York": its best piece
    assert [g["word"] for g in group_entities(highest, text)] == ["Angela Merkel", "visited", "New", "York", "."]


# ------------------------------------------------------------------------------ text classification
def _long_classifier(tokenizer, tmp_path, **settings):
    """A classifier whose every kernel is large (N(0, 1)): its answers differ from text to text."""
    model = BertClassifier(_backbone(), num_classes=3, dropout=0.0)
    for seed, variable in enumerate(model.weights):
        if variable.path.endswith("kernel"):
            _spread(variable, seed)
    return model, _save(model, tmp_path / "classifier", tokenizer, label_names=["a", "b", "c"],
                        settings={"max_seq_length": 8, **settings})


def test_text_classification_pools_a_long_documents_windows(tokenizer, tmp_path):
    """A text of 20 tokens at max_seq_length 8: windows of 6 tokens; "mean" / "max" answer the softmax of the
    windows' mean / max logits, "truncate" (the default) the first window's."""
    model, directory = _long_classifier(tokenizer, tmp_path)
    text = "the sun is old . " * 3 + "rain night day gloomy ."
    ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))
    assert len(ids) == 20
    windows = [[tokenizer.vocab["[CLS]"], *ids[i : i + 6], tokenizer.vocab["[SEP]"]] for i in range(0, 20, 6)]
    logits = []
    for window in windows:
        x = {"token_ids": np.array([window], "int32"), "segment_ids": np.zeros((1, len(window)), "int32"),
             "padding_mask": np.ones((1, len(window)), "int32")}
        logits.append(to_numpy(inference(model, x))[0])
    logits = np.array(logits, "float64")

    def softmax(row):
        return np.exp(row - row.max()) / np.exp(row - row.max()).sum()

    classify = pipeline("text-classification", model=directory)
    assert classify.settings["long_input"] == "truncate"
    for mode, pooled in (("truncate", logits[0]), ("mean", logits.mean(0)), ("max", logits.max(0))):
        scores = {a["label"]: a["score"] for a in classify(text, long_input=mode, top_k=None)}
        np.testing.assert_allclose([scores[n] for n in "abc"], softmax(pooled), atol=1e-5)
    assert not np.allclose(softmax(logits.mean(0)), softmax(logits[0]), atol=1e-3)  # pooling changes the answer
    with pytest.raises(ValueError, match="single texts"):
        classify({"text": "the sun", "text_pair": "rain"}, long_input="mean")


def test_text_classification_answers_in_transformers_shapes(tokenizer, tmp_path):
    _, directory = _long_classifier(tokenizer, tmp_path)
    classify = pipeline("sentiment-analysis", model=directory)
    one = classify("the sun")
    assert isinstance(one, list) and len(one) == 1 and sorted(one[0]) == ["label", "score"]
    assert [len(a) for a in classify(["the sun", "rain"], top_k=2)] == [2, 2]
    assert isinstance(classify(["the sun", "rain"])[0], dict)
    every = classify("the sun", top_k=None)
    assert sorted(a["label"] for a in every) == ["a", "b", "c"] and sum(a["score"] for a in every) == pytest.approx(1)
    assert every[0] == one[0]
    raw = classify("the sun", top_k=None, function_to_apply="none")
    assert {a["label"] for a in raw} == {"a", "b", "c"} and max(a["score"] for a in raw) > 1  # logits
    assert classify({"text": "the sun", "text_pair": "rain"})[0]["label"] in "abc"


def test_pipelines_refuse_an_unknown_task_option_or_model_in_one_line(tokenizer, tmp_path):
    _, directory = _long_classifier(tokenizer, tmp_path)
    with pytest.raises(UserInputError, match="Unknown pipeline task 'summarization'"):
        pipeline("summarization", model=directory)
    with pytest.raises(UserInputError, match="takes no option aggregation_strategy"):
        pipeline("text-classification", model=directory, aggregation_strategy="simple")
    with pytest.raises(UserInputError, match=r"holds a BertForSequenceClassification .*runs a BertSpanQA"):
        pipeline("question-answering", model=directory)
    with pytest.raises(UserInputError, match="needs model="):
        pipeline("fill-mask")


def test_pipeline_options_outside_their_range_are_refused_naming_the_range(tokenizer, tmp_path):
    _, directory = _long_classifier(tokenizer, tmp_path)
    classify = pipeline("text-classification", model=directory)
    for top_k, got in ((0, "0 (an int)"), (-1, "-1 (an int)"), ("2", "'2' (a str)")):
        with pytest.raises(UserInputError) as refused:
            classify("the sun", top_k=top_k)
        assert str(refused.value) == ("pipeline('text-classification'): top_k must be an integer of at least 1 or None "
                                      f"(every label), got {got}.")
    assert len(classify("the sun", top_k=5)) == 3  # more than the labels: every label, as transformers
    with pytest.raises(UserInputError) as refused:
        pipeline("text-classification", model=directory, max_seq_length=100000)
    assert str(refused.value) == ("pipeline('text-classification'): max_seq_length must be an integer from 3 to 128 "
                                  "(the model's max_position_embeddings), got 100000 (an int).")
    with pytest.raises(UserInputError, match="max_seq_length must be an integer from 3 to 128"):
        classify("the sun", max_seq_length=129)
    with pytest.raises(UserInputError, match="predict_batch_size must be an integer of at least 1, got 0"):
        classify("the sun", batch_size=0)
    qa = pipeline("question-answering", model=_save(_pointing_qa(tokenizer.vocab["paris"]), tmp_path / "qa",
                                                    tokenizer))
    with pytest.raises(UserInputError) as refused:
        qa(question="where ?", context="in paris .", top_k=0)
    assert str(refused.value) == "pipeline('question-answering'): top_k must be an integer of at least 1, got 0 (an int)."


def test_inputs_that_are_not_texts_or_are_empty_are_refused_naming_their_index(tokenizer, tmp_path):
    _, directory = _long_classifier(tokenizer, tmp_path)
    classify = pipeline("text-classification", model=directory)
    cases = {None: "input 0 is None; expected a str.", 7: "input 0 is 7 (an int); expected a str.",
             ("the sun", None): "input 1 is None; expected a str.", "": "input 0 is empty; expected a text.",
             ("the sun", " "): "input 1 is empty; expected a text."}
    for inputs, message in cases.items():
        with pytest.raises(UserInputError) as refused:
            classify(list(inputs) if isinstance(inputs, tuple) else inputs)
        assert str(refused.value) == f"pipeline('text-classification'): {message}"
    qa = pipeline("question-answering", model=_save(_pointing_qa(tokenizer.vocab["paris"]), tmp_path / "qa",
                                                    tokenizer))
    with pytest.raises(UserInputError) as refused:
        qa(question=["where ?", ""], context=["in paris .", "in rome ."])
    assert str(refused.value) == "pipeline('question-answering'): question 1 is empty; expected a text."
    with pytest.raises(UserInputError, match=r"question 0 is None; expected a str"):
        qa({"question": None, "context": "in paris ."})
    assert qa(question="where ?", context="")["answer"] == ""  # an empty context: the null answer, as run_squad.py
    ner = pipeline("token-classification", model=_save(BertTokenClassifier(_backbone(), num_classes=3), tmp_path /
                                                       "ner", tokenizer, label_names=TAGS))
    with pytest.raises(UserInputError, match=r"^pipeline\('token-classification'\): input 1 is b'x' \(a bytes\)"):
        ner(["the city", b"x"])
    assert ner("") == []  # no words, no entities


def _ours(caught):
    """The warnings caught, without the libraries' DeprecationWarnings (numpy 2's about torch's `__array__`, seen
    through Keras' torch backend, in an environment without TensorFlow)."""
    return [w for w in caught if not issubclass(w.category, DeprecationWarning)]


def test_a_cut_input_is_one_warning_per_pipeline_naming_what_reads_all_of_it(tokenizer, tmp_path):
    _, directory = _long_classifier(tokenizer, tmp_path)
    classify = pipeline("text-classification", model=directory)  # max_seq_length 8: 6 tokens of text
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        classify(["the sun", "the sun is a old city of paris"])
        classify("the old city of rome is old")
        classify("the old city of rome is old", long_input="mean")
    assert [str(w.message) for w in _ours(caught)] == [
        "pipeline('text-classification'): input 1 has 8 tokens, more than max_seq_length=8 holds: it is cut "
        "(long_input='mean' or 'max' classifies a long text by its windows); said once per pipeline."]
    assert _ours(caught)[0].filename == __file__  # the warning points at the caller's line
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipeline("text-classification", model=directory)(["the sun", "the city"])  # nothing cut: nothing said
    assert _ours(caught) == []
    qa = pipeline("question-answering", model=_save(_pointing_qa(tokenizer.vocab["paris"]), tmp_path / "qa",
                                                    tokenizer, settings={"squad": {"max_query_length": 4}}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        qa(question="where is the old tower ?", context="the tower is in paris .")
    assert [str(w.message) for w in _ours(caught)] == [
        "pipeline('question-answering'): question 0 has 6 tokens, more than max_query_length=4 holds: it is cut (the "
        "context is read whole, in doc_stride windows; a larger max_query_length reads more of a question); said "
        "once per pipeline."]


def test_a_long_input_list_shows_a_progress_bar(tokenizer, tmp_path, capsys):
    _, directory = _long_classifier(tokenizer, tmp_path)
    classify = pipeline("text-classification", model=directory, predict_batch_size=2)
    classify(["the sun"] * 4)
    assert "batch" not in capsys.readouterr().out  # 2 batches: no bar
    classify(["the sun"] * 4, verbose=1)
    assert "2/2" in capsys.readouterr().out
    classify(["the sun"] * 20)  # more than 8 batches
    assert "10/10" in capsys.readouterr().out


# ------------------------------------------------------------------------------ fill-mask
def test_fill_mask_pipeline_answers_the_masked_lms_top_tokens(tokenizer, tmp_path):
    model = BertPretrainer(_backbone(), objective="mlm")
    directory = _save(model, tmp_path / "mlm", tokenizer)
    unmask = pipeline("fill-mask", model=directory, top_k=3)
    answers = unmask("the [MASK] of paris")
    ids = tokenizer.convert_tokens_to_ids(["[CLS]", "the", "[MASK]", "of", "paris", "[SEP]"])
    x = {"token_ids": np.array([ids], "int32"), "segment_ids": np.zeros((1, 6), "int32"),
         "padding_mask": np.ones((1, 6), "int32"), "masked_lm_positions": np.array([[2]], "int32")}
    logits = to_numpy(inference(unmask.model, x)["masked_lm_logits"])[0, 0].astype("float64")
    probabilities = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    best = np.argsort(-probabilities, kind="stable")[:3]
    assert [a["token"] for a in answers] == best.tolist()
    np.testing.assert_allclose([a["score"] for a in answers], probabilities[best], atol=1e-5)
    filled = [*ids[:2], answers[0]["token"], *ids[3:]]
    assert answers[0]["sequence"] == tokenizer.decode(filled, skip_special_tokens=True)
    assert answers[0]["token_str"] == tokenizer.convert_ids_to_tokens([answers[0]["token"]])[0]
    assert [len(a) for a in unmask("[MASK] city [MASK]")] == [3, 3]  # two masks: a list per mask
    with pytest.raises(UserInputError, match="no \\[MASK\\]"):
        unmask("the city")
    backbone_only = _save(_backbone(), tmp_path / "backbone", tokenizer)
    with warnings.catch_warnings(record=True) as caught, pytest.raises(UserInputError, match="has no masked-LM head"):
        warnings.simplefilter("always")
        pipeline("fill-mask", model=backbone_only)
    assert [str(w.message) for w in caught] == []  # refused, without warning first that the head starts random
    with pytest.raises(UserInputError, match="top_k must be an integer of at least 1, got 0"):
        unmask("[MASK] city", top_k=0)


# ------------------------------------------------------------------------------ your own labels
def test_own_labels_sets_integers_strings_and_floats():
    def examples(*labels):
        return [InputExample(f"f:{i}", "t", None, label) for i, label in enumerate(labels)]

    assert label_set(examples(10, 2, 2)) == ["2", "10"]  # integers by value
    assert label_set(examples("pos", "neg", 3)) == ["3", "neg", "pos"]
    assert label_set(examples(0.5, 2)) is None  # a float: a regression
    with pytest.raises(UserInputError, match="^f:1: label 'x' is not a number"):
        label_set(examples(0.5, "x"))
    assert label_ids(examples("neg", "pos"), ["neg", "pos"]).tolist() == [0, 1]
    with pytest.raises(UserInputError, match=r"^f:0: label 'meh' is not one of the model's labels \['neg', 'pos'\]"):
        label_ids(examples("meh"), ["neg", "pos"])


def test_one_label_value_is_refused_and_integer_labels_are_a_regression_when_asked():
    def examples(*labels):
        return [InputExample(f"train.csv:{i + 2}", "t", None, label) for i, label in enumerate(labels)]

    for labels in (("pos", "pos", "pos"), (1,)):  # one label value; a file of one line
        with pytest.raises(UserInputError, match=f"^train.csv: every example has the label {labels[0]!r}; a "
                                                 "classifier needs at least two label values"):
            label_set(examples(*labels))
    assert label_set(examples(1, 1, 3), regression=True) is None
    assert label_ids(examples(1, 1, 3), None).tolist() == [1.0, 1.0, 3.0]  # scores, as float labels
    with pytest.raises(UserInputError, match="^train.csv:3: label 'x' is not a number, and --regression"):
        label_set(examples(1, "x"), regression=True)


def test_run_glue_one_label_file_is_one_line_and_regression_trains_a_regressor(tokenizer, tmp_path, capsys):
    config = tmp_path / "bert_config.json"
    config.write_text(json.dumps(_backbone().config.to_dict()), encoding="utf-8")
    flags = [f"--vocab_file={tokenizer.vocab_file}", f"--bert_config_file={config}", "--do_train",
             "--max_seq_length=8", "--num_train_epochs=1", "--train_batch_size=4", "--verbose=0"]
    one_label = _write_jsonl(tmp_path / "one.jsonl", [{"text": "the city", "label": 1}] * 6)
    with pytest.raises(SystemExit) as exit_info:
        load_run_glue().main([*flags, f"--train_file={one_label}", f"--output_dir={tmp_path / 'one'}"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == (f"error: {one_label}: every example has the label 1; a classifier "
                                               "needs at least two label values (for a regression: float labels, "
                                               "or --regression)")
    scores = _write_jsonl(tmp_path / "scores.jsonl", [{"text": f"{WORDS[i]} {WORDS[i + 1]}", "label": i % 5}
                                                           for i in range(12)])
    load_run_glue().main([*flags, f"--train_file={scores}", f"--output_dir={tmp_path / 'reg'}", "--regression"])
    saved = json.loads((tmp_path / "reg" / "model" / "config.json").read_text(encoding="utf-8"))
    assert saved["problem_type"] == "regression" and len(saved["id2label"]) == 1
    assert "labels: a regression (--regression)" in capsys.readouterr().out


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def test_run_glue_on_string_labels_without_task_name_keeps_their_names(tokenizer, tmp_path):
    """run_glue.py on JSON lines with string labels and no --task_name (1 epoch of a tiny model, long texts as
    windows with --long_input=mean): the labels are the files', by name, in config.json's id2label, in
    test_predictions.tsv and in the text-classification pipeline's answers, which equal the file's."""
    rng = np.random.default_rng(0)
    moods = {"cheerful": "sun day", "gloomy": "rain night", "calm": "river"}

    def rows(n):
        names = list(moods)
        return [{"text": " ".join(rng.choice(WORDS[:10], 9)) + " " + moods[label], "label": label}
                for label in (names[i % 3] for i in range(n))]

    files = {flag: _write_jsonl(tmp_path / f"{flag}.jsonl", rows(n)) for flag, n in
             (("train_file", 12), ("validation_file", 6), ("test_file", 6))}
    config = tmp_path / "bert_config.json"
    config.write_text(json.dumps(_backbone().config.to_dict()), encoding="utf-8")
    output_dir = tmp_path / "out"
    results = load_run_glue().main([
        *[f"--{flag}={path}" for flag, path in files.items()], f"--vocab_file={tokenizer.vocab_file}",
        f"--bert_config_file={config}", f"--output_dir={output_dir}", "--do_train", "--do_eval", "--do_predict",
        "--max_seq_length=8", "--long_input=mean", "--num_train_epochs=1", "--train_batch_size=4", "--verbose=0"])
    assert results["task_name"] is None and 0.0 <= results["accuracy"] <= 1.0
    saved = json.loads((output_dir / "model" / "config.json").read_text(encoding="utf-8"))
    assert saved["id2label"] == {"0": "calm", "1": "cheerful", "2": "gloomy"} and saved["long_input"] == "mean"
    predictions = [line.split("\t")[1] for line in (output_dir / "test_predictions.tsv").read_text().splitlines()[1:]]
    assert len(predictions) == 6 and set(predictions) <= set(moods)
    classify = pipeline("text-classification", model=str(output_dir / "model"))
    assert classify.settings["long_input"] == "mean" and classify.settings["max_seq_length"] == 8
    texts = [json.loads(line)["text"] for line in open(files["test_file"], encoding="utf-8")]
    assert [answer["label"] for answer in classify(texts)] == predictions


def test_run_glue_without_task_name_or_files_stops_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        load_run_glue().main([f"--output_dir={tmp_path}", "--do_train", "--vocab_file=x", "--bert_config_file=y"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: --train_file is required for the train data of your own data (no --task_name)")
