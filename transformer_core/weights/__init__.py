"""Weights in and out: our checkpoints through the Hugging Face Hub's format, GPT-2 and BERT imported into our models."""
