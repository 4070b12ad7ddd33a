"""Every place the app changes what Gradio (6.31) or Plotly does, in one module, each with its reason.

Gradio serves this app well, except in a few places where a public lecture hall or a Space meets it. There the
app replaces a piece of Gradio, and only here: each patch below says what Gradio does, why that fails our users,
and the line of Gradio's source it works around. `PATCHES` lists those lines; tests/ui/test_gradio_patches.py
checks that each is still in the installed Gradio, so an upgrade that rewrites one fails there and the patch is
read again (kept, changed, or deleted for a public way). The behaviour each patch gives is tested beside its
users: tests/ui/test_sessions.py, test_door.py, test_page_language.py, test_ui_cache.py, and
tests/app/test_browser_attention.py for the page's.

1. Lazy sessions (`make_sessions_lazy`, Python): SessionState.__init__ renders every block's config per visitor.
2. The queue's door (`guard_queue`, Python): Queue.push admits any number of jobs from one visitor, and keeps
   a join it answered from a cache for good.
3. Refused inputs (`guard`, Python): a component's preprocess may raise anything; the queue's cache probe
   turns that into HTTP 500, and the message otherwise is Gradio's English, quoting Python. (A position slider a
   run has narrowed is judged by its built range, ui/values.as_built: the next text may be longer; a layer or head
   slider a picked model narrowed, by the largest model's: the next model may be larger.)
4. The page's language while preprocessing (`speak_page_language`, Python): Gradio gives preprocess no request.
5. The cache probe (`probing`, Python): whether the queue only asks for a cached answer is a private flag.
6. Drawing a figure once (`gradio_patches.js`): Gradio's Plot draws each new figure twice and leaks the plot
   it throws away.
7. Toast titles in the page's language (`gradio_patches.js`): Gradio titles a toast "Error" in every locale.
8. Integer choices in the API schema (`integer_choices`, Python): a picker of whole numbers is published as a
   string.
9. Skipped outputs (`pass_skips`, Python): Gradio rebuilds a component and its API schema for each gr.skip().
10. The page's files from memory (`BuiltAssets`, an ASGI middleware ui/wire.py puts in front): Gradio reads its
   built page files from disk and compresses them again for every visitor.
11. The page itself from memory (`PageCache`, likewise): Gradio renders the page (a megabyte: the config of every
   block) anew for every visitor, though it is the same for all.
12. A wait's status in the page's language (`gradio_patches.js`): Gradio writes "processing |" and "queue: 2/5 |"
   in English in every locale.
13. No matplotlib (`no_matplotlib`, Python): Gradio imports matplotlib twice for every call, and this app has none.

Replaced by a public way and deleted: Plotly's toolbar in Chinese. The page wrapped Plotly.newPlot and
Plotly.react to add `config.locale` to every plot; now plotly.js registers its zh-CN locale from
`window.PlotlyLocales` as it loads (its own way for locales loaded before it) and the page sets the locale with
`Plotly.setPlotConfig` (ui/page.js), which every plot Gradio draws reads.

Set through a public way, after wiring: each event's `show_progress_on` (ui/events.show_progress_once), since the
page refreshes, at every status message, every component an event ever showed progress on.

Read but not replaced (ui/sessions.py: a StateHolder's `session_data` and `time_last_used` and the queue's
`pending_messages_per_session`, to forget a session; `jobs` here: the queue's waiting and running events) and
the gzip'd stream (ui/wire.py), which goes through Gradio's public `app_kwargs`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gzip
import html
import importlib.util
import logging
import math
import mimetypes
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from contextvars import ContextVar
from copy import copy
from dataclasses import dataclass
from pathlib import Path

import anyio
import brotli
import gradio as gr
from gradio import caching
from gradio.blocks import Blocks
from gradio.i18n import I18nData
from gradio.route_utils import BUILD_PATH_LIB
from gradio.state_holder import SessionState
from starlette.datastructures import Headers

from i18n import DEFAULT as DEFAULT_LANGUAGE, t
from ui import values
from ui.i18n import translated

log = logging.getLogger("transformer_lab")

# The page's half of the patches (6, 7 and 12), served in the page's head by app.py.
PAGE_SCRIPT = Path(__file__).with_name("gradio_patches.js")


@dataclass(frozen=True)
class Patch:
    """A patch and the line of Gradio's source it works around (`file` under gradio/; a glob for built assets)."""

    name: str
    file: str
    line: str


