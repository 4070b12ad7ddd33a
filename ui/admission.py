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
and an API client reads from the response, in the language the browser asks for.

Jobs are counted where they wait (each group's queue) and run (the queue's active jobs), not in
`event_ids_to_events`, where Gradio (6.31) keeps a join answered from a cache for good (the door lets
it go): counted there, every cached view a client was answered with would count against it forever.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Callable

from fastapi import HTTPException

from i18n import normalise, t
from ui.gradio_patches import guard_queue, jobs

SESSION_JOBS = 4  # per session and concurrency group: a student clicks again before the first answer arrives
ADDRESS_JOBS = 128  # per client address and group: 100 students of one lecture hall share one address
GROUP_JOBS = 256  # per group, whoever asks: beyond it, that group is full, the others are not
ADDRESS_TOTAL = 256  # per client address in all groups: a quarter of app.QUEUE_MAX_SIZE
TOO_MANY = 429


class Admission:
    """The caps above at a Gradio queue's door (its `push`, ui/gradio_patches.guard_queue). `admits(group)` is a
    group's own cap (None: GROUP_JOBS), `seconds_left(group)` how long until a full group frees a place (for the
    "try again in N s"), `session_jobs(group)` a session's own cap in the group (None: SESSION_JOBS)."""

    def __init__(self, queue, admits: Callable[[str], int | None], seconds_left: Callable[[str], float],
                 session_jobs: Callable[[str], int | None] = lambda group: None):
        self.queue, self.admits, self.seconds_left, self.session_jobs = queue, admits, seconds_left, session_jobs
        guard_queue(queue, self.refused)

    def refused(self, body, request) -> HTTPException | None:
        """HTTP 429 with the reason, in the browser's language, for a join the caps refuse; None to admit it."""
        if (fn_index := getattr(body, "fn_index", None)) is None or fn_index not in self.queue.blocks.fns:
            return None
        group = self.queue.blocks.fns[fn_index].concurrency_id
        if (refusal := self.refusal(group, body.session_hash, address(request))) is None:
            return None
        lang = normalise(request.headers.get("accept-language", "").split(",")[0].split(";")[0])
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
