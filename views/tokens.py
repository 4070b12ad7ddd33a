"""Token chips, counts and the BPE vocabulary curve: what a tokenizer did to a text, drawn.

Lesson: the model reads ids, not letters. Each token is drawn as a chip that
shows its text (spaces and invisible characters made visible) and its id; the
hover title says which characters and which UTF-8 bytes it covers. Chips take
their colour from their id, so the same token always has the same colour.

Everything here is a pure function of token spans or merge steps; nothing
here tokenizes. Every string that reaches the HTML is escaped with `html.escape`.
"""

from __future__ import annotations

import html
import unicodedata
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go

from i18n import plural, t
from transformer_core.tokenization import MergeStep, TokenSpan, is_fragment, sanitize

# Scoped by gr.HTML(css_template=...); chips isolate their text so a
# right-to-left token cannot reorder its neighbours. A panel of an earlier text is dimmed (`pending`) while the
# page has drawn the text's tokens under our BPEs and waits for the server's panels (ui/tokens.js).
CHIP_CSS = """
.panels { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 12px; }
.panel { border: 1px solid #ddd; border-radius: 8px; padding: 8px; direction: ltr; }
.panel.pending { opacity: 0.45; }
.panel h4 { margin: 0 0 4px 0; }
.counts { font-size: 0.85em; color: #555; margin-bottom: 6px; }
.chips { line-height: 2.1; word-break: break-all; max-height: 22em; overflow-y: auto; }
.tok { display: inline-block; unicode-bidi: isolate; white-space: pre; border: 1px solid rgba(0,0,0,0.25);
       border-radius: 4px; padding: 0 3px; margin: 1px; font-family: monospace; color: #111; }
.tok sub { font-size: 0.7em; color: #555; margin-left: 2px; }
.tok.fragment { border: 2px dashed #b00; }
.cost { border-collapse: collapse; } .cost td, .cost th { padding: 2px 8px; border-bottom: 1px solid #ddd; }
.hint { color: #666; font-style: italic; }
"""

# How whitespace and invisible characters appear on a chip. Other control characters are
# written like the split bytes of a byte-level token ("\\x00"), which every font can show.
_SHOWN_AS = {" ": "·", "\n": "↵", "\t": "⇥"}
_INVISIBLE = {"Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"}


def visible(text: str) -> str:
    """`text` with space as "·", newline "↵", tab "⇥", other controls as "\\xNN", other invisibles as "<U+XXXX>"."""
    out = []
    for char in text:
        if char in _SHOWN_AS:
            out.append(_SHOWN_AS[char])
        elif unicodedata.category(char) == "Cc":
            out.append(f"\\x{ord(char):02x}")
        elif unicodedata.category(char) in _INVISIBLE:
            out.append(f"<U+{ord(char):04X}>")
        else:
            out.append(char)
    return "".join(out)


def _escape(text: str) -> str:
    """Token text made visible, then safe inside HTML (a token may well be "<script>")."""
    return html.escape(visible(text), quote=True)


def colour(key: int) -> str:
    """A light background colour for `key`; the golden angle spreads neighbouring keys around the hue circle."""
    return f"hsl({key * 137.508 % 360:.0f}, 75%, 85%)"


def _chip(label: str, token_id: int | None, key: int, title: str, fragment: bool = False) -> str:
    """One chip; `title` must hold user text only as repr() (which escapes control characters).
    A fragment (some of one character's bytes) gets a dashed border."""
    sub = "" if token_id is None else f"<sub>{token_id}</sub>"
    data_id = "" if token_id is None else f' data-id="{token_id}"'
    kind = "tok fragment" if fragment else "tok"
    return (f'<span class="{kind}"{data_id} style="background:{colour(key)}" title="{html.escape(title, quote=True)}">'
            f"{_escape(label)}{sub}</span>")


# The messages a panel is written in: a page that draws the panels of our BPEs itself as a person types
# (ui/tokens.js) is sent these, in every language, beside the merge tables
PANEL_MESSAGES = ("tokens.chip_title", "tokens.fragment_title", "tokens.chips_cut", "tokens.counts", "tokens.cost",
                  "tokens.cannot_represent",
                  *(f"count.{noun}.{n}" for noun in ("character", "byte", "token") for n in ("one", "other")))


# Chips drawn per panel: about three screens of its scrolling box. Each chip is ~170 bytes of HTML, and a
# 5,000-character text in 9 tokenizers was 25,000 chips, a 4 MB answer that a visitor need never read.
CHIPS_SHOWN = 500


def _cut(n: int, lang: str) -> str:
    """The notice under chips cut at CHIPS_SHOWN ("" when all `n` are drawn)."""
    return hint(t("tokens.chips_cut", lang, shown=CHIPS_SHOWN, n=n)) if n > CHIPS_SHOWN else ""


def token_chips(text: str, spans: Sequence[TokenSpan], lang: str = "en") -> str:
    """One chip per token of `text` (the first CHIPS_SHOWN, with a notice): token text, id, and a hover title
    with its char and byte spans."""
    chips = []
    for span in spans[:CHIPS_SHOWN]:
        title = t("tokens.chip_title", lang, id=span.id, start=span.start, end=span.end,
                  text=repr(text[span.start:span.end]), byte_start=span.byte_start, byte_end=span.byte_end)
        fragment = is_fragment(text, span)
        if fragment:
            whole = text[span.start:span.end]
            title += t("tokens.fragment_title", lang, char=repr(whole), n=len(whole.encode("utf-8")))
        chips.append(_chip(span.text, span.id, span.id, title, fragment))
    return f'<div class="chips">{"".join(chips)}</div>{_cut(len(spans), lang)}'


