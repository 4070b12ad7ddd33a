"""Training: the shared loop, the data and tasks it reads, and the `python -m transformer_core.training.train_*`
commands that write the checkpoints in assets/."""
