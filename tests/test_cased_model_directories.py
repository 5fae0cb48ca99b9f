"""A fine-tuned model directory holds the tokenizer of its run, written once from the model's preprocessor: the
casing, the NFKC normalization and the sequence length the run used (not the checkpoint's), so that the
directory, `from_pretrained`, the pipelines and the SavedModel answer as the run's model.

run_glue.py fine-tunes an uncased checkpoint (a tiny random BERT whose tokenizer_config.json says do_lower_case:
true, sequence length 128 by default) CASED with NFKC at --max_seq_length=16 on sentences whose label is
whether their sentiment word is capitalized ("Good" / "good"): lower-casing the input changes the answers. The
directory's tokenizer_config.json, `from_pretrained`, the text-classification pipeline and the SavedModel
(exported and served by TensorFlow in other processes) answer mixed-case and full-width text as the fine-tuned
model does on the run's own (cased, NFKC) tokenization. run_ner.py, run_squad.py and run_swag.py write their
directories the same way (casing, length, SQuAD's windows)."""

import csv
import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from keras_bert_impl import (
    BertClassifier,
    BertMultipleChoice,
    BertSpanQA,
    BertTextClassifierPreprocessor,
    BertTokenClassifier,
    BertTokenizer,
    pipeline,
)
from keras_bert_impl.config import BertConfig
from tests.backend_utils import to_numpy
from tests.finetuning_files import REPO, load_recipe, subprocess_env

