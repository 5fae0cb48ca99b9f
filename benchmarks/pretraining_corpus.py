"""Builds a small English pretraining corpus from the documentation of the installed Python packages.

Nothing is downloaded: the text comes from the docstrings of `.py` modules, the `.md`/`.rst` files and
the long descriptions (`METADATA`) of the packages under a site-packages directory. Each source file
is one document (so next-sentence "random" pairs mostly come from another package: a topic shift, as
between the Wikipedia articles of the original corpus). Output, in the format of
`recipes/create_pretraining_data.py`: one sentence per line, a blank line between documents; the
documents are shuffled with a fixed seed and split into a training and a held-out file.

    python benchmarks/pretraining_corpus.py --output_dir /tmp/corpus --max_mb 5

The result is deterministic for a given set of installed packages.
"""

import argparse
import ast
import os
import random
import re
import sys
import sysconfig

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
_MARKUP = re.compile(r"`+|\*\*|:\w+:|\|")


def clean_paragraphs(text):
    """Prose paragraphs of a docstring / rst / markdown text: code, tables and headings dropped."""
    paragraphs, current = [], []
    for raw in text.splitlines():
        line = raw.strip()
        is_code = raw.startswith(("    ", "\t")) and not current or line.startswith((">>>", "...", "$ ", "```", ".. ", "::"))
        words = line.split()
        letters = sum(c.isalpha() or c == " " for c in line)
        if is_code or len(words) < 3 or letters < 0.8 * len(line) or line.startswith(("#", "=", "-", "+", "*  ")):
            if current:
                paragraphs.append(" ".join(current))
                current = []
            continue
        current.append(_MARKUP.sub("", line))
    if current:
        paragraphs.append(" ".join(current))
    return paragraphs


def sentences(paragraphs):
    """Sentences of at least 4 words, one per item."""
    out = []
    for paragraph in paragraphs:
        for sentence in _SENTENCE_SPLIT.split(paragraph):
            sentence = " ".join(sentence.split())
            if len(sentence.split()) >= 4 and len(sentence) < 600:
                out.append(sentence)
    return out


def python_docstrings(path):
    """Module, class and function docstrings of a `.py` file, concatenated."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (SyntaxError, UnicodeDecodeError, ValueError, RecursionError, MemoryError):
        return ""
    texts = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            if doc:
                texts.append(doc.split("\n\n    Args")[0])
    return "\n\n".join(texts)


def metadata_description(path):
    """The long description of a dist-info `METADATA` file (the part after the header)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    return text.split("\n\n", 1)[1] if "\n\n" in text else ""


def collect_documents(site_packages, max_chars_per_package, max_files_per_package):
    """[(source, [sentences])] in a deterministic order, at most `max_chars_per_package` per top-level entry."""
    documents = []
    for entry in sorted(os.listdir(site_packages)):
        root = os.path.join(site_packages, entry)
        if entry.startswith(("_", ".")) or entry == "__pycache__":
            continue
        if entry.endswith(".dist-info"):
            metadata = os.path.join(root, "METADATA")
            if os.path.isfile(metadata):
                sents = sentences(clean_paragraphs(metadata_description(metadata)))
                if len(sents) >= 3:
                    documents.append((f"{entry}/METADATA", sents))
            continue
        if not os.path.isdir(root):
            continue
        budget, files = max_chars_per_package, 0
        for directory, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", "tests", "test", "_vendor"))
            for name in sorted(filenames):
                if budget <= 0 or files >= max_files_per_package:
                    break
                path = os.path.join(directory, name)
                if name.endswith(".py"):
                    text = python_docstrings(path)
                elif name.endswith((".md", ".rst")):
                    with open(path, encoding="utf-8", errors="replace") as f:
                        text = f.read()
                else:
                    continue
                sents = sentences(clean_paragraphs(text))
                if len(sents) >= 3:
                    documents.append((os.path.relpath(path, site_packages), sents))
                    budget -= sum(len(s) + 1 for s in sents)
                    files += 1
    return documents


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--site_packages", default=sysconfig.get_paths()["purelib"])
    p.add_argument("--output_dir", required=True)
    p.add_argument("--max_mb", type=float, default=5.0, help="Approximate corpus size (train + held-out).")
    p.add_argument("--max_kb_per_package", type=float, default=150.0)
    p.add_argument("--max_files_per_package", type=int, default=400)
    p.add_argument("--heldout_fraction", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=12345)
    args = p.parse_args(argv)

    documents = collect_documents(args.site_packages, int(args.max_kb_per_package * 1024), args.max_files_per_package)
    random.Random(args.seed).shuffle(documents)
    kept, total = [], 0
    for source, sents in documents:
        if total >= args.max_mb * 1024 * 1024:
            break
        kept.append((source, sents))
        total += sum(len(s) + 1 for s in sents) + 1
    num_heldout = max(1, int(len(kept) * args.heldout_fraction))
    splits = {"heldout.txt": kept[:num_heldout], "train.txt": kept[num_heldout:]}
    os.makedirs(args.output_dir, exist_ok=True)
    for name, docs in splits.items():
        with open(os.path.join(args.output_dir, name), "w", encoding="utf-8") as f:
            f.write("\n\n".join("\n".join(sents) for _, sents in docs) + "\n")
    with open(os.path.join(args.output_dir, "sources.txt"), "w", encoding="utf-8") as f:
        for name, docs in splits.items():
            f.writelines(f"{name}\t{source}\n" for source, _ in docs)
    packages = {source.split("/")[0] for source, _ in kept}
    print(
        f"{len(kept)} documents from {len(packages)} packages, {total / 1e6:.2f} MB "
        f"({num_heldout} documents held out) -> {args.output_dir}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
