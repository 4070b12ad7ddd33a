"""What a lecture costs the lecturer's browser: `python -m benchmarks.lecture_walk [--steps 18] [--wait 4]`.

Starts `python app.py`, opens the lecture link in Debian's chromium at 1280x720 and presses Next step `--steps`
times, `--wait` seconds apart (each step's view is drawn by then on this machine), reading after each step the
page's main-thread busy time (Chrome DevTools' `TaskDuration`: scripts, style, layout and paint). A page that
grows slower as it is used shows here as later steps costing more than the first ones: the two halves of the
walk are printed beside the total. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "app")]
from serving import free_port, start_app  # noqa: E402

from test_browser import CHROMIUM, CHROMIUM_ARGS, PROJECTOR  # noqa: E402


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=18, help="Next step presses (the lecture has 19 steps)")
    parser.add_argument("--wait", type=float, default=4.0, help="seconds between presses")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    port = free_port()
    process, _ = start_app(port)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_context(viewport=PROJECTOR).new_page()
            devtools = page.context.new_cdp_session(page)
            devtools.send("Performance.enable")

            def busy() -> float:
                metrics = devtools.send("Performance.getMetrics")["metrics"]
                return next(m["value"] for m in metrics if m["name"] == "TaskDuration")

            page.goto(f"http://127.0.0.1:{port}/?lecture=1")
            page.locator("#lecture-next").wait_for()
            page.wait_for_timeout(6000)  # the first step drawn, the page settled
            per_step = []
            for _ in range(args.steps):
                before = busy()
                page.locator("#lecture-next").click()
                page.wait_for_timeout(args.wait * 1000)
                per_step.append(round(busy() - before, 2))
                print(f"step {len(per_step) + 1}: {per_step[-1]} s", flush=True)
            browser.close()
    finally:
        process.terminate()
    half = len(per_step) // 2
    result = {"steps": len(per_step), "main_thread_s": round(sum(per_step), 1),
              "first_half_s": round(sum(per_step[:half]), 1), "second_half_s": round(sum(per_step[half:]), 1),
              "per_step_s": per_step}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
