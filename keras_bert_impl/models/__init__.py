"""The models: the backbone and the task models, each registered with its names where it is defined
(`keras_bert_impl.checkpoints.task_registry`).

Importing this package imports each of its modules, so that every model class is registered before any model
directory is read, exported or served (`task_registry.stored_entry` finds the class a directory holds among the
registered ones): a new head's module in this folder registers without being listed anywhere.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
