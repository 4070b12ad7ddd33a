"""The GPT-2 picker end to end, with no network: a small random GPT-2 saved in the Hub's file
layout (transformers' save_pretrained), served by a stand-in for the Hub on 127.0.0.1,
downloaded by the real huggingface_hub (HF_ENDPOINT points at the stand-in) and run by the
Generate and Attention tabs' handlers, in a fresh process as `python app.py` would run them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import hub_stand_in
import pytest
import serving
import torch

import transformer_core as tc
from transformer_core.tokenization import TextTokenizer

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "The cat sat on the mat. "
NEW_TOKENS = 8
TEXT = "The cat sat on the mat. The dog sat on the log. A cat and a dog met on a mat by the log.\n" * 20

# What a person's clicks run: the Generate tab greedy on GPT-2, then the Attention tab's
# heads and its attention while generating. Prints what the test checks, as JSON.
TABS = f"""
import json, sys
sys.path.insert(0, "tests")
from figures import figure
from lab import store
from lab.attention import GPT2_LABEL
from lab.generate import GPT2
from ui import attention, generate
store.set_model_dir(sys.argv[1])
*_, (notice, text, _, _, _, _, session) = generate.generate(
    GPT2, {PROMPT!r}, "greedy", 0.0, 0, 1.0, 0.0, 1.0, {NEW_TOKENS}, 0, 1, 1.0)
heads = attention.attention(GPT2_LABEL, {PROMPT!r}, "decoder", 1, 1, 3)
continuation, staircase, _, _ = attention.attention_generate(GPT2_LABEL, {PROMPT!r}, 4, 1, 1, 2)
model = store.gpt2()[0]
print(json.dumps({{"generate_notice": notice, "ids": session.ids, "n_prompt": session.n_prompt,
                  "attention_notice": heads[0], "grid_title": figure(heads[1]).layout.title.text,
                  "continuation": continuation, "staircase_rows": len(figure(staircase).data[0].z),
                  "n_layer": model.config.n_layer}}))
"""


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory) -> Path:
    """A random GPT-2 (2 layers, 2 heads) with a byte-level BPE like GPT-2's, as save_pretrained writes them."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    folder = tmp_path_factory.mktemp("gpt2")
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator([TEXT], trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = transformers.GPT2TokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>",
                                               bos_token="<|endoftext|>", unk_token="<|endoftext|>")
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    # initializer_range 0.5, not GPT-2's 0.02: outputs that depend on the context, no near-ties
    config = transformers.GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2, n_positions=64,
                                     initializer_range=0.5)
    transformers.GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


def run_tabs(endpoint: str, hf_home: Path, tmp_path: Path) -> dict:
    env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_HOME": str(hf_home), "PYTHONPATH": str(ROOT)}
    env.pop("HF_HUB_OFFLINE", None)
    result = subprocess.run([sys.executable, "-c", TABS, str(serving.model_dir(tmp_path))], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_gpt2_picker_downloads_from_the_hub_and_both_tabs_run_it(gpt2_folder, tmp_path):
    transformers = pytest.importorskip("transformers")
    hub = hub_stand_in.HubStandIn({"gpt2": gpt2_folder})
    try:
        online = run_tabs(hub.url, tmp_path / "hf-home", tmp_path)
    finally:
        hub.close()
    fetched = {path.rsplit("/", 1)[-1] for method, path in hub.requests if method == "GET" and "/resolve/" in path}
    assert fetched == {"config.json", "model.safetensors", "tokenizer.json"}  # and nothing it does not need
    assert online["generate_notice"] == "" and online["attention_notice"] == ""  # nothing cut
    # the tab's text is GPT-2's own greedy continuation: the weights and tokenizer arrived intact
    prompt = TextTokenizer.load(gpt2_folder).encode(PROMPT)
    assert online["n_prompt"] == len(prompt) and online["ids"][: len(prompt)] == prompt
    hf = transformers.GPT2LMHeadModel.from_pretrained(gpt2_folder).eval()
    with torch.no_grad():
        expected = hf.generate(torch.tensor([prompt]), max_new_tokens=NEW_TOKENS, do_sample=False,
                               attention_mask=torch.ones(1, len(prompt), dtype=torch.long), pad_token_id=0)
        assert online["ids"] == expected[0].tolist()
        ids = torch.tensor([online["ids"]])
        assert torch.allclose(tc.load_gpt2(gpt2_folder)(ids), hf(ids).logits, atol=1e-4)
    assert online["n_layer"] == 2 and online["grid_title"].startswith("2 layers x 2 heads over 8 x 8 tokens")
    assert online["continuation"].startswith("**Continuation:**") and online["staircase_rows"] == 4
    # the Hub gone, the same picker reads the copy in the local Hugging Face cache
    offline = run_tabs(hub.url, tmp_path / "hf-home", tmp_path)
    assert offline["generate_notice"] == "" and offline["ids"] == online["ids"]
