"""Shared by the app-level tests."""

import pytest
import serving


@pytest.fixture(scope="session")
def served_app(tmp_path_factory):
    """One `python app.py` (with every checkpoint, `serving.model_dir`) for every test that talks to the app
    over HTTP: the browser tests and the HTTP tests of test_robustness and test_serving. Starting it takes
    seconds to a minute on a busy 2-core machine, so it is started once, not once per module.
    Yields (base url, seconds until it served its first page)."""
    port = serving.free_port()
    models = serving.model_dir(tmp_path_factory.mktemp("served"))
    process, startup_s = serving.start_app(port, "--model-dir", str(models), timeout_s=120)  # = test_browser.STARTUP_LIMIT_S
    yield f"http://127.0.0.1:{port}", startup_s
    process.terminate()
    process.wait(timeout=30)