PATCHES = (
    Patch("lazy sessions", "state_holder.py", "k: self.blocks_config.config_for_block(k, [], v)"),
    Patch("the queue's door", "routes.py", "success, event_id, state = await blocks._queue.push("),
    Patch("the queue's door", "queueing.py", "self.event_ids_to_events[event._id] = event"),
    Patch("refused inputs", "blocks.py", "state[block._id] = block.__class__(**kwargs)"),
    Patch("refused inputs", "queueing.py", "except CacheMissError:"),
    Patch("the page's language", "blocks.py", "block.preprocess, inputs_cached, limiter=self.limiter"),
    Patch("the cache probe", "caching.py", "_probe_mode_active: ContextVar[bool] = ContextVar("),
    Patch("the cache probe", "queueing.py", 'if hasattr(fn.fn, "cache"):'),
    Patch("drawing a figure once", "templates/frontend/assets/PlotlyPlot-*.js",
          "p.default.react(g,e.data,e.layout,e.config),p.default.Plots.resize(g)"),
    Patch("toast titles", "templates/frontend/assets/statustracker-*.js",
          "S=n(()=>t.type.charAt(0).toUpperCase()+t.type.slice(1))"),
    Patch("a wait's status", "templates/frontend/assets/statustracker-*.js", "c(t,e(`processing |`))"),
    Patch("a wait's status", "templates/frontend/assets/statustracker-*.js",
          "`queue: ${o.queue_position+1}/${o.queue_size??``} |`"),
    Patch("integer choices", "components/dropdown.py", '"type": "string"'),
    Patch("skipped outputs", "helpers.py", 'return {"__type__": "update"}'),
    Patch("skipped outputs", "blocks.py", "state[block._id] = block.__class__(**kwargs)"),
    Patch("the page's files", "routes.py", "return file_response(BUILD_PATH_LIB, UserProvidedPath(path))"),
    Patch("the page's files", "brotli_middleware.py", "quality: int = 4,"),
    Patch("the page's files", "brotli_middleware.py", 'self.content_encoding_set = "content-encoding" in headers'),
    Patch("the page", "routes.py", "config = route_utils.update_root_in_config(config, root)"),
    Patch("the page", "route_utils.py", 'x_gradio_server = get_first_header_value(request, "x-gradio-server")'),
    Patch("no matplotlib", "route_utils.py", "with utils.MatplotlibBackendMananger():"),
    Patch("no matplotlib", "utils.py", "self._original_backend = matplotlib.get_backend()"),
)


# ---------------------------------------------------------------- 1. lazy sessions

# What Gradio does: when a session starts, SessionState.__init__ renders every block's config for it
# (state_holder.py, `self.config_values = {...}`) so that gr.DeepLinkButton can later save the page as that
# visitor left it. Why that fails our users: this app shows no deep-link button (its links carry their state in
# the URL), and with ~345 blocks that eager copy held the server's one Python thread for every new visitor, so
# a lecture hall opening one link waited on sessions being set up. The patch: a session renders a block's config
# the first time Gradio asks for it (a request's own inputs and outputs: a few blocks), and all of them when
# something lists them, so what Gradio sees is the same, only later. A block's config is rendered once for the
# whole app, not once per session (rendering calls `inspect.signature` on each component's constructor); a
# session gets its own copy of the config and of its props, the one dict Gradio writes into (the session's
# `value`); a block a session replaced (a `gr.update` for it alone) is rendered from the session's own copy.

# block id -> (the app's block, its config): filled as sessions ask; the block is held to tell it from a
# session's replacement, or from another app's block with the same id (tests build several apps)
_RENDERED: dict[int, tuple[object, dict]] = {}


