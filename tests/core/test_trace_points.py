"""Every point of the trace contract (transformer_core/model/trace.py) for each kind of model, read and edited by
one mechanism."""

import re
import threading

from core_models import classifier, encdec, lm
import pytest
import torch

import transformer_core as tc
from transformer_core.model import trace

B, T, S, D, H, D_HEAD, D_FF = 2, 5, 6, 32, 4, 8, 64  # random_models.SMALL: d_model 32, 4 heads, d_ff 64, 2 layers


def _attention(path: str, Tq: int, Tk: int, mask: tuple | None) -> dict:
    points = {f"{path}.{part}": (B, H, Tq if part == "q" else Tk, D_HEAD) for part in ("q", "k", "v")}
    points.update({f"{path}.scores": (B, H, Tq, Tk), f"{path}.attn": (B, H, Tq, Tk),
                   f"{path}.weighted": (B, H, Tq, D_HEAD), f"{path}.concat": (B, Tq, D), f"{path}.out": (B, Tq, D)})
    if mask is not None:
        points[f"{path}.mask"] = mask
    return points


def _block(path: str, Tq: int, self_mask: tuple | None, cross: tuple | None = None) -> dict:
    """cross: (Tk, mask shape) of a decoder block's cross-attention."""
    points = {f"{path}.norm_self.out": (B, Tq, D), **_attention(f"{path}.self_attn", Tq, Tq, self_mask),
              f"{path}.resid_mid": (B, Tq, D), f"{path}.norm_ff.out": (B, Tq, D), f"{path}.ff.hidden": (B, Tq, D_FF),
              f"{path}.ff.out": (B, Tq, D), f"{path}.out": (B, Tq, D)}
    if cross is not None:
        points.update({f"{path}.resid_self": (B, Tq, D), f"{path}.norm_cross.out": (B, Tq, D),
                       **_attention(f"{path}.cross_attn", Tq, *cross)})
    return points


def _embed(path: str, Tq: int) -> dict:
    return {f"{path}.tok": (B, Tq, D), f"{path}.pos": (Tq, D), f"{path}.out": (B, Tq, D)}


def _run(kind: str):
    """A model of `kind`, its inputs (padding where the model takes lengths) and every point's documented shape."""
    if kind == "DecoderLM":  # pre-LN: a final norm
        model, inputs = lm(), (torch.randint(0, 40, (B, T)),)
        points = {**_embed("embed", T), "norm.out": (B, T, D), "logits": (B, T, 40)}
        for i in range(2):
            points.update(_block(f"layers.{i}", T, (1, 1, T, T)))
    elif kind == "EncoderClassifier":  # post-LN: no final norm
        model, inputs = classifier(norm_first=False), (torch.randint(0, 40, (B, T)), torch.tensor([T, 3]))
        points = {**_embed("embed", T), "pooled": (B, D), "logits": (B, 2)}
        for i in range(2):
            points.update(_block(f"layers.{i}", T, (B, 1, T, T)))
    else:
        model, inputs = encdec(), (torch.randint(0, 30, (B, S)), torch.randint(0, 25, (B, T)), torch.tensor([S, 4]))
        points = {**_embed("src_embed", S), "encoder_norm.out": (B, S, D), **_embed("tgt_embed", T),
                  "decoder_norm.out": (B, T, D), "logits": (B, T, 25)}
        for i in range(2):
            points.update(_block(f"encoder.{i}", S, (B, 1, S, S)))
            points.update(_block(f"decoder.{i}", T, (1, 1, T, T), cross=(S, (B, 1, T, S))))
    return model, inputs, points


