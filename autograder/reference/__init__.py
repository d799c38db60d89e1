"""Reference NumPy solutions for Module 6, the truth every check is compared with.

Split by topic; this package re-exports the public API:

========================  =======================================================================
``softmax``               :func:`stable_log_softmax`, :func:`softmax`
``causal``                :func:`causal_response_logprobs`
``metrics``               :class:`SequenceMetrics`, :func:`masked_sequence_metrics`
``kl``                    :func:`exact_kl_from_logits`, :func:`kl_divergence`, :func:`kl_sample_values`,
                          :func:`kl_estimators_at_ratio`, :class:`ChainRuleKL`, :func:`kl_chain_rule`
``sampling``              :func:`temperature_distribution`, :func:`top_k_distribution`,
                          :func:`top_p_distribution`, :class:`SamplingConfig`, :func:`behaviour_distribution`,
                          :class:`BehaviourLogprob`, :func:`behaviour_logprob`,
                          :func:`truncation_log_correction`, :func:`sequence_ratio_error`
``stopping``              :class:`StopFlags`, :class:`TaskContract`, :data:`EOS_IS_TERMINAL`, :func:`map_stop_reason`
``support``               :class:`SupportReport`, :func:`importance_support`, :func:`importance_weight_mean`
``rollout``               :data:`REPRODUCIBILITY_FIELDS`, :data:`ROLLOUT_BATCH_FIELDS`,
                          :class:`RolloutBatchSummary`, :func:`validate_rollout_batch`
========================  =======================================================================

Every function accepts array-likes (lists too), computes in float64, and raises ``TypeError`` or
``ValueError`` naming the offending argument.
"""

from autograder.reference.causal import causal_response_logprobs
from autograder.reference.kl import (
    ChainRuleKL, exact_kl_from_logits, kl_chain_rule, kl_divergence, kl_estimators_at_ratio, kl_sample_values,
)
from autograder.reference.metrics import SequenceMetrics, masked_sequence_metrics
from autograder.reference.rollout import (
    REPRODUCIBILITY_FIELDS, ROLLOUT_BATCH_FIELDS, RolloutBatchSummary, validate_rollout_batch,
)
from autograder.reference.sampling import (
    BehaviourLogprob, SamplingConfig, behaviour_distribution, behaviour_logprob, sequence_ratio_error,
    temperature_distribution, top_k_distribution, top_p_distribution, truncation_log_correction,
)
from autograder.reference.softmax import softmax, stable_log_softmax
from autograder.reference.stopping import EOS_IS_TERMINAL, StopFlags, TaskContract, map_stop_reason
from autograder.reference.support import SupportReport, importance_support, importance_weight_mean

__all__ = [
    "BehaviourLogprob", "ChainRuleKL", "EOS_IS_TERMINAL", "REPRODUCIBILITY_FIELDS", "ROLLOUT_BATCH_FIELDS",
    "RolloutBatchSummary", "SamplingConfig", "SequenceMetrics", "StopFlags", "SupportReport", "TaskContract",
    "behaviour_distribution", "behaviour_logprob", "causal_response_logprobs", "exact_kl_from_logits",
    "importance_support", "importance_weight_mean", "kl_chain_rule", "kl_divergence", "kl_estimators_at_ratio",
    "kl_sample_values", "map_stop_reason", "masked_sequence_metrics", "sequence_ratio_error", "softmax",
    "stable_log_softmax", "temperature_distribution", "top_k_distribution", "top_p_distribution",
    "truncation_log_correction", "validate_rollout_batch",
]
