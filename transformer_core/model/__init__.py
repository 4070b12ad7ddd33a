"""The model room: what a lecturer opens in class.

layers (norms; attention, softmax(q kᵀ/√d) v with the heads folded into the batch; positions,
feed-forward, pre-LN and post-LN blocks), models (the three transformers), masks (what a query may read),
trace (every tensor one forward pass computed, in one store named by module path; the same
points let an edit change a tensor, e.g. switch a head off) and kv_cache (the keys and
values incremental decoding reuses). It imports nothing else from transformer_core.
"""
