"""The app's answers compressed on the wire, for a classroom's Wi-Fi and students' phones.

Gradio compresses its static files but sends every answer (the event streams of its queue
and of its HTTP API, and the answers outside the queue) as it is. An attention view is mostly numbers and token labels that
repeat, so gzip makes it several times smaller: 128 tokens of attention went from 0.3 MB to
about 0.1 MB. Each event is flushed as it is written (Starlette's GZip does a sync flush
per chunk), so streamed tokens still arrive one by one; a client that does not ask for
gzip gets the stream as before.
"""

from __future__ import annotations

from starlette.middleware import Middleware
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES, GZipMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from ui import tokens
from ui.gradio_patches import BuiltAssets, PageCache
from ui.sessions import PageTracker

# the queue's event stream, the HTTP API's, and the answers outside the queue (a re-slice, the language switch)
STREAMS = ("/gradio_api/queue/data", "/gradio_api/call/", "/gradio_api/run/")
LEVEL = 4  # zlib's fastest level of lazy matching: a third of its default's CPU on our answers, for 7-10% more bytes


class CompressedStreams:
    """ASGI middleware: gzip the answer streams (STREAMS), leave every other route to Gradio."""

    def __init__(self, app: ASGIApp):
        self.app = app
        events_too = tuple(t for t in DEFAULT_EXCLUDED_CONTENT_TYPES if t != "text/event-stream")
        self.gzip = GZipMiddleware(app, compresslevel=LEVEL, exclude_content_types=events_too)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and any(part in scope["path"] for part in STREAMS):
            await self.gzip(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def app_kwargs() -> dict:
    """What `Blocks.launch(app_kwargs=...)` needs to serve the page and Gradio's page files from memory
    (ui/gradio_patches.py) and the compressed streams, to know which sessions have a page open (ui/sessions.py
    keeps state only for those, and briefly for the rest), and to serve the Tokens tab's merge tables to the page
    (ui/tokens.py)."""
    return {"middleware": [Middleware(PageCache), Middleware(BuiltAssets), Middleware(CompressedStreams),
                           Middleware(PageTracker)],
            "routes": tokens.ROUTES}
