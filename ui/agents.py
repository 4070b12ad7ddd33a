"""What an agent gets: each view's data as compact JSON, never the page's markup (issue 61).

An MCP tool is a public endpoint (Gradio lists every one), and a page endpoint answers with what
the page draws: a tokenize of 5,000 characters was 539 KB of chip HTML, an attention view 230 KB of
plotly JSON. So each endpoint offered to agents (ui/events.ENDPOINTS, `agents=True`) gets a twin
that the API page and the MCP server list in its place: the same inputs (the same checks and
messages), the same queue group, the same tool name and parameters, and one output, JSON text:

- `tokenize` and `attention` answer what an agent asks them for: every tokenizer's tokens with
  their ids and byte counts; the chosen head's weights (or, for a long text, each query's strongest
  keys) with the tokens they join;
- every other view answers its page handler's outputs read as data: texts without markup, tables
  as headers and rows, each figure's title and numbers.

No answer exceeds ANSWER_BYTES (the README says it): lists are cut to their first items, and the
answer says so. The page's endpoints keep their names and answers, for the page and for any client
that calls them by name; they are left out of the listings. MCP's own refusals (its check of the
arguments against each tool's schema) quote a value briefly, as the app's do (`brief_mcp_refusals`).
"""

from __future__ import annotations

import base64
import functools
import html
import inspect
import json
import re

import gradio as gr
import jsonschema
import numpy as np
from gradio.components.plot import PlotData

from lab import attention as attention_use, tokens as tokens_use
from lab.policy import QUOTED_CHARS, quoted
from ui import events
from ui.handlers import MESSAGE_CHARS, handler
from ui.i18n import translated
from views.kit import Figure

ANSWER_BYTES = 64 * 1024  # the most an MCP answer holds, envelope and all
ENVELOPE_BYTES = 1024  # of that, what MCP wraps around a tool's text (a JSON-RPC message in an event)
DECIMALS = 3  # of a weight or a figure's number: what the page's hover shows
TOP_KEYS = 3  # keys per query in an attention answer too long to hold every weight
SUFFIX = "_data"  # a twin's endpoint name: the page endpoint's, then this


def offer_tools(demo: gr.Blocks) -> None:
    """Give every page endpoint of `demo` offered to agents a data twin, listed in its place (see above). Call it
    once the tabs are built and their endpoints checked (`events.check_declared`)."""
    offered = [fn for fn in demo.fns.values()
               if fn.api_visibility == "public" and events.ENDPOINTS[fn.api_name].agents]
    if not offered:
        return
    # one `with demo:` for all the twins: Gradio renders the whole page's config and builds its server app again
    # each time a `with` block of the page closes (blocks.py, Blocks.__exit__), so a block per twin did it per twin
    with demo:
        output = gr.Textbox(visible=False, label="answer (JSON)", elem_id="agent-answer")
        for block_fn in offered:
            twin = DATA.get(block_fn.api_name)
            if twin is None:  # it calls the page's function, lent a GPU already where it runs a model
                twin = read_as_data(block_fn.fn, block_fn.outputs)
                description = _description(twin) + READ_AS_DATA
            else:
                description = _description(twin)
                twin = events.on_gpu(twin) if events.ENDPOINTS[block_fn.api_name].gpu else twin
            gr.on([], twin, block_fn.inputs, output, api_name=block_fn.api_name + SUFFIX,
                  api_description=description, concurrency_limit=block_fn.concurrency_limit,
                  concurrency_id=block_fn.concurrency_id, queue=block_fn.queue, show_progress="hidden")
            block_fn.api_visibility = "undocumented"  # callable by name, as before; listed no more


READ_AS_DATA = (" Answers JSON: the view's outputs as data (texts, tables as headers and rows, each figure's title "
                f"and numbers), at most {ANSWER_BYTES // 1024} KB.")


def _description(twin) -> str:
    """A tool's description: the first paragraph of its docstring."""
    return inspect.cleandoc(twin.__doc__ or "").split("\n\n")[0].replace("\n", " ")


