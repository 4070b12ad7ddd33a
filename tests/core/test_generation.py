"""Generation (decoding/generation.py): the cache changes nothing, the next-token logits follow the weights."""

from core_models import lm
import torch

import transformer_core as tc


def test_generation_with_and_without_cache_agree():
    model = lm()
    prompt = [1, 2, 3]
    assert tc.generate(model, prompt, 40) == tc.generate(model, prompt, 40, use_cache=False)


def test_next_token_logits_follow_the_weights_when_they_change():
    model, ids = lm(), [3, 1, 4, 1, 5]
    before, _ = tc.next_token_logits(model, ids)
    with torch.no_grad():
        model.head.weight.mul_(2)  # tied: the token embeddings change too
    after, _ = tc.next_token_logits(model, ids)
    assert not torch.allclose(after, before, atol=1e-3)
    assert torch.allclose(after, model(torch.tensor([ids]))[0, -1], atol=1e-5)


def test_the_head_by_columns_is_copied_once_and_again_only_when_the_weight_changes():
    from transformer_core.decoding.generation import _head_by_columns

    model, ids = lm(), [3, 1, 4, 1, 5]
    first = _head_by_columns(model)
    assert torch.equal(first, model.head.weight.t()) and first.is_contiguous()
    tc.next_token_logits(model, ids)
    tc.next_token_logits(model, ids + [9])
    assert _head_by_columns(model) is first  # every step reuses the one copy
    with torch.no_grad():
        model.head.weight.add_(1.0)
    changed = _head_by_columns(model)
    assert changed is not first and torch.equal(changed, model.head.weight.t())
    assert _head_by_columns(model) is changed
