"""keras_bert_impl/tasks: a recipe's output_dir/model is a complete model directory (weights, config with
max_seq_length, vocab.txt and tokenizer_config.json with the run's do_lower_case) that loads back; NER's
batched word predictions are the same with dynamic padding as with every window padded to max_seq_length."""

import json
import os

import numpy as np
import pytest

from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.models.token_classifier import IGNORE_LABEL_ID, BertTokenClassifier
from keras_bert_impl.tasks.ner import NerConfig, NerSplit, predict_label_ids
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from tests.finetuning_files import load_recipe
from tests.test_run_glue import _mnli_dir, _tiny_config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_glue_model_directory_holds_the_tokenizer_with_the_runs_do_lower_case(do_lower_case, tmp_path,
                                                                              minilm_vocab_file):
    output_dir = str(tmp_path / "out")
    load_recipe("run_glue").main([
        "--task_name=MNLI", f"--data_dir={_mnli_dir(tmp_path)}", f"--bert_config_file={_tiny_config(tmp_path)}",
        f"--vocab_file={minilm_vocab_file}", f"--do_lower_case={str(do_lower_case).lower()}",
        f"--output_dir={output_dir}", "--do_train", "--max_seq_length=32", "--train_batch_size=4",
        "--num_train_epochs=1", "--verbose=0",
    ])
    model_dir = os.path.join(output_dir, "model")
    assert {"config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json"} <= set(os.listdir(model_dir))
    assert not [name for name in os.listdir(model_dir) if name.startswith(".tmp-")]
    with open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        assert json.load(f)["do_lower_case"] is do_lower_case
    with open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8") as f, \
            open(minilm_vocab_file, encoding="utf-8") as reference:
        assert f.read().splitlines() == reference.read().splitlines()
    tokenizer = BertTokenizer.from_pretrained(model_dir)
    assert tokenizer.do_lower_case is do_lower_case and tokenizer.vocab_size == 30522
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    assert config["max_seq_length"] == 32 and config["architectures"] == ["BertForSequenceClassification"]
    assert config["id2label"] == {"0": "contradiction", "1": "entailment", "2": "neutral"}
    assert BertClassifier.from_pretrained(model_dir, num_classes=3).backbone.config.hidden_size == 16


@pytest.mark.parametrize("use_crf", [False, True])
def test_ner_predictions_with_dynamic_padding_equal_those_of_whole_length_windows(use_crf, minilm_vocab_file,
                                                                                   tmp_path):
    ner_config = NerConfig(output_dir=str(tmp_path), max_seq_length=32, eval_batch_size=16)  # dynamic padding to 8s
    labels = ["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER"]
    split = NerSplit(os.path.join(REPO, "data", "ner", "dev.txt"), BertTokenizer(minilm_vocab_file), labels,
                     ner_config)
    config = BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    model = BertTokenClassifier(BertBackbone(config), num_classes=len(labels), use_crf=use_crf)

    predicted = predict_label_ids(model, split, ner_config)  # [N, 32]: length-sorted batches of 8..32 positions
    x = {k: np.stack([getattr(f, k) for f in split.features]) for k in ("token_ids", "segment_ids", "padding_mask")}
    logits = model.predict(x, batch_size=64, verbose=0)  # [N, 32, K], every window padded to 32
    reference = model.decode(logits, np.stack([f.label_mask for f in split.features]))

    assert predicted.shape == reference.shape == (len(split.features), 32)
    np.testing.assert_array_equal(predicted, reference)
    assert (predicted != IGNORE_LABEL_ID).sum() == sum(len(f.word_indices) for f in split.features)
