"""Each token's share of a classifier's verdict: the shares and the head's bias add up to the log-odds exactly."""

from __future__ import annotations

import pytest
import torch

from tests.random_models import classifier
from transformer_core import log_odds_shares
from transformer_core.analysis.sentiment import base_log_odds
from transformer_core.model.trace import editing

# every kind of block the shares must hold through: post-LN (e5, BERT) and pre-LN, each activation, each kind of
# position, with and without the embeddings' own LayerNorm
SHAPES = [dict(), dict(norm_first=True), dict(activation="relu"), dict(activation="gelu_tanh"),
          dict(positions="sinusoidal"), dict(positions="none"), dict(embed_norm=True), dict(pooling="cls")]


def drawn(**config) -> torch.nn.Module:
    """A random classifier whose LayerNorms are drawn too (tests/random_models keeps them the identity, and a
    LayerNorm's scale and shift are exactly what the shares must carry through)."""
    model = classifier(**config)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.3 * torch.randn(p.shape, generator=generator))
    return model


def margins(model, idx, lengths=None) -> torch.Tensor:
    with torch.no_grad():
        logits = model(idx, lengths)
    return logits[:, 1] - logits[:, 0]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "post-LN")
def test_token_shares_and_the_heads_bias_add_up_to_the_log_odds(shape):
    model = drawn(**shape)
    idx = torch.tensor([[3, 17, 5, 29, 8, 11, 2]])
    logits, shares = log_odds_shares(model, idx)
    assert shares.shape == idx.shape
    assert shares.abs().max() > 0.05  # non-degenerate: the tokens carry the verdict
    assert float(shares.sum()) + base_log_odds(model) == pytest.approx(float(margins(model, idx)[0]), abs=1e-4)
    torch.testing.assert_close(logits[:, 1] - logits[:, 0], margins(model, idx))


def test_shares_add_up_row_by_row_in_a_padded_batch_and_padding_gets_nothing():
    model = drawn()
    rows = [[3, 17, 5, 29, 8, 11, 2], [7, 7, 30], [12, 4, 9, 21]]
    lengths = torch.tensor([len(r) for r in rows])
    idx = torch.tensor([r + [0] * (7 - len(r)) for r in rows])
    _, shares = log_odds_shares(model, idx, lengths)
    for b, row in enumerate(rows):
        alone = log_odds_shares(model, torch.tensor([row]))[1][0]
        torch.testing.assert_close(shares[b, : len(row)], alone, atol=1e-4, rtol=1e-4)
        assert float(shares[b, len(row):].abs().sum()) < 1e-6
        assert float(shares[b].sum()) + base_log_odds(model) == pytest.approx(float(margins(model, idx, lengths)[b]),
                                                                              abs=1e-4)


def test_plain_gradient_times_input_does_not_add_up_so_the_shares_are_not_it():
    model = drawn()
    idx = torch.tensor([[3, 17, 5, 29, 8, 11, 2]])
    taken = {}

    def keep(e):
        taken["e"] = e
        return e

    with torch.enable_grad(), editing({"embed.tok": keep}):
        logits = model(idx)
    (grad,) = torch.autograd.grad(logits[0, 1] - logits[0, 0], taken["e"])
    plain = float((grad * taken["e"]).sum().detach())
    assert abs(plain + base_log_odds(model) - float(margins(model, idx)[0])) > 0.1


def test_a_pass_outside_the_shares_is_untouched_by_them():
    """The hooks that hold scales fixed act only inside log_odds_shares: afterwards (and in other requests on the
    same model) gradients are the model's own."""
    model, fresh = drawn(), drawn()
    idx = torch.tensor([[3, 17, 5, 29]])
    log_odds_shares(model, idx)

    def input_gradient(m):
        e = m.embed.tok(idx).detach().requires_grad_(True)
        with torch.enable_grad(), editing({"embed.tok": lambda _: e}):
            out = m(idx)
        return torch.autograd.grad(out[0, 1] - out[0, 0], e)[0]

    torch.testing.assert_close(input_gradient(model), input_gradient(fresh))
    assert not any(p.grad is not None for p in model.parameters())  # the shared weights get no .grad
