"""SavedModel export: models built and trained under the current backend are saved with `save_pretrained`
+ `tokenizer.save_pretrained`, exported by recipes/export_savedmodel.py in a TensorFlow process and served by
tests/serve_saved_model.py in a process where keras_bert_impl cannot be imported; the served answers on raw
strings equal the Keras models' own and the recipes':

* every task (backbone, classifier on text pairs, token classifier, span QA): the same embeddings,
  probabilities and label names, word tags with character offsets, best spans;
* a cased classifier: the SavedModel tokenizes without lower-casing, as the Keras model and
  `from_pretrained` do (the probabilities would differ if it lower-cased);
* the token classifier is a CRF tagger: the SavedModel's word tags are `BertTokenClassifier.decode`'s
  Viterbi tags (not argmax);
* a feature-based tagger (`BertFeatureBasedTagger`, BiLSTMs on frozen layers): the word tags of its argmax;
* a SQuAD v2.0 span QA model: the SavedModel's answers and has_answer are those of recipes/run_squad.py's
  predictions.json (the n-best candidate rule, the null-score threshold, the answer text).

All models are exported in one TensorFlow process and served in one more (one module fixture, `served`):
starting TensorFlow and tracing are most of an export's time.
"""

import concurrent.futures
import json
import os
import re
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_bert_impl import pipeline
from keras_bert_impl.config import BertConfig
from keras_bert_impl.data import conll_data, squad_data, squad_features
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.models.feature_based_tagger import BertFeatureBasedTagger
from keras_bert_impl.models.span_qa import BertSpanQA
from keras_bert_impl.models.token_classifier import (
    IGNORE_LABEL_ID,
    BertTokenClassifier,
    decode_tags,
)
from keras_bert_impl.data.squad_postprocessing import (
    compute_predictions,
    predict_raw_results,
    raw_results,
)
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils.errors import UserInputError
from tests.backend_utils import inference, to_numpy
from tests.finetuning_files import REPO, subprocess_env

EXPORT_RECIPE = os.path.join(REPO, "recipes", "export_savedmodel.py")
SQUAD_RECIPE = os.path.join(REPO, "recipes", "run_squad.py")

# Every task: texts, pairs and questions for models on the real uncased vocabulary.
TEXTS = ["John Smith moved to Zürich in 2019!", "A joyless, plodding film.", "ok"]
PAIRS = ["He likes it.", "Nothing here", "Bien sûr"]
QUESTIONS = ["Where did John move?", "What kind of film?", "Who?"]
CONTEXTS = ["John Smith moved to Zürich in 2019 and then to Paris.", "It was a joyless, plodding film.", "no one"]
TAGS = ["O", "B-PER", "I-PER", "B-LOC"]

# Cased classifier: a vocabulary with both cases of its words.
CASED_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "Apple", "apple", "Paris", "paris", "I", "i",
               "like", "is", "red", "green", "in", "the", "The", ".", "!", ",", "##s"]
CASED_TEXTS = ["Apple is red.", "I like apple!", "The apples in Paris", "paris is green, Apple", "i like Paris"]
CASED_LABELS = ["negative", "positive"]

# The CRF tagger (every task's token classifier).
CRF_TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
TAG_TEXTS = ["John Smith moved to Zürich in 2019!", "Marie Curie and Pierre Curie lived in Paris.",
             "ok", "Straße, Müller-Lüdenscheidt: unbelievably uncharacteristically"]

# SQuAD v2.0: contexts that fit in one window of SQUAD_FLAGS' max_seq_length.
SQUAD_PARAGRAPHS = [
    ("John Smith moved to Zürich in 2019 and then to Paris, where he opened a small bakery.",
     [("Where did John Smith move in 2019?", "Zürich"), ("What did he open?", "a small bakery"),
      ("Who is the mayor of Paris?", None), ("When did he move?", "2019")]),
    ("The Rhine flows through Basel, Strasbourg and Cologne before reaching the North Sea.",
     [("Which sea does the Rhine reach?", "North Sea"), ("Which river flows through Basel?", "Rhine"),
      ("How long is the Danube?", None), ("Name a city on the Rhine.", "Basel")]),
    ("Marie Curie won two Nobel Prizes, one in physics (1903) and one in chemistry (1911).",
     [("How many Nobel Prizes did Marie Curie win?", "two"), ("What did she win in 1911?", "one in chemistry"),
      ("Where was Marie Curie born?", None), ("In which year did she win in physics?", "1903")]),
]
SQUAD_FLAGS = {"max_seq_length": 64, "doc_stride": 32, "max_query_length": 16, "n_best_size": 12,
               "max_answer_length": 5}



def _model_inputs(batch):
    return {k: batch[k] for k in ("token_ids", "segment_ids", "padding_mask")}


def _run(args, backend="tensorflow"):
    env = dict(subprocess_env(), KERAS_BACKEND=backend)
    proc = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=900, cwd=REPO,
                          check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc.stdout


def _run_together(*commands):
    """Runs each command ((args, backend): `_run`'s arguments) in a process of its own, all at once; returns their
    outputs in order. Each process mostly starts TensorFlow and traces or loads graphs on one core, so two run in
    the time of one where the other pytest worker leaves a core idle."""
    with concurrent.futures.ThreadPoolExecutor(len(commands)) as pool:
        return list(pool.map(lambda command: _run(*command), commands))


def _serve(jobs):
    """The outputs of tests/serve_saved_model.py's jobs ([export_dir, signature, inputs]), in order, served by one
    process that loads each export directory once."""
    out = _run([os.path.join(REPO, "tests", "serve_saved_model.py"), json.dumps(jobs)])
    results = json.loads([line for line in out.splitlines() if line.startswith("RESULT ")][-1][len("RESULT "):])
    assert len(results) == len(jobs)
    return results


def _tiny_backbone(vocab_size=30522, **kwargs):
    """A 2-layer, H=32 backbone without dropout; the default vocab_size is MiniLM's vocabulary's."""
    return BertBackbone(BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
                                   attention_probs_dropout_prob=0.0), **kwargs)


def _softmax(logits):
    logits = np.asarray(logits, "float64")
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _whitespace_words(texts, batch):
    """Per text, its whitespace-separated words that have tokens in `batch` (segment A): (first token position,
    word start, word end: the end of its last token)."""
    words = []
    for row, text in enumerate(texts):
        spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
        found = {}
        for position in range(batch["token_ids"].shape[1]):
            start, end = (int(v) for v in batch["offsets"][row, position])
            if batch["padding_mask"][row, position] == 0 or (start, end) == (0, 0) or batch["segment_ids"][row, position]:
                continue
            word = next(i for i, (s, e) in enumerate(spans) if s <= start < e)
            found.setdefault(word, [position, spans[word][0], end])[2] = end
        words.append([tuple(found[word]) for word in sorted(found)])
    return words


def _word_mask(texts, batch):
    """1 at the first token of every whitespace-separated word of segment A (run_ner.py's words)."""
    mask = np.zeros_like(batch["token_ids"])
    for row, words in enumerate(_whitespace_words(texts, batch)):
        mask[row, [first for first, _, _ in words]] = 1
    return mask.astype("int32")


