"""Attention and transformer layers: MultiheadAttention, TransformerEncoder(Layer),
TransformerDecoder(Layer) and the full Transformer, with torch's parameter names, masks and defaults."""

from __future__ import annotations

import copy
import math
from typing import Any, Callable

from ... import dispatch as _dispatch
from ...creation import empty, full, zeros
from ...dispatch import functions as _F
from ...dtypes import bool as bool_
from ...errors import OpError
from ...ops._checks import ArgumentAssertionError
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..containers import ModuleList
from ..init import xavier_uniform_  # noqa: F401 - torch's module namespace
from ..module import Module
from ..parameter import Parameter
from ._utils import module_error
from .dropout import Dropout
from .linear import Linear, NonDynamicallyQuantizableLinear
from .normalization import LayerNorm


def _float_mask(module: Module, mask: Tensor | None, name: str, dtype) -> Tensor | None:
    """A boolean mask (True = do not attend) as an additive float mask of zeros and -inf."""
    if mask is None:
        return None
    if mask.dtype == bool_:
        return zeros(tuple(mask.shape), dtype=dtype).masked_fill(mask, float("-inf"))
    if not mask.is_floating_point():
        raise module_error(module, f"only bool and floating types of {name} are supported, got {mask.dtype}")
    return mask.to(dtype)


