"""Run in a fresh process by the export tests: serve a SavedModel with only TensorFlow + tensorflow-text.

keras_bert_impl is made unimportable (and the repository is taken off sys.path) before TensorFlow loads the
export, so the export stands on its own. (`import tensorflow` itself imports keras, so keras is present.)
Usage: python serve_saved_model.py JOBS_JSON, a list of [export_dir, signature, {input: values}]
-> prints RESULT [outputs of each job as JSON, or {"error": message} of an input the signature refuses]
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


class _Unimportable:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "keras_bert_impl":
            raise ImportError(f"{name} must not be needed to serve the export")
        return None


sys.meta_path.insert(0, _Unimportable())
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]

import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401  (registers the tokenizer's ops)


def plain(value):
    value = value.numpy()
    if value.dtype == object:
        return [[v.decode("utf-8") for v in row] for row in value] if value.ndim == 2 else [v.decode("utf-8") for v in value]
    return value.tolist()


results = []
loaded = {}  # export_dir -> the loaded SavedModel: loading one is most of a job's time
for export_dir, signature, inputs in json.loads(sys.argv[1]):
    if export_dir not in loaded:
        loaded[export_dir] = tf.saved_model.load(export_dir)
    served = loaded[export_dir]
    # An empty list is an empty batch of strings (tf.constant([]) would be float32).
    try:
        outputs = served.signatures[signature](**{k: tf.constant(v, tf.string) if v == [] else tf.constant(v)
                                                  for k, v in inputs.items()})
    except tf.errors.InvalidArgumentError as error:  # an input the signature refuses: its message
        results.append({"error": error.message})
        continue
    results.append({k: plain(v) for k, v in outputs.items()})
assert not [name for name in sys.modules if name.startswith("keras_bert_impl")]
print("RESULT " + json.dumps(results))