SEQUENCE_LENGTH = 16
WORDS = ["Good", "good", "Bad", "bad", "the", "movie", "was", "plot", "very", "Paris", "paris", "in", "is", "where",
         "?", ".", "He", "he", "went", "to"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
FILLER = ["the", "movie", "was", "plot", "very"]
# Mixed-case text where casing matters, and full-width letters that NFKC maps to "Good" / "Bad".
TEXTS = ["the movie was Good", "the movie was good", "Bad plot", "very bad plot", "the plot was \uff27\uff4f\uff4f\uff44",
         "\uff22\uff41\uff44 movie"]
EXPORT_RECIPE = os.path.join(REPO, "recipes", "export_savedmodel.py")
SERVE = os.path.join(REPO, "tests", "serve_saved_model.py")


def _write_model_files(directory):
    """An UNCASED checkpoint directory (a tiny random BERT without dropout, vocab.txt of cased words,
    tokenizer_config.json saying do_lower_case: true and no sequence length, so its preprocessor's is 128), and
    the flags that fine-tune it cased at --max_seq_length=16."""
    from keras_bert_impl.models.backbone import BertBackbone

    config = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    checkpoint = os.path.join(directory, "uncased_checkpoint")
    BertBackbone(config).save_pretrained(checkpoint)
    with open(os.path.join(checkpoint, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(VOCAB) + "\n")
    with open(os.path.join(checkpoint, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"do_lower_case": True}, f)
    return [f"--init_checkpoint={checkpoint}", "--do_lower_case=false", f"--max_seq_length={SEQUENCE_LENGTH}",
            "--verbose=0", "--seed=3"]


def _check_tokenizer_files(model_dir, nfkc=False):
    with open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        tokenizer_config = json.load(f)
    assert tokenizer_config["do_lower_case"] is False and tokenizer_config["sequence_length"] == SEQUENCE_LENGTH
    assert tokenizer_config.get("normalize") == ("nfkc" if nfkc else None)
    with open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8") as f:
        assert f.read().split("\n")[:-1] == VOCAB


@pytest.fixture(scope="module")
def cased_sst2(tmp_path_factory):
    """run_glue.py's model directory: fine-tuned cased with NFKC at --max_seq_length=16."""
    root = tmp_path_factory.mktemp("cased_sst2")
    flags = _write_model_files(str(root))
    rng = random.Random(0)
    with open(root / "train.tsv", "w", encoding="utf-8") as train, open(root / "dev.tsv", "w", encoding="utf-8") as dev:
        for f in (train, dev):
            f.write("sentence\tlabel\n")
        for i in range(96):
            word = rng.choice(["Good", "good", "Bad", "bad"])
            words = [word, *rng.sample(FILLER, rng.randint(1, 3))]
            rng.shuffle(words)
            (dev if i % 4 == 0 else train).write(f"{' '.join(words)}\t{int(word[0].isupper())}\n")
    output_dir = str(root / "out")
    load_recipe("run_glue").main([
        "--task_name=sst2", f"--data_dir={root}", f"--output_dir={output_dir}", "--do_train", "--do_eval",
        "--nfkc=true", "--train_batch_size=8", "--num_train_epochs=8", "--learning_rate=3e-3", "--warmup_proportion=0",
        "--classifier_dropout=0", *flags,
    ])
    return os.path.join(output_dir, "model")


@pytest.mark.tensorflow  # the SavedModel is exported and served by TensorFlow
def test_a_cased_glue_run_is_served_cased_by_its_directory_pipeline_and_savedmodel(cased_sst2, tmp_path):
    _check_tokenizer_files(cased_sst2, nfkc=True)
    with open(os.path.join(cased_sst2, "config.json"), encoding="utf-8") as f:
        assert json.load(f)["max_seq_length"] == SEQUENCE_LENGTH

    # The run's tokenization, and the fine-tuned model's answers on it.
    model = BertClassifier.from_pretrained(cased_sst2)
    preprocessor = model.preprocessor
    assert (preprocessor.tokenizer.do_lower_case, preprocessor.tokenizer.normalize, preprocessor.sequence_length) == (
        False, "nfkc", SEQUENCE_LENGTH)
    run_tokenizer = BertTokenizer(os.path.join(cased_sst2, "vocab.txt"), do_lower_case=False, normalize="nfkc")
    packed = BertTextClassifierPreprocessor(run_tokenizer, sequence_length=SEQUENCE_LENGTH)(TEXTS)[0]
    logits = to_numpy(model.predict_on_batch(packed)).astype("float64")
    expected = np.exp(logits - logits.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)  # [6, 2] probabilities
    # Casing and normalization matter here: the uncased tokenization gives other labels; without NFKC the
    # full-width words are other tokens ([UNK]; what the model answers on them depends on its training).
    uncased = BertTextClassifierPreprocessor(BertTokenizer(run_tokenizer.vocabulary), SEQUENCE_LENGTH)(TEXTS)[0]
    assert (to_numpy(model.predict_on_batch(uncased)).argmax(-1) != logits.argmax(-1)).any()
    unnormalized = BertTokenizer(run_tokenizer.vocabulary, do_lower_case=False)
    unnormalized_ids = to_numpy(BertTextClassifierPreprocessor(unnormalized, SEQUENCE_LENGTH)(TEXTS)[0]["token_ids"])
    assert (unnormalized_ids != to_numpy(packed["token_ids"])).any(axis=-1).tolist() == [False] * 4 + [True] * 2

    # from_pretrained on raw text, the pipeline and the SavedModel give those answers.
    np.testing.assert_allclose(to_numpy(model.predict(TEXTS)), logits, atol=1e-5)
    answers = pipeline("text-classification", model=cased_sst2)(TEXTS, top_k=None)
    by_label = [{a["label"]: a["score"] for a in row} for row in answers]
    np.testing.assert_allclose([[row["negative"], row["positive"]] for row in by_label], expected, atol=1e-5)
    export_dir = str(tmp_path / "saved")
    env = dict(subprocess_env(), KERAS_BACKEND="tensorflow")
    done = subprocess.run([sys.executable, EXPORT_RECIPE, f"--model_dir={cased_sst2}", f"--export_dir={export_dir}"],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    with open(os.path.join(export_dir, "export_config.json"), encoding="utf-8") as f:
        record = json.load(f)
    assert (record["do_lower_case"], record["normalize"], record["max_seq_length"]) == (False, "nfkc", SEQUENCE_LENGTH)
    done = subprocess.run([sys.executable, SERVE, json.dumps([[export_dir, "serving_default", {"text": TEXTS}]])],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    served = json.loads(done.stdout.split("RESULT ", 1)[1])[0]
    np.testing.assert_allclose(served["probabilities"], expected, atol=1e-5)
    assert served["label"] == [["negative", "positive"][i] for i in expected.argmax(-1)]


def test_ner_squad_and_swag_directories_hold_the_runs_casing_and_lengths(tmp_path):
    flags = _write_model_files(str(tmp_path))
    common = [*flags, "--do_train", "--num_train_epochs=1", "--train_batch_size=2", "--learning_rate=1e-3"]

    # NER: CoNLL files in the cased words.
    sentences = [[("He", "O"), ("went", "O"), ("to", "O"), ("Paris", "B-LOC")], [("Paris", "B-LOC"), ("is", "O")]]
    for name in ("train.txt", "dev.txt"):
        with open(tmp_path / name, "w", encoding="utf-8") as f:
            f.write("".join("".join(f"{w} NN O {t}\n" for w, t in s) + "\n" for s in sentences))
    ner_dir = str(tmp_path / "ner")
    load_recipe("run_ner").main([f"--data_dir={tmp_path}", f"--output_dir={ner_dir}", *common])
    ner_model = os.path.join(ner_dir, "model")
    _check_tokenizer_files(ner_model)
    tagger = BertTokenClassifier.from_pretrained(ner_model)
    assert (tagger.preprocessor.tokenizer.do_lower_case, tagger.preprocessor.sequence_length) == (False, SEQUENCE_LENGTH)
    ner = pipeline("token-classification", model=ner_model)
    assert ner.tokenizer.do_lower_case is False and ner.settings["max_seq_length"] == SEQUENCE_LENGTH

    # SQuAD: windows of 16 tokens every 4, questions cut to 6.
    context = "He went to Paris ."
    squad = {"data": [{"paragraphs": [{"context": context, "qas": [
        {"id": "q1", "question": "where he went ?", "answers": [{"text": "Paris", "answer_start": 11}]},
        {"id": "q2", "question": "He went where ?", "answers": [{"text": "Paris", "answer_start": 11}]}]}]}]}
    (tmp_path / "squad.json").write_text(json.dumps(squad), encoding="utf-8")
    squad_dir = str(tmp_path / "squad")
    load_recipe("run_squad").main([f"--train_file={tmp_path / 'squad.json'}", f"--output_dir={squad_dir}",
                                   "--doc_stride=4", "--max_query_length=6", *common])
    squad_model = os.path.join(squad_dir, "model")
    _check_tokenizer_files(squad_model)
    qa_model = BertSpanQA.from_pretrained(squad_model)
    assert (qa_model.preprocessor.tokenizer.do_lower_case, qa_model.preprocessor.sequence_length,
            qa_model.preprocessor.doc_stride, qa_model.preprocessor.max_query_length) == (False, SEQUENCE_LENGTH, 4, 6)
    assert qa_model.decoding_settings()["n_best_size"] == 20 and qa_model.decoding_settings(n_best_size=3)["n_best_size"] == 3
    qa = pipeline("question-answering", model=squad_model)
    assert qa.tokenizer.do_lower_case is False
    assert isinstance(qa(question="where he went ?", context=context)["answer"], str)

    # SWAG: the released CSV layout.
    columns = ["video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source", "ending0", "ending1",
               "ending2", "ending3", "label"]
    rows = [["v", "1", "He went", "He went", "to", "gold", "Paris .", "paris .", "the movie .", "Good .", "0"],
            ["v", "2", "He is", "He is", "in", "gold", "the plot .", "Paris .", "bad .", "Bad .", "1"]]
    for name in ("train.csv", "val.csv"):
        with open(tmp_path / name, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["", *columns])
            writer.writerows([str(i), *row] for i, row in enumerate(rows))
    swag_dir = str(tmp_path / "swag")
    load_recipe("run_swag").main([f"--data_dir={tmp_path}", f"--output_dir={swag_dir}", *common])
    swag_model = os.path.join(swag_dir, "model")
    _check_tokenizer_files(swag_model)
    chooser = BertMultipleChoice.from_pretrained(swag_model)
    assert chooser.num_choices == 4
    assert (chooser.preprocessor.tokenizer.do_lower_case, chooser.preprocessor.sequence_length) == (False, SEQUENCE_LENGTH)
