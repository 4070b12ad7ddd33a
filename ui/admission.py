"""Fair admission to the queue: no one visitor can fill it for everyone else.

Gradio gives each event a concurrency group (`concurrency_id`, `concurrency_limit`: how many run at
once) and the whole queue one `max_size`. That kept one client from nothing: 257 joins for live
training from one session, never read, filled the queue, and every student's tokenize got HTTP 503
"Queue is full" for hours. What Gradio lacks, added here at the queue's door (`Queue.push`, the one
place both the browser's `/queue/join` and the HTTP API's `/call/<endpoint>` go through; the patch that
opens that door is ui/gradio_patches.guard_queue):

- a session holds at most SESSION_JOBS jobs (waiting or running) of one concurrency group, and a
  client address at most ADDRESS_JOBS (a lecture hall behind one NAT is a hundred students), and
  ADDRESS_TOTAL in all groups: half the queue;
- a group holds at most its `admits` jobs (ui/events.ENDPOINTS): live training admits one waiting run
  beside the running one, and the next hears "busy, try again in N s";
- each group holds at most GROUP_JOBS jobs, so a flooded group never fills the queue for the others
  (tokenize and cached views keep their own groups, as Gradio runs every group side by side).

A refused join is HTTP 429 with the reason as its `detail`, which the page shows in its error toast
and an API client reads from the response, in the language the browser asks for. A join that sends fewer
values than its endpoint takes is HTTP 422 naming them, as a Gradio validation answer (Gradio's own answer is
HTTP 500, the reason in the server's log).

A view re-sliced from a run already computed (a slider, a stage of a walk) is answered outside the queue, in one
round trip (`unqueued`), at a door of its own with the same measures: a session holds UNQUEUED_SESSION such
answers at once, a client address UNQUEUED_ADDRESS, the app UNQUEUED_WAITING (beyond: the same messages, as an
error toast); UNQUEUED_RUNNING of them run at once and the rest wait their turn without holding a thread (a
lecture hall moving its sliders together is served in turn, as the queue would serve it).

Jobs are counted where they wait (each group's queue) and run (the queue's active jobs), not in
`event_ids_to_events`, where Gradio (6.31) keeps a join answered from a cache for good (the door lets
it go): counted there, every cached view a client was answered with would count against it forever.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import ipaddress
import threading
from collections import Counter
from collections.abc import Callable

import anyio
import gradio as gr
from fastapi import HTTPException

from i18n import normalise, t
from ui.gradio_patches import guard_queue, jobs

SESSION_JOBS = 4  # per session and concurrency group: a student clicks again before the first answer arrives
ADDRESS_JOBS = 128  # per client address and group: 100 students of one lecture hall share one address
GROUP_JOBS = 256  # per group, whoever asks: beyond it, that group is full, the others are not
ADDRESS_TOTAL = 256  # per client address in all groups: a quarter of app.QUEUE_MAX_SIZE
TOO_MANY = 429
UNPROCESSABLE = 422
# re-slices answered outside the queue (`unqueued`), waiting or running: as the queue's caps for one kind
UNQUEUED_SESSION, UNQUEUED_ADDRESS, UNQUEUED_WAITING = SESSION_JOBS, ADDRESS_JOBS, GROUP_JOBS
UNQUEUED_RUNNING = 4  # of them at once, each on a server thread (a re-slice is 10-50 ms of one core)


class Admission:
    """The caps above at a Gradio queue's door (its `push`, ui/gradio_patches.guard_queue). `admits(group)` is a
    group's own cap (None: GROUP_JOBS), `seconds_left(group)` how long until a full group frees a place (for the
    "try again in N s"), `session_jobs(group)` a session's own cap in the group (None: SESSION_JOBS)."""

    def __init__(self, queue, admits: Callable[[str], int | None], seconds_left: Callable[[str], float],
                 session_jobs: Callable[[str], int | None] = lambda group: None):
        self.queue, self.admits, self.seconds_left, self.session_jobs = queue, admits, seconds_left, session_jobs
        guard_queue(queue, self.refused)

    def refused(self, body, request) -> HTTPException | None:
        """HTTP 429 with the reason, in the browser's language, for a join the caps refuse; HTTP 422 for one that
        sends fewer values than its endpoint takes (Gradio: HTTP 500, its reason in the server's log only);
        None to admit it."""
        if (fn_index := getattr(body, "fn_index", None)) is None or fn_index not in self.queue.blocks.fns:
            return None
        fn = self.queue.blocks.fns[fn_index]
        lang = normalise(request.headers.get("accept-language", "").split(",")[0].split(";")[0])
        if len(getattr(body, "data", None) or []) < len(fn.inputs):
            # in the form of Gradio's own validation answer, which gradio_client raises as a ValidationError with
            # the message (a plain string there broke the client's reading of it: "'str' object has no attribute")
            said = dict(__type__="validate", is_valid=False, parameter_name="data",
                        message=t("door.too_few_values", lang, names=takes(fn)))
            return HTTPException(status_code=UNPROCESSABLE, detail=[said])
        if (refusal := self.refusal(fn.concurrency_id, body.session_hash, address(request))) is None:
            return None
        key, params = refusal
        return HTTPException(status_code=TOO_MANY, detail=t(key, lang, **params))

    def refusal(self, group: str, session: str | None, client: str) -> tuple[str, dict] | None:
        """(message id, its parameters) of the reason a job of `group` from `session` at `client` is refused,
        or None to admit it."""
        everyone = jobs(self.queue)
        jobs_of_group = [e for e in everyone if e.concurrency_id == group]
        cap = self.admits(group)
        if cap is not None and len(jobs_of_group) >= cap:
            return "door.busy", {"seconds": max(1, round(self.seconds_left(group)))}
        if len(jobs_of_group) >= GROUP_JOBS:
            return "door.group_full", {"n": GROUP_JOBS}
        per_session = self.session_jobs(group) or SESSION_JOBS
        if session is not None and sum(e.session_hash == session for e in jobs_of_group) >= per_session:
            return "door.session_jobs", {"n": per_session}
        if Counter(address(e.request) for e in jobs_of_group)[client] >= ADDRESS_JOBS:
            return "door.address_jobs", {"n": ADDRESS_JOBS}
        if sum(address(e.request) == client for e in everyone) >= ADDRESS_TOTAL:
            return "door.address_jobs", {"n": ADDRESS_TOTAL}
        return None


