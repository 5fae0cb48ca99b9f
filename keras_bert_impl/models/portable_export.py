"""`PortableExport`: Keras' `model.export(path, format=...)` on the package's models, "litert" and "onnx" written
by the package's exporters (`export.tf_litert.export_litert`: LiteRT builtin operators only, so the stock
`ai_edge_litert` interpreter runs the file; `export.onnx_export.export_onnx`), every other format by Keras.

The exporters sit in the `export` tier, above `models`: each registers itself here when its module is
imported (`register_exporter`). A model does not import them (the export is a TensorFlow graph (LiteRT) or
needs the `onnx` package); the package root declares which module registers each format
(`utils.registering_modules`, registry `EXPORTERS_REGISTRY`), and `export` imports it the first time its format
is asked for. An exporter that uses Keras' own export calls `keras.Model.export(model, ...)`.
"""

import collections

from keras_bert_impl.utils import registering_modules

# The name under which the package root declares the modules that register exporters.
EXPORTERS_REGISTRY = "exporters"

Exporter = collections.namedtuple("Exporter", ["function", "accepted"])
# format -> its Exporter: function(model, path, **kwargs), and the keyword arguments it takes besides the model
# and the path.
_EXPORTERS = {}


def register_exporter(format, accepted_kwargs):
    """Registers the decorated function(model, path, **kwargs) as the exporter of `model.export(path,
    format=format)`, taking the keyword arguments `accepted_kwargs`.

    Examples:

    >>> @register_exporter("example", ("note",))
    ... def export_example(model, path, note=""):
    ...     return path
    >>> exporter("example").accepted
    ('note',)
    >>> _ = _EXPORTERS.pop("example")
    """

    def register(function):
        _EXPORTERS[format] = Exporter(function, tuple(accepted_kwargs))
        return function

    return register


def exporter(format):
    """The `Exporter` of `format` (its declared module imported the first time), or None: Keras exports it."""
    if format not in _EXPORTERS and registering_modules.is_declared(EXPORTERS_REGISTRY, format):
        registering_modules.import_declared(EXPORTERS_REGISTRY, format)
    return _EXPORTERS.get(format)


class PortableExport:
    """Mixin of `BertBackbone` and `BertTaskModel`: `export(path, format="litert" | "onnx")` writes what
    `export_litert` / `export_onnx` write; `format="tf_saved_model"` (the default) and Keras' other formats
    are Keras' own."""

    def export(self, filepath, format="tf_saved_model", verbose=None, input_signature=None, **kwargs):
        """Exports the model: `format` "litert" (a `.tflite` file the stock LiteRT interpreter runs; keyword
        arguments `batch_size`, `quantization`) or "onnx" (a `.onnx` file with dynamic batch and sequence axes;
        `opset_version`) through the package's exporters, the model's own inputs as the signature; any other
        format through `keras.Model.export`.

        Raises:
            TypeError: an `input_signature` or a keyword argument that the package's exporter does not take.
            keras_bert_impl.utils.optional_dependencies.MissingDependencyError: the exporter's packages are not
                installed (one line naming the pip command; nothing is written).
        """
        found = exporter(format)
        if found is None:
            return super().export(filepath, format=format, verbose=verbose, input_signature=input_signature,
                                  **kwargs)
        unknown = sorted(set(kwargs) - set(found.accepted)) + (["input_signature"] if input_signature is not None else [])
        if unknown:
            raise TypeError(f"{type(self).__name__}.export(format={format!r}) takes {', '.join(found.accepted)}; not "
                            f"{', '.join(unknown)} (the signature is the model's own inputs).")
        return found.function(self, filepath, **kwargs)
