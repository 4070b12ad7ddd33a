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