def takes(fn) -> str:
    """The values an endpoint's caller sends, by its handler's names: its inputs but the session's state, which
    the HTTP API fills in itself."""
    handler = fn.fn if fn.fn is not None else (lambda: None)
    with contextlib.suppress(TypeError, ValueError):  # a builtin or a callable without a signature
        names = list(inspect.signature(handler).parameters)
        return ", ".join(n for n, c in zip(names, fn.inputs) if not isinstance(c, gr.State))
    return str(sum(not isinstance(c, gr.State) for c in fn.inputs))


def address(request) -> str:
    """The client's address. Behind a proxy on a private or loopback address (a Space's), the address that
    proxy saw: the last hop of X-Forwarded-For, the one the client cannot write itself."""
    peer = request.client.host if request is not None and request.client else ""
    forwarded = request.headers.get("x-forwarded-for", "") if request is not None else ""
    try:
        behind_proxy = ipaddress.ip_address(peer).is_private
    except ValueError:
        behind_proxy = False
    if behind_proxy and forwarded and (last := forwarded.split(",")[-1].strip()):
        return last
    return peer


class _InFlight:
    """Unqueued answers waiting or being computed, by session and by address."""

    def __init__(self):
        self.lock = threading.Lock()
        self.sessions: Counter = Counter()
        self.addresses: Counter = Counter()
        self.running: anyio.CapacityLimiter | None = None  # made in the server's event loop, on first use

    def enter(self, session: str | None, client: str) -> tuple[str, dict] | None:
        """Count one in, or (message id, parameters) of why not."""
        with self.lock:
            if sum(self.addresses.values()) >= UNQUEUED_WAITING:
                return "door.group_full", {"n": UNQUEUED_WAITING}
            if session is not None and self.sessions[session] >= UNQUEUED_SESSION:
                return "door.session_jobs", {"n": UNQUEUED_SESSION}
            if self.addresses[client] >= UNQUEUED_ADDRESS:
                return "door.address_jobs", {"n": UNQUEUED_ADDRESS}
            self.sessions[session] += 1
            self.addresses[client] += 1
            return None

    def leave(self, session: str | None, client: str) -> None:
        with self.lock:
            self.sessions[session] -= 1
            self.addresses[client] -= 1
            self.sessions += Counter()  # drop the zeros: a session that left is not kept
            self.addresses += Counter()

    def threads(self) -> anyio.CapacityLimiter:
        if self.running is None:
            self.running = anyio.CapacityLimiter(UNQUEUED_RUNNING)
        return self.running


IN_FLIGHT = _InFlight()


def unqueued(fn: Callable, n_inputs: int) -> Callable:
    """`fn` of `n_inputs` inputs for an event answered outside the queue (`queue=False`), counted at the door
    above. Gradio hands it the request after the inputs (a parameter annotated gr.Request; passed on to `fn` when
    it reads one itself); it waits its turn in the server's event loop, holding no thread, then runs `fn` on one;
    a refusal is a gr.Error in the browser's language."""
    try:
        own = "request" in inspect.signature(fn).parameters
    except ValueError:  # a builtin
        own = False

    @functools.wraps(fn)
    async def counted(*args):
        *values, request = args
        session, client = getattr(request, "session_hash", None), address(request)
        if (refusal := IN_FLIGHT.enter(session, client)) is not None:
            header = request.headers.get("accept-language", "") if request is not None else ""
            lang = normalise(header.split(",")[0].split(";")[0])
            key, params = refusal
            raise gr.Error(t(key, lang, **params), title=t("common.error_title", lang), print_exception=False)
        try:
            call = functools.partial(fn, *values, **({"request": request} if own else {}))
            return await anyio.to_thread.run_sync(call, limiter=IN_FLIGHT.threads())
        finally:
            IN_FLIGHT.leave(session, client)

    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    counted.__signature__ = inspect.Signature([*(inspect.Parameter(f"input{i}", positional) for i in range(n_inputs)),
                                               inspect.Parameter("request", positional, annotation=gr.Request)])
    counted.__annotations__ = {"request": gr.Request}
    if hasattr(fn, "cache"):
        counted.cache = fn.cache
    return counted
