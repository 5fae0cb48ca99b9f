"""The feature-extraction pipeline: every token's features from a BERT checkpoint, as transformers'.

    embed = pipeline("feature-extraction", model="bert-base-uncased")
    embed("Hello world")                              # [1, tokens, hidden] nested lists ([CLS] ... [SEP])
    embed("Hello world", feature_mode="concat_last_four")   # [1, tokens, 4 * hidden]

Each text is packed `[CLS] text [SEP]` (cut to `max_seq_length`) and runs through the backbone; a token's
features are, by default, the last layer's output (transformers' `last_hidden_state`), or those of
extract_features.py (`tasks.feature_extraction`): `layers`, encoder-layer indices as its `--layers` (-1 the
last), concatenated in order; or `feature_mode`, a Table 7 preset of the paper
(`models.feature_modes`: "embeddings", "second_to_last", "last", "sum_last_four", "concat_last_four",
"sum_all"; a "scalar_mix" preset is the plain average of its layers, as extract_features.py writes it).
The answer per text is a nested list [1, tokens, features] (`return_tensors=True`: a numpy array). A text
longer than `max_seq_length` is cut, with one warning the first time.
"""

import numpy as np

from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.pipelines.base import Pipeline
from keras_bert_impl.tasks.feature_extraction import entry_features, feature_entries
from keras_bert_impl.tokenizers import packing
from keras_bert_impl.utils.errors import UserInputError


class FeatureExtractionPipeline(Pipeline):
    """`pipeline("feature-extraction")`: see the module docstring."""

    task = "feature-extraction"
    default_model = BertBackbone
    options = {"layers": (-1,), "feature_mode": None, "return_tensors": False}

    def __init__(self, model, tokenizer=None, **options):
        super().__init__(model, tokenizer, **options)
        if not self.model.output_hidden_states:
            raise UserInputError("feature-extraction needs a BertBackbone built with output_hidden_states=True.")

    def load_model(self, checkpoint):
        return BertBackbone.from_pretrained(checkpoint, output_hidden_states=True, require_pooler=False)

    def run(self, texts, settings):
        entries = feature_entries(self.model.config.num_hidden_layers, settings["layers"], settings["feature_mode"])
        max_length = int(settings["max_seq_length"])
        rows = packing.pack_unpadded(self.tokenizer, texts, None, max_length)
        lengths = [len(row) for row in rows["token_ids"]]
        self.warn_cut(self.first_cut(texts, None, lengths, max_length), f"max_seq_length={max_length}",
                      "a larger max_seq_length, up to the model's max_position_embeddings, reads more")
        hidden_states = self.predict(rows, settings, output_length=max(lengths),
                                     select=lambda outputs: outputs["hidden_states"])  # L+1 x [N, T, H]
        features = np.concatenate(entry_features(hidden_states, entries), axis=-1)  # [N, T, D]
        answers = [features[i : i + 1, :n] for i, n in enumerate(lengths)]
        return answers if settings["return_tensors"] else [a.tolist() for a in answers]
