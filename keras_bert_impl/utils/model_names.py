"""Models by name: a Hugging Face hub name or a keras-hub preset, resolved to a directory on disk.

`resolve_model_path` is the one place where what a user names becomes files:

    a path on disk                   itself (a directory, a Google checkpoint prefix, a config file)
    bert-base-uncased, org/name      the Hugging Face hub: its snapshot in the local cache (huggingface_hub),
    org/name@revision, hf://org/name downloaded into the cache first when it is not there and the hub is
                                     reachable; with HF_HUB_OFFLINE=1 the cache only
    kaggle://owner/model/keras/v/N   a keras-hub preset on Kaggle (kagglehub), cached likewise
    bert_base_en_uncased             a keras-hub preset name: its Kaggle handle (needs keras-hub)

huggingface_hub and kagglehub are optional packages, installed on their own (`pip install huggingface_hub`,
`pip install kagglehub`): a name needs them, a path does not. A name that cannot be resolved (offline and not
cached, not installed, unknown) raises one `CheckpointNotFoundError` line naming the model, the cache folder
and how to fetch it. docs/checkpoints.md, "Models by name and the offline cache", says how to fill the cache for a
machine without network.
"""

import os
import re

from keras_bert_impl.utils.errors import CheckpointNotFoundError

# What a checkpoint directory needs, fetched from the hub (weights in safetensors; pytorch_model.bin only when
# the repository has no safetensors file).
HUB_FILES = ("config.json", "bert_config.json", "*.safetensors", "model.safetensors.index.json", "vocab.txt",
             "tokenizer_config.json", "tokenizer.json", "bert_model.ckpt.*")
HUB_FALLBACK_FILES = ("pytorch_model.bin",)

# org/name or name, each part of letters, digits, "-", "_", "."; optionally @revision.
_HUB_NAME = re.compile(r"^(?:hf://)?(?P<repo>[A-Za-z0-9][\w.-]*(?:/[A-Za-z0-9][\w.-]*)?)(?:@(?P<revision>[\w./-]+))?$")
_TRUE = ("1", "true", "yes", "on")


def hf_cache_dir():
    """The Hugging Face hub cache folder, as huggingface_hub computes it (read at call time)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface")
    return os.path.join(home, "hub")


def hub_offline():
    """Whether HF_HUB_OFFLINE is set (the cache only, no network)."""
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in _TRUE


def is_local(path):
    """Whether `path` names something on disk (a directory, a file or a Google checkpoint prefix)."""
    return os.path.exists(path) or os.path.isfile(path + ".index")


def looks_like_a_path(name):
    """Whether `name` is written as a path (absolute, ~, ./, ../, a Windows drive, or several folders)
    rather than a hub name, so that a missing directory is reported as missing, not looked up on the hub."""
    return (os.path.isabs(name) or name.startswith(("~", "./", "../", ".\\")) or name.count("/") > 1
            or bool(re.match(r"^[A-Za-z]:[\\/]", name)))


def resolve_model_path(name_or_path):
    """The local path of the model that `name_or_path` names (see the module docstring).

    Raises:
        CheckpointNotFoundError: nothing on disk there and the name cannot be resolved; one line.

    Examples:

    >>> import tempfile
    >>> directory = tempfile.mkdtemp()
    >>> resolve_model_path(directory) == directory
    True
    >>> try:
    ...     resolve_model_path("/no/such/model")
    ... except FileNotFoundError as error:
    ...     print(error)
    No checkpoint at /no/such/model
    """
    name = os.fspath(name_or_path)
    if is_local(name):
        return name
    if name.startswith("kaggle://"):
        return _kaggle_preset(name)
    match = _HUB_NAME.match(name)
    if match is None or (looks_like_a_path(name) and not name.startswith("hf://")):
        raise CheckpointNotFoundError(f"No checkpoint at {name}")
    if "/" not in match.group("repo") and "_" in name and not name.startswith("hf://"):
        handle = _keras_hub_handle(name)
        if handle is not None:
            return _kaggle_preset(handle, name)
    return _hf_snapshot(match.group("repo"), match.group("revision"), name)


def _hf_snapshot(repo, revision, name):
    """The cached snapshot folder of the hub repository `repo` (downloaded first when online)."""
    try:
        import huggingface_hub
    except ImportError:
        raise CheckpointNotFoundError(
            f"{name}: no such directory, and loading a model by name needs huggingface_hub (pip install "
            "huggingface_hub), which downloads it into the local cache; or pass a directory holding its files."
        ) from None
    cache = hf_cache_dir()
    offline = hub_offline()
    try:
        path = huggingface_hub.snapshot_download(repo, revision=revision, cache_dir=cache, local_files_only=offline,
                                                 allow_patterns=list(HUB_FILES))
        if not any(f.endswith((".safetensors", ".index", ".safetensors.index.json")) for f in os.listdir(path)):
            path = huggingface_hub.snapshot_download(repo, revision=revision, cache_dir=cache,
                                                     local_files_only=offline, allow_patterns=list(HUB_FALLBACK_FILES))
    except Exception as error:  # noqa: BLE001 (offline and not cached, no network, no such repository)
        how = (f"it is not in the Hugging Face cache ({cache}) and HF_HUB_OFFLINE=1 allows no download; fetch it "
               f"where the hub is reachable with `hf download {repo}` (the same HF_HOME), or pass a local directory")
        if not offline:
            how = (f"no such directory, and the Hugging Face hub could not give it ({_short(error)}); check the "
                   f"name and the network, or pass a local directory (cache: {cache})")
        raise CheckpointNotFoundError(f"{name}: {how}.") from None
    return path


def _keras_hub_handle(name):
    """The Kaggle handle of the keras-hub BERT preset `name` (e.g. bert_base_en_uncased), or None."""
    try:
        import keras_hub
    except ImportError:
        return None
    preset = keras_hub.models.BertBackbone.presets.get(name)
    return None if preset is None else preset.get("kaggle_handle")


def _kaggle_preset(handle, name=None):
    """The cached folder of a keras-hub preset on Kaggle (downloaded first when online)."""
    name = name or handle
    try:
        import kagglehub
    except ImportError:
        raise CheckpointNotFoundError(f"{name}: loading a keras-hub preset needs kagglehub (pip install kagglehub), "
                                      "which downloads it into its cache; or pass the preset's local directory.") from None
    try:
        return kagglehub.model_download(handle.removeprefix("kaggle://"))
    except Exception as error:  # noqa: BLE001 (no network and not cached, no such preset)
        cache = os.environ.get("KAGGLEHUB_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "kagglehub")
        raise CheckpointNotFoundError(
            f"{name}: the keras-hub preset {handle} is not in the kagglehub cache ({cache}) and could not be "
            f"downloaded ({_short(error)}); fetch it where Kaggle is reachable, or pass the preset's local "
            "directory.") from None


def _short(error):
    """An exception as a short phrase: its type, and its first line when that is short."""
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return type(error).__name__ + (f": {first_line}" if first_line and len(first_line) <= 120 else "")