class _LazyConfigs(dict):
    """SessionState.config_values, filled on demand: block id -> that block's config."""

    def __init__(self, state: SessionState, app_blocks: dict):
        super().__init__()
        self._state = state
        self._app_blocks = app_blocks  # the app's blocks, id -> block (a session's config may hold more)

    def _config(self, key: int) -> dict:
        block = self._state.blocks_config.blocks[key]
        if block is not self._app_blocks[key]:  # the session's own copy of it
            return self._state.blocks_config.config_for_block(key, [], block)
        app_block, config = _RENDERED.get(key, (None, None))
        if app_block is not block:
            config = self._state.blocks_config.config_for_block(key, [], block)
            _RENDERED[key] = (block, config)
        return {**config, "props": dict(config["props"])} if "props" in config else dict(config)

    def __missing__(self, key: int) -> dict:
        if key not in self._app_blocks or key not in self._state.blocks_config.blocks:
            raise KeyError(key)
        self[key] = config = self._config(key)
        return config

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, key) or (key in self._app_blocks and key in self._state.blocks_config.blocks)

    def _fill(self) -> None:
        for key in self._state.blocks_config.blocks:
            if key in self._app_blocks and not dict.__contains__(self, key):
                self[key] = self._config(key)

    def __iter__(self):
        self._fill()
        return super().__iter__()

    def __len__(self) -> int:
        self._fill()
        return super().__len__()

    def keys(self):
        self._fill()
        return super().keys()

    def values(self):
        self._fill()
        return super().values()

    def items(self):
        self._fill()
        return super().items()


def _lazy_init(self: SessionState, blocks) -> None:
    # Gradio's own constructor, with config_values made lazy
    self.blocks_config = copy(blocks.default_config)
    self.config_values = _LazyConfigs(self, blocks.blocks)
    self.state_data = {}
    self._state_ttl = {}
    self.is_closed = False
    self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600


EAGER_INIT = SessionState.__init__


def make_sessions_lazy() -> None:
    """Make every later Gradio session render its blocks' configs on demand (idempotent)."""
    SessionState.__init__ = _lazy_init


# ---------------------------------------------------------------- 2. the queue's door

# What Gradio does: Queue.push (queueing.py), the one place both the browser's /queue/join and the HTTP API's
# /call/<endpoint> go through (routes.py), caps only the whole queue (`max_size`). Why that fails our users:
# 257 joins for live training from one session, never read, filled the queue, and every student's tokenize got
# HTTP 503 for hours (ui/admission.py holds the caps). And push files every join in `event_ids_to_events`
# before it asks a function's cache, and never takes out a join answered from it: every cached view a client
# was answered with counted against it for good, its event and inputs never freed. The patch: push asks
# `refused` first, and lets such an answered join go.


def jobs(queue) -> list:
    """The events of a Gradio queue that wait (in their group's queue) or run (its active jobs)."""
    waiting = [e for group in list(queue.event_queue_per_concurrency_id.values()) for e in list(group.queue)]
    return waiting + [e for job in list(queue.active_jobs) if job for e in job]


def guard_queue(queue, refused: Callable[[object, object], Exception | None]) -> None:
    """Make `queue.push` raise `refused(body, request)` when that is an exception, and forget a join it answered
    from a cache."""
    push = queue.push

    async def guarded(body, request, username):
        if (refusal := refused(body, request)) is not None:
            raise refusal
        success, event_id, state = await push(body, request, username)
        if success and not any(e._id == event_id for e in jobs(queue)):  # answered from a cache at the door
            queue.event_ids_to_events.pop(event_id, None)
        return success, event_id, state

    guarded.__wrapped__, guarded.refused = push, refused  # what it guards, and with what
    queue.push = guarded


# ---------------------------------------------------------------- 3. refused inputs, 4. the page's language

class _NotCached(caching.CacheMissError, gr.Error):
    """A probe's miss raised while preprocessing: Gradio passes its own Error type through preprocessing
    unwrapped, and its queue takes a CacheMissError as "queue the request as usual"."""


