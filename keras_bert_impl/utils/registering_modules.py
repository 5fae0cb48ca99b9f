"""Which module of an upper tier fills a lower tier's registry, declared by the package root.

A lower tier may own a registry that upper tiers fill when their modules are imported: the task registry
(`checkpoints.task_registry`), filled by the model classes of `models/`; the exporters of `model.export`
(`models.portable_export.register_exporter`), filled by `export.tf_litert` and `export.onnx_export`. The lower
tier may not import or name those modules (tests/test_architecture.py); the package root
(`keras_bert_impl/__init__.py`), above every tier, declares them here (`declare`), and the registry, asked for
a key it lacks, imports the module declared for it (`import_declared`), whose import registers it. Nothing here
imports anything until a registry asks, so `import keras_bert_impl` stays light.
"""

import importlib

# (registry, key) -> the module whose import registers the key.
_DECLARED = {}


def declare(registry, modules):
    """Declares, for `registry` (a name its owner looks keys up under), the module that registers each key:
    `modules` {key: module name}.

    Examples:

    >>> declare("examples", {"json": "json"})
    >>> is_declared("examples", "json"), is_declared("examples", "yaml")
    (True, False)
    """
    for key, module in modules.items():
        _DECLARED[(registry, key)] = module


def is_declared(registry, key):
    """Whether a module is declared to register `key` in `registry`."""
    return (registry, key) in _DECLARED


def import_declared(registry, key):
    """Imports the module declared to register `key` in `registry` (its import registers it); ImportError and
    the module's own errors (e.g. a missing optional dependency, in one line) pass through."""
    importlib.import_module(_DECLARED[(registry, key)])
