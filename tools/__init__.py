"""Tools that work on the project, outside the app and the core: deploying to the Hugging Face Hub, making the
real LLMs' checkpoints."""
