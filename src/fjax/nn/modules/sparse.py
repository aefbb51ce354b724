"""Embedding: a lookup table of learned vectors."""

from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...creation import empty
from ...dtypes import bool as bool_
from ...ops._checks import ArgumentAssertionError
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from ._utils import module_error


class Embedding(Module):
    """Rows of ``weight`` ``(num_embeddings, embedding_dim)`` at integer indices; N(0, 1) init.

    Row ``padding_idx`` starts at zero and gets no gradient.

    Args:
        num_embeddings: the number of rows of the table.
        embedding_dim: the size of each embedding vector.
        padding_idx: a row that receives no gradient (default None: none).
        max_norm: not supported (NotImplementedError on use unless None) (default None).
        norm_type: the p of ``max_norm``'s norm; unused, as ``max_norm`` is unsupported (default 2.0).
        scale_grad_by_freq: not supported (NotImplementedError on use when True) (default False).
        sparse: not supported (NotImplementedError on use when True) (default False).
        _weight: an initial ``(num_embeddings, embedding_dim)`` table (default None: drawn from N(0, 1)).
        _freeze: if True, the table does not require grad (default False).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> emb = nn.Embedding(num_embeddings=10, embedding_dim=3, padding_idx=0)
        >>> emb(fjax.tensor([[0, 2], [4, 9]])).shape
        fjax.Size([2, 2, 3])
        >>> emb(fjax.tensor([0]))
        tensor([[0., 0., 0.]], dtype=fjax.float32, grad_fn=...)
        >>> w = fjax.tensor([[1., 2.], [3., 4.]])
        >>> nn.Embedding.from_pretrained(w)(fjax.tensor([1, 1, 0]))
        tensor([[3., 4.],
                [3., 4.],
                [1., 2.]], dtype=fjax.float32)
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        for arg, value in (("max_norm", max_norm), ("scale_grad_by_freq", scale_grad_by_freq), ("sparse", sparse)):
            if value is not None and value is not False:
                raise NotImplementedError(f"Embedding: {arg}={value!r} is not supported")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ArgumentAssertionError(
                    f"Embedding: padding_idx={padding_idx} must be within num_embeddings={num_embeddings}"
                )
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(
                empty(num_embeddings, embedding_dim, device=device, dtype=dtype), requires_grad=not _freeze
            )
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(
                    f"Embedding: _weight of shape {tuple(_weight.shape)} does not match "
                    f"(num_embeddings, embedding_dim) = {(num_embeddings, embedding_dim)}"
                )
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """Draw a new weight from the standard normal (the ``padding_idx`` row is zero again).

        Example:
            >>> m = nn.Embedding(4, 2, padding_idx=0)
            >>> m.reset_parameters()
            >>> m.weight[0].tolist()
            [0.0, 0.0]
        """
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor) -> Tensor:
        if input.is_floating_point() or input.is_complex() or input.dtype == bool_:
            raise module_error(
                self,
                f"expected integer indices (int32 or int64), got a {input.dtype} tensor of shape {tuple(input.shape)}",
            )
        return F.embedding(input, self.weight, self.padding_idx)

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> "Embedding":
        """An Embedding whose weight is ``embeddings`` (2-d); frozen unless ``freeze=False``.

        Args:
            embeddings: the ``(num_embeddings, embedding_dim)`` weight.
            freeze: whether the weight stays fixed in training (``requires_grad=False``).
            padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse: as for ``nn.Embedding``.

        Example:
            >>> m = nn.Embedding.from_pretrained(fjax.tensor([[1.0, 2.0], [3.0, 4.0]]))
            >>> m(fjax.tensor([1])), m.weight.requires_grad
            (tensor([[3., 4.]], dtype=fjax.float32), False)
        """
        if embeddings.ndim != 2:
            raise ValueError(f"Embedding.from_pretrained: embeddings must be 2-d, got shape {tuple(embeddings.shape)}")
        rows, cols = embeddings.shape
        return cls(
            rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings, _freeze=freeze
        )

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        return s


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embedding rows (``F.embedding_bag``), without building
    ``Embedding``'s per-index output: each row of a 2-d input is a bag, or a 1-d input is cut
    into bags at ``offsets``. The weight starts N(0, 1), with row ``padding_idx`` zero.

    Args:
        num_embeddings: the number of rows of the table.
        embedding_dim: the size of each embedding vector.
        max_norm: not supported (NotImplementedError on use unless None) (default None).
        norm_type: the p of ``max_norm``'s norm; unused, as ``max_norm`` is unsupported (default 2.0).
        scale_grad_by_freq: not supported (NotImplementedError on use when True) (default False).
        mode: ``"sum"``, ``"mean"`` (default) or ``"max"`` over each bag.
        sparse: not supported (NotImplementedError on use when True) (default False).
        _weight: an initial ``(num_embeddings, embedding_dim)`` table (default None: drawn from N(0, 1)).
        include_last_offset: if True, ``offsets`` has one extra entry that ends the last bag (default False).
        padding_idx: a row skipped in every bag, kept at zero (default None: none).
        device: the device of the weight (default None: the default device).
        dtype: the dtype of the weight (default None: the default float dtype).

    Example::

        >>> bag = nn.EmbeddingBag.from_pretrained(fjax.tensor([[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]]), mode="sum")
        >>> bag(fjax.tensor([0, 1, 2]), fjax.tensor([0, 2]))
        tensor([[1., 2.],
                [4., 4.]], dtype=fjax.float32)
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Tensor | None = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        for arg, value in (("max_norm", max_norm), ("scale_grad_by_freq", scale_grad_by_freq), ("sparse", sparse)):
            if value is not None and value is not False:
                raise NotImplementedError(f"EmbeddingBag: {arg}={value!r} is not supported")
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ArgumentAssertionError(
                    f"EmbeddingBag: padding_idx={padding_idx} must be within num_embeddings={num_embeddings}"
                )
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(empty(num_embeddings, embedding_dim, device=device, dtype=dtype))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(
                    f"EmbeddingBag: _weight of shape {tuple(_weight.shape)} does not match "
                    f"(num_embeddings, embedding_dim) = {(num_embeddings, embedding_dim)}"
                )
            self.weight = Parameter(_weight)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self) -> None:
        """Draw a new weight from the standard normal (the ``padding_idx`` row is zero again).

        Example:
            >>> m = nn.EmbeddingBag(4, 2, padding_idx=0)
            >>> m.reset_parameters()
            >>> m.weight[0].tolist()
            [0.0, 0.0]
        """
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor, offsets: Tensor | None = None, per_sample_weights: Tensor | None = None):
        return F.embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ) -> "EmbeddingBag":
        """An EmbeddingBag whose weight is ``embeddings`` (2-d); frozen unless ``freeze=False``.

        Args:
            embeddings: the ``(num_embeddings, embedding_dim)`` weight.
            freeze: whether the weight stays fixed in training (``requires_grad=False``).
            max_norm, norm_type, scale_grad_by_freq, mode, sparse, include_last_offset, padding_idx: as for
                ``nn.EmbeddingBag``.

        Example:
            >>> m = nn.EmbeddingBag.from_pretrained(fjax.tensor([[1.0, 2.0], [3.0, 4.0]]))
            >>> m(fjax.tensor([[1, 0]]))
            tensor([[2., 3.]], dtype=fjax.float32)
        """
        if embeddings.ndim != 2:
            raise ValueError(
                f"EmbeddingBag.from_pretrained: embeddings must be 2-d, got shape {tuple(embeddings.shape)}"
            )
        rows, cols = embeddings.shape
        bag = cls(
            rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings, include_last_offset,
            padding_idx,
        )  # fmt: skip
        bag.weight.requires_grad = not freeze
        return bag

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s
