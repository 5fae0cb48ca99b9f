"""Run in a fresh process by the export tests: serve a SavedModel with only TensorFlow + tensorflow-text.

keras_bert_impl is made unimportable (and the repository is taken off sys.path) before TensorFlow loads the
export, so the export stands on its own. (`import tensorflow` itself imports keras, so keras is present.)
Usage: python serve_saved_model.py EXPORT_DIR SIGNATURE JSON_INPUTS  -> prints RESULT {json outputs}
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

export_dir, signature, inputs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
served = tf.saved_model.load(export_dir)
outputs = served.signatures[signature](**{k: tf.constant(v) for k, v in inputs.items()})


def plain(value):
    value = value.numpy()
    return [v.decode("utf-8") for v in value.reshape(-1)] if value.dtype == object else value.tolist()


result = {k: plain(v) for k, v in outputs.items()}
result["shapes"] = {k: list(v.shape) for k, v in outputs.items()}
assert not [name for name in sys.modules if name.startswith("keras_bert_impl")]
print("RESULT " + json.dumps(result))
