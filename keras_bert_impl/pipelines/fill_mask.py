"""The fill-mask pipeline: the most likely tokens at each `[MASK]` of a text, as transformers'.

    unmask = pipeline("fill-mask", model="bert-base-uncased")
    unmask("Paris is the [MASK] of France.")
    # [{'score': 0.98, 'token': 3007, 'token_str': 'capital', 'sequence': 'paris is the capital of france.'}, ...]

The model is a `BertPretrainer` (a BertForMaskedLM or BertForPreTraining checkpoint: its masked-LM head
`cls.predictions.*`); a checkpoint without that head is refused. Each text is packed `[CLS] text [SEP]`
(cut to `max_seq_length`), `[MASK]` kept as the special token; the answer per mask is its `top_k` (default 5)
tokens by the softmax of the masked-LM logits, best first: {"score", "token" (its id), "token_str",
"sequence" (the text with that token in the mask's place, `BertTokenizer.decode` without special tokens)}.
A text with several masks answers a list per mask, all masks predicted in one pass, each `sequence` with the
other masks and the special tokens in it, as transformers does. A checkpoint without a masked-LM head is
refused before any warning of its loading; a text longer than `max_seq_length` is cut, with one warning.
"""

import warnings

import numpy as np

from keras_bert_impl.models.pretrainer import BertPretrainer
from keras_bert_impl.pipelines.base import Pipeline
from keras_bert_impl.data.class_scores import class_scores
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils.errors import UserInputError


class FillMaskPipeline(Pipeline):
    """`pipeline("fill-mask")`: see the module docstring."""

    task = "fill-mask"
    default_model = BertPretrainer
    options = {"top_k": 5}

    def __init__(self, model, tokenizer=None, **options):
        super().__init__(model, tokenizer, **options)
        self.check_masked_lm(self.model, "the model")
        # [MASK] in the text is the mask token, not the characters "[", "mask", "]".
        self.tokenizer = BertTokenizer(self.tokenizer.vocabulary, do_lower_case=self.tokenizer.do_lower_case,
                                       split_special_tokens=False)

    def check_masked_lm(self, model, source):
        """Refuses (`UserInputError`) a model without a trained masked-LM head (`source` names it)."""
        if model.objective == "ltr":
            raise UserInputError("fill-mask needs a masked-LM; this model is a left-to-right LM (objective 'ltr').")
        if "masked-LM" in model.newly_initialized_heads:
            raise UserInputError(f"{source} has no masked-LM head (cls.predictions.*); fill-mask needs a "
                                 "BertForMaskedLM or BertForPreTraining checkpoint.")

    def load_model(self, checkpoint):
        """The checkpoint's `BertPretrainer`, refused before any of its loading warnings is shown when it has no
        masked-LM head (its "initialized randomly" warning would come first otherwise)."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = BertPretrainer.from_pretrained(checkpoint, preprocessor=None)
        self.check_masked_lm(model, checkpoint.path)
        for warning in caught:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
        return model

    def run(self, texts, settings):
        max_length = int(settings["max_seq_length"])
        packed = self.tokenizer(texts, max_length=max_length)
        token_ids = packed["token_ids"]  # [N, T]
        self.warn_cut(self.first_cut(texts, None, packed["padding_mask"].sum(axis=1), max_length),
                      f"max_seq_length={max_length}", "a larger max_seq_length, up to the model's "
                      "max_position_embeddings, reads more")
        masks = [np.flatnonzero(row == self.tokenizer.mask_token_id) for row in token_ids]
        for i, positions in enumerate(masks):
            if not len(positions):
                raise UserInputError(f"fill-mask: text {i} has no [MASK] token (within max_seq_length).")
        width = max(len(positions) for positions in masks)
        positions = np.zeros((len(texts), width), "int32")
        for i, row in enumerate(masks):
            positions[i, : len(row)] = row
        logits = []
        batch_size = int(settings["predict_batch_size"])
        for start in range(0, len(texts), batch_size):
            batch = {key: packed[key][start : start + batch_size] for key in ("token_ids", "segment_ids", "padding_mask")}
            batch["masked_lm_positions"] = positions[start : start + batch_size]
            outputs = self.model.predict_on_batch(batch)
            logits.append(np.asarray(outputs["masked_lm_logits"], "float32"))  # [B, P, V]
        logits = np.concatenate(logits)
        top_k = int(settings["top_k"])
        answers = []
        for i, row in enumerate(masks):
            per_mask = []
            for m, position in enumerate(row):
                scores = class_scores(logits[i, m], "softmax")
                best = np.argsort(-scores, kind="stable")[:top_k]
                per_mask.append([self._candidate(token_ids[i], position, int(token), float(scores[token]),
                                                 single=len(row) == 1) for token in best])
            answers.append(per_mask[0] if len(per_mask) == 1 else per_mask)
        return answers

    def _candidate(self, token_ids, position, token, score, single):
        filled = np.array(token_ids)
        filled[position] = token
        return {"score": score, "token": token, "token_str": self.tokenizer.convert_ids_to_tokens([token])[0],
                "sequence": self.tokenizer.decode(filled, skip_special_tokens=single)}