class MultiheadAttention(Module):
    """Multi-head attention (Vaswani et al.), torch's layout, masks and parameter names.

    Inputs are ``(L, N, E)`` (or ``(N, L, E)`` with ``batch_first``, or unbatched ``(L, E)``).
    Returns ``(output, weights)``; ``weights`` is ``(N, L, S)`` averaged over heads, ``(N, H, L, S)``
    with ``average_attn_weights=False``, or None with ``need_weights=False``.

    Masks: ``attn_mask`` ``(L, S)`` or ``(N * num_heads, L, S)`` and ``key_padding_mask`` ``(N, S)``,
    boolean (True = do not attend) or additive float.

    Args:
        embed_dim: the model size ``E``.
        num_heads: the number of heads, dividing ``embed_dim``.
        dropout: the dropout probability of the attention weights (default 0.0).
        bias: if True, learn input and output projection biases (default True).
        add_bias_kv: if True, append learned bias rows to the keys and values (default False).
        add_zero_attn: if True, append a row of zeros to the keys and values (default False).
        kdim: the key size (default None: ``embed_dim``).
        vdim: the value size (default None: ``embed_dim``).
        batch_first: if True, inputs are ``(N, L, E)`` rather than ``(L, N, E)`` (default False).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> mha = nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)
        >>> x = fjax.ones(2, 5, 8)
        >>> out, weights = mha(x, x, x)
        >>> out.shape, weights.shape
        (fjax.Size([2, 5, 8]), fjax.Size([2, 5, 5]))
        >>> mask = fjax.tensor([[False, False, False, True, True]] * 2)  # True = padding
        >>> out, weights = mha(x, x, x, key_padding_mask=mask)
        >>> weights[0, 0]
        tensor([0.3333, 0.3333, 0.3333, 0.0000, 0.0000], dtype=fjax.float32, grad_fn=...)
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"MultiheadAttention: embed_dim and num_heads must be greater than 0, got {embed_dim} and {num_heads}"
            )
        if embed_dim % num_heads:
            raise ArgumentAssertionError(
                f"MultiheadAttention: embed_dim={embed_dim} must be divisible by num_heads={num_heads}"
            )
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        kw = dict(device=device, dtype=dtype)
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, **kw))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, **kw))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, **kw))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, **kw))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(empty(1, 1, embed_dim, **kw))
            self.bias_v = Parameter(empty(1, 1, embed_dim, **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def _describe(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, batch_first={self.batch_first}"

    def _check_shapes(self, query, key, value, key_padding_mask) -> bool:
        """Whether the input is batched; raises naming the module on inconsistent shapes."""
        if query.ndim not in (2, 3):
            message = f"query should be unbatched 2D or batched 3D, got shape {tuple(query.shape)}"
            raise module_error(self, message, ArgumentAssertionError)
        batched = query.ndim == 3
        if key.ndim != query.ndim or value.ndim != query.ndim:
            raise module_error(
                self,
                f"query, key and value must all be {query.ndim}D, got shapes {tuple(query.shape)}, "
                f"{tuple(key.shape)} and {tuple(value.shape)}",
                ArgumentAssertionError,
            )
        dims = (self.embed_dim, self.kdim, self.vdim)
        if tuple(x.shape[-1] for x in (query, key, value)) != dims:
            raise module_error(
                self,
                f"expected query, key and value with last dims (embed_dim, kdim, vdim) = {dims}, got shapes "
                f"{tuple(query.shape)}, {tuple(key.shape)} and {tuple(value.shape)}",
                ArgumentAssertionError,
            )
        if key.shape[:-1] != value.shape[:-1] or (
            batched and key.shape[1 - self.batch_first] != query.shape[1 - self.batch_first]
        ):
            raise module_error(
                self,
                f"key {tuple(key.shape)} and value {tuple(value.shape)} must match query {tuple(query.shape)} "
                f"in batch size and each other in sequence length",
            )
        if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
            raise module_error(
                self, f"expected a {query.ndim - 1}D key_padding_mask, got shape {tuple(key_padding_mask.shape)}"
            )
        return batched

    def _project(self, query: Tensor, key: Tensor, value: Tensor):
        """The input projections ``q, k, v`` (one matmul for self-attention with packed weights)."""
        b_q = b_k = b_v = None
        if self.in_proj_bias is not None:
            b_q, b_k, b_v = self.in_proj_bias.chunk(3)
        if not self._qkv_same_embed_dim:
            return (
                F.linear(query, self.q_proj_weight, b_q),
                F.linear(key, self.k_proj_weight, b_k),
                F.linear(value, self.v_proj_weight, b_v),
            )
        if query is key and key is value:
            return F.linear(query, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)
        w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        return F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ):
        batched = self._check_shapes(query, key, value, key_padding_mask)
        if is_causal and attn_mask is None:
            raise module_error(
                self, "is_causal=True needs attn_mask (the causal mask itself); is_causal is only a hint, as in torch"
            )
        args = (query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights, batched)
        if type(self) is not MultiheadAttention or (self.dropout > 0.0 and self.training):
            return self._attend(*args)  # (a kernel's trace would fix the dropout's draws)
        # one kernel for every instance (``_attention``), per call pattern: which inputs are the
        # same tensor, the plain arguments and the settings the computation reads
        same_qk, same_kv = key is query, value is key
        config = tuple(getattr(self, n) for n in _ATTENTION_CONFIG)
        params = [getattr(self, n) for n in _ATTENTION_PARAMS] + [self.out_proj.weight, self.out_proj.bias]
        return _attention(query, None if same_qk else key, None if same_kv else value, *args[3:], *config, *params)

    def _attend(self, query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights, batched):
        """The attention after ``forward``'s checks, op by op (``_attention`` traces it)."""
        if not batched:  # work batch-first: (N, L, E)
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            key_padding_mask = key_padding_mask.unsqueeze(0) if key_padding_mask is not None else None
        elif not self.batch_first:
            same_kv = key is value
            same_qk = query is key
            query = query.transpose(0, 1)
            key = query if same_qk else key.transpose(0, 1)
            value = key if same_kv else value.transpose(0, 1)
        n, tgt_len, _ = query.shape
        src_len = key.shape[1]
        dtype = query.dtype
        mask = self._merged_mask(attn_mask, key_padding_mask, n, tgt_len, src_len, dtype)

        q, k, v = self._project(query, key, value)
        if self.bias_k is not None and self.bias_v is not None:
            k = _F.cat([k, self.bias_k.expand(n, 1, self.embed_dim)], dim=1)
            v = _F.cat([v, self.bias_v.expand(n, 1, self.embed_dim)], dim=1)
            mask = F.pad(mask, (0, 1)) if mask is not None else None
        h, d = self.num_heads, self.head_dim
        q = q.reshape(n, tgt_len, h, d).transpose(1, 2)
        k = k.reshape(n, k.shape[1], h, d).transpose(1, 2)
        v = v.reshape(n, v.shape[1], h, d).transpose(1, 2)
        if self.add_zero_attn:
            k = _F.cat([k, zeros((n, h, 1, d), dtype=k.dtype)], dim=2)
            v = _F.cat([v, zeros((n, h, 1, d), dtype=v.dtype)], dim=2)
            mask = F.pad(mask, (0, 1)) if mask is not None else None

        scores = (q * math.sqrt(1.0 / d)) @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores + mask
        # without weights to return torch attends through scaled_dot_product_attention, whose safe
        # softmax gives a query whose keys are all masked zeros (softmax's NaN with need_weights=True)
        weights = F.softmax(scores, dim=-1) if need_weights else _F._safe_softmax(scores, -1)
        if self.dropout > 0.0:
            weights = F.dropout(weights, p=self.dropout, training=self.training)
        out = (weights @ v).transpose(1, 2).reshape(n, tgt_len, self.embed_dim)
        out = F.linear(out, self.out_proj.weight, self.out_proj.bias)  # (as torch's: out_proj's hooks do not run)

        if not batched:
            out = out.squeeze(0)
        elif not self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = weights.mean(dim=1)
        return out, weights if batched else weights.squeeze(0)

    def _merged_mask(self, attn_mask, key_padding_mask, n, tgt_len, src_len, dtype) -> Tensor | None:
        """``attn_mask`` and ``key_padding_mask`` as one additive ``(N, H or 1, L, S)`` float mask."""
        attn_mask = _float_mask(self, attn_mask, "attn_mask", dtype)
        key_padding_mask = _float_mask(self, key_padding_mask, "key_padding_mask", dtype)
        mask = None
        if attn_mask is not None:
            if attn_mask.ndim == 2:
                if tuple(attn_mask.shape) != (tgt_len, src_len):
                    raise module_error(
                        self, f"the 2D attn_mask should be {(tgt_len, src_len)}, got {tuple(attn_mask.shape)}"
                    )
                mask = attn_mask.reshape(1, 1, tgt_len, src_len)
            elif attn_mask.ndim == 3:
                expected = (n * self.num_heads, tgt_len, src_len)
                if tuple(attn_mask.shape) != expected:
                    raise module_error(self, f"the 3D attn_mask should be {expected}, got {tuple(attn_mask.shape)}")
                mask = attn_mask.reshape(n, self.num_heads, tgt_len, src_len)
            else:
                raise module_error(self, f"attn_mask must be 2D or 3D, got shape {tuple(attn_mask.shape)}")
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (n, src_len):
                raise module_error(
                    self, f"expected key_padding_mask of shape {(n, src_len)}, got {tuple(key_padding_mask.shape)}"
                )
            kpm = key_padding_mask.reshape(n, 1, 1, src_len)
            mask = kpm if mask is None else mask + kpm
        return mask


