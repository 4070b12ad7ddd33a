"""Transformer Lab's Gradio tabs: one small module per tab, assembled by app.py."""
