"""Turning next-token distributions into text: generation, sampling, beam search, encoder-decoder decoding."""