_ATTENTION_CONFIG = ("embed_dim", "kdim", "vdim", "_qkv_same_embed_dim", "num_heads", "head_dim", "batch_first")
_ATTENTION_CONFIG += ("add_zero_attn", "dropout", "training")
_ATTENTION_PARAMS = (
    "in_proj_weight",
    "in_proj_bias",
    "q_proj_weight",
    "k_proj_weight",
    "v_proj_weight",
    "bias_k",
    "bias_v",
)


def _attend_on_shell(query, key, value, key_padding_mask, need_weights, attn_mask, average, batched, *rest):
    """``MultiheadAttention._attend`` as a function of its inputs, the settings it reads
    (``_ATTENTION_CONFIG``) and its parameters: it runs on a shell module holding them, so the
    kernel (``_attention``) serves every instance (a new model, a deep copy) alike."""
    n = len(_ATTENTION_CONFIG)
    shell, out_proj = object.__new__(MultiheadAttention), object.__new__(Linear)
    for m in (shell, out_proj):
        Module.__init__(m)
    for name, v in zip(_ATTENTION_CONFIG, rest[:n]):
        object.__setattr__(shell, name, v)
    params = rest[n:]
    shell._parameters.update(zip(_ATTENTION_PARAMS, params))
    out_proj._parameters.update(weight=params[-2], bias=params[-1])
    shell._modules["out_proj"] = out_proj
    key = query if key is None else key
    value = key if value is None else value
    return shell._attend(query, key, value, key_padding_mask, need_weights, attn_mask, average, batched)


