"""A stand-in for the Hugging Face Hub on 127.0.0.1: real `huggingface_hub` downloads from it.

It serves model repos from local folders through the endpoints `snapshot_download` and
`hf_hub_download` use (point `HF_ENDPOINT` at `url`):

    GET  /api/models/{repo}/revision/{revision}   repo info: the commit and its files
    GET  /api/models/{repo}/tree/{revision}       the file listing, with sizes
    HEAD /{repo}/resolve/{revision}/{file}        a file's commit, ETag and size
    GET  /{repo}/resolve/{revision}/{file}        the file itself

Every request is logged in `requests`, so a test can check what was fetched.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import re
import threading
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"  # the one revision every repo has
_INFO = re.compile(r"^/api/models/(?P<repo>.+)/revision/[^/]+$")
_TREE = re.compile(r"^/api/models/(?P<repo>.+)/tree/[^/]+$")
_FILE = re.compile(r"^/(?P<repo>.+)/resolve/[^/]+/(?P<file>.+)$")


class HubStandIn:
    """Serves `repos` (repo id -> folder) until `close()`; `url` is the endpoint."""

    def __init__(self, repos: dict[str, Path]):
        self.repos = {repo: Path(folder) for repo, folder in repos.items()}
        self.requests: list[tuple[str, str]] = []
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def files(self, repo: str) -> list[Path]:
        folder = self.repos[repo]
        return sorted(p for p in folder.rglob("*") if p.is_file())

    def _handler(self):
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_HEAD(self):
                self._answer(body=False)

            def do_GET(self):
                self._answer(body=True)

            def log_message(self, *args):
                pass

            def _answer(self, body: bool) -> None:
                path = self.path.split("?")[0]
                hub.requests.append((self.command, path))
                for pattern, reply in ((_INFO, self._info), (_TREE, self._tree), (_FILE, self._file)):
                    match = pattern.match(path)
                    if match and match["repo"] in hub.repos:
                        return reply(match, body)
                self._send(404, b'{"error": "Repository not found"}', {"X-Error-Code": "RepoNotFound"}, body)

            def _info(self, match, body):
                repo = match["repo"]
                siblings = [{"rfilename": p.relative_to(hub.repos[repo]).as_posix()} for p in hub.files(repo)]
                self._json({"id": repo, "modelId": repo, "sha": COMMIT, "private": False, "siblings": siblings}, body)

            def _tree(self, match, body):
                repo = match["repo"]
                self._json([{"type": "file", "path": p.relative_to(hub.repos[repo]).as_posix(), "size": p.stat().st_size,
                             "oid": hashlib.sha1(p.read_bytes()).hexdigest()} for p in hub.files(repo)], body)

            def _file(self, match, body):
                path = hub.repos[match["repo"]] / match["file"]
                if not path.is_file():
                    return self._send(404, b'{"error": "Entry not found"}', {"X-Error-Code": "EntryNotFound"}, body)
                content = path.read_bytes()
                self._send(200, content, {"X-Repo-Commit": COMMIT, "Content-Type": "application/octet-stream",
                                          "ETag": f'"{hashlib.sha256(content).hexdigest()}"'}, body)

            def _json(self, value, body):
                self._send(200, json.dumps(value).encode(), {"Content-Type": "application/json"}, body)

            def _send(self, status: int, content: bytes, headers: dict[str, str], body: bool) -> None:
                self.send_response(status)
                for name, value in {**headers, "Content-Length": str(len(content))}.items():
                    self.send_header(name, value)
                self.end_headers()
                if body:
                    self.wfile.write(content)

        return Handler
