"""The multiple-choice pipeline: the ending of a context that the model scores best (SWAG).

    choose = pipeline("multiple-choice", model="output/swag/model")
    choose(context="She opens the fridge.", endings=["She takes out the milk.", "She swims to the shore.",
                                                    "The fridge sings.", "He sleeps."])
    # {'label': 0, 'ending': 'She takes out the milk.', 'score': 0.91}

Each ending is packed with its context as `[CLS] context [SEP] ending [SEP]` (SWAG's: the context is
`sent1`, an ending `sent2 + " " + ending_i`), as run_swag.py packs it (`data.swag_data.pack_choices`);
the answer is the choice with the highest logit (`data.class_scores`, the rule of run_swag.py's
test_predictions.csv), its `score` the softmax over the choices. transformers has no such pipeline; the answer
has the shape of its text-classification's: {"label": the ending's index, "ending", "score"}, or with
`top_k` the `top_k` best choices, best first (None: every choice). Inputs: `context=..., endings=[...]`,
one dict {"context", "endings"}, or a list of dicts. The number of endings is the model's (config.json's
`num_choices`, written by run_swag.py; 4, SWAG's, for a directory without it). An empty context or ending is
refused naming its input; a choice longer than `max_seq_length` is cut, with one warning the first time.
"""

from keras_bert_impl.models.multiple_choice import BertMultipleChoice
from keras_bert_impl.pipelines.base import Pipeline
from keras_bert_impl.data.class_scores import ranked
from keras_bert_impl.utils.errors import UserInputError


class MultipleChoicePipeline(Pipeline):
    """`pipeline("multiple-choice")`: see the module docstring."""

    task = "multiple-choice"
    default_model = BertMultipleChoice
    options = {"top_k": 1}
    top_k_may_be_all = True

    def __call__(self, *inputs, context=None, endings=None, **options):
        if inputs:
            single = isinstance(inputs[0], dict)
            records = [inputs[0]] if single else list(inputs[0])
        else:
            single, records = True, [{"context": context, "endings": endings}]
        for i, record in enumerate(records):
            if not (isinstance(record, dict) and isinstance(record.get("context"), str)
                    and isinstance(record.get("endings"), (list, tuple))):
                raise UserInputError(f'multiple-choice: input {i} must be context=str, endings=[str, ...] (or a dict '
                                     '{"context": ..., "endings": [...]}).')
            if len(record["endings"]) != self.model.num_choices:
                raise UserInputError(f"multiple-choice: input {i} has {len(record['endings'])} endings; the model "
                                     f"scores {self.model.num_choices}.")
            if not record["context"].strip():
                raise UserInputError(f"pipeline({self.task!r}): the context of input {i} is empty; expected a text.")
            self.check_texts(record["endings"], f"input {i}: ending", allow_empty=False)
        settings = self.call_settings(options)
        answers = self.run(records, settings) if records else []
        return answers[0] if single else answers

    def run(self, records, settings):
        endings = [list(r["endings"]) for r in records]
        rows = self.preprocessor(settings).choices(([r["context"] for r in records], endings))
        max_length = int(settings["max_seq_length"])
        for i, (record, row) in enumerate(zip(records, rows["token_ids"])):
            names = [f"input {i} (ending {j} with its context)" for j in range(len(row))]
            cut = self.first_cut([record["context"]] * len(row), list(record["endings"]), [len(r) for r in row],
                                 max_length, names)
            if cut is not None:
                self.warn_cut(cut, f"max_seq_length={max_length}", "a larger max_seq_length, up to the model's "
                              "max_position_embeddings, reads more")
                break
        scores = self.model.scores(self.predict(rows, settings))  # [N, C]: the softmax over the choices
        top_k = settings["top_k"]
        answers = []
        for row, choices in zip(ranked(scores, list(range(scores.shape[-1])), top_k), endings):
            best = [{"label": int(index), "ending": choices[index], "score": score} for index, score in row]
            answers.append(best[0] if top_k == 1 else best)
        return answers
