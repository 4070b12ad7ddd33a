"""Figure builders: pure functions from a trace (or plain numbers) to a plotly figure.

They never run a model; handlers run the model once and pass the trace here.
"""