def guard(component) -> None:
    """A value a component cannot take (a list for a dropdown, 1e400 for a slider) answers with a clear
    message, and while Gradio's queue only asks for a cached answer it means "not cached" (the request
    is then queued and answered with that message), never an HTTP 500.

    The guard is put on the component's class, not on the one component: once an event has updated a
    component's properties (a slider's maximum when a model is picked, a table's headers in the page's
    language), Gradio keeps the session's own copy of it, built anew with `block.__class__(**kwargs)`,
    and preprocesses the session's inputs with that copy. A guard on the app's instance was lost there:
    a session that had run the page-load event got HTTP 500 where a fresh one got a message."""
    if not hasattr(component, "preprocess"):
        return
    if isinstance(component, (gr.Dropdown, gr.Radio)):
        integer_choices(component)
    cls = type(component)
    if "_guarded_preprocess" in vars(cls):
        return
    preprocess = cls.preprocess

    @functools.wraps(preprocess)
    def checked(self, payload):
        if (wrong := values.wrong_kind(self, payload)) is not None:
            error: Exception = TypeError(wrong)
        else:
            try:
                return preprocess(values.as_built(self), payload)
            except Exception as e:  # noqa: BLE001 -- any refusal of a component is the client's input
                error = e
        if caching._probe_mode_active.get():
            raise _NotCached("not cached")
        lang = PAGE_LANGUAGE.get()
        log.warning("input refused by %s: %s", label_of(self), _shortened(error).encode("unicode_escape",
                    "backslashreplace").decode("ascii"))
        raise gr.Error(html.escape(t("common.value_refused", lang, name=label_of(self, lang),
                                     reason=_reason(self, lang)), quote=False),
                       title=t("common.error_title", lang), print_exception=False)

    cls.preprocess = checked
    cls._guarded_preprocess = True


def _reason(component, lang: str) -> str:
    """Why `component` refused a value, in `lang`: what it takes. (Gradio's own reason, which the log keeps, is
    English in every locale and may quote the value or a Python type.)"""
    if getattr(component, "choices", None) is not None:
        return t("common.value_refused.choice", lang)
    if (kind := values.reason_id(component)) is not None:
        return t(kind, lang)
    if isinstance(component, (gr.Slider, gr.Number)):
        judged = values.as_built(component)
        low, high = judged.minimum, judged.maximum
        if low is None or high is None:
            return t("common.value_refused.number", lang)
        return t("common.value_refused.range", lang, low=low, high=high)
    return t("common.value_refused.other", lang)


SHOWN_CHARS = 300  # of a refusal's reason in the log: it may quote the refused value, which can be megabytes


def _shortened(error: Exception) -> str:
    try:
        shown = str(error)
    except ValueError:  # str() of an int over 4,300 digits, quoted in the reason
        return type(error).__name__
    return shown if len(shown) < SHOWN_CHARS else shown[:SHOWN_CHARS] + "…"


def label_of(component, lang: str = DEFAULT_LANGUAGE) -> str:
    """The name a person knows a component by: its label in `lang` (a label from the catalogue is an
    I18nData, whose str() is a marker, not a name), else its kind."""
    label = component.label
    if isinstance(label, I18nData):
        label = translated(label, lang)
    return str(label) if label else type(component).__name__


# The language of the page a request comes from, while Gradio preprocesses its inputs (the guard's refusals
# are in it): Gradio gives a component's preprocess no request, so `speak_page_language` sets it around that
# step from the session's language state. The worker thread that preprocesses gets a copy of the context.
PAGE_LANGUAGE: ContextVar[str] = ContextVar("page_language", default=DEFAULT_LANGUAGE)


