"""Reading a model: attention rollout and per-token losses (probes), the Concepts experiments, and
which tokens drove a sentiment verdict."""
