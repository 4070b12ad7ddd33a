"""Reading a model: attention rollout and per-token losses (readouts), the Concepts experiments,
which tokens drove a sentiment verdict, and what a head does (heads: find, switch off, logit lens, roles)."""
