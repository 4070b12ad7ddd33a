"""Every mask builder against the rule it states, cell by cell, and every way to misuse it.

The rules are written out here as plain loops over (query i, key j), independent of the
tensor code in the builders; each builder must give exactly that matrix, kind and parameters.
"""

from __future__ import annotations

import doctest
import sys

import pytest
import torch

import transformer_core as tc

SIZES = [1, 2, 5, 9]


def rule_matrix(n: int, rule) -> torch.Tensor:
    return torch.tensor([[rule(i, j) for j in range(n)] for i in range(n)], dtype=torch.bool)


def window(w: int, causal: bool):
    return lambda i, j: 0 <= i - j <= w if causal else abs(i - j) <= w


def dilated(w: int, dilation: int, causal: bool):
    def rule(i, j):
        reach = i - j if causal else abs(i - j)
        return 0 <= reach <= w * dilation and (i - j) % dilation == 0

    return rule


def with_globals(w: int, tokens: list[int], causal: bool):
    return lambda i, j: (window(w, False)(i, j) or i in tokens or j in tokens) and (j <= i or not causal)


@pytest.mark.parametrize("n", SIZES)
def test_none_and_causal_masks_follow_their_rules(n):
    assert torch.equal(tc.no_mask(n).allowed, rule_matrix(n, lambda i, j: True))
    assert torch.equal(tc.causal_mask(n).allowed, rule_matrix(n, lambda i, j: j <= i))
    assert (tc.no_mask(n).kind, tc.causal_mask(n).kind) == ("none", "causal")
    assert tc.no_mask(n).params == {} == tc.causal_mask(n).params


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("w", [1, 2, 3])
@pytest.mark.parametrize("causal", [False, True])
def test_sliding_windows_follow_their_rule(n, w, causal):
    mask = tc.sliding_window_mask(n, w, causal)
    assert torch.equal(mask.allowed, rule_matrix(n, window(w, causal)))
    assert (mask.kind, mask.params) == ("sliding_window", {"w": w, "causal": causal})


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("w, dilation", [(1, 1), (1, 2), (2, 2), (2, 3), (3, 2)])
@pytest.mark.parametrize("causal", [False, True])
def test_dilated_windows_follow_their_rule(n, w, dilation, causal):
    mask = tc.dilated_window_mask(n, w, dilation, causal)
    assert torch.equal(mask.allowed, rule_matrix(n, dilated(w, dilation, causal)))
    assert (mask.kind, mask.params) == ("dilated_window", {"w": w, "dilation": dilation, "causal": causal})


@pytest.mark.parametrize("n, w, tokens", [(1, 1, [0]), (6, 1, [0]), (9, 2, [0, 5]), (9, 1, [8]), (9, 1, [])])
@pytest.mark.parametrize("causal", [False, True])
def test_global_windows_follow_their_rule(n, w, tokens, causal):
    mask = tc.global_window_mask(n, w, tokens, causal)
    assert torch.equal(mask.allowed, rule_matrix(n, with_globals(w, tokens, causal)))
    assert (mask.kind, mask.params) == ("global_window", {"w": w, "global_tokens": tokens, "causal": causal})


def test_padding_hides_each_rows_padding_keys_from_every_query():
    mask = tc.padding_mask([3, 1, 4], 5)
    expected = torch.stack([rule_matrix(5, lambda i, j, n=n: j < n) for n in (3, 1, 4)])
    assert torch.equal(mask.allowed, expected)
    assert (mask.kind, mask.params, mask.shape) == ("padding", {"lengths": [3, 1, 4]}, (3, 5, 5))
    assert tc.padding_mask([2, 3]).shape == (2, 3, 3)  # n defaults to the longest row
    mask.allowed[0, 0, 0] = False  # rows are separate tensors, not views of one row
    assert mask.allowed[0, 1, 0] and mask.allowed[1, 0, 0]


@pytest.mark.parametrize("kind, params, direct", [
    ("none", {}, lambda n: tc.no_mask(n)),
    ("causal", {}, lambda n: tc.causal_mask(n)),
    ("padding", {"lengths": [4, 2]}, lambda n: tc.padding_mask([4, 2], n)),
    ("sliding_window", {}, lambda n: tc.sliding_window_mask(n, 4)),
    ("sliding_window", {"w": 2, "causal": True}, lambda n: tc.sliding_window_mask(n, 2, True)),
    ("dilated_window", {}, lambda n: tc.dilated_window_mask(n, 2, 2)),
    ("dilated_window", {"w": 1, "dilation": 3, "causal": True}, lambda n: tc.dilated_window_mask(n, 1, 3, True)),
    ("global_window", {}, lambda n: tc.global_window_mask(n, 2, [0])),
    ("global_window", {"w": 1, "global_tokens": [3], "causal": True}, lambda n: tc.global_window_mask(n, 1, [3], True)),
])
def test_build_mask_by_name_is_the_builder_with_its_defaults(kind, params, direct):
    built, expected = tc.build_mask(kind, 11, **params), direct(11)
    assert torch.equal(built.allowed, expected.allowed)
    assert (built.kind, built.params) == (expected.kind, expected.params)