KINDS = ["DecoderLM", "EncoderClassifier", "EncoderDecoder"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_documented_point_is_passed_with_its_shape_and_no_other(kind):
    model, inputs, points = _run(kind)
    _, run = model.run_with_trace(*inputs, names=all)
    assert run.shapes == points  # the same names, the same shapes
    assert run.names() == list(run.shapes)  # all kept, in the order computed
    for name, shape in points.items():
        assert tuple(run[name].shape) == shape, name
        assert run[name].dtype == (torch.bool if name.endswith(".mask") else torch.float32), name


@pytest.mark.parametrize("kind", KINDS)
def test_by_default_a_trace_keeps_what_the_views_draw_and_the_readers_are_views_of_the_one_store(kind):
    model, inputs, points = _run(kind)
    logits, run = model.run_with_trace(*inputs)
    stream = r"(embed|src_embed|tgt_embed|layers\.\d|encoder\.\d|decoder\.\d)\.out"  # the residual streams
    kept = {n for n in points if n.endswith(".attn") or n in ("logits", "pooled") or re.fullmatch(stream, n)}
    assert set(run.names()) == kept and set(run.shapes) == set(points)  # every shape, the viewed values
    for group in run.groups:
        layers = [n for n in run.names() if n.endswith(".attn") and (group == "cross") == (".cross_attn" in n)
                  and n.startswith({"encoder": ("encoder", "layers"), "decoder": ("decoder", "layers"),
                                    "cross": ("decoder",)}[group])]
        assert torch.equal(run.attention(group), torch.stack([run[n] for n in layers]))
    assert torch.equal(run.logits, logits)
    with pytest.raises(KeyError, match=r"no point 'layers.0.ff.hidden' kept in this trace; kept: \["):
        run["layers.0.ff.hidden"]


def _changed(x):
    if isinstance(x, tc.Mask):  # a mask's edit gives another Mask: here, one that hides nothing
        return tc.Mask(torch.ones_like(x.allowed), "none")
    return torch.zeros_like(x) if x.is_floating_point() else x


@pytest.mark.parametrize("kind", KINDS)
def test_an_edit_at_any_point_changes_the_logits(kind):
    model, inputs, points = _run(kind)
    with torch.no_grad():
        clean = model(*inputs)
    for name in (n for n in points if ".1." not in n):  # layer 1's points are layer 0's code again
        with trace.editing({name: _changed}), torch.no_grad():
            edited = model(*inputs)  # no trace: the fast path wherever the edit allows
        assert (edited - clean).abs().max() > 1e-3, name


def test_an_edit_is_applied_on_the_fast_path_and_recorded_as_it_flows_on():
    model, ids = lm(), torch.randint(0, 40, (1, 6))
    with torch.no_grad():
        clean = model(ids)
        with trace.editing({"layers.0.ff.out": lambda x: 0 * x}):
            fast = model(ids)
            inspect, run = model.run_with_trace(ids, names=["layers.0.ff.out"])
    assert (fast - clean).abs().max() > 0.05 and torch.allclose(fast, inspect, atol=1e-5)
    assert run["layers.0.ff.out"].abs().max() == 0  # the trace shows what flowed on


def test_without_a_trace_nothing_is_recorded_and_a_point_returns_its_tensor():
    model, ids = lm(), torch.randint(0, 40, (1, 4))
    assert trace.active() is None
    x = torch.randn(3)
    assert trace.point("logits", x) is x and model.layers[0].hook("out", x) is x
    _, run = model.run_with_trace(ids)
    before = dict(run.shapes)
    with torch.no_grad():
        model(ids[:, :3])
    assert run.shapes == before and trace.active() is None  # a finished trace records no later pass


def test_two_threads_record_and_edit_independently():
    model = lm()
    inputs = {"short": torch.randint(0, 40, (1, 5)), "long": torch.randint(0, 40, (1, 9))}
    meet = threading.Barrier(2, timeout=10)
    runs, outputs = {}, {}

    def wait_inside(x):  # both threads stand inside their own recording at once
        meet.wait()
        return x

    def work(name):
        edit = {"layers.0.ff.out": (lambda x: 0 * wait_inside(x)) if name == "short" else wait_inside}
        with trace.editing(edit):
            outputs[name], runs[name] = model.run_with_trace(inputs[name])

    threads = [threading.Thread(target=work, args=(name,)) for name in inputs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert runs["short"].shapes["layers.0.self_attn.attn"] == (1, 4, 5, 5)
    assert runs["long"].shapes["layers.0.self_attn.attn"] == (1, 4, 9, 9)
    with torch.no_grad():
        assert torch.allclose(outputs["long"], model(inputs["long"]), atol=1e-5)  # the other thread's edit stayed there
        assert (outputs["short"] - model(inputs["short"])).abs().max() > 0.05
