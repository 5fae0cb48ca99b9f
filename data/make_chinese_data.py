"""Writes data/chinese/: small, deterministic Chinese sets in the formats Chinese BERT users have, for
docs/chinese.md's flows (no downloads).

    python data/make_chinese_data.py      # rewrites data/chinese/

    cls/{train,dev}.jsonl        text classification, CLUE style: {"sentence": ..., "label": "体育"|"财经"|"科技"}
    msra/{train,dev,test}.txt    NER, MSRA / People's Daily style: one "character TAG" line per character
                                 (BIO tags PER, LOC, ORG), a blank line after every sentence
    cluener/{train,dev}.json     NER, CLUENER2020 JSON lines: {"text": ..., "label": {type: {entity: [[start, end]]}}}
                                 (end inclusive), types name, address, company
    cmrc/{train,dev}.json        extractive QA, CMRC2018 / SQuAD format (unspaced contexts, answers by
                                 character offset; some answers occur twice in their context)
    corpus.txt                   raw text for whole-word-masking pretraining (documents split by blank lines)
    vocab.txt                    a character vocabulary of all of the above (BERT's special tokens first)
    bert_config.json             a tiny BERT (2 layers, H=128) of that vocabulary, for models trained from scratch

Sentences come from templates filled from name lists; the dev and test sets use names that never occur in
the training set, so their scores measure generalization from context. The output depends only on SEED.
"""

import json
import os
import random

SEED = 20181011  # BERT's arXiv date
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chinese")

SURNAMES = list("王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程")
GIVEN = ["伟", "芳", "娜", "敏", "静", "丽", "强", "磊", "军", "洋", "勇", "艳", "杰", "娟", "涛", "明", "超", "秀英",
         "霞", "平", "刚", "桂英", "建华", "志强", "晓明", "海燕", "文博", "思远", "雨桐", "子涵"]
LOCATIONS = ["北京", "上海", "广州", "深圳", "杭州", "南京", "成都", "武汉", "西安", "重庆", "天津", "苏州", "长沙",
             "郑州", "青岛", "厦门", "昆明", "大连", "沈阳", "哈尔滨", "济南", "福州", "合肥", "南昌", "贵阳", "兰州"]
ORGS = ["清华大学", "北京大学", "复旦大学", "浙江大学", "中国银行", "招商银行", "华为公司", "腾讯公司", "阿里巴巴",
        "百度公司", "小米集团", "中国移动", "国家电网", "中国科学院", "人民医院", "中山大学", "南开大学", "武汉大学",
        "京东集团", "美团公司", "字节跳动", "中国石油", "上海交通大学", "同济大学"]

NER_TEMPLATES = [
    "{PER}昨天从{LOC}回到了{ORG}。", "{ORG}的{PER}表示将在{LOC}设立新的办公室。", "记者在{LOC}采访了{PER}。",
    "{PER}和{PER}下周将在{LOC}会面。", "{ORG}宣布{PER}担任新的负责人。", "来自{LOC}的{PER}加入了{ORG}。",
    "{LOC}今天的天气很好。", "{PER}说{ORG}的业绩增长很快。", "{ORG}与{ORG}在{LOC}签署了合作协议。",
    "明天{PER}将前往{LOC}参加会议。", "这项研究由{ORG}完成。", "{PER}在{LOC}生活了十年。",
]
CLS_TEMPLATES = {
    "体育": ["{PER}在比赛中打进两球，帮助球队取得胜利。", "{LOC}队以三比一战胜对手，晋级决赛。",
             "{PER}获得了本届运动会的金牌。", "篮球联赛今晚在{LOC}开幕，球迷热情高涨。",
             "{PER}打破了全国游泳纪录。", "教练{PER}对球员的表现非常满意。"],
    "财经": ["{ORG}的股价今天上涨了百分之三。", "{LOC}的房价连续三个月下降。", "{ORG}发布了年度财务报告，利润增长。",
             "央行宣布下调贷款利率。", "{PER}认为今年的经济形势稳中向好。", "{LOC}证券交易所成交量放大。"],
    "科技": ["{ORG}发布了新一代人工智能芯片。", "{PER}团队研制出新型电池材料。", "{LOC}建成了全国最大的数据中心。",
             "{ORG}推出了新的手机操作系统。", "研究人员利用机器学习预测蛋白质结构。", "{PER}在{ORG}研究量子计算。"],
}
QA_FACTS = [
    ("{PER}出生于{LOC}，后来在{ORG}工作。", [("{PER}出生于哪里？", "{LOC}"), ("{PER}在哪里工作？", "{ORG}")]),
    ("{ORG}位于{LOC}，由{PER}创立。", [("{ORG}位于哪个城市？", "{LOC}"), ("谁创立了{ORG}？", "{PER}")]),
    ("{PER}认识{PER2}。{PER2}的朋友是{PER}。", [("{PER2}的朋友是谁？", "{PER}@last")]),
]
SPLITS = {"train": 0.6, "dev": 0.2, "test": 0.2}