def speak_page_language(demo: gr.Blocks, lang: gr.State) -> None:
    """Preprocess every request of `demo` with PAGE_LANGUAGE set to its session's `lang` (the page's language,
    which the page load and the switch keep; English for an API client, which has none)."""
    preprocess_data = demo.preprocess_data

    async def in_page_language(block_fn, inputs, state, *args, **kwargs):
        page = DEFAULT_LANGUAGE
        with contextlib.suppress(Exception):  # a session Gradio made without the state: English
            page = state[lang._id] if state is not None else page
        token = PAGE_LANGUAGE.set(page if isinstance(page, str) else DEFAULT_LANGUAGE)
        try:
            return await preprocess_data(block_fn, inputs, state, *args, **kwargs)
        finally:
            PAGE_LANGUAGE.reset(token)

    demo.preprocess_data = in_page_language


# ---------------------------------------------------------------- 5. the cache probe

def probing() -> bool:
    """Whether Gradio's queue is only asking if a request can be answered from a cache. It asks before queueing
    each request of a function with a `.cache` attribute (queueing.py): a hit is then answered at once, outside
    the queue's limits, and a miss must raise CacheMissError rather than compute (the request is then queued as
    usual). Gradio's own gr.cache reads the same flag; it has no public reader, and gr.cache itself keeps
    neither one computation for concurrent equal requests nor figures encoded once (ui/handlers.cached)."""
    return caching._probe_mode_active.get()


# ---------------------------------------------------------------- 8. integer choices in the API schema

def integer_choices(component) -> None:
    """Publish a picker whose choices are all whole numbers with an integer type: Gradio's own schema says
    "string" with an integer enum (components/dropdown.py, `api_info`), which no agent can satisfy."""
    values = [value for _, value in component.choices]
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        component.api_info = lambda: {"type": "integer", "enum": [value for _, value in component.choices]}


# ---------------------------------------------------------------- 9. skipped outputs

SKIP = {"__type__": "update"}  # what gr.skip() returns: "leave this output as it is"


async def _postprocess_passing_skips(self, block_fn, predictions, state):
    outputs = list(block_fn.outputs)
    several = isinstance(predictions, (list, tuple)) and len(predictions) == len(outputs) > 1 and not block_fn.batch
    skipped = {i for i, p in enumerate(predictions) if isinstance(p, dict) and p == SKIP and not outputs[i].stateful
               } if several else set()
    if not skipped:
        return await POSTPROCESS(self, block_fn, predictions, state)
    rest = copy(block_fn)  # the same event with only the outputs it changes
    rest.outputs = [block for i, block in enumerate(outputs) if i not in skipped]
    changed = [p for i, p in enumerate(predictions) if i not in skipped]
    # Gradio reads one output's value bare (a list value would be taken for the outputs' list)
    done = iter(await POSTPROCESS(self, rest, changed[0] if len(changed) == 1 else changed, state))
    return [dict(SKIP) if i in skipped else next(done) for i in range(len(outputs))]


POSTPROCESS = Blocks.postprocess_data


def pass_skips() -> None:
    """Answer gr.skip() as the no-change it is (idempotent). Gradio 6.31 reads it as an update of no properties
    (blocks.py, `postprocess_data`): it builds the component anew from its constructor's arguments and renders
    its config and API schema again (pydantic), for a result the page reads as "no change". A streamed
    generation skips four outputs a token, at the priority of the lecture hall's requests beside it, and a link
    skips every input of the tabs it does not set."""
    Blocks.postprocess_data = _postprocess_passing_skips


# ---------------------------------------------------------------- 10. the page's files from memory

# What Gradio does: it serves its built page files (/assets/: 99 of the 115 requests of a page open) from disk,
# a chunk at a time through a worker thread (routes.py, `build_resource`), and its BrotliMiddleware compresses
# each one again for every visitor (quality 4; 2.8 MB sent a page). Why that fails our users: a page open cost
# the app about 1.2 s of CPU, half of it these files, and a lecture hall opens the page all at once. The patch:
# an ASGI middleware in front of Gradio answers them from memory, each compressed once, and tells the browser
# to keep them (each name carries a hash of its content: Vite's build), so a student's browser never asks again.