def test_masks_combine_with_and():
    mask = tc.sliding_window_mask(7, 2) & tc.causal_mask(7)
    assert torch.equal(mask.allowed, tc.sliding_window_mask(7, 2, causal=True).allowed)
    assert (mask.kind, mask.params) == ("sliding_window&causal", {"w": 2, "causal": False})
    global_and_window = tc.global_window_mask(7, 1, [2]) & tc.sliding_window_mask(7, 3, causal=True)
    assert global_and_window.params == {"w": 3, "global_tokens": [2], "causal": True}  # the right side wins


def test_for_heads_broadcasts_over_batch_and_heads_and_rows_cut_queries():
    square = tc.causal_mask(5)
    assert square.for_heads().shape == (1, 1, 5, 5) and torch.equal(square.for_heads()[0, 0], square.allowed)
    batched = tc.padding_mask([5, 2])
    assert batched.for_heads().shape == (2, 1, 5, 5) and torch.equal(batched.for_heads()[:, 0], batched.allowed)
    assert batched.for_heads(torch.device("meta")).device.type == "meta"  # moved to the device asked for
    assert batched.for_heads().device.type == "cpu"
    rows = square.rows(2, 4)
    assert torch.equal(rows.allowed, square.allowed[2:4]) and (rows.kind, rows.params) == ("causal", {})
    assert torch.equal(batched.rows(1, 3).allowed, batched.allowed[:, 1:3])
    assert batched.rows(1, 3).params == {"lengths": [5, 2]}


@pytest.mark.parametrize("allowed", [torch.ones(3, 3), torch.ones(3, dtype=torch.bool),
                                     torch.ones(1, 1, 3, 3, dtype=torch.bool)])
def test_a_mask_is_a_bool_matrix_or_a_batch_of_them(allowed):
    with pytest.raises(tc.MaskError) as error:
        tc.Mask(allowed, "odd")
    assert str(error.value) == "Mask.allowed must be a bool tensor of shape (Tq, Tk) or (B, Tq, Tk)"
    assert tc.Mask(torch.ones(2, 3, 3, dtype=torch.bool), "ok").shape == (2, 3, 3)


@pytest.mark.parametrize("build, message", [
    (lambda: tc.no_mask(0), "at least one position, got length 0"),
    (lambda: tc.causal_mask(-1), "at least one position"),
    (lambda: tc.sliding_window_mask(0, 1), "at least one position"),
    (lambda: tc.dilated_window_mask(0, 1, 1), "at least one position"),
    (lambda: tc.sliding_window_mask(4, 0), "window width must be at least 1, got 0"),
    (lambda: tc.dilated_window_mask(4, 0, 2), "w=0, dilation=2"),
    (lambda: tc.dilated_window_mask(4, 2, 0), "w=2, dilation=0"),
    (lambda: tc.global_window_mask(4, 1, [4]), r"0\.\.3, got \[4\]"),
    (lambda: tc.global_window_mask(4, 1, [-1]), r"0\.\.3, got \[-1\]"),
    (lambda: tc.padding_mask([]), "^padding_mask needs one length >= 1 per batch row$"),
    (lambda: tc.padding_mask([2, 0]), "^padding_mask needs one length >= 1 per batch row$"),
    (lambda: tc.padding_mask([2, 6], 5), "a length 6 does not fit in 5 positions"),
    (lambda: tc.build_mask("zigzag", 4), "unknown mask kind 'zigzag'; choose one of none, causal, padding"),
])
def test_impossible_masks_raise_mask_error_saying_why(build, message):
    with pytest.raises(tc.MaskError, match=message):
        build()
    assert tc.no_mask(1).shape == (1, 1) and tc.padding_mask([5], 5).shape == (1, 5, 5)  # the edges are allowed


def test_mask_builders_have_the_documented_patterns():
    assert torch.equal(tc.causal_mask(3).allowed, torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    w = tc.sliding_window_mask(5, 1).allowed
    assert w.sum(1).tolist() == [2, 3, 3, 3, 2]
    d = tc.dilated_window_mask(7, 2, 2).allowed
    assert d[3].nonzero().flatten().tolist() == [1, 3, 5]
    g = tc.global_window_mask(6, 1, [0]).allowed
    assert g[0].all() and g[:, 0].all() and not g[5, 2]
    p = tc.padding_mask([3, 2]).allowed
    assert p.shape == (2, 3, 3) and not p[1, :, 2].any() and p[0].all()


def test_the_dilated_window_docstring_example_is_what_the_mask_does():
    masks = sys.modules[tc.dilated_window_mask.__module__]
    results = doctest.testmod(masks)
    assert results.attempted >= 1 and results.failed == 0


@pytest.mark.parametrize("bad", [lambda: tc.sliding_window_mask(4, 0), lambda: tc.causal_mask(0),
                                 lambda: tc.global_window_mask(4, 1, [9]), lambda: tc.build_mask("zigzag", 4)])
def test_bad_mask_parameters_raise_mask_error(bad):
    with pytest.raises(tc.MaskError):
        bad()
