"""The Concepts tab opened by a link: one section's bad input costs that section only, not all six."""

import warnings

import gradio as gr

from ui import concepts as tab


def test_one_failing_section_leaves_the_other_five_drawn():
    with gr.Blocks():
        view = tab.build()
    values = [c.value for c in view.inputs]
    sentence = next(i for i, c in enumerate(view.inputs) if c.elem_id == "sentence")  # labels are translated
    values[sentence] = "word"  # the order experiment needs 2 to 40 words
    with warnings.catch_warnings(record=True):  # gr.Warning outside a request is a Python warning
        warnings.simplefilter("always")
        results = view.fn(*values)
    assert len(results) == len(view.outputs)
    skipped = [i for i, r in enumerate(results) if isinstance(r, dict) and r.get("__type__") == "update"
               and len(r) == 1]
    order_outputs = {id(c) for c in view.outputs[7:10]}
    assert {id(view.outputs[i]) for i in skipped} == order_outputs  # only the order section is left as it was
    assert all(r is not None for r in results)
