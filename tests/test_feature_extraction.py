"""extract_features: the original's JSON Lines structure, its tokens and truncation, and layer values equal
to the backbone's (and transformers') hidden states on the real MiniLM checkpoint."""

import collections
import importlib.util
import json
import os

import numpy as np
import pytest

from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.tasks.feature_extraction import convert_example, extract_features, read_examples
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from tests.backend_utils import to_numpy

_RECIPE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "recipes", "extract_features.py")
_spec = importlib.util.spec_from_file_location("extract_features_recipe", _RECIPE)
recipe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(recipe)

LINES = ["Who was Jim Henson ? ||| Jim Henson was a puppeteer\n", "Hello world!\n",
         "the quick brown fox jumps over the lazy dog again and again\n"]
LAYERS = [-1, -2, 0]
MAX_SEQ_LENGTH = 12


def _original_json_line(unique_id, tokens, layer_outputs, layer_indexes):
    """The output loop of google-research/bert's extract_features.py, verbatim but for the inputs."""
    output_json = collections.OrderedDict()
    output_json["linex_index"] = unique_id
    all_features = []
    for (i, token) in enumerate(tokens):
        all_layers = []
        for (j, layer_index) in enumerate(layer_indexes):
            layer_output = layer_outputs[j]
            layers = collections.OrderedDict()
            layers["index"] = layer_index
            layers["values"] = [round(float(x), 6) for x in layer_output[i:(i + 1)].flat]
            all_layers.append(layers)
        features = collections.OrderedDict()
        features["token"] = token
        features["layers"] = all_layers
        all_features.append(features)
    output_json["features"] = all_features
    return json.dumps(output_json) + "\n"


@pytest.fixture(scope="module")
def minilm(minilm_path):
    return BertBackbone.from_pretrained(minilm_path, output_hidden_states=True), BertTokenizer.from_pretrained(minilm_path)


def test_read_examples_splits_pairs_like_the_original():
    assert read_examples(LINES[:2] + ["\n", "a ||| b ||| c\n"]) == [
        (0, "Who was Jim Henson ?", "Jim Henson was a puppeteer"), (1, "Hello world!", None), (2, "", None),
        (3, "a ||| b", "c"),  # the original's greedy regex splits at the last " ||| "
    ]


def test_tokens_segments_and_truncation_are_the_originals(minilm):
    _, tokenizer = minilm
    tokens, token_ids, segment_ids, padding_mask = convert_example(tokenizer, "Who was Jim Henson ?",
                                                                   "Jim Henson was a puppeteer", 12)
    # 12 - 3 = 9 pieces: a has 6, b has 7 -> pop from the longer (b on a tie) until 9.
    assert tokens == ["[CLS]", "who", "was", "jim", "henson", "?", "[SEP]", "jim", "henson", "was", "a", "[SEP]"]
    assert segment_ids.tolist() == [0] * 7 + [1] * 5 and padding_mask.tolist() == [1] * 12
    tokens, _, segment_ids, padding_mask = convert_example(tokenizer, "Hello world!", None, 12)
    assert tokens == ["[CLS]", "hello", "world", "!", "[SEP]"] and padding_mask.sum() == 5 and segment_ids.sum() == 0


def test_output_is_the_originals_json_and_values_are_the_hidden_states(minilm, tmp_path):
    backbone, tokenizer = minilm
    input_file = tmp_path / "input.txt"
    input_file.write_text("".join(LINES), encoding="utf-8")
    output_file = tmp_path / "output.jsonl"
    recipe.main([f"--input_file={input_file}", f"--output_file={output_file}", "--layers=-1,-2,0",
                 f"--max_seq_length={MAX_SEQ_LENGTH}", f"--init_checkpoint={backbone_path(tokenizer)}",
                 f"--batch_size={len(LINES)}"])
    written = output_file.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(written) == len(LINES)

    # The same batch through the backbone, then the original's output loop on its hidden states.
    examples = [convert_example(tokenizer, a, b, MAX_SEQ_LENGTH) for _, a, b in read_examples(LINES)]
    inputs = {name: np.stack([e[k] for e in examples]) for k, name in
              ((1, "token_ids"), (2, "segment_ids"), (3, "padding_mask"))}
    hidden = [to_numpy(h) for h in backbone(inputs)["hidden_states"]]  # L+1 x [3, T, 384]
    encoder_layers = hidden[1:]  # the original's get_all_encoder_layers()
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    hf = transformers.BertModel.from_pretrained(backbone_path(tokenizer)).eval()
    with torch.no_grad():
        hf_hidden = hf(input_ids=torch.tensor(inputs["token_ids"]).long(),
                       token_type_ids=torch.tensor(inputs["segment_ids"]).long(),
                       attention_mask=torch.tensor(inputs["padding_mask"]).long(), output_hidden_states=True).hidden_states
    for row, (line, (tokens, *_)) in enumerate(zip(written, examples)):
        reference = _original_json_line(row, tokens, [encoder_layers[i][row] for i in LAYERS], LAYERS)
        assert line == reference  # byte for byte: structure, key order, tokens, indices, rounded values
        record = json.loads(line)
        assert list(record) == ["linex_index", "features"] and record["linex_index"] == row
        assert [f["token"] for f in record["features"]] == tokens
        assert all(list(f) == ["token", "layers"] for f in record["features"])
        assert [[(list(l), l["index"]) for l in f["layers"]] for f in record["features"]] == [
            [(["index", "values"], i) for i in LAYERS]] * len(tokens)
        ours = np.array([[l["values"] for l in f["layers"]] for f in record["features"]])  # [n, layers, H]
        assert ours.shape == (len(tokens), len(LAYERS), 384)
        expected = np.stack([encoder_layers[i][row, : len(tokens)] for i in LAYERS], axis=1)
        np.testing.assert_allclose(ours, expected, atol=5e-7 + 1e-9, rtol=0)  # rounded to 6 decimals
        hf_values = np.stack([hf_hidden[1:][i][row, : len(tokens)].numpy() for i in LAYERS], axis=1)
        np.testing.assert_allclose(ours, hf_values, atol=1e-4, rtol=0)


def backbone_path(tokenizer):
    return os.path.dirname(tokenizer.vocab_file)


def test_layer_index_out_of_range_is_an_error(minilm):
    backbone, tokenizer = minilm
    with pytest.raises(ValueError, match="layer index 6 out of range"):
        next(extract_features(backbone, tokenizer, ["a"], layer_indexes=[6]))