_attention = _dispatch.kernel_of("MultiheadAttention", _attend_on_shell)


def _activation(activation: str | Callable) -> Callable:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if isinstance(activation, str):
        raise OpError(f"activation should be relu/gelu, not {activation}")
    return activation


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with residual, dropout and LayerNorm.

    ``norm_first=True`` applies the norms before each block (pre-LN) instead of after.
    torch's arguments: ``d_model``, ``nhead``, ``dim_feedforward=2048``, ``dropout=0.1``,
    ``activation`` (``'relu'``, ``'gelu'`` or a callable), ``layer_norm_eps``, ``batch_first``;
    ``forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False)``.

    Args:
        d_model: the embedding size.
        nhead: the number of attention heads.
        dim_feedforward: the hidden size of the feed-forward block (default 2048).
        dropout: the dropout probability (default 0.1).
        activation: the feed-forward activation: ``'relu'``, ``'gelu'`` or a callable (default relu).
        layer_norm_eps: the LayerNorms' eps (default 1e-05).
        batch_first: if True, inputs are ``(N, L, E)`` rather than ``(L, N, E)`` (default False).
        norm_first: if True, apply each LayerNorm before its block rather than after (default False).
        bias: if True, the attention, linear and LayerNorm layers learn biases (default True).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0,
        ...                                    batch_first=True)
        >>> layer(fjax.ones(2, 5, 8)).shape
        fjax.Size([2, 5, 8])
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False, is_causal=is_causal
        )[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over ``memory``, then a feed-forward block.

    Each block has a residual connection, dropout and LayerNorm (after it, or before it with
    ``norm_first=True``); constructor arguments as in :class:`TransformerEncoderLayer`.
    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None)`` returns a tensor shaped like ``tgt``.

    Args:
        d_model: the embedding size.
        nhead: the number of attention heads.
        dim_feedforward: the hidden size of the feed-forward block (default 2048).
        dropout: the dropout probability (default 0.1).
        activation: the feed-forward activation: ``'relu'``, ``'gelu'`` or a callable (default relu).
        layer_norm_eps: the LayerNorms' eps (default 1e-05).
        batch_first: if True, inputs are ``(N, L, E)`` rather than ``(L, N, E)`` (default False).
        norm_first: if True, apply each LayerNorm before its block rather than after (default False).
        bias: if True, the attention, linear and LayerNorm layers learn biases (default True).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> layer = nn.TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0)
        >>> tgt, memory = fjax.ones(4, 2, 8), fjax.ones(6, 2, 8)  # (T, N, E), (S, N, E)
        >>> layer(tgt, memory).shape
        fjax.Size([4, 2, 8])
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
        return self.norm3(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal, need_weights=False
        )[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(
            x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal, need_weights=False
        )[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class TransformerEncoder(Module):
    """``num_layers`` independent copies of ``encoder_layer`` applied in turn, then ``norm``.

    ``enable_nested_tensor`` and ``mask_check`` select torch inference fast paths; fjax has
    one path, so they are accepted and have no effect. Each copy has its own parameters.

    Args:
        encoder_layer: the layer copied ``num_layers`` times.
        num_layers: the number of copies.
        norm: an optional module applied to the output (default None).
        enable_nested_tensor: torch's fast-path switch; no effect (default True).
        mask_check: torch's fast-path switch; no effect (default True).

    Example::

        >>> layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
        >>> enc = nn.TransformerEncoder(layer, num_layers=3, norm=nn.LayerNorm(8))
        >>> len(enc.layers), enc.layers[0] is layer
        (3, False)
        >>> enc(fjax.ones(2, 5, 8)).shape
        fjax.Size([2, 5, 8])
    """

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return self.norm(out) if self.norm is not None else out


class TransformerDecoder(Module):
    """``num_layers`` independent copies of ``decoder_layer`` applied in turn, then ``norm``.

    ``forward`` takes the arguments of ``TransformerDecoderLayer.forward`` and passes them
    to every layer; a boolean ``tgt_mask`` (True = do not attend) makes decoding causal.

    Args:
        decoder_layer: the layer copied ``num_layers`` times.
        num_layers: the number of copies.
        norm: an optional module applied to the output (default None).

    Example::

        >>> layer = nn.TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16)
        >>> dec = nn.TransformerDecoder(layer, num_layers=2)
        >>> tgt, memory = fjax.ones(4, 2, 8), fjax.ones(6, 2, 8)
        >>> causal = fjax.ones(4, 4).triu(diagonal=1).bool()
        >>> dec(tgt, memory, tgt_mask=causal).shape
        fjax.Size([4, 2, 8])
    """

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        out = tgt
        for layer in self.layers:
            out = layer(
                out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask, tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=bool(tgt_is_causal),
                memory_is_causal=memory_is_causal,
            )  # fmt: skip
        return self.norm(out) if self.norm is not None else out


class Transformer(Module):
    """The encoder-decoder Transformer of "Attention Is All You Need", torch's layout and names.

    ``num_encoder_layers`` encoder layers then a LayerNorm (``encoder``), ``num_decoder_layers``
    decoder layers then a LayerNorm (``decoder``), or ``custom_encoder``/``custom_decoder``. Every
    parameter with more than one dim is re-initialised xavier-uniform, as torch does, and the
    parameter names match torch's, so ``load_state_dict(torch_model.state_dict())`` works.

    ``forward(src, tgt, ...)`` takes ``(S, N, E)`` and ``(T, N, E)`` (``(N, S, E)``/``(N, T, E)``
    with ``batch_first``, or unbatched ``(S, E)``/``(T, E)``) and returns ``tgt``'s shape. Masks
    are boolean (True = do not attend) or additive float, as in :class:`MultiheadAttention`.

    Args:
        d_model: the embedding size (default 512).
        nhead: the number of attention heads (default 8).
        num_encoder_layers: the number of encoder layers (default 6).
        num_decoder_layers: the number of decoder layers (default 6).
        dim_feedforward: the hidden size of the feed-forward block (default 2048).
        dropout: the dropout probability (default 0.1).
        activation: the feed-forward activation: ``'relu'``, ``'gelu'`` or a callable (default relu).
        custom_encoder: a module used as the encoder instead of the built one (default None).
        custom_decoder: a module used as the decoder instead of the built one (default None).
        layer_norm_eps: the LayerNorms' eps (default 1e-05).
        batch_first: if True, inputs are ``(N, L, E)`` rather than ``(L, N, E)`` (default False).
        norm_first: if True, apply each LayerNorm before its block rather than after (default False).
        bias: if True, the attention, linear and LayerNorm layers learn biases (default True).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
        ...                        dim_feedforward=16, dropout=0.0, batch_first=True)
        >>> src, tgt = fjax.randn(3, 6, 8), fjax.randn(3, 4, 8)
        >>> mask = nn.Transformer.generate_square_subsequent_mask(4)
        >>> model(src, tgt, tgt_mask=mask).shape
        fjax.Size([3, 4, 8])
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = F.relu,
        custom_encoder: Any | None = None,
        custom_decoder: Any | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args, bias, **kw),
                num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw),
            )
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args, bias, **kw),
                num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw),
            )
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError(
                f"Transformer: the batch number of src and tgt must be equal, got src {tuple(src.shape)} and tgt "
                f"{tuple(tgt.shape)} (batch_first={self.batch_first})"
            )
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(
                f"Transformer: the feature number of src and tgt must be equal to d_model={self.d_model}, got src "
                f"{tuple(src.shape)} and tgt {tuple(tgt.shape)}"
            )
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(
            tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask, tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )  # fmt: skip

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """The ``(sz, sz)`` causal mask: ``-inf`` above the diagonal, ``0`` on and below it.

        Example::

            >>> nn.Transformer.generate_square_subsequent_mask(3)
            tensor([[0., -inf, -inf],
                    [0., 0., -inf],
                    [0., 0., 0.]], dtype=fjax.float32)
        """
        return _F.triu(full((sz, sz), float("-inf"), dtype=dtype, device=device), diagonal=1)
