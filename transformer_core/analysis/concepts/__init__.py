"""The textbook's key ideas as small experiments run on this package's own classes.

Lesson: six ideas every transformer course repeats, each checked numerically on
the real code rather than drawn from memory, each in a module of its own:

1. self-attention is a weighted average of value vectors (`attend`; weighted_average.py);
2. dividing scores by √d keeps softmax out of saturation, where its gradient vanishes (scaling.py);
3. attention ignores order: without positions an encoder is permutation-equivariant
   and a mean-pooled classifier permutation-invariant (`EncoderClassifier`; order.py);
4. positions are vectors added to tokens: the sinusoidal formula, or learned rows (positions.py);
5. heads split the width, they add no parameters (`MultiHeadAttention`; parameters.py);
6. one forward pass of a tiny `EncoderDecoder`, every tensor in order, down to the loss (forward_pass.py).

Each function returns plain data (tensors, rows) that the Concepts tab draws; it
does the math through the core so a picture can never disagree with the model.
The tab reads every experiment from this package's names.
"""

from .common import ConceptInputError
from .weighted_average import parse_matrix, self_attention_average, WeightedAverage
from .scaling import SCALING_DIMS, scaling_point, scaling_sweep, ScalingPoint, softmax_jacobian_norm
from .order import (
    order_experiment,
    OrderVariant,
    random_classifier,
    shuffled_order,
    token_permutation,
    without_positions,
)
from .positions import learned_positions, position_similarity, sinusoidal_positions
from .parameters import component_of, ComponentCount, head_parameter_counts, HeadCount, parameter_table
from .forward_pass import (
    BOS,
    STEP_MEANING,
    TINY,
    tiny_encoder_decoder,
    TINY_INIT_STD,
    TINY_VOCAB,
    trace_encoder_decoder,
    TracedRun,
    TraceStep,
)

__all__ = [
    "ConceptInputError", "parse_matrix", "WeightedAverage", "self_attention_average", "SCALING_DIMS",
    "softmax_jacobian_norm", "ScalingPoint", "scaling_point", "scaling_sweep", "without_positions",
    "random_classifier", "shuffled_order", "token_permutation", "OrderVariant", "order_experiment",
    "position_similarity", "sinusoidal_positions", "learned_positions", "HeadCount", "head_parameter_counts",
    "ComponentCount", "component_of", "parameter_table", "TINY", "TINY_VOCAB", "TINY_INIT_STD", "BOS", "STEP_MEANING",
    "tiny_encoder_decoder", "TraceStep", "TracedRun", "trace_encoder_decoder",
]
