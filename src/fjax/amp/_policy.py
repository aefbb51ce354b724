"""Autocast cast policies per op and device type, after torch's autocast op lists.

Under an enabled ``autocast(device_type)``, an op of the op table with a policy for that device
type casts its floating Tensor inputs on that device (float16, bfloat16, float32: float64 and
non-float Tensors are never cast, Python numbers never) before it runs:

- ``LOWER``: to the autocast dtype (``bfloat16`` by default on CPU, ``float16`` on CUDA);
- ``FP32``: to float32;
- ``FP32_OPT``: to float32 unless the call passes a ``dtype`` (torch's ``fp32_set_opt_dtype``
  and ``fp32_append_dtype``: reductions and norms that then accumulate and return float32);
- ``PROMOTE``: to the widest of the autocast dtype and the inputs' dtypes (ops that need equal
  dtypes, as ``cat`` and ``index_copy``, then run on mixed inputs);
- ``BANNED``: raise (CUDA's ``binary_cross_entropy``: use ``binary_cross_entropy_with_logits``);
- ``(FP32_IF, param, values)``: ``FP32`` when the argument ``param`` is one of ``values``
  (``pad`` in reflect/replicate mode on CPU, ``interpolate``'s upsampling modes on CUDA);
- ``(LOWER_IF_UNSET, params)``: ``LOWER`` when the call passes None (or nothing) for every one
  of ``params``. CPU's ``lstm_layer``: torch runs an LSTM on CPU as oneDNN's layer
  (``mkldnn_rnn_layer``, a lower-precision op) unless it has a projection or packed input, and
  then composes it from ops whose gates' products alone run lower (float32 output).

Every other op runs on what it is given, so mixed inputs promote as usual. The lists are torch
2.13's (``aten/src/ATen/autocast_mode.cpp``) mapped to fjax op names. Where fjax has one op for
what torch composes from listed ops, the op gets the policy that gives torch's output dtype:
``einsum``, ``tensordot``, ``inner``, ``matrix_power``, ``cov`` and ``corrcoef`` run their
products through ``mm``/``bmm``, so they are ``LOWER`` on both devices; on CUDA ``cross_entropy``
(``log_softmax`` + ``nll_loss``), ``softmin``, ``square`` (``pow``), ``normalize``,
``pairwise_distance`` (``norm``), ``gaussian_nll_loss`` and ``multilabel_soft_margin_loss``
return float32, so they are ``FP32``.
"""

from __future__ import annotations

from ..ops import _registry  # (importing the package fills the table: every name below is checked)

LOWER = "lower_precision_fp"
FP32 = "fp32"
FP32_OPT = "fp32_set_opt_dtype"
PROMOTE = "promote"
BANNED = "banned"
FP32_IF = "fp32_if"
LOWER_IF_UNSET = "lower_if_unset"

_CPU_LOWER = (
    "conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d bmm mm linalg_vecdot baddbmm addmm "
    "addbmm linear matmul prelu scaled_dot_product_attention "
    # composites of mm/bmm/linear in torch
    "einsum tensordot inner matrix_power cov corrcoef rnn_tanh_cell rnn_relu_cell rnn_tanh_layer rnn_relu_layer"
)
_CPU_FP32 = (
    "avg_pool3d binary_cross_entropy prod cdist trace inverse max_pool3d adaptive_avg_pool3d mse_loss "
    "cosine_embedding_loss nll_loss hinge_embedding_loss poisson_nll_loss smooth_l1_loss cross_entropy l1_loss "
    "huber_loss margin_ranking_loss soft_margin_loss triplet_margin_loss kl_div binary_cross_entropy_with_logits "
    "linalg_matrix_rank linalg_solve linalg_cholesky linalg_svdvals linalg_eigvalsh linalg_inv linalg_qr "
    "linalg_svd linalg_eigh linalg_lstsq linalg_inv_ex"
)
_CPU_PROMOTE = "cat concat concatenate stack index_copy hstack vstack dstack column_stack row_stack"

_CUDA_LOWER = (
    "conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d prelu addmm addmv addr matmul einsum "
    "mm mv linalg_vecdot linear addbmm baddbmm bmm lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell "
    "scaled_dot_product_attention lstm_layer gru_layer rnn_tanh_layer rnn_relu_layer "
    # composites of mm in torch
    "tensordot inner matrix_power cov corrcoef"
)
_CUDA_FP32 = (
    "acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow softplus layer_norm "
    "group_norm rms_norm cosine_similarity poisson_nll_loss cosine_embedding_loss nll_loss hinge_embedding_loss "
    "kl_div l1_loss smooth_l1_loss huber_loss mse_loss margin_ranking_loss soft_margin_loss triplet_margin_loss "
    "binary_cross_entropy_with_logits cdist renorm logsumexp "
    # composites of fp32 ops in torch
    "cross_entropy square normalize pairwise_distance gaussian_nll_loss multilabel_soft_margin_loss"
)
_CUDA_FP32_OPT = "prod softmax log_softmax softmin cumprod cumsum linalg_vector_norm linalg_matrix_norm sum norm"
_CUDA_PROMOTE = "addcdiv addcmul atan2 bilinear cross dot vdot index_put scatter_add"
_UPSAMPLE = frozenset({"nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear"})


def _table(**lists) -> dict:
    table: dict = {}
    for kind, names in lists.items():
        for name in names.split():
            if name in table:
                raise ValueError(f"autocast policy: {name!r} is listed twice")
            table[name] = kind
    return table


CPU = _table(**{LOWER: _CPU_LOWER, FP32: _CPU_FP32, PROMOTE: _CPU_PROMOTE})
CPU["pad"] = (FP32_IF, "mode", frozenset({"reflect", "replicate"}))
CPU["lstm_layer"] = (LOWER_IF_UNSET, ("w_hr", "lengths"))

CUDA = _table(**{LOWER: _CUDA_LOWER, FP32: _CUDA_FP32, FP32_OPT: _CUDA_FP32_OPT, PROMOTE: _CUDA_PROMOTE})
CUDA["binary_cross_entropy"] = BANNED
CUDA["interpolate"] = (FP32_IF, "mode", _UPSAMPLE)

BY_DEVICE = {"cpu": CPU, "cuda": CUDA}
"""device type -> {op name: policy}."""

POLICIES: dict = {}
"""op name -> {device type: policy}: each op's ``OpDef.amp`` (None: no policy anywhere, and the
op's calls never look at the autocast state)."""
for _device, _ops in BY_DEVICE.items():
    for _name, _policy in _ops.items():
        POLICIES.setdefault(_name, {})[_device] = _policy
_registry.declare("amp", POLICIES)

BANNED_MESSAGES = {
    "binary_cross_entropy": (
        "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
        "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
        "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
        "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
        "safe to autocast."
    )
}