def _squad_dataset():
    articles = []
    for p, (context, questions) in enumerate(SQUAD_PARAGRAPHS):
        qas = []
        for q, (question, answer) in enumerate(questions):
            entry = {"id": f"p{p}q{q}", "question": question, "is_impossible": answer is None, "answers": []}
            if answer is not None:
                entry["answers"] = [{"text": answer, "answer_start": context.index(answer)}]
            qas.append(entry)
        articles.append({"title": f"t{p}", "paragraphs": [{"context": context, "qas": qas}]})
    return {"version": "v2.0", "data": articles}


def _null_odds(model, tokenizer, predict_file, flags=SQUAD_FLAGS):
    """{qas_id: null odds} of the Keras model by the recipe's rule, and whether every context fits one window."""
    examples, _ = squad_data.read_squad_examples(predict_file, is_training=False, version_2_with_negative=True)
    features = squad_features.convert_examples_to_features(
        examples, tokenizer, max_seq_length=flags["max_seq_length"], doc_stride=flags["doc_stride"],
        max_query_length=flags["max_query_length"], is_training=False)
    predictions = compute_predictions(
        examples, features, predict_raw_results(model, features), n_best_size=flags["n_best_size"],
        max_answer_length=flags["max_answer_length"], version_2_with_negative=True)
    return predictions.null_odds, len(features) == len(examples)


