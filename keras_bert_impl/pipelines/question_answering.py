"""The question-answering pipeline: answers with their character spans in the context, as transformers'.

    qa = pipeline("question-answering", model="output/qa/model")
    qa(question="Where did John move?", context="John Smith moved to Zürich in 2019.")
    # {'score': 0.93, 'start': 20, 'end': 26, 'answer': 'Zürich'}
    qa(question=[...], context=[...])                # a list of answers
    qa({"question": ..., "context": ...}, top_k=3)   # the 3 best answers

The answer is run_squad.py's: the context is cut into its doc-stride windows
(`BertSpanQAPreprocessor.windows`), the model scores every window, and the answer is the best span across
the windows by the original run_squad.py's rule (`data.squad_postprocessing.compute_predictions`, the
code that writes predictions.json and nbest_predictions.json): the `n_best_size` best starts x ends of
each window, a start where its window gives it the most context, at most `max_answer_length` tokens; for
SQuAD v2.0 (`version_2_with_negative`) "" when the null score beats the best span by more than
`null_score_diff_threshold`. `score` is the answer's probability among the n best (the softmax of their
start + end logits); `start` and `end` are its characters in the context (end exclusive; 0 and 0 for "").
`top_k` > 1 answers with the `top_k` best of the n-best list (`top_k` is at least 1). A question or context that
is not a text, or an empty question, is refused naming its index; a question longer than `max_query_length` is
cut, with one warning the first time.

The windows' and the answers' settings default to those the model directory was fine-tuned with (its
config.json's `max_seq_length` and "squad" entry, which `from_pretrained` gives the model and its preprocessor),
else run_squad.py's defaults (`BertSpanQA.decoding_settings`).
"""

from keras_bert_impl.models.span_qa import DECODING_SETTINGS, BertSpanQA
from keras_bert_impl.pipelines.base import Pipeline
from keras_bert_impl.utils.errors import UserInputError


class QuestionAnsweringPipeline(Pipeline):
    """`pipeline("question-answering")`: see the module docstring."""

    task = "question-answering"
    default_model = BertSpanQA
    options = {**dict.fromkeys(DECODING_SETTINGS), "top_k": 1}

    def __call__(self, *inputs, question=None, context=None, **options):
        """`question=..., context=...` (a str each, or lists of the same length), or one dict
        {"question", "context"} or a list of them."""
        if inputs:
            if question is not None or context is not None or len(inputs) > 1:
                raise UserInputError("question-answering takes question=..., context=... or one dict / list of dicts "
                                     '{"question": ..., "context": ...}.')
            single = isinstance(inputs[0], dict)
            records = [inputs[0]] if single else list(inputs[0])
            if not all(isinstance(r, dict) and {"question", "context"} <= set(r) for r in records):
                raise UserInputError('question-answering: every input must be a dict {"question": ..., "context": ...}.')
            pairs = [(r["question"], r["context"]) for r in records]
        else:
            if question is None or context is None:
                raise UserInputError("question-answering needs question= and context=.")
            single = not isinstance(question, (list, tuple))
            questions, contexts = ([question], context) if single else (list(question), context)
            contexts = list(contexts) if isinstance(contexts, (list, tuple)) else [contexts]
            if len(questions) != len(contexts) or single != (not isinstance(context, (list, tuple))):
                raise UserInputError(f"question-answering: {len(questions)} questions but {len(contexts)} contexts; "
                                     "they must pair up.")
            pairs = list(zip(questions, contexts))
        settings = self.call_settings(options)
        self.check_texts([q for q, _ in pairs], "question", allow_empty=False)
        self.check_texts([c for _, c in pairs], "context")  # an empty context: the null answer
        answers = self.run(pairs, settings) if pairs else []
        return answers[0] if single else answers

    def run(self, pairs, settings):
        decoding = self.model.decoding_settings(**{key: settings[key] for key in DECODING_SETTINGS})
        preprocessor = self.preprocessor(settings, doc_stride=int(decoding["doc_stride"]),
                                         max_query_length=int(decoding["max_query_length"]))
        examples, features = preprocessor.windows(([q for q, _ in pairs], [c for _, c in pairs]))
        max_query_length = int(decoding["max_query_length"])
        cut = next(((f"question {i}", n) for i, n in enumerate(len(self.tokenizer.tokenize(q)) for q, _ in pairs)
                    if n > max_query_length), None)
        self.warn_cut(cut, f"max_query_length={max_query_length}", "the context is read whole, in doc_stride "
                      "windows; a larger max_query_length reads more of a question")
        batch_size = int(settings["predict_batch_size"])
        progress = bool(settings["verbose"]) if settings["verbose"] is not None else len(features) > 8 * batch_size
        results = self.model.span_logits(features, batch_size=batch_size, progress=progress)
        predictions = self.model.answers(examples, features, results, do_lower_case=self.tokenizer.do_lower_case,
                                         **decoding)
        top_k = int(settings["top_k"])
        answers = []
        for example in examples:
            nbest = predictions.nbest[example.qas_id]
            if top_k > 1:
                answers.append([_answer(entry) for entry in nbest[:top_k]])
                continue
            text = predictions.predictions[example.qas_id]
            answers.append(_answer(next(entry for entry in nbest if entry["text"] == text)))
        return answers


def _answer(entry):
    """transformers' answer dict of an n-best entry (characters 0, 0 for "" and the recipe's nonce "empty")."""
    start, end = (entry["start_char"], entry["end_char"]) if entry["start_char"] is not None else (0, 0)
    return {"score": float(entry["probability"]), "start": int(start), "end": int(end), "answer": entry["text"]}
