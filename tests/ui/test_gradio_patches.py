"""Each patch of Gradio (ui/gradio_patches.py) stands on a line of Gradio's own source: an upgrade that rewrites
that line fails here, and the patch must be read again (kept, changed, or deleted for a public way)."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import gradio
import gradio as gr
import pytest
from gradio.state_holder import SessionState

from ui import gradio_patches

GRADIO = Path(gradio.__file__).parent


def _source(pattern: str) -> str:
    files = sorted(GRADIO.glob(pattern))
    assert files, f"gradio/{pattern} is gone"
    return "".join(f.read_text(encoding="utf-8") for f in files)


@pytest.mark.parametrize("patch", gradio_patches.PATCHES, ids=lambda p: f"{p.name}: {p.file}")
def test_the_line_each_patch_works_around_is_still_gradios(patch):
    assert patch.line in _source(patch.file), f"{patch.name}: Gradio changed {patch.file}; read the patch again"


def test_every_patch_of_the_module_names_its_line():
    named = {p.name for p in gradio_patches.PATCHES}
    assert named == {"lazy sessions", "the queue's door", "refused inputs", "the page's language", "the cache probe",
                     "drawing a figure once", "toast titles", "integer choices", "skipped outputs", "the page's files",
                     "the page", "a wait's status", "no matplotlib"}


def test_the_public_ways_that_replaced_a_patch_are_still_there():
    # Plotly's toolbar in the page's language: plotly.js registers the locales waiting in window.PlotlyLocales as
    # it loads, and Gradio draws each figure with plotly's own default config merged in (setPlotConfig)
    plotly = _source("templates/frontend/assets/PlotlyPlot-*.js")
    assert "window.PlotlyLocales&&Array.isArray(window.PlotlyLocales)" in plotly
    assert "setPlotConfig" in plotly


class Asked:
    """A finder first on sys.meta_path that notes each module an import searches for, and finds none."""

    def __init__(self):
        self.names = []

    def find_spec(self, name, path=None, target=None):
        self.names.append(name)
        return None


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is not None, reason="matplotlib is installed here")
def test_a_call_searches_for_matplotlib_until_it_is_marked_absent(monkeypatch):
    asked = Asked()
    monkeypatch.setattr(sys, "meta_path", [asked, *sys.meta_path])
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    with gradio.utils.MatplotlibBackendMananger():  # what Gradio runs each call in (route_utils.py)
        pass
    assert asked.names == ["matplotlib", "matplotlib"]  # on entering and on leaving, each time

    gradio_patches.no_matplotlib()
    asked.names.clear()
    with gradio.utils.MatplotlibBackendMananger():
        pass
    assert asked.names == []
    with pytest.raises(ImportError):
        import matplotlib  # noqa: F401  (what Gradio passes on, as before)


class Counted(gr.Textbox):
    """A text box that counts how often it is built."""

    built = 0

    def __init__(self, *args, **kwargs):
        type(self).built += 1
        super().__init__(*args, **kwargs)


@pytest.mark.parametrize("predictions", [[gr.skip(), "x", gr.skip()], [gr.skip(), "x", "y"], ["w", "x", "y"],
                                         [gr.skip(), gr.skip(), gr.skip()], [gr.skip(), [("a", 0.5)], gr.skip()]],
                         ids=["one changed", "two changed", "none skipped", "all skipped", "a list value"])
def test_a_skipped_output_is_answered_as_gradio_answers_it_without_building_the_component_again(predictions):
    with gr.Blocks() as demo:
        outputs = [Counted(label="a"), gr.HighlightedText() if isinstance(predictions[1], list) else gr.Textbox(),
                   gr.Textbox()]
        gr.Button().click(lambda: None, None, outputs)
    event = list(demo.fns.values())[0]
    built = Counted.built
    gradios = asyncio.run(gradio_patches.POSTPROCESS(demo, event, predictions, SessionState(demo)))
    # what the patch works around: Gradio 6.31 builds a skipped component anew (and renders its config again)
    assert Counted.built - built == (predictions[0] == gr.skip())
    built = Counted.built
    assert asyncio.run(gradio_patches._postprocess_passing_skips(demo, event, predictions, SessionState(demo))) \
        == gradios
    assert Counted.built == built


# --- 10. the page's files from memory ---

def _ask(middleware, path: str, accept: str = "", method: str = "GET") -> tuple[dict, bytes]:
    """(response headers, body) of one request through `middleware`."""
    scope = {"type": "http", "method": method, "path": path, "headers": [(b"accept-encoding", accept.encode())]}
    sent = []

    async def send(message):
        sent.append(message)

    asyncio.run(middleware(scope, None, send))
    return ({k.decode(): v.decode() for k, v in sent[0].get("headers", [])},
            b"".join(m.get("body", b"") for m in sent[1:]))


class Behind:
    """The app behind the middleware: answers 404 and counts what reached it."""

    def __init__(self):
        self.paths = []

    async def __call__(self, scope, receive, send):
        self.paths.append(scope["path"])
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def test_a_page_file_is_answered_from_memory_compressed_once_as_the_browser_accepts_and_kept(tmp_path):
    import brotli
    import gzip

    source = b"export const attention = 'softmax(QK^T / sqrt(d))';\n" * 200
    (tmp_path / "Index-AbCd12_-.js").write_bytes(source)
    (tmp_path / "font-AbCd12_-.woff2").write_bytes(b"wOF2" + bytes(range(256)) * 4)  # compressed already
    behind = Behind()
    files = gradio_patches.BuiltAssets(behind, tmp_path)
    for accept, encoding, decode in (("gzip, deflate, br", "br", brotli.decompress), ("gzip", "gzip", gzip.decompress),
                                     ("", None, lambda b: b)):
        headers, body = _ask(files, "/assets/Index-AbCd12_-.js", accept)
        assert headers.get("content-encoding") == encoding and decode(body) == source
        assert int(headers["content-length"]) == len(body) and headers["content-type"].endswith("/javascript")
        assert "immutable" in headers["cache-control"]
    headers, body = _ask(files, "/assets/font-AbCd12_-.woff2", "gzip, deflate, br")
    assert "content-encoding" not in headers and body.startswith(b"wOF2") and headers["content-type"] == "font/woff2"
    (tmp_path / "Index-AbCd12_-.js").unlink()  # compressed once: the next visitors never read the file again
    assert brotli.decompress(_ask(files, "/assets/Index-AbCd12_-.js", "br")[1]) == source
    assert behind.paths == []


def test_any_other_request_is_left_to_gradio(tmp_path):
    (tmp_path / "Index-AbCd12_-.js").write_text("x")
    (tmp_path.parent / "secret.txt").write_text("not a page file")
    behind = Behind()
    files = gradio_patches.BuiltAssets(behind, tmp_path)
    asked = ["/assets/missing-AbCd12_-.js", "/assets/../secret.txt", "/assets/sub/Index-AbCd12_-.js", "/config",
             "/gradio_api/queue/data"]
    for path in asked:
        _ask(files, path, "br")
    _ask(files, "/assets/Index-AbCd12_-.js", "br", method="POST")
    assert behind.paths == [*asked, "/assets/Index-AbCd12_-.js"]


def test_gradios_own_page_files_are_the_ones_served():
    from gradio.route_utils import BUILD_PATH_LIB

    files = gradio_patches.BuiltAssets(Behind())
    assert files.folder == Path(BUILD_PATH_LIB) and any(n.startswith("PlotlyPlot-") for n in files.names)


# --- 11. the page itself from memory ---

class Page:
    """Gradio's page route behind the middleware: a page naming the Host it was asked by, counted."""

    def __init__(self, status: int = 200, cookie: bool = False):
        self.status, self.cookie, self.rendered = status, cookie, 0

    async def __call__(self, scope, receive, send):
        self.rendered += 1
        await asyncio.sleep(0.01)  # a rendering takes a while: requests meanwhile wait for it
        host = dict(scope["headers"]).get(b"host", b"")
        headers = [(b"content-type", b"text/html; charset=utf-8")] + ([(b"set-cookie", b"a=b")] if self.cookie else [])
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": b"<html>root http://" + host + b"/ " + b"x" * 2000})


