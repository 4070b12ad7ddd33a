"""Figure builders: pure functions from a trace (or plain numbers) to a plotly figure.

They never run a model; handlers run the model once and pass the trace here.
"""

import plotly.graph_objects as go
import plotly.io as pio

# Every figure's text in a font stack that has Chinese glyphs, so a PNG or SVG export shows 注意力, not boxes
# (Noto Sans CJK SC is Debian's fonts-noto-cjk; the rest is plotly's own stack).
FONT_FAMILY = '"Open Sans", verdana, arial, "Noto Sans CJK SC", "Noto Sans SC", "Microsoft YaHei", sans-serif'
pio.templates["transformer_lab"] = go.layout.Template(layout=dict(font=dict(family=FONT_FAMILY)))
pio.templates.default = "plotly+transformer_lab"