def piece_chips(pieces: Sequence[str], lang: str = "en") -> str:
    """Chips for tokens that have no ids (BPE from scratch); the colour comes from the token's text."""
    chips, position = [], 0
    for piece in pieces[:CHIPS_SHOWN]:
        key = zlib.crc32(piece.encode("utf-8", errors="replace"))
        chips.append(_chip(piece, None, key, t("tokens.piece_title", lang, start=position,
                                                end=position + len(piece), text=repr(piece))))
        position += len(piece)
    return f'<div class="chips">{"".join(chips)}</div>{_cut(len(pieces), lang)}'


@dataclass(frozen=True)
class TokenCounts:
    """How long a text is in characters (code points), UTF-8 bytes and tokens."""

    chars: int
    bytes: int
    tokens: int
    fragments: int = 0  # tokens that hold only part of one character's bytes

    @property
    def chars_per_token(self) -> float:
        return self.chars / self.tokens if self.tokens else 0.0

    @property
    def tokens_per_char(self) -> float:
        return self.tokens / self.chars if self.chars else 0.0

    @property
    def bytes_per_token(self) -> float:
        return self.bytes / self.tokens if self.tokens else 0.0


def counts(text: str, spans: Sequence[TokenSpan]) -> TokenCounts:
    return TokenCounts(len(text), len(sanitize(text).encode("utf-8")), len(spans),
                       sum(is_fragment(text, s) for s in spans))


def _counts_line(c: TokenCounts, lang: str) -> str:
    line = t("tokens.counts", lang, chars=plural(c.chars, "character", lang), bytes=plural(c.bytes, "byte", lang),
             tokens=plural(c.tokens, "token", lang), per_token=c.chars_per_token)
    cost = t("tokens.cost", lang, per_char=c.tokens_per_char, per_token=c.bytes_per_token, fragments=c.fragments)
    return f'<div class="counts">{line}<br>{cost}</div>'


def cost_table(rows: Sequence[tuple[str, TokenCounts, TokenCounts]], lang: str = "en") -> str:
    """The same sentence in English and in Chinese, per tokenizer: tokens each (and per character: a Chinese
    character says more than a Latin letter), and how many times more Chinese costs."""
    head = "".join(f"<th>{html.escape(t(k, lang))}</th>" for k in
                   ("tokens.cost_tokenizer", "tokens.cost_english", "tokens.cost_chinese", "tokens.cost_ratio"))

    def cell(c: TokenCounts) -> str:
        return f"<td>{html.escape(t('tokens.cost_per_char', lang, tokens=c.tokens, per_char=c.tokens_per_char))}</td>"

    body = "".join(f"<tr><td>{html.escape(label)}</td>{cell(en)}{cell(zh)}"
                   f"<td><b>{zh.tokens / en.tokens:.2f}×</b></td></tr>" for label, en, zh in rows)
    return f'<table class="cost"><tr>{head}</tr>{body}</table>'


def tokenizer_panel(title: str, text: str, spans: Sequence[TokenSpan], problem: str = "", lang: str = "en") -> str:
    """A heading, the counts line and the chips for one tokenizer (or the one line saying it cannot)."""
    body = hint(problem) if problem else token_chips(text, spans, lang)
    return f'<div class="panel"><h4>{html.escape(title)}</h4>{_counts_line(counts(text, spans), lang)}{body}</div>'


def panels(parts: Sequence[str]) -> str:
    """Panels side by side (they wrap onto new rows on narrow screens)."""
    return f'<div class="panels">{"".join(parts)}</div>'


def hint(message: str) -> str:
    return f'<p class="hint">{html.escape(message)}</p>'


def merge_rows(steps: Sequence[MergeStep]) -> list[list]:
    """The merge table: step, left + right, the pair's count when merged, the new token, vocabulary size after."""
    return [[i + 1, f"{visible(s.pair[0])} + {visible(s.pair[1])}", s.count, visible(s.token), s.vocab_size]
            for i, s in enumerate(steps)]


def vocab_curve(vocab_sizes: Sequence[int], k: int, lang: str = "en") -> go.Figure:
    """Vocabulary size after 0..n merges, with the current step `k` marked."""
    steps = list(range(len(vocab_sizes)))
    fig = go.Figure(go.Scatter(x=steps, y=list(vocab_sizes), mode="lines+markers", name="vocabulary",
                               hovertemplate=t("tokens.vocab_curve.hover", lang)))
    if 0 <= k < len(vocab_sizes):
        fig.add_trace(go.Scatter(x=[k], y=[vocab_sizes[k]], mode="markers", name=f"step {k}",
                                 marker=dict(size=14, color="crimson"),
                                 hovertemplate=t("tokens.vocab_curve.now_hover", lang)))
    fig.update_layout(xaxis_title=t("tokens.vocab_curve.x", lang), yaxis_title=t("tokens.vocab_curve.y", lang),
                      showlegend=False,
                      height=320, margin=dict(l=10, r=10, t=30, b=10))
    return fig