def _threshold_between(odds):
    """A threshold splitting the null odds in two non-empty groups, far (> 0.01) from every one of them."""
    values = np.sort(np.asarray(list(odds.values())))
    gaps = [(values[i + 1] - values[i], i) for i in range(len(values) - 1)]
    middle = [(gap, i) for gap, i in gaps if len(values) // 4 <= i < len(values) - len(values) // 4]
    gap, i = max(middle or gaps)
    assert gap > 0.02, values
    return float((values[i] + values[i + 1]) / 2)


def _crf_tagger():
    """A CRF tagger on the real vocabulary whose transitions favour the cycle O -> B-PER -> I-PER -> B-LOC ->
    I-LOC -> O, so that its Viterbi tags differ from the argmax of its logits."""
    tagger = BertTokenClassifier(_tiny_backbone(), num_classes=len(CRF_TAGS), dropout=0.0, use_crf=True)
    cycle = np.full((len(CRF_TAGS), len(CRF_TAGS)), -1.0, "float32")
    cycle[np.arange(len(CRF_TAGS)), (np.arange(len(CRF_TAGS)) + 1) % len(CRF_TAGS)] = 1.0
    tagger.crf.transitions.assign(cycle)
    rng = np.random.default_rng(5)
    tagger.classifier.kernel.assign(rng.normal(0.0, 0.3, tagger.classifier.kernel.shape).astype("float32"))
    return tagger


def _every_task_models(root, tokenizer):
    """Five tiny models on the real vocabulary (the classifier trained a step under this backend), saved;
    returns them, their export arguments and their serving jobs."""
    batch = tokenizer(TEXTS, PAIRS, max_length=32)
    models = {
        "backbone": _tiny_backbone(),
        "classifier": BertClassifier(_tiny_backbone(), num_classes=3, dropout=0.0),
        "token_classifier": _crf_tagger(),
        "span_qa": BertSpanQA(_tiny_backbone()),
        "feature_based_tagger": BertFeatureBasedTagger(_tiny_backbone(output_hidden_states=True), num_classes=len(TAGS),
                                                       feature_mode="sum_all", lstm_units=8, num_lstm_layers=1),
    }
    classifier = models["classifier"]
    classifier.compile(optimizer=keras.optimizers.SGD(0.1),
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    classifier.fit(batch, np.array([0, 1, 2]), epochs=1, verbose=0)  # trained under this backend
    # The feature-based tagger: head weights (its trainable ones) large enough that the words get different tags,
    # and a classifier bias that centres each tag's logits over the tokens of TEXTS.
    feature_tagger = models["feature_based_tagger"]
    rng = np.random.default_rng(3)
    for variable in feature_tagger.trainable_weights:
        variable.assign(rng.normal(0.0, 1.0, tuple(variable.shape)).astype("float32"))
    feature_tagger.classifier.bias.assign(np.zeros((len(TAGS),), "float32"))
    texts = tokenizer(TEXTS, max_length=32)
    logits = inference(feature_tagger, _model_inputs(texts))  # [B, T, tags]
    feature_tagger.classifier.bias.assign(-logits[texts["padding_mask"] > 0].mean(0).astype("float32"))
    for name, model in models.items():
        directory = str(root / name)
        if name == "classifier":
            model.save_pretrained(directory, label_names=["negative", "neutral", "positive"])
        elif name == "token_classifier":
            model.save_pretrained(directory, label_names=CRF_TAGS)
            config = json.loads((root / name / "config.json").read_text(encoding="utf-8"))
            config["max_seq_length"] = 32  # as the recipes write it; the export reads it when not given
            (root / name / "config.json").write_text(json.dumps(config), encoding="utf-8")
        elif name == "feature_based_tagger":
            model.save_pretrained(directory, label_names=TAGS)
        elif name == "span_qa":  # the windows' settings, as run_squad.py writes them
            model.save_pretrained(directory, settings={"squad": {"doc_stride": 16, "max_query_length": 16}})
        else:
            model.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
    exports = [[f"--model_dir={root / name}", f"--export_dir={root / 'saved' / name}"]
               + ([] if name == "token_classifier" else ["--max_seq_length=32"]) for name in models]
    exports[list(models).index("classifier")].append("--text_pair")
    exports[list(models).index("span_qa")].append("--null_score_diff_threshold=0.5")
    jobs = [
        [str(root / "saved" / "backbone"), "serving_default", {"text": TEXTS}],
        [str(root / "saved" / "classifier"), "serving_default", {"text": TEXTS, "text_pair": PAIRS}],
        [str(root / "saved" / "token_classifier"), "serving_default", {"text": TEXTS}],
        [str(root / "saved" / "span_qa"), "serving_default", {"question": QUESTIONS, "context": CONTEXTS}],
        [str(root / "saved" / "feature_based_tagger"), "serving_default", {"text": TEXTS}],
        [str(root / "saved" / "classifier"), "serving_token_ids",
         {k: batch[k].tolist() for k in ("token_ids", "segment_ids", "padding_mask")}],
    ]
    return models, exports, jobs


# The shipped data sets and a few SWAG examples, each answered by a tiny model (its head large, so that its
# answers spread) through the recipe's prediction file, the pipeline and the SavedModel.
SHIPPED = os.path.join(REPO, "data")
SENTIMENT_LABELS = ["negative", "positive"]
# The sentiment classifier reads a sentence longer than 12 tokens by its windows, their logits averaged (as
# run_glue.py --long_input=mean fine-tunes it).
SENTIMENT_WINDOWS = {"max_seq_length": 12, "long_input": "mean"}
NER_LABELS = ["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER"]
# Windows of the NER recipe: the longer test sentences become two (the SavedModel reads the first only).
NER_MAX_SEQ_LENGTH = 16
# Windows of the SQuAD recipe: every context of data/qa/dev.json becomes several (the question cut to 16 tokens).
SHIPPED_QA = {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 16, "n_best_size": 10,
              "max_answer_length": 8}
# The sentences of data/sentiment/test.tsv and the paragraphs of data/qa/dev.json the test reads (the first ones).
SHIPPED_SENTENCES = 48
SHIPPED_PARAGRAPHS = 6
SWAG_EXAMPLES = [
    ("She opens the fridge.", "She", ["takes out the milk.", "swims to the shore.", "sings to the moon.",
                                      "closes her laptop."]),
    ("A man is standing on a ladder.", "He", ["paints the wall.", "falls asleep on a cloud.", "eats the ladder.",
                                             "reads a newspaper."]),
    ("The kids run to the beach.", "They", ["build a sandcastle.", "fly to Paris.", "write an essay.",
                                           "jump into the waves."]),
]


def _lines(path):
    return open(path, encoding="utf-8").read().splitlines()


def _spread(variable, rng, scale=1.0):
    variable.assign(rng.normal(0.0, scale, tuple(variable.shape)).astype("float32"))


def _save(model, directory, tokenizer, **kwargs):
    model.save_pretrained(str(directory), **kwargs)
    tokenizer.save_pretrained(str(directory))
    return str(directory)


def _shipped_models(root, tokenizer, rng):
    """The shipped data's tiny models, saved as the recipes save theirs; their recipe runs under this backend
    (in this process); returns {name: directory}, the exports' flags and the serving jobs."""
    from keras_bert_impl.models.multiple_choice import BertMultipleChoice
    from keras_bert_impl.runners.finetuning import run_finetuning
    from keras_bert_impl.tasks.glue import GlueConfig, GlueTask
    from keras_bert_impl.tasks.ner import NerConfig, NerTask
    from keras_bert_impl.tasks.squad import SquadConfig, SquadTask
    from keras_bert_impl.tasks.swag import SwagConfig, SwagTask

    vocab_size = tokenizer.vocab_size
    classifier = BertClassifier(_tiny_backbone(vocab_size), num_classes=2, dropout=0.0)
    _spread(classifier.output_dense.kernel, rng)
    tagger = BertTokenClassifier(_tiny_backbone(vocab_size), num_classes=len(NER_LABELS), dropout=0.0, use_crf=True)
    _spread(tagger.classifier.kernel, rng)
    _spread(tagger.crf.transitions, rng)
    qa = BertSpanQA(_tiny_backbone(vocab_size))
    _spread(qa.qa_outputs.kernel, rng)
    choices = BertMultipleChoice(_tiny_backbone(vocab_size), num_choices=4, dropout=0.0)
    _spread(choices.output_dense.kernel, rng, scale=3.0)
    # Parts of the shipped files (their first lines, paragraphs), as files of the same format.
    os.makedirs(root)
    sentiment_file = root / "sentiment_test.tsv"
    sentiment_file.write_text("\n".join(_lines(os.path.join(SHIPPED, "sentiment", "test.tsv"))[: 1 + SHIPPED_SENTENCES])
                              + "\n", encoding="utf-8")
    qa_data = json.load(open(os.path.join(SHIPPED, "qa", "dev.json"), encoding="utf-8"))
    qa_data["data"][0]["paragraphs"] = qa_data["data"][0]["paragraphs"][:SHIPPED_PARAGRAPHS]
    qa_file = str(root / "qa_dev.json")
    (root / "qa_dev.json").write_text(json.dumps(qa_data), encoding="utf-8")
    texts = [line.split("\t", 1)[1] for line in _lines(sentiment_file)[1:]]
    # The classifier's bias centres its pooled logits' differences: half the sentences are "negative", half
    # "positive".
    logits = pipeline("text-classification", model=classifier, tokenizer=tokenizer, function_to_apply="none",
                      **SENTIMENT_WINDOWS)(texts, top_k=None)
    difference = [{a["label"]: a["score"] for a in answer}["LABEL_1"] - {a["label"]: a["score"] for a in answer}[
        "LABEL_0"] for answer in logits]
    classifier.output_dense.bias.assign(np.array([0.0, -float(np.median(difference))], "float32"))
    threshold = _threshold_between(_null_odds(qa, tokenizer, qa_file, SHIPPED_QA)[0])
    squad = dict(SHIPPED_QA, version_2_with_negative=True, null_score_diff_threshold=threshold)
    directories = {
        "sentiment": _save(classifier, root / "sentiment", tokenizer, label_names=SENTIMENT_LABELS,
                           settings=SENTIMENT_WINDOWS),
        "ner": _save(tagger, root / "ner", tokenizer, label_names=NER_LABELS,
                     settings={"max_seq_length": NER_MAX_SEQ_LENGTH}),
        "qa": _save(qa, root / "squad", tokenizer, settings={"max_seq_length": SHIPPED_QA["max_seq_length"],
                                                            "squad": {k: v for k, v in squad.items()
                                                                      if k != "max_seq_length"}}),
        "swag": _save(choices, root / "swag", tokenizer, settings={"max_seq_length": 32, "num_choices": 4}),
    }
    (root / "ner" / "label_list.json").write_text(json.dumps({"labels": NER_LABELS, "tagging_scheme": "iob1"}))
    swag_file = root / "swag_test.jsonl"
    swag_file.write_text("".join(json.dumps({"sent1": c, "sent2": s, **{f"ending{i}": e for i, e in enumerate(es)}})
                                 + "\n" for c, s, es in SWAG_EXAMPLES), encoding="utf-8")

    common = {"do_predict": True, "verbose": 0, "predict_batch_size": 16, "eval_batch_size": 16}
    run_finetuning(GlueTask(GlueConfig(init_checkpoint=directories["sentiment"], output_dir=str(root / "sentiment_out"),
                                       test_file=str(sentiment_file), **SENTIMENT_WINDOWS,
                                       **common)))
    run_finetuning(NerTask(NerConfig(init_checkpoint=directories["ner"], output_dir=str(root / "ner_out"),
                                     data_dir=os.path.join(SHIPPED, "ner"), max_seq_length=NER_MAX_SEQ_LENGTH,
                                     **common)))
    run_finetuning(SquadTask(SquadConfig(init_checkpoint=directories["qa"], output_dir=str(root / "squad_out"),
                                         predict_file=qa_file, **squad, **common)))
    run_finetuning(SwagTask(SwagConfig(init_checkpoint=directories["swag"], output_dir=str(root / "swag_out"),
                                       test_file=str(swag_file), max_seq_length=32, **common)))

    exports = [[f"--model_dir={directory}", f"--export_dir={root / 'saved' / name}"]  # settings: config.json's
               for name, directory in directories.items()]
    sentences = [" ".join(s.words) for s in conll_data.read_ner_file(os.path.join(SHIPPED, "ner", "test.txt"))]
    paragraphs = [p for article in qa_data["data"] for p in article["paragraphs"]]
    questions = [dict(q, context=paragraph["context"]) for paragraph in paragraphs for q in paragraph["qas"]]
    inputs = {
        "sentiment": {"text": texts},
        "ner": {"text": sentences},
        "qa": {"question": [q["question"] for q in questions], "context": [q["context"] for q in questions]},
        "swag": {"context": [c for c, _, _ in SWAG_EXAMPLES], "endings": [[f"{s} {e}" for e in es]
                                                                         for _, s, es in SWAG_EXAMPLES]},
    }
    jobs = [[str(root / "saved" / name), "serving_default", inputs[name]] for name in directories]
    return {"directories": directories, "inputs": inputs, "qa_ids": [q["id"] for q in questions],
            "root": root}, exports, jobs


@pytest.fixture(scope="module")
def served(minilm_path, tmp_path_factory):
    """Builds every model under this backend and saves it, exports all in one TensorFlow process, runs
    run_squad.py on the SQuAD model's directory, serves all in one process."""
    root = tmp_path_factory.mktemp("serving")
    uncased = BertTokenizer.from_pretrained(minilm_path)
    keras.utils.set_random_seed(3)  # a module fixture: built before the tests' own seeds are set
    models, exports, jobs = _every_task_models(root / "every_task", uncased)
    keras.utils.set_random_seed(7)
    rng = np.random.default_rng(7)
    # The seed's first 160 normal draws are skipped: from the next ones on, the SQuAD model's null odds split
    # with a clear gap (_threshold_between) and the shipped models' answers spread.
    rng.standard_normal(160)

    # a. A cased classifier, fine-tuned a few steps.
    vocab_file = root / "cased_vocab.txt"
    vocab_file.write_text("".join(t + "\n" for t in CASED_VOCAB), encoding="utf-8")
    cased = BertTokenizer(str(vocab_file), do_lower_case=False)
    classifier = BertClassifier(_tiny_backbone(len(CASED_VOCAB)), num_classes=2, dropout=0.0)
    classifier.compile(optimizer=keras.optimizers.Adam(1e-2),
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    classifier.fit(cased(CASED_TEXTS, max_length=16), np.array([1, 0, 1, 0, 1]), epochs=4, batch_size=5, verbose=0)
    classifier.save_pretrained(str(root / "classifier"), label_names=CASED_LABELS)
    cased.save_pretrained(str(root / "classifier"))

    # c. A SQuAD v2.0 span QA model with a large head, so that its logits spread; the threshold splits the
    # questions' null odds so that some are answered and some are not.
    qa = BertSpanQA(_tiny_backbone(uncased.vocab_size))
    qa.qa_outputs.kernel.assign(rng.normal(0.0, 1.0, qa.qa_outputs.kernel.shape).astype("float32"))
    predict_file = root / "dev-v2.0.json"
    predict_file.write_text(json.dumps(_squad_dataset()), encoding="utf-8")
    odds, one_window = _null_odds(qa, uncased, str(predict_file))
    threshold = _threshold_between(odds)
    qa.save_pretrained(str(root / "qa"), settings={"squad": {key: SQUAD_FLAGS[key] for key in ("doc_stride",
                                                                                               "max_query_length")}})
    uncased.save_pretrained(str(root / "qa"))

    # d. The shipped data's models; their recipes run here.
    shipped, shipped_exports, shipped_jobs = _shipped_models(root / "shipped", uncased, rng)

    exports += shipped_exports + [
        [f"--model_dir={root / 'classifier'}", f"--export_dir={root / 'saved' / 'classifier'}", "--max_seq_length=16"],
        [f"--model_dir={root / 'qa'}", f"--export_dir={root / 'saved' / 'qa'}",
         f"--max_seq_length={SQUAD_FLAGS['max_seq_length']}", f"--null_score_diff_threshold={threshold}",
         f"--n_best_size={SQUAD_FLAGS['n_best_size']}", f"--max_answer_length={SQUAD_FLAGS['max_answer_length']}"],
    ]
    # Every export through the recipe's main(), in one TensorFlow process (a second would start TensorFlow and
    # build the tokenizer's tables again: CPU time, on a CI machine whose other core runs other tests);
    # beside it, the recipe's SQuAD predictions, under this backend, from the saved directory.
    script = ("import importlib.util, json, sys\n"
              f"spec = importlib.util.spec_from_file_location('export_recipe', {EXPORT_RECIPE!r})\n"
              "recipe = importlib.util.module_from_spec(spec); spec.loader.exec_module(recipe)\n"
              "for argv in json.loads(sys.argv[1]): recipe.main(argv)")
    _run_together(
        (["-c", script, json.dumps(exports)], "tensorflow"),
        ([SQUAD_RECIPE, "--do_predict", f"--predict_file={predict_file}", f"--init_checkpoint={root / 'qa'}",
          f"--output_dir={root / 'squad_out'}", "--version_2_with_negative",
          f"--null_score_diff_threshold={threshold}", "--predict_batch_size=4", "--verbose=0",
          *[f"--{name}={value}" for name, value in SQUAD_FLAGS.items()]], keras.backend.backend()),
    )
    recipe = {name: json.loads((root / "squad_out" / f"{name}.json").read_text(encoding="utf-8"))
              for name in ("predictions", "null_odds", "nbest_predictions")}

    questions = [(f"p{p}q{q}", question, context) for p, (context, qs) in enumerate(SQUAD_PARAGRAPHS)
                 for q, (question, _) in enumerate(qs)]
    jobs += [
        [str(root / "saved" / "classifier"), "serving_default", {"text": CASED_TEXTS}],
        [str(root / "every_task" / "saved" / "token_classifier"), "serving_default", {"text": TAG_TEXTS}],
        [str(root / "saved" / "qa"), "serving_default",
         {"question": [q for _, q, _ in questions], "context": [c for _, _, c in questions]}],
    ]
    names = ["backbone", "classifier", "token_classifier", "span_qa", "feature_based_tagger", "token_ids",  # every task
             "cased_classifier", "tagger", "qa"]
    # Each raw-string signature once more, on an empty batch.
    names += [f"empty {name}" for name, (_, signature, _) in zip(names, jobs) if signature == "serving_default"]
    jobs += [[export_dir, signature, {name: [] for name in inputs}]
             for export_dir, signature, inputs in jobs if signature == "serving_default"]
    # Each signature of two or more inputs once more, its last input one row short.
    paired = [(name, job) for name, job in zip(names, jobs) if len(job[2]) > 1 and not name.startswith("empty ")]
    names += [f"short {name}" for name, _ in paired]
    jobs += [[export_dir, signature, {**inputs, list(inputs)[-1]: inputs[list(inputs)[-1]][:-1]}]
             for _, (export_dir, signature, inputs) in paired]
    jobs += shipped_jobs
    names += [f"shipped {name}" for name in shipped["directories"]]
    results = _serve(jobs)
    return {
        "models": models, "root": root, "classifier": classifier, "cased": cased, "tagger": models["token_classifier"],
        "uncased": uncased, "qa_ids": [qas_id for qas_id, _, _ in questions], "threshold": threshold,
        "one_window": one_window, "recipe": recipe, "served": dict(zip(names, results)), "shipped": shipped,
    }


@pytest.mark.tensorflow
def test_backbone_export_serves_the_same_embeddings(served):
    models, tokenizer, served = served["models"], served["uncased"], served["served"]
    batch = tokenizer(TEXTS, max_length=32)
    outputs = inference(models["backbone"], batch)
    np.testing.assert_allclose(served["backbone"]["pooled_output"], to_numpy(outputs["pooled_output"]), atol=1e-5)
    real = batch["padding_mask"].astype(bool)
    np.testing.assert_allclose(np.array(served["backbone"]["sequence_output"])[real],
                               to_numpy(outputs["sequence_output"])[real], atol=1e-5)


@pytest.mark.tensorflow
def test_the_savedmodel_holds_each_weight_of_the_model_once(served):
    import tensorflow as tf

    reader = tf.train.load_checkpoint(str(served["root"] / "every_task" / "saved" / "classifier" / "variables"
                                          / "variables"))
    dtypes = reader.get_variable_to_dtype_map()
    stored = sum(int(np.prod(shape)) for name, shape in reader.get_variable_to_shape_map().items()
                 if dtypes[name].is_floating)
    assert stored == served["models"]["classifier"].count_params()


@pytest.mark.tensorflow
def test_classifier_export_serves_the_same_probabilities_and_label_names(served):
    models, tokenizer, served = served["models"], served["uncased"], served["served"]
    batch = tokenizer(TEXTS, PAIRS, max_length=32)
    logits = inference(models["classifier"], batch).astype("float64")
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    np.testing.assert_allclose(served["classifier"]["probabilities"], probabilities, atol=1e-5)
    names = ["negative", "neutral", "positive"]
    assert served["classifier"]["label"] == [names[i] for i in probabilities.argmax(-1)]
    np.testing.assert_allclose(served["token_ids"]["logits"], logits, atol=1e-5)


@pytest.mark.tensorflow
@pytest.mark.parametrize("name", ["token_classifier", "feature_based_tagger"])
def test_token_classifier_export_serves_word_tags_with_character_offsets(served, name):
    """A word is a whitespace-separated word (run_ner.py's), tagged at its first token; its span runs from its
    start to its last token's end."""
    models, tokenizer, served = served["models"], served["uncased"], served["served"]
    batch = tokenizer(TEXTS, max_length=32, return_offsets=True)
    logits = inference(models[name], _model_inputs(batch))
    # The CRF tagger's tags are its Viterbi path (test_crf_tagger_saved_model_tags_equal_keras_viterbi_decode).
    tag_ids = models[name].decode(logits, _word_mask(TEXTS, batch)) if name == "token_classifier" else logits.argmax(-1)
    labels = CRF_TAGS if name == "token_classifier" else TAGS
    for row, (text, words) in enumerate(zip(TEXTS, _whitespace_words(TEXTS, batch))):
        n = len(words)
        assert served[name]["words"][row][:n] == [text[start:end] for _, start, end in words]
        assert served[name]["tags"][row][:n] == [labels[tag_ids[row, first]] for first, _, _ in words]
        assert served[name]["word_start"][row][:n] == [start for _, start, _ in words]
        assert served[name]["word_end"][row][:n] == [end for _, _, end in words]
        assert set(served[name]["words"][row][n:]) <= {""}
    assert served[name]["words"][0] == ["John", "Smith", "moved", "to", "Zürich", "in", "2019!"]
    assert len(set(tag for row in served[name]["tags"] for tag in row) - {""}) > 1  # not one tag everywhere


def _top(logits, real, n):
    """The n best real positions (ties to the lower index), as run_squad.py's `_get_best_indexes`."""
    positions = np.flatnonzero(real)
    return set(positions[np.argsort(-logits[positions], kind="stable")[:n]].tolist())


@pytest.mark.tensorflow
def test_span_qa_export_serves_the_best_span_of_the_keras_logits(served):
    """The best of the 20 best starts x 20 best ends (the export's default n_best_size, the recipe's)."""
    models, tokenizer, served = served["models"], served["uncased"], served["served"]
    batch = tokenizer(QUESTIONS, CONTEXTS, max_length=32, return_offsets=True)
    outputs = inference(models["span_qa"], _model_inputs(batch))
    start_logits, end_logits = to_numpy(outputs["start_logits"]), to_numpy(outputs["end_logits"])
    for row, context in enumerate(CONTEXTS):
        allowed = (batch["segment_ids"][row] == 1) & (batch["padding_mask"][row] == 1) & (batch["offsets"][row].sum(-1) > 0)
        best, best_score = None, -np.inf
        real = batch["padding_mask"][row] == 1
        starts, ends = _top(start_logits[row], real, 20), _top(end_logits[row], real, 20)
        for i in np.flatnonzero(allowed):
            for j in np.flatnonzero(allowed):
                if i in starts and j in ends and i <= j < i + 30 and start_logits[row, i] + end_logits[row, j] > best_score:
                    best, best_score = (i, j), start_logits[row, i] + end_logits[row, j]
        null_score = start_logits[row, 0] + end_logits[row, 0]
        np.testing.assert_allclose(served["span_qa"]["score"][row], best_score, atol=1e-5)
        np.testing.assert_allclose(served["span_qa"]["null_score"][row], null_score, atol=1e-5)
        if null_score - best_score > 0.5:
            assert served["span_qa"]["answer"][row] == "" and served["span_qa"]["answer_start"][row] == -1
        else:
            start, end = batch["offsets"][row, best[0], 0], batch["offsets"][row, best[1], 1]
            assert served["span_qa"]["answer"][row] == context[start:end]
            assert (served["span_qa"]["answer_start"][row], served["span_qa"]["answer_end"][row]) == (start, end)


@pytest.mark.tensorflow
def test_cased_classifier_saved_model_equals_keras_and_from_pretrained(served):
    root, cased = served["root"], served["cased"]
    batch = cased(CASED_TEXTS, max_length=16)
    lowered = BertTokenizer(cased.vocab_file, do_lower_case=True)(CASED_TEXTS, max_length=16)
    assert not np.array_equal(batch["token_ids"], lowered["token_ids"])  # casing changes the inputs
    probabilities = _softmax(inference(served["classifier"], batch))
    lowered_probabilities = _softmax(inference(served["classifier"], lowered))
    assert np.abs(probabilities - lowered_probabilities).max() > 1e-3  # ... and the answers

    reloaded_tokenizer = BertTokenizer.from_pretrained(str(root / "classifier"))
    assert reloaded_tokenizer.do_lower_case is False
    reloaded = BertClassifier.from_pretrained(str(root / "classifier"), num_classes=2)
    np.testing.assert_allclose(_softmax(inference(reloaded, reloaded_tokenizer(CASED_TEXTS, max_length=16))),
                               probabilities, atol=1e-5)

    saved = served["served"]["cased_classifier"]
    np.testing.assert_allclose(saved["probabilities"], probabilities, atol=1e-5)
    assert saved["label"] == [CASED_LABELS[i] for i in probabilities.argmax(-1)]
    config = json.loads((root / "saved" / "classifier" / "export_config.json").read_text(encoding="utf-8"))
    assert (config["task"], config["do_lower_case"], config["labels"]) == ("classifier", False, CASED_LABELS)


@pytest.mark.tensorflow
def test_crf_tagger_saved_model_tags_equal_keras_viterbi_decode(served):
    tagger, tokenizer = served["tagger"], served["uncased"]
    batch = tokenizer(TAG_TEXTS, max_length=32, return_offsets=True)
    logits = inference(tagger, _model_inputs(batch))
    word_mask = _word_mask(TAG_TEXTS, batch)
    tags = tagger.decode(logits, word_mask)
    argmax = np.where(word_mask > 0, logits.argmax(-1), IGNORE_LABEL_ID)
    assert (tags != argmax).any()  # the transitions change the path: argmax serving would fail
    saved = served["served"]["tagger"]
    for row in range(len(TAG_TEXTS)):
        expected = [CRF_TAGS[t] for t in tags[row][word_mask[row] > 0]]
        assert saved["tags"][row][: len(expected)] == expected
        assert set(saved["tags"][row][len(expected):]) <= {""}
    config = json.loads((served["root"] / "every_task" / "saved" / "token_classifier" / "export_config.json").read_text(
        encoding="utf-8"))
    assert config["use_crf"] is True and config["max_seq_length"] == 32


@pytest.mark.tensorflow
def test_squad_v2_saved_model_answers_equal_run_squad_predictions(served):
    assert served["one_window"]
    recipe, saved, ids = served["recipe"], served["served"]["qa"], served["qa_ids"]
    answers = [recipe["predictions"][qas_id] for qas_id in ids]
    assert "" in answers and any(answers)  # both kinds occur
    assert not any(e["text"] == "empty" for qas_id in ids for e in recipe["nbest_predictions"][qas_id])
    assert saved["answer"] == answers
    assert saved["has_answer"] == [bool(a) for a in answers]
    np.testing.assert_allclose(np.array(saved["null_score"]) - np.array(saved["score"]),
                               [recipe["null_odds"][qas_id] for qas_id in ids], atol=1e-4)
    config = json.loads((served["root"] / "saved" / "qa" / "export_config.json").read_text(encoding="utf-8"))
    assert config["squad"] == {"version_2_with_negative": True, "null_score_diff_threshold": served["threshold"],
                               "max_answer_length": SQUAD_FLAGS["max_answer_length"],
                               "n_best_size": SQUAD_FLAGS["n_best_size"], "doc_stride": SQUAD_FLAGS["doc_stride"],
                               "max_query_length": SQUAD_FLAGS["max_query_length"]}


def test_decode_tags_in_keras_ops_equals_numpy_viterbi_decode():
    tagger = BertTokenClassifier(_tiny_backbone(64), num_classes=4, dropout=0.0, use_crf=True)
    rng = np.random.default_rng(0)
    logits = rng.normal(0.0, 1.0, (6, 9, 4)).astype("float32")
    label_mask = (rng.random((6, 9)) < 0.6).astype("int32")
    label_mask[0] = 0  # a sequence without words
    label_mask[1] = 1
    tagger.crf.transitions.assign(rng.normal(0.0, 3.0, (4, 4)).astype("float32"))
    expected = tagger.decode(logits, label_mask)
    got = to_numpy(decode_tags(logits, label_mask, tagger.crf.transitions))
    np.testing.assert_array_equal(got, expected)
    assert (expected != np.where(label_mask > 0, logits.argmax(-1), IGNORE_LABEL_ID)).any()
    np.testing.assert_array_equal(to_numpy(decode_tags(logits, label_mask)),
                                  np.where(label_mask > 0, logits.argmax(-1), IGNORE_LABEL_ID))


def test_token_classifier_from_pretrained_keeps_the_checkpoints_crf(tmp_path):
    tagger = BertTokenClassifier(_tiny_backbone(64), num_classes=3, dropout=0.0, use_crf=True)
    tagger.crf.transitions.assign(np.arange(9, dtype="float32").reshape(3, 3))
    tagger.save_pretrained(str(tmp_path), label_names=["O", "B", "I"])
    assert json.loads((tmp_path / "config.json").read_text(encoding="utf-8"))["use_crf"] is True
    reloaded = BertTokenClassifier.from_pretrained(str(tmp_path))
    assert reloaded.use_crf
    np.testing.assert_array_equal(to_numpy(reloaded.crf.transitions), np.arange(9).reshape(3, 3))
    with pytest.raises(ValueError, match="classifier.crf_transitions"):
        BertTokenClassifier.from_pretrained(str(tmp_path), use_crf=False)
    plain = BertTokenClassifier(_tiny_backbone(64), num_classes=3, dropout=0.0)
    plain.save_pretrained(str(tmp_path / "plain"))
    assert not BertTokenClassifier.from_pretrained(str(tmp_path / "plain")).use_crf


def _copy_without(source, target, missing=(), edit_config=None):
    os.makedirs(target)
    for name in os.listdir(source):
        if name not in missing and os.path.isfile(os.path.join(source, name)):
            with open(os.path.join(source, name), "rb") as f:
                data = f.read()
            if name == "config.json" and edit_config:
                config = json.loads(data)
                edit_config(config)
                data = json.dumps(config).encode()
            with open(os.path.join(target, name), "wb") as f:
                f.write(data)
    return str(target)


@pytest.mark.tensorflow
def test_export_refuses_a_directory_without_casing_vocab_or_labels(served):
    from keras_bert_impl.export.tf_saved_model import read_export_settings

    root = served["root"]
    source = str(root / "classifier")
    no_casing = _copy_without(source, root / "no_casing", missing=("tokenizer_config.json",))
    cases = {
        no_casing: os.path.join(no_casing, "tokenizer_config.json"),
        _copy_without(source, root / "no_vocab", missing=("vocab.txt",)): os.path.join(root, "no_vocab", "vocab.txt"),
        _copy_without(source, root / "no_labels", edit_config=lambda c: (c.pop("id2label"), c.pop("label2id"))):
            os.path.join(root, "no_labels", "config.json"),
        _copy_without(source, root / "no_architecture", edit_config=lambda c: c.pop("architectures")):
            os.path.join(root, "no_architecture", "config.json"),
    }
    for directory, path in cases.items():
        with pytest.raises(ValueError) as error:
            read_export_settings(directory)
        assert str(error.value).startswith(path) and "\n" not in str(error.value)
    with open(os.path.join(source, "tokenizer_config.json"), encoding="utf-8") as f:
        assert json.load(f)["do_lower_case"] is False
    # Given explicitly, the casing need not be in the directory.
    assert read_export_settings(no_casing, do_lower_case=False)["do_lower_case"] is False
    # The recipe answers a refused directory with that one line and a failure exit status.
    proc = subprocess.run([sys.executable, EXPORT_RECIPE, f"--model_dir={no_casing}",
                           f"--export_dir={root / 'refused'}"], env=subprocess_env(), capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 2 and not os.path.exists(root / "refused")
    assert proc.stderr.strip().splitlines()[-1].startswith("error: " + os.path.join(no_casing, "tokenizer_config.json"))


# Exports into a directory of other files: refused (exit status and one stderr line printed), then --overwrite.
_FOREIGN_EXPORTS = """
import contextlib, importlib.util, io, json, sys
spec = importlib.util.spec_from_file_location("export_recipe", sys.argv[1])
recipe = importlib.util.module_from_spec(spec); spec.loader.exec_module(recipe)
stderr = io.StringIO()
try:
    with contextlib.redirect_stderr(stderr):
        recipe.main(json.loads(sys.argv[2]))
except SystemExit as exit:
    print("REFUSED", json.dumps([exit.code, stderr.getvalue()]))
recipe.main(json.loads(sys.argv[2]) + ["--overwrite"])
"""


@pytest.mark.tensorflow
def test_an_export_into_a_directory_of_other_files_is_refused_and_leaves_them_intact(served):
    root = served["root"]
    foreign = root / "foreign_export"
    (foreign / "variables").mkdir(parents=True)
    (foreign / "README.md").write_text("my notes", encoding="utf-8")
    (foreign / "saved_model.pb").write_bytes(b"another SavedModel")
    argv = [f"--model_dir={root / 'classifier'}", f"--export_dir={foreign}", "--max_seq_length=16"]
    out = _run(["-c", _FOREIGN_EXPORTS, EXPORT_RECIPE, json.dumps(argv)])
    code, stderr = json.loads(next(line for line in out.splitlines() if line.startswith("REFUSED "))[len("REFUSED "):])
    assert code == 2 and stderr.strip() == (
        f"error: --export_dir: {foreign} holds files that are not an export of this package (no export_config.json; "
        "README.md, saved_model.pb, variables): an export would replace them; pass --overwrite to replace them, or "
        "choose another --export_dir")
    # --overwrite replaced them with the export; an earlier export of ours is replaced without it (the fixture
    # exported two classifiers into saved/classifier).
    assert sorted(os.listdir(foreign)) == sorted(os.listdir(root / "saved" / "classifier"))
    assert "README.md" not in os.listdir(foreign) and "export_config.json" in os.listdir(foreign)
    assert not [name for name in os.listdir(root) if name.startswith(".tmp-")]
    from keras_bert_impl.export.tf_saved_model import check_export_dir

    check_export_dir(str(root / "saved" / "classifier"))  # ours: may be replaced
    with pytest.raises(UserInputError, match=r"is a file: an export would replace it"):
        check_export_dir(str(root / "cased_vocab.txt"))


@pytest.mark.tensorflow
def test_serve_qa_candidate_rule_equals_compute_predictions_on_random_logits(minilm_path):
    """The in-graph rule (top-n starts x top-n ends, context only, start <= end, length, null threshold) on
    random logits gives the recipe's answer span and null odds."""
    import tensorflow as tf

    from keras_bert_impl.export.tf_saved_model import best_span

    tokenizer = BertTokenizer.from_pretrained(minilm_path)
    context, questions = SQUAD_PARAGRAPHS[0]
    examples = [squad_data.SquadExample(qas_id=str(i), question_text=questions[i % len(questions)][0],
                                        doc_tokens=context.split(" ")) for i in range(40)]
    features = squad_features.convert_examples_to_features(examples, tokenizer, max_seq_length=64, doc_stride=32,
                                                       max_query_length=16, is_training=False)
    assert len(features) == len(examples)
    rng = np.random.default_rng(3)
    n_best, max_length, threshold = 5, 4, 0.5
    logits = [rng.normal(0.0, 2.0, (2, 1, len(feature.tokens))).astype("float32") for feature in features]
    results = [raw_results([feature], start, end)[0] for feature, (start, end) in zip(features, logits)]
    predictions = compute_predictions(examples, features, results, n_best_size=n_best, max_answer_length=max_length,
                                      version_2_with_negative=True, null_score_diff_threshold=threshold)
    restricted_differs = compared = 0
    for feature, example, (start_logits, end_logits) in zip(features, examples, logits):
        length = len(feature.tokens)
        nbest = predictions.nbest[example.qas_id]
        allowed = np.zeros((1, length), bool)
        allowed[0, list(feature.token_to_orig_map)] = True
        spans = [best_span(tf.constant(start_logits), tf.constant(end_logits), tf.constant(allowed), max_length,
                           n, tf.ones((1, length), tf.bool)) for n in (n_best, None)]
        start, end, score = (int(v[0]) if i < 2 else float(v[0]) for i, v in enumerate(spans[0]))
        restricted_differs += int(spans[1][0][0]) != start or int(spans[1][1][0]) != end
        if any(entry["text"] == "empty" for entry in nbest):  # no valid candidate: documented difference
            assert score < -1e8
            continue
        best = next(entry for entry in nbest if entry["text"])
        assert (best["start_logit"], best["end_logit"]) == (float(start_logits[0, start]), float(end_logits[0, end]))
        null_score = float(start_logits[0, 0] + end_logits[0, 0])
        np.testing.assert_allclose(null_score - score, predictions.null_odds[example.qas_id], atol=1e-5)
        assert (predictions.predictions[example.qas_id] == "") == (null_score - score > threshold)
        compared += 1
    assert compared >= 30 and restricted_differs > 0  # the n-best restriction matters on these logits


@pytest.mark.tensorflow
def test_squad_settings_take_arguments_then_config_then_run_squad_defaults():
    from keras_bert_impl.export.tf_saved_model import squad_settings

    stored = {"squad": {"version_2_with_negative": True, "null_score_diff_threshold": -1.5,
                        "max_answer_length": 12, "n_best_size": 7, "doc_stride": 48}}
    windows = {"doc_stride": 48, "max_query_length": 64}  # doc_stride stored, max_query_length run_squad.py's
    assert squad_settings(stored) == {"null_score_diff_threshold": -1.5, "max_answer_length": 12, "n_best_size": 7,
                                      **windows}
    assert squad_settings(stored, null_score_diff_threshold=2.0, max_answer_length=3, n_best_size=5,
                          max_query_length=20) == {"null_score_diff_threshold": 2.0, "max_answer_length": 3,
                                                   "n_best_size": 5, "doc_stride": 48, "max_query_length": 20}
    assert squad_settings(stored, version_2_with_negative=False)["null_score_diff_threshold"] is None
    assert squad_settings({}) == {"null_score_diff_threshold": None, "max_answer_length": 30, "n_best_size": 20,
                                  "doc_stride": 128, "max_query_length": 64}
    assert squad_settings({}, version_2_with_negative=True)["null_score_diff_threshold"] == 0.0
    assert squad_settings({}, null_score_diff_threshold=1.0)["null_score_diff_threshold"] == 1.0


@pytest.mark.tensorflow
def test_every_raw_string_signature_answers_an_empty_batch_with_empty_outputs(served):
    results = served["served"]
    empty = {name[len("empty "):]: outputs for name, outputs in results.items() if name.startswith("empty ")}
    assert sorted(empty) == ["backbone", "cased_classifier", "classifier", "feature_based_tagger", "qa", "span_qa",
                             "tagger", "token_classifier"]
    for name, outputs in empty.items():
        assert sorted(outputs) == sorted(results[name]), name  # the same outputs as on a real batch
        assert all(value == [] for value in outputs.values()), (name, outputs)


@pytest.mark.tensorflow
def test_a_signature_refuses_inputs_of_different_batch_sizes_naming_the_input(served):
    results = served["served"]
    short = {name[len("short "):]: outputs for name, outputs in results.items() if name.startswith("short ")}
    assert sorted(short) == ["classifier", "qa", "span_qa", "token_ids"]
    assert "text_pair: expected one entry per entry of text (a batch of the same size)" in short["classifier"]["error"]
    for name in ("qa", "span_qa"):
        assert "context: expected one entry per entry of question" in short[name]["error"]
    assert "padding_mask: expected the shape of token_ids [batch, sequence]" in short["token_ids"]["error"]


# ------------------------------------------------------------------- the shipped data: pipeline, recipe, SavedModel
def _shipped_pipeline(served, name, task, **options):
    # The recipes' batch size: the same batch shapes (compiled once under JAX).
    return pipeline(task, model=served["shipped"]["directories"][name], predict_batch_size=16, **options)


@pytest.mark.tensorflow
def test_sentiment_pipeline_answers_run_glues_test_predictions_and_the_saved_models(served):
    """data/sentiment/test.tsv: the labels of the text-classification pipeline are those of run_glue.py's
    test_predictions.tsv (your own data: no --task_name, the checkpoint's label names) and the SavedModel's;
    the longer sentences are classified by their windows' mean logits, as the directory was saved
    (`long_input`), by all three."""
    shipped = served["shipped"]
    answers = _shipped_pipeline(served, "sentiment", "text-classification")(shipped["inputs"]["sentiment"]["text"])
    labels = [answer["label"] for answer in answers]
    recipe = [line.split("\t")[1] for line in _lines(shipped["root"] / "sentiment_out" / "test_predictions.tsv")[1:]]
    saved = served["served"]["shipped sentiment"]
    assert labels == recipe == saved["label"]
    assert set(labels) == set(SENTIMENT_LABELS)  # both answers occur
    np.testing.assert_allclose([answer["score"] for answer in answers], np.max(saved["probabilities"], axis=-1),
                               atol=1e-5)
    from keras_bert_impl.tokenizers import packing

    _, example_index = packing.pack_windows(served["uncased"], shipped["inputs"]["sentiment"]["text"], 12)
    assert len(example_index) > len(set(example_index.tolist()))  # some sentences are several windows


def _word_tags(text, entities):
    """The tag of every whitespace word of `text`: the entity of its first sub-token (aggregation "none")."""
    first = {entity["start"]: entity["entity"] for entity in entities}
    return [first[m.start()] for m in re.finditer(r"\S+", text)]


@pytest.mark.tensorflow
def test_ner_pipeline_tags_every_word_as_run_ners_test_predictions_and_the_saved_model(served):
    """data/ner/test.txt with a CRF tagger at max_seq_length 16: the longer sentences are two windows for the
    recipe and the pipeline (each word tagged once); the pipeline's word tags are test_predictions.txt's (in
    the file's IOB1 scheme), and the SavedModel's for the sentences that fit in one window."""
    from keras_bert_impl.preprocessors.token_classifier_preprocessor import BertTokenClassifierPreprocessor

    shipped = served["shipped"]
    texts = shipped["inputs"]["ner"]["text"]
    ner = _shipped_pipeline(served, "ner", "token-classification", ignore_labels=[])
    tags = [_word_tags(text, entities) for text, entities in zip(texts, ner(texts))]
    recipe = [line.split(" ")[2] for line in _lines(shipped["root"] / "ner_out" / "test_predictions.txt")
              if line and not line.startswith("-DOCSTART-")]
    assert [tag for row in tags for tag in conll_data.bio_to_iob1(row)] == recipe
    assert len({tag for row in tags for tag in row}) > 3
    windows = BertTokenClassifierPreprocessor(served["uncased"], NER_MAX_SEQ_LENGTH).windows(texts)
    one_window = [i for i in range(len(texts)) if sum(w.sentence_index == i for w in windows) == 1]
    assert 0 < len(texts) - len(one_window) < len(one_window)  # long sentences occur, most fit
    saved = served["served"]["shipped ner"]
    for i in one_window:
        assert saved["tags"][i][: len(tags[i])] == tags[i]
    groups = _shipped_pipeline(served, "ner", "ner", aggregation_strategy="first")(texts[0])
    assert all(texts[0][g["start"]:g["end"]] == g["word"] and g["entity_group"] != "O" for g in groups)


@pytest.mark.tensorflow
def test_qa_pipeline_answers_run_squads_predictions_and_the_saved_models_over_windows(served):
    """data/qa/dev.json (SQuAD v2.0), every context several windows long: the question-answering pipeline, with
    the settings the directory was saved with (max_seq_length, doc_stride, max_query_length, n_best_size,
    max_answer_length, the null threshold), answers as run_squad.py's predictions.json, and so does the
    SavedModel, whose windows are cut in the graph; answers are found in later windows too."""
    from keras_bert_impl.preprocessors.span_qa_preprocessor import BertSpanQAPreprocessor

    shipped = served["shipped"]
    inputs, ids = shipped["inputs"]["qa"], shipped["qa_ids"]
    qa = _shipped_pipeline(served, "qa", "question-answering")
    answers = qa(question=inputs["question"], context=inputs["context"])
    recipe = json.loads((shipped["root"] / "squad_out" / "predictions.json").read_text(encoding="utf-8"))
    nbest = json.loads((shipped["root"] / "squad_out" / "nbest_predictions.json").read_text(encoding="utf-8"))
    assert [answer["answer"] for answer in answers] == [recipe[qas_id] for qas_id in ids]
    assert "" in recipe.values() and any(recipe.values())  # both kinds occur
    for answer, qas_id, context in zip(answers, ids, inputs["context"]):
        entry = next(e for e in nbest[qas_id] if e["text"] == answer["answer"])
        assert answer["score"] == pytest.approx(entry["probability"], abs=1e-6)
        if answer["answer"]:
            assert context[answer["start"]:answer["end"]] == answer["answer"]
    saved = served["served"]["shipped qa"]
    assert saved["answer"] == [recipe[qas_id] for qas_id in ids]
    # The windows: several per context, and answers beyond the first window.
    preprocessor = BertSpanQAPreprocessor(served["uncased"], SHIPPED_QA["max_seq_length"],
                                          doc_stride=SHIPPED_QA["doc_stride"],
                                          max_query_length=SHIPPED_QA["max_query_length"])
    examples, features = preprocessor.windows((inputs["question"], inputs["context"]))
    first_window_end = {}
    for feature in features:
        example = examples[feature.example_index]
        last_word = max(feature.token_to_orig_map.values())
        first_window_end.setdefault(feature.example_index, example.doc_token_char_starts[last_word])
    assert len(features) >= 2 * len(examples)
    assert any(answer["start"] > first_window_end[i] for i, answer in enumerate(answers) if answer["answer"])


@pytest.mark.tensorflow
def test_multiple_choice_pipeline_answers_run_swags_test_predictions_and_the_saved_models(served):
    shipped = served["shipped"]
    inputs = shipped["inputs"]["swag"]
    choose = _shipped_pipeline(served, "swag", "multiple-choice")
    answers = choose([{"context": c, "endings": e} for c, e in zip(inputs["context"], inputs["endings"])])
    recipe = [int(line.split(",")[1]) for line in _lines(shipped["root"] / "swag_out" / "test_predictions.csv")[1:]]
    saved = served["served"]["shipped swag"]
    assert [answer["label"] for answer in answers] == recipe == saved["label_id"]
    assert [answer["ending"] for answer in answers] == [e[i] for e, i in zip(inputs["endings"], recipe)]
    np.testing.assert_allclose([answer["score"] for answer in answers], np.max(saved["probabilities"], axis=-1),
                               atol=1e-5)
    one = choose(context=inputs["context"][0], endings=inputs["endings"][0])  # one example: a batch of its own
    assert (one["label"], one["ending"]) == (answers[0]["label"], answers[0]["ending"])
    assert one["score"] == pytest.approx(answers[0]["score"], abs=1e-5)


@pytest.mark.tensorflow
def test_feature_extraction_pipeline_equals_extract_features_and_the_saved_backbone(served):
    """The last layer's features of every token (transformers' default), those extract_features.py writes for
    --layers=-1 and the SavedModel's sequence_output; a Table 7 preset concatenates its layers."""
    from keras_bert_impl.tasks.feature_extraction import extract_features

    directory = str(served["root"] / "every_task" / "backbone")
    extract = pipeline("feature-extraction", model=directory, max_seq_length=32)
    features = extract(TEXTS, return_tensors=True)
    saved = np.asarray(served["served"]["backbone"]["sequence_output"])
    backbone = BertBackbone.from_pretrained(directory, output_hidden_states=True)
    records = list(extract_features(backbone, served["uncased"], TEXTS, layer_indexes=[-1], max_seq_length=32))
    for row, (values, record) in enumerate(zip(features, records)):
        assert values.shape == (1, len(record["features"]), 32)
        np.testing.assert_allclose(values[0], saved[row, : values.shape[1]], atol=1e-5)
        np.testing.assert_allclose(values[0], [f["layers"][0]["values"] for f in record["features"]], atol=2e-6)
    both = extract("ok", layers=[-1, -2], return_tensors=True)
    np.testing.assert_allclose(both[..., :32], features[2], atol=1e-6)  # "ok": TEXTS[2]
    assert both.shape == (1, 3, 64)
    average = extract("ok", feature_mode="sum_all", return_tensors=True)
    np.testing.assert_allclose(average, (both[..., :32] + both[..., 32:]) / 2, atol=1e-6)  # the 2 layers' mean