ASSETS = "/assets/"
BROTLI_QUALITY = 9  # once a file, not once a visitor: plotly's 4.6 MB in 0.35 s, 13% smaller than at quality 4
GZIP_LEVEL = 6
COMPRESSIBLE = (".js", ".css", ".svg", ".json", ".html")  # text; fonts are compressed already, and sent as they are


class BuiltAssets:
    """ASGI middleware: a GET of one of Gradio's built page files answered from memory, compressed once per file and
    encoding (brotli, gzip, or none, as the browser accepts), and marked immutable. Any other path, a name not in
    Gradio's folder (listed once: no request reads outside it) and any other method are left to Gradio. The memory
    held is bounded by that folder, read-only and part of the installed Gradio (6.31: 19.2 MB, 5 MB as brotli,
    5.4 MB as gzip): at most 30 MB, had every file been asked for in every encoding; the files of a page, 2.6 MB
    a copy."""

    def __init__(self, app, folder: str | Path = BUILD_PATH_LIB):
        self.app = app
        self.folder = Path(folder)
        self.names = frozenset(p.name for p in self.folder.iterdir() if p.is_file())
        self.bodies: dict[tuple[str, str], bytes] = {}
        self.lock = threading.Lock()

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" and scope.get("method") == "GET" else ""
        name = path[len(ASSETS):] if path.startswith(ASSETS) else ""
        if name not in self.names:
            return await self.app(scope, receive, send)
        encoding = _encoding(scope) if name.endswith(COMPRESSIBLE) else ""
        body = self.bodies.get((name, encoding)) or await anyio.to_thread.run_sync(self.body, name, encoding)
        headers = [(b"content-type", (mimetypes.guess_type(name)[0] or "application/octet-stream").encode()),
                   (b"content-length", str(len(body)).encode()), (b"vary", b"accept-encoding"),
                   (b"cache-control", b"public, max-age=31536000, immutable")]
        if encoding:
            headers.append((b"content-encoding", encoding.encode()))  # Gradio's BrotliMiddleware then passes it on
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def body(self, name: str, encoding: str) -> bytes:
        """File `name` in `encoding` ("br", "gzip" or "" for none), made at its first request, in a worker thread
        (plotly's takes a third of a second), once however many visitors ask for it at the same time."""
        with self.lock:
            if (name, encoding) not in self.bodies:
                self.bodies[name, encoding] = _encoded((self.folder / name).read_bytes(), encoding)
            return self.bodies[name, encoding]


def _encoded(raw: bytes, encoding: str) -> bytes:
    return (brotli.compress(raw, quality=BROTLI_QUALITY) if encoding == "br"
            else gzip.compress(raw, GZIP_LEVEL) if encoding == "gzip" else raw)


def _encoding(scope) -> str:
    """The encoding a request accepts that is sent: "br", else "gzip", else "" (none)."""
    accepted = Headers(scope=scope).get("accept-encoding", "")
    return "br" if "br" in accepted else "gzip" if "gzip" in accepted else ""


# ---------------------------------------------------------------- 11. the page itself from memory

# What Gradio does: for every visitor, its page route (routes.py, `main`) copies the app's config, walks all of
# it to set the root URL in file addresses (`update_root_in_config`), renders the page around it (a megabyte,
# 345 blocks) and its BrotliMiddleware compresses that again: 0.15 s of the app's CPU a visitor, once the page
# files are served from memory (patch 10). Why that fails our users: the page is the same bytes for every
# visitor who reaches the app by the same address (its config is made once, at launch), and a lecture hall asks
# for it a hundred times at once. The patch: the page as Gradio rendered it, kept per address it was asked by,
# and sent compressed once per encoding.

PAGES_KEPT = 8  # addresses (Host and proxy headers) whose page is kept, the least recently asked dropped first
# what Gradio's root URL is made of (route_utils.get_request_origin): the request's URL and these headers
ADDRESS_HEADERS = (b"host", b"x-forwarded-host", b"x-forwarded-proto", b"x-gradio-server")


