"""The Tokens tab's use cases: every shipped tokenizer, the merge replay, BPE from scratch."""

import pytest

import lab
from lab import policy, tokens

SPECIAL = {"[CLS]", "[SEP]", "<s>", "</s>"}  # what a WordPiece or SentencePiece file adds around the text


def test_tokens_use_case_says_in_one_line_when_a_tokenizer_cannot_read_the_text():
    text, tokenized, _ = tokens.tokenize("Hello world")
    digits = [t for t in tokenized if "translate-copy" in t.label]
    assert digits and digits[0].problem and "cannot represent" in digits[0].problem
    assert any(t.spans and not t.problem for t in tokenized)


def test_every_tokenizer_gives_ids_character_spans_and_byte_spans():
    text = "Hi 😍 π!"
    data = text.encode("utf-8")
    char_at_byte = [i for i, c in enumerate(text) for _ in c.encode("utf-8")]  # byte offset -> its character
    read, views, notice = tokens.tokenize(text)
    assert (read, notice) == (text, "")
    files = {p.read_bytes() for p in lab.store.DEFAULT_MODEL_DIR.glob("*/tokenizer.json")}
    assert len(views) == len(files)  # models sharing a tokenizer file share one panel
    shared = next(v for v in views if "shakespeare-lm" in v.label)
    assert shared.label.startswith("cheat-causal, cheat-nomask, shakespeare-bpe, shakespeare-lm · byte-level BPE")
    for view in views:
        name = view.label.split(",")[0].split(" ·")[0]
        tokenizer = lab.store.tokenizer(name)
        assert [s.id for s in view.spans] == tokenizer.encode(text), view.label
        real = [s for s in view.spans if s.text not in SPECIAL]
        assert real[0].byte_start == 0 and real[-1].byte_end == len(data)
        assert all(a.byte_end == b.byte_start or b.byte_start == a.byte_end + 1  # a skipped space at most
                   for a, b in zip(real, real[1:])), view.label
        for s in real:  # each token's characters are the characters of its bytes
            assert (s.start, s.end) == (char_at_byte[s.byte_start], char_at_byte[s.byte_end - 1] + 1), (view.label, s)
    emoji = [s for s in shared.spans if s.start == 3]
    assert len(emoji) == 4 and [s.byte_end - s.byte_start for s in emoji] == [1, 1, 1, 1]  # 4 bytes, 1 character
    assert shared.spans[0].id == lab.store.tokenizer("shakespeare-lm").token_to_id("H")


def test_a_tokenizer_is_flagged_only_when_most_of_the_text_is_unknown_to_it():
    def problem(text):
        return next(v for v in tokens.tokenize(text)[1] if v.label.startswith("translate-copy")).problem

    assert problem("31415926x") == "" and problem("x1") == ""  # half or fewer unknown: drawn, [UNK] chips and all
    assert "2 of its 3 tokens would be [UNK]" in problem("xy1")
    assert tokens.tokenize("") == ("", [], "")


def test_merge_replay_clamps_k_and_ends_at_the_tokenizers_own_encoding():
    bpe = lab.store.tokenizer(tokens.REPLAY_MODEL)
    text = "Shall I compare thee to a summer's day?"
    read, k, spans, last, name = tokens.replay(text, 10**9)
    assert k == len(bpe.merges) and [s.id for s in spans] == bpe.encode(text) and last == bpe.merges[-1]
    assert name == tokens.REPLAY_MODEL
    _, k, spans, last, _ = tokens.replay(text, -5)
    assert k == 0 and last is None and len(spans) == len(text.encode("utf-8"))  # one token per byte
    _, k, spans, last, _ = tokens.replay(text, 1)
    assert last == bpe.merges[0] and len(spans) < len(text.encode("utf-8"))
    assert tokens.merge_text("Ġthe") == " the"
    assert tokens.replay_merges() == max(len(bpe.merges), len(lab.store.tokenizer(tokens.REPLAY_MODEL_ZH).merges))
    text, training, notice = tokens.scratch("low lower " * 300)
    assert len(text) == tokens.SCRATCH_MAX_CHARS and "3,000 characters" in notice and training is not None
    assert tokens.scratch(None) == ("", None, "")


def test_chinese_text_replays_the_bpe_learned_on_chinese_whose_first_merges_build_characters():
    chinese = lab.store.tokenizer(tokens.REPLAY_MODEL_ZH)
    text = "这只动物没有过马路，因为它太累了。"
    _, k, spans, last, name = tokens.replay(text, 0)
    assert name == tokens.REPLAY_MODEL_ZH and len(spans) == len(text.encode("utf-8"))
    _, k, spans, last, _ = tokens.replay(text, 6)  # merges 5 and 6 build 的, 1 and 3 build the full-width comma
    assert tokens.merge_text(chinese.merges[5][0] + chinese.merges[5][1], name) == "的"
    assert "，" in [s.text for s in spans]
    assert tokens.merge_text(chinese.merges[5][1], name) == "\\x84"  # a split character's byte, as chips show it
    _, k, spans, _, _ = tokens.replay(text, 10**9)
    assert k == len(chinese.merges) and [s.id for s in spans] == chinese.encode(text)
    assert tokens.replay("Mixed 中文 text", 3)[4] == tokens.REPLAY_MODEL  # mostly Latin letters: the English BPE


def test_a_model_folder_without_readable_tokenizers_is_said_plainly(tmp_path):
    lab.store.set_model_dir(tmp_path)
    try:
        with pytest.raises(policy.InputError, match="No readable tokenizer.json"):
            tokens.tokenize("hello")
        (tmp_path / "broken").mkdir()
        (tmp_path / "broken" / "tokenizer.json").write_text("{not json")
        (tmp_path / "chars").mkdir()
        (tmp_path / "chars" / "tokenizer.json").write_bytes(
            (lab.store.DEFAULT_MODEL_DIR / "shakespeare-char" / "tokenizer.json").read_bytes())
        _, views, notice = tokens.tokenize("hello")
        assert [v.label.split(" ·")[0] for v in views] == ["chars"] and "Skipped broken" in notice
    finally:
        lab.store.set_model_dir(lab.store.DEFAULT_MODEL_DIR)


def test_tokenize_reads_the_tokenizer_files_once_not_on_every_call(monkeypatch):
    """Issue 33 item 10: tokenize re-read every tokenizer.json on each call (5.4 of its 5.7 ms)."""
    from pathlib import Path

    tokens.tokenize("Hello")
    reads = []
    real = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: reads.append(self) or real(self, *a, **k))
    _, tokenized, _ = tokens.tokenize("Hello again")
    assert tokenized and [p for p in reads if p.name == "tokenizer.json"] == []


def test_the_seed_pair_costs_more_tokens_in_chinese_on_the_english_bpe_and_fewer_on_the_chinese_one():
    from lab import tokens

    (english, chinese), rows = tokens.cost_pair()
    by_name = {str(label): (len(en), len(zh)) for label, en, zh in rows}
    shakespeare = next(v for k, v in by_name.items() if "shakespeare-bpe" in k)
    assert shakespeare[1] > 2 * len(chinese) > shakespeare[0]  # 2-3 tokens per character: a byte each
    chinese_bpe = next(v for k, v in by_name.items() if "chinese-bpe" in k)
    assert chinese_bpe[1] <= len(chinese) < shakespeare[1]
