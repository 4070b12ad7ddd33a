"""Issue 49's small ones in the use cases: a refusal never sends a huge input back."""

import pytest

from lab import heads, masking
from lab.policy import InputError

TEN_MB = "L0H0x" * 2_000_000


def test_a_bad_head_list_of_10_mb_is_refused_without_echoing_it():
    with pytest.raises(InputError) as refused:
        heads.parse_heads(TEN_MB, ["decoder"])
    assert len(str(refused.value)) < 500


@pytest.mark.parametrize("global_text", [" ".join(map(str, range(700_000))), "x" * 10_000_000])
def test_4_mb_of_global_positions_is_refused_briefly_not_drawn(global_text):
    with pytest.raises(InputError) as refused:
        masking.global_positions(global_text)
    assert len(str(refused.value)) < 500  # a 4 MB list made a 66 MB answer


def test_positions_typed_by_hand_still_read():
    assert masking.global_positions("0, 5 9") == (0, 5, 9)


# ---------------------------------------------------------------- issue 61: a refusal quotes a value briefly

from i18n import render  # noqa: E402
from lab import forward, generate, translate  # noqa: E402
from lab.policy import QUOTED_CHARS, clamp, quoted  # noqa: E402

TWO_MB = "x" * 2_000_000
DIGITS_5000 = "1" * 5000


@pytest.mark.parametrize("value, shown", [
    (TWO_MB, "'" + "x" * QUOTED_CHARS + "…' (2,000,000 characters)"),
    ("fine", "'fine'"),
    (10**5000, "an integer of about 5,000 digits"),
    (["a"] * 1_000_000, "… (1,000,000 items)"),
], ids=["2 MB text", "short text", "5,000 digits", "a million items"])
def test_a_quoted_value_shows_its_start_and_its_length(value, shown):
    said = quoted(value)
    assert shown in said and len(said) <= QUOTED_CHARS + 40


def test_a_quoted_length_is_in_the_readers_language():
    assert render(quoted(TWO_MB), "zh-CN").endswith("（共 2,000,000 个字符）")


@pytest.mark.parametrize("refuse", [
    lambda: heads.parse_heads("L" + DIGITS_5000 + "H0", ["decoder"]),  # int() refuses 5,000 digits: no message
    lambda: heads.positions(["the", "cat"], DIGITS_5000),
    lambda: heads.positions(["the", "cat"], DIGITS_5000 + ":"),
    lambda: heads.positions(["the", "cat"], TWO_MB),
    lambda: forward.stage_of(TWO_MB),
    lambda: masking.settings(TWO_MB, 4, 1, 1, "", True, []),
    lambda: translate.checkpoint_of(TWO_MB),
    lambda: generate.load(TWO_MB),
    lambda: clamp(TWO_MB, 0, 5, "Layer"),
], ids=["head L<5,000 digits>H0", "query of 5,000 digits", "query of 5,000 digits and a colon", "query of 2 MB",
        "stage of 2 MB", "mask kind of 2 MB", "task of 2 MB", "generation model of 2 MB", "layer of 2 MB"])
def test_a_huge_or_endless_value_is_refused_with_a_short_message(refuse):
    with pytest.raises(InputError) as refused:
        refuse()
    said = str(refused.value)
    assert 0 < len(said) <= 300 and "…" in said, said