class PageCache:
    """ASGI middleware: a GET of the page ("/", no deep link) answered with the bytes Gradio rendered for the first
    such request from the same address: Gradio's root URL in it is made from the request's Host and proxy headers
    (route_utils.get_root_url), so the page is kept per those, for at most PAGES_KEPT of them (a client may send
    any Host: at most 8 pages of 1 MB, and their compressed copies, are held). A response that is not a plain 200
    without cookies is passed on and not kept."""

    def __init__(self, app):
        self.app = app
        self.pages: OrderedDict[tuple, tuple[list, dict[str, bytes]]] = OrderedDict()
        self.lock = threading.Lock()  # the pages, read and written by the server's loop and its worker threads
        self.rendering = asyncio.Lock()

    async def __call__(self, scope, receive, send) -> None:
        if not (scope["type"] == "http" and scope.get("method") == "GET" and scope.get("path") == "/"
                and b"deep_link" not in scope.get("query_string", b"")):
            return await self.app(scope, receive, send)
        address = (scope.get("scheme"), scope.get("server"), scope.get("root_path", ""),
                   *(dict(scope.get("headers", [])).get(h, b"") for h in ADDRESS_HEADERS))
        kept = self._kept(address)
        if kept is None:
            async with self.rendering:  # a hall asking at once waits for one rendering, not a hundred
                kept = self._kept(address)
                if kept is None:
                    kept = await self._rendered(scope, receive, send)
                    if kept is None:
                        return
                    with self.lock:
                        self.pages[address] = kept
                        while len(self.pages) > PAGES_KEPT:
                            self.pages.popitem(last=False)
        headers, bodies = kept
        encoding = _encoding(scope)
        body = bodies.get(encoding) or await anyio.to_thread.run_sync(self._encode, bodies, encoding)
        sent = [(k, v) for k, v in headers if k not in (b"content-length", b"content-encoding", b"vary")]
        sent += [(b"content-length", str(len(body)).encode()), (b"vary", b"accept-encoding")]
        if encoding:
            sent.append((b"content-encoding", encoding.encode()))
        await send({"type": "http.response.start", "status": 200, "headers": sent})
        await send({"type": "http.response.body", "body": body})

    def _kept(self, address: tuple) -> tuple[list, dict[str, bytes]] | None:
        with self.lock:
            kept = self.pages.get(address)
            if kept is not None:
                self.pages.move_to_end(address)
            return kept

    async def _rendered(self, scope, receive, send) -> tuple[list, dict[str, bytes]] | None:
        """Gradio's page for this request, uncompressed (headers, {"": body}); None when it was not a plain 200
        without cookies, which is then sent on as it came."""
        messages = []

        async def keep(message):
            messages.append(message)

        await self.app(scope, receive, keep)
        start, body = messages[0], b"".join(m.get("body", b"") for m in messages[1:])
        if start.get("status") != 200 or any(k.lower() == b"set-cookie" for k, _ in start.get("headers", [])):
            for message in messages:
                await send(message)
            return None
        return list(start.get("headers", [])), {"": body}

    def _encode(self, bodies: dict[str, bytes], encoding: str) -> bytes:
        with self.lock:
            if encoding not in bodies:
                bodies[encoding] = _encoded(bodies[""], encoding)
            return bodies[encoding]


# ---------------------------------------------------------------- 13. no matplotlib

def no_matplotlib() -> None:
    """Say once that matplotlib is not installed (idempotent). Gradio 6.31 runs every call of every event inside
    `MatplotlibBackendMananger` (route_utils.py), which imports matplotlib on entering and again on leaving, to
    switch its backend, and passes on ImportError. This app draws with plotly and has no matplotlib, so each call
    of a lecture hall searched every folder of sys.path for it twice, on disk, beside the hall's work. A None in
    sys.modules is Python's own mark for a module not to be imported: the import then fails at once, and Gradio
    passes as before. Where matplotlib is installed, nothing changes."""
    if "matplotlib" not in sys.modules and importlib.util.find_spec("matplotlib") is None:
        sys.modules["matplotlib"] = None
