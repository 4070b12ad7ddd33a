"""Ask the hall's lecturer page: the question's absolute link (as the lecturer's browser reached the server,
behind a proxy too) and its QR code, and no student answer box on the projected page."""

from types import SimpleNamespace

from ui import questions as tab


def request(headers: dict, scheme: str = "http"):
    return SimpleNamespace(headers=headers, url=SimpleNamespace(scheme=scheme), session_hash="lecturer")


def test_the_link_is_absolute_and_its_qr_code_encodes_it():
    held, prompt, link, counted, *_, student_box = tab.ask("token_count", None, "en",
                                                           request({"host": "10.0.0.5:7860"}))
    code = held[0]
    url = f"http://10.0.0.5:7860/?tab=questions&amp;code={code}"  # as HTML writes it
    assert f'aria-label="{url}"' in link and f">{url}</a>" in link and "<svg" in link
    assert student_box.visible is False  # the lecturer's projected page: no answer box
    tab.close(held)


def test_behind_a_proxy_the_link_is_the_address_students_reach():
    held, _, link, *_ = tab.ask("token_count", None, "zh-CN", request(
        {"host": "internal:7860", "x-forwarded-host": "user-lab.hf.space", "x-forwarded-proto": "https"}))
    assert f"https://user-lab.hf.space/?tab=questions&amp;code={held[0]}" in link and "扫描二维码" in link
    tab.close(held)


def test_the_lecturers_answer_chart_is_hidden_until_the_reveal_shows_it():
    """No empty plot (Gradio's placeholder icon) waits on the projector while the hall answers."""
    held, *_, hall, _verdict, _student_box = tab.ask("token_count", None, "en", request({"host": "lab"}))
    assert hall.visible is False
    verdict, hall, _timer = tab.reveal(held)
    assert hall.visible is True and hall.value is not None, verdict
    tab.close(held)


def test_the_revealed_chart_places_the_models_answer_and_names_the_other_values_in_the_pages_language():
    """A number question nobody answered right still shows the model's answer on the axis (green), and the bin of
    values beyond the most common ones is named in Chinese on a Chinese page."""
    import json

    from lab import questions

    held, *_ = tab.ask("causal_sees", None, "zh-CN", request({"host": "lab"}))
    for i in range(questions.MAX_BINS + 2):  # more distinct values than bins, none of them the model's 5
        questions.HALL.answer(held[0], f"s{i}", str(100 + i))
    _, hall, _ = tab.reveal(held, "zh-CN")
    data = json.loads(hall.value["plot"])["data"][0]
    assert "5" in data["x"] and data["x"][-1] == "其他数值", data["x"]
    assert data["marker"]["color"][list(data["x"]).index("5")] == "#1a9850"  # the model's answer, green
    tab.close(held)