def _get(middleware, host: bytes, accept: str = "", path: str = "/", query: bytes = b"", method: str = "GET"):
    scope = {"type": "http", "method": method, "path": path, "query_string": query, "scheme": "http",
             "headers": [(b"host", host), (b"accept-encoding", accept.encode())]}
    sent = []

    async def send(message):
        sent.append(message)

    return scope, sent, send


def _page(middleware, host: bytes, accept: str = "", **request) -> tuple[int, dict, bytes]:
    scope, sent, send = _get(middleware, host, accept, **request)
    asyncio.run(middleware(scope, None, send))
    return (sent[0]["status"], {k.decode(): v.decode() for k, v in sent[0]["headers"]},
            b"".join(m.get("body", b"") for m in sent[1:]))


def test_the_page_is_rendered_once_per_address_and_sent_in_the_encoding_asked_for():
    import brotli
    import gzip

    page = Page()
    cache = gradio_patches.PageCache(page)
    _, headers, first = _page(cache, b"127.0.0.1:7860")
    for accept, decode in (("br", brotli.decompress), ("gzip", gzip.decompress), ("", lambda b: b)):
        status, headers, body = _page(cache, b"127.0.0.1:7860", accept)
        assert status == 200 and decode(body) == first and int(headers["content-length"]) == len(body)
        assert headers.get("content-encoding") == (accept or None) and headers["content-type"].startswith("text/html")
    assert page.rendered == 1
    _, _, other = _page(cache, b"lab.example.org")  # the page's own address is in it
    assert page.rendered == 2 and b"http://lab.example.org/" in other and b"http://127.0.0.1:7860/" in first


def test_a_hall_asking_at_once_waits_for_one_rendering():
    page = Page()
    cache = gradio_patches.PageCache(page)

    async def hall():
        requests = [_get(cache, b"127.0.0.1:7860", "br") for _ in range(20)]
        await asyncio.gather(*(cache(scope, None, send) for scope, _, send in requests))
        return [sent for _, sent, _ in requests]

    answers = asyncio.run(hall())
    assert page.rendered == 1 and len({b"".join(m.get("body", b"") for m in sent[1:]) for sent in answers}) == 1


def test_at_most_eight_addresses_are_kept_and_anything_else_is_left_to_gradio():
    page = Page()
    cache = gradio_patches.PageCache(page)
    for i in range(gradio_patches.PAGES_KEPT + 1):  # any client may send any Host
        _page(cache, b"host-%d" % i)
    assert len(cache.pages) == gradio_patches.PAGES_KEPT
    _page(cache, b"host-0")  # dropped first, rendered again
    assert page.rendered == gradio_patches.PAGES_KEPT + 2
    for request in ({"query": b"deep_link=abc"}, {"path": "/config"}, {"method": "POST"}):
        before = page.rendered
        _page(cache, b"host-1", **request)
        _page(cache, b"host-1", **request)
        assert page.rendered == before + 2, request
    for refused in (Page(status=401), Page(cookie=True)):  # not a plain page: sent as it came, never kept
        cache = gradio_patches.PageCache(refused)
        answers = [_page(cache, b"127.0.0.1:7860", "br") for _ in range(2)]
        assert refused.rendered == 2 and all("content-encoding" not in headers for _, headers, _ in answers)
        assert answers[0][0] == refused.status