def answer(data) -> str:
    """`data` as compact JSON that fits an MCP answer of ANSWER_BYTES: lists cut to their first n items and texts to
    16 n characters, for the largest n that fits, and a "cut" entry saying so."""
    text = _json(data)
    if fits(text):
        return text
    data = _cut(data, ANSWER_BYTES // 2)  # no list of more items than that fits (each item takes 2 bytes or more)
    low, high = 1, max(_longest(data), 1)
    while low < high:  # the largest n whose cut fits
        n = (low + high + 1) // 2
        if fits(_json(_cut(data, n)), room=200):
            low = n
        else:
            high = n - 1
    cut = {"cut": f"to keep this answer within {ANSWER_BYTES // 1024} KB, each list holds its first {low} items "
                  f"and each text its first {16 * low} characters; the page shows them all"}
    return _json({**cut, **_cut(data, low)} if isinstance(data, dict) else {**cut, "data": _cut(data, low)})


def fits(text: str, room: int = 0) -> bool:
    """Whether JSON `text` fits an MCP answer (with `room` to spare), as MCP sends it: written again as a JSON
    string, each quote and backslash escaped, in UTF-8."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8")) + room <= ANSWER_BYTES - ENVELOPE_BYTES


def _json(data) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _cut(value, n: int):
    if isinstance(value, list):
        return [_cut(v, n) for v in value[:n]]
    if isinstance(value, dict):
        return {k: _cut(v, n) for k, v in value.items()}
    if isinstance(value, str) and len(value) > 16 * n:
        return value[:16 * n] + "…"
    return value


def _longest(value) -> int:
    if isinstance(value, list):
        return max([len(value), *map(_longest, value)])
    if isinstance(value, dict):
        return max([0, *map(_longest, value.values())])
    return len(value) // 16 + 1 if isinstance(value, str) else 0


def _numbers(array) -> list:
    """An array as JSON numbers, DECIMALS places, NaN as null (a grid's gaps)."""
    array = np.asarray(array, dtype=np.float64)
    rounded = np.round(array, DECIMALS)
    return np.where(np.isfinite(rounded), rounded, None).tolist()


# ------------------------------------------------------------------ the twins that answer what is asked


@handler
def tokenize(text: str | None, lang: str = "en") -> str:
    """How every shipped tokenizer cuts a text into tokens: per tokenizer, its token count and its tokens as
    [text, id, bytes] (a byte-level token holding part of a character shows its bytes as escapes).

    Args:
        text: the text to tokenize (at most 5,000 characters are read)
    """
    text, tokenized, notice = tokens_use.tokenize(text)
    return answer({"characters": len(text), "bytes": len(text.encode("utf-8", "replace")), "notice": str(notice),
                   "tokenizers": [{"tokenizer": str(k.label), "problem": str(k.problem), "n_tokens": len(k.spans),
                                   "tokens": [[s.text, s.id, s.byte_end - s.byte_start] for s in k.spans]}
                                  for k in tokenized]})


@handler
def attention(label: str, text: str, group: str, layer: float, head: float, query: float, lang: str = "en") -> str:
    """One attention head of a shipped model on a text: the tokens, and the head's weights (row: a query
    token, column: the key token it reads; each row sums to 1), or for a text too long for them all, each
    query's strongest keys.

    Args:
        label: the model, as the picker names it, e.g. "shakespeare-lm (language model)"
        text: the text to read (at most 128 tokens)
        group: "encoder", "decoder" or "cross" attention (a model lacking it falls back, with a notice)
        layer: the layer of the head
        head: the head in that layer
        query: the query position whose row is also given on its own
    """
    run = attention_use.attention_run(label, text, group)
    notices = [run.notice]
    layer, head, weights = run.head(layer, head, notices)
    query, _rows = run.query(query, notices)
    n_layer, n_head, _, _ = run.shape
    data = {"model": label, "group": run.group, "n_layer": n_layer,
            "n_head": n_head, "layer": layer, "head": head, "queries": list(map(str, run.q_labels)),
            "keys": list(map(str, run.k_labels)), "notice": " ".join(str(n) for n in notices if n),
            "query": {"position": query, "token": str(run.q_labels[query]), "weights": _numbers(weights[query])}}
    whole = {**data, "weights": _numbers(weights)}
    if fits(_json(whole)):
        return answer(whole)
    top = np.argsort(-weights, axis=1)[:, :TOP_KEYS]
    return answer({**data, "strongest_keys": [[[int(k), round(float(weights[q, k]), DECIMALS)] for k in row]
                                              for q, row in enumerate(top)],
                   "strongest_keys_are": f"per query, its {TOP_KEYS} strongest keys as [key position, weight]: "
                                         f"{len(run.q_labels)} tokens are too many for every weight"})


DATA = {"tokenize": tokenize, "attention": attention}  # by page endpoint


# ------------------------------------------------------------------ every other view, read as data

# outputs that set the page's own controls (a slider's range, a section shown): not the view's answer
CONTROLS = (gr.State, gr.Slider, gr.Dropdown, gr.Radio, gr.Checkbox, gr.Number, gr.Timer, gr.Button)


def read_as_data(page_fn, outputs):
    """A twin of page handler `page_fn`: its outputs read as data (`output_data`), one JSON text. It keeps the
    handler's name, parameters and their descriptions (what an agent reads), and its cache."""
    @handler
    @functools.wraps(page_fn)
    def read(*args):
        result = page_fn(*args)
        if inspect.isgenerator(result):
            for result in result:  # a stream's last output is its answer
                pass
        values = result if isinstance(result, tuple) else (result,)
        return answer({"outputs": [item for c, v in zip(outputs, values) if (item := output_data(c, v))]})
    return read


def output_data(component, value) -> dict | None:
    """One output as data (None for a control, a layout block or an output left as it was)."""
    if isinstance(component, CONTROLS) or not isinstance(component, gr.components.Component):
        return None
    if isinstance(value, dict) and value.get("__type__") == "update":
        if "value" not in value:
            return None
        value = value["value"]
    if value is None:
        return None
    label = translated(component.label, "en") if component.label else None
    item = {"label": str(label)} if label else {}
    if isinstance(component, gr.Plot):
        return {**item, **figure_data(value)}
    if isinstance(component, (gr.Markdown, gr.HTML, gr.Textbox, gr.Code)):
        text = plain_text(value) if isinstance(component, (gr.Markdown, gr.HTML)) else str(value)
        return {**item, "text": text} if text else None
    wire = component.postprocess(value)
    wire = wire.model_dump() if hasattr(wire, "model_dump") else wire
    if isinstance(component, gr.Dataframe):
        return {**item, "headers": _plain(wire["headers"]), "rows": _plain(wire["data"])}
    return {**item, "value": _plain(wire)}


def plain_text(markup: str) -> str:
    """Markdown or HTML as the words a person reads: tags dropped, entities and markdown's escapes undone."""
    text = re.sub(r"<(br|/p|/div|/h\d|/li)\s*/?>", "\n", str(markup))
    text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    text = re.sub(r"\\([\\`*_{}\[\]()#+\-.!|,'<>])", r"\1", text)
    return re.sub(r"[ \t]+", " ", re.sub(r"\n\s*\n+", "\n", text)).strip()


TRACE_KEYS = ("name", "type", "x", "y", "z", "text")


def figure_data(value) -> dict:
    """A figure's title, axis titles and each trace's numbers (typed arrays decoded, DECIMALS places)."""
    if isinstance(value, PlotData):
        figure = json.loads(value.plot)
    elif isinstance(value, Figure):
        figure = json.loads(value.to_json())
    else:
        figure = json.loads(value.to_json()) if hasattr(value, "to_json") else {}
    layout = figure.get("layout", {})
    traces = []
    for trace in figure.get("data", []):
        if trace.get("type") == "image":
            traces.append({"type": "image", "note": "a picture of the weights: their numbers are in the other "
                                                    "figures, or in the data of a smaller view"})
            continue
        traces.append({key: _plain(trace[key]) for key in TRACE_KEYS if key in trace})
    return {"title": _title(layout.get("title")), "x_title": _title(layout.get("xaxis", {}).get("title")),
            "y_title": _title(layout.get("yaxis", {}).get("title")), "traces": traces}


def _title(title) -> str:
    text = title.get("text", "") if isinstance(title, dict) else (title or "")
    return plain_text(text)


def _plain(value):
    """A trace's field as JSON: a typed array ({"dtype", "bdata", "shape"}) decoded, floats rounded."""
    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if value.get("shape"):
            array = array.reshape([int(n) for n in str(value["shape"]).split(",")])
        return _numbers(array) if array.dtype.kind == "f" else array.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, float):
        return round(value, DECIMALS) if np.isfinite(value) else None
    if isinstance(value, str):
        return plain_text(value)
    return value


# ------------------------------------------------------------------ MCP's own refusals, brief


def brief_mcp_refusals() -> None:
    """MCP's check of a tool's arguments against its schema (the `mcp` package's, before the tool runs) wrote the
    refused value whole: a 2 MB label came back as a 2 MB message. The check is made here first, saying which
    argument and what it takes, the value quoted briefly; any other error text is kept under MESSAGE_CHARS.
    Put on Gradio's MCP server class, as it builds its server at launch."""
    from gradio.mcp import GradioMCPServer
    from mcp import types

    build = GradioMCPServer.create_mcp_server
    if getattr(build, "brief", False):
        return

    @functools.wraps(build)
    def built(self):
        server = build(self)
        call = server.request_handlers[types.CallToolRequest]

        async def call_checked(request):
            refusal = argument_refusal(self, request.params.name, request.params.arguments or {})
            if refusal is not None:
                return types.ServerResult(types.CallToolResult(
                    content=[types.TextContent(type="text", text=refusal)], isError=True))
            result = await call(request)
            if getattr(result.root, "isError", False):
                for content in result.root.content:
                    if isinstance(content, types.TextContent) and len(content.text) > MESSAGE_CHARS:
                        content.text = content.text[:MESSAGE_CHARS - 1] + "…"
            return result

        server.request_handlers[types.CallToolRequest] = call_checked
        return server

    built.brief = True
    GradioMCPServer.create_mcp_server = built


def argument_refusal(mcp, tool: str, arguments: dict) -> str | None:
    """Why `arguments` do not fit tool `tool`'s schema, briefly; None when they fit (or the tool is unknown: MCP
    says so itself)."""
    try:
        schema, _ = mcp.get_input_schema(tool)
    except (ValueError, KeyError):
        return None
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(arguments))
    if error is None:
        return None
    name = ".".join(map(str, error.path)) or "arguments"
    if error.validator == "enum":
        takes = ", ".join(map(repr, error.validator_value))
        takes = takes if len(takes) <= QUOTED_CHARS else takes[:QUOTED_CHARS] + "…"
        said = f"{name}: {quoted(error.instance)} is not one of {takes}"
    elif error.validator == "type":
        said = f"{name} takes a value of type {error.validator_value}, not {quoted(error.instance)}"
    else:
        said = f"{name}: {error.message.replace(repr(error.instance), quoted(error.instance))}"
    said = f"Input validation error: {said}"
    return said if len(said) <= MESSAGE_CHARS else said[:MESSAGE_CHARS - 1] + "…"