def _names(rng):
    people = sorted({s + g for s in SURNAMES for g in GIVEN})
    rng.shuffle(people)
    pools = {"PER": people[:600], "LOC": list(LOCATIONS), "ORG": list(ORGS)}
    split = {}
    for kind, names in pools.items():
        names = list(names)
        rng.shuffle(names)
        a, b = int(len(names) * SPLITS["train"]), int(len(names) * (SPLITS["train"] + SPLITS["dev"]))
        split[kind] = {"train": names[:a], "dev": names[a:b], "test": names[b:]}
    return split


def _fill(template, names, rng):
    """(text, [(start, end_exclusive, type)]) of a template filled with names of the split."""
    text, entities = "", []
    rest = template
    while "{" in rest:
        before, _, after = rest.partition("{")
        kind, _, rest = after.partition("}")
        text += before
        name = rng.choice(names[kind])
        entities.append((len(text), len(text) + len(name), kind))
        text += name
    return text + rest, entities


def write_msra(path, sentences):
    with open(path, "w", encoding="utf-8") as f:
        for text, entities in sentences:
            tags = ["O"] * len(text)
            for start, end, kind in entities:
                tags[start] = f"B-{kind}"
                tags[start + 1:end] = [f"I-{kind}"] * (end - start - 1)
            f.write("".join(f"{c} {t}\n" for c, t in zip(text, tags)) + "\n")


CLUENER_TYPES = {"PER": "name", "LOC": "address", "ORG": "company"}


def write_cluener(path, sentences):
    with open(path, "w", encoding="utf-8") as f:
        for text, entities in sentences:
            label = {}
            for start, end, kind in entities:
                spans = label.setdefault(CLUENER_TYPES[kind], {}).setdefault(text[start:end], [])
                spans.append([start, end - 1])
            f.write(json.dumps({"text": text, "label": label}, ensure_ascii=False) + "\n")


def qa_records(names, rng, count, prefix):
    paragraphs = []
    for i in range(count):
        template, questions = QA_FACTS[i % len(QA_FACTS)]
        values = {k: rng.choice(v) for k, v in names.items()}
        values["PER2"] = rng.choice([p for p in names["PER"] if p != values["PER"]])
        context = template.format(**values)
        qas = []
        for j, (question, answer) in enumerate(questions):
            last = answer.endswith("@last")
            text = answer.replace("@last", "").format(**values)
            start = context.rfind(text) if last else context.find(text)
            qas.append({"id": f"{prefix}-{i}-{j}", "question": question.format(**values),
                        "answers": [{"text": text, "answer_start": start}]})
        paragraphs.append({"context": context, "qas": qas})
    return {"version": "cmrc2018-style", "data": [{"title": prefix, "paragraphs": paragraphs}]}


def main():
    rng = random.Random(SEED)
    names = _names(rng)
    sizes = {"train": 400, "dev": 100, "test": 100}
    ner = {split: [_fill(rng.choice(NER_TEMPLATES), {k: v[split] for k, v in names.items()}, rng)
                   for _ in range(n)] for split, n in sizes.items()}
    cls = {split: [] for split in ("train", "dev")}
    for split in cls:
        for _ in range(sizes[split]):
            label = rng.choice(sorted(CLS_TEMPLATES))
            text, _ = _fill(rng.choice(CLS_TEMPLATES[label]), {k: v[split] for k, v in names.items()}, rng)
            cls[split].append({"sentence": text, "label": label})
    qa = {split: qa_records({k: v[split] for k, v in names.items()}, rng, n // 2, split)
          for split, n in sizes.items() if split != "test"}
    corpus = []
    for d in range(60):
        corpus += [_fill(rng.choice(NER_TEMPLATES + sum(CLS_TEMPLATES.values(), [])),
                         {k: v["train"] for k, v in names.items()}, rng)[0] for _ in range(rng.randint(3, 8))]
        corpus.append("")

    for folder in ("cls", "msra", "cluener", "cmrc"):
        os.makedirs(os.path.join(ROOT, folder), exist_ok=True)
    for split, records in cls.items():
        with open(os.path.join(ROOT, "cls", f"{split}.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    for split, sentences in ner.items():
        write_msra(os.path.join(ROOT, "msra", f"{split}.txt"), sentences)
        if split != "test":
            write_cluener(os.path.join(ROOT, "cluener", f"{split}.json"), sentences)
    for split, data in qa.items():
        with open(os.path.join(ROOT, "cmrc", f"{split}.json"), "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, indent=1)
    with open(os.path.join(ROOT, "corpus.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(corpus) + "\n")

    texts = [r["sentence"] for s in cls.values() for r in s] + [t for s in ner.values() for t, _ in s] + corpus
    texts += [p["context"] + q["question"] for d in qa.values() for p in d["data"][0]["paragraphs"] for q in p["qas"]]
    characters = sorted({c for text in texts for c in text if not c.isspace()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *characters]
    with open(os.path.join(ROOT, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    config = {"vocab_size": len(vocab), "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
              "intermediate_size": 512, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
              "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 512, "type_vocab_size": 2,
              "initializer_range": 0.02}
    with open(os.path.join(ROOT, "bert_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    print(f"wrote {ROOT}: {len(vocab)} vocabulary entries")


if __name__ == "__main__":
    main()
