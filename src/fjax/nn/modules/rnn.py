"""Recurrent layers (RNN, LSTM, GRU) and cells, with torch's arguments, names and results.

Each layer and direction is ONE op call (``fjax.ops.rnn``): a ``lax.scan`` whose compile time
does not grow with the sequence length, with the input projection hoisted out of the loop and
a scan-shaped backward. Packed sequences become a padded batch plus lengths, masked inside the
scan.
"""

from __future__ import annotations

import math
import numbers
import warnings

from ...creation import empty, tensor, zeros
from ...dispatch import functions as _F
from ...dispatch import kernel_of
from ...errors import OpError
from ...ops import _checks
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, packed_batch_sizes, packed_lengths, packed_to_padded, padded_to_packed
from ._utils import module_error

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def apply_permutation(tensor: Tensor, permutation: Tensor, dim: int = 1) -> Tensor:
    """Deprecated (as in torch): ``tensor.index_select(dim, permutation)``, reordering a batch of
    hidden states.

    Args:
        tensor: the tensor to reorder.
        permutation: the 1-d index order.
        dim: the dimension reordered (default 1).

    Example:
        >>> import warnings
        >>> from fjax.nn.modules.rnn import apply_permutation
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     apply_permutation(fjax.tensor([[1.0, 2.0, 3.0]]), fjax.tensor([2, 0, 1]))
        tensor([[3., 1., 2.]], dtype=fjax.float32)
    """
    warnings.warn(
        "`apply_permutation` is deprecated, please use `tensor.index_select(dim, permutation)` instead",
        FutureWarning,
        stacklevel=2,
    )
    return tensor.index_select(dim, permutation)


class RNNBase(Module):
    """Shared constructor, parameters and layer loop of :class:`RNN`, :class:`LSTM`, :class:`GRU`.

    Attribute ``unroll`` (default 1) is the number of time steps per scan iteration; larger
    values trade compile time for fewer loop iterations on small hidden sizes.

    Args:
        mode: ``"LSTM"``, ``"GRU"``, ``"RNN_TANH"`` or ``"RNN_RELU"``.
        input_size: the number of features of each input step.
        hidden_size: the number of features of the hidden state.
        num_layers: the number of stacked layers (default 1).
        bias: if True (default), learn input and hidden biases.
        batch_first: if True, inputs and outputs are ``(N, L, *)`` rather than ``(L, N, *)`` (default False).
        dropout: dropout probability on each layer's output but the last (default 0.0).
        bidirectional: if True, run each layer both ways (default False).
        proj_size: if > 0, project the LSTM hidden state to this size (default 0).
        device: the device of the parameters (default None: the default device).
        dtype: the dtype of the parameters (default None: the default float dtype).

    Example::

        >>> isinstance(nn.LSTM(2, 3), nn.RNNBase), nn.RNNBase("GRU", 2, 3).mode
        (True, 'GRU')
    """

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ):
        super().__init__()
        name = {"RNN_TANH": "RNN", "RNN_RELU": "RNN"}.get(mode, mode)
        if mode not in _GATES:
            raise ValueError(f"{name}: unrecognized RNN mode: {mode}")
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError(
                f"{name}: dropout should be a number in range [0, 1] representing the probability of an "
                f"element being zeroed, got {dropout!r}"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                f"{name}: dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                stacklevel=3,
            )
        for arg, value in (("hidden_size", hidden_size), ("num_layers", num_layers)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name}: {arg} must be a positive integer, got {value!r}")
        if proj_size < 0:
            raise ValueError(f"{name}: proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError(f"{name}: proj_size has to be smaller than hidden_size, got {proj_size} >= {hidden_size}")
        if proj_size and mode != "LSTM":
            raise ValueError(f"{name}: proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        self.unroll = 1
        directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        out_size = proj_size or hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else out_size * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = {"weight_ih": (gate_size, layer_input), "weight_hh": (gate_size, out_size)}
                if bias:
                    shapes.update({"bias_ih": (gate_size,), "bias_hh": (gate_size,)})
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                names = [kind + suffix for kind in shapes]
                for pname, shape in zip(names, shapes.values()):
                    setattr(self, pname, Parameter(empty(*shape, device=device, dtype=dtype)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as torch.

        Example:
            >>> m = nn.GRU(2, 4)
            >>> m.reset_parameters()
            >>> bool(m.weight_ih_l0.abs().max() <= 0.5)
            True
        """
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """Kept for torch compatibility: the parameters are always used where they are.

        Example:
            >>> nn.LSTM(2, 3).flatten_parameters()
        """

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters of each layer and direction, in torch's order.

        Example:
            >>> [tuple(w.shape) for w in nn.RNN(2, 3).all_weights[0]]
            [(3, 2), (3, 3), (3,), (3,)]
        """
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        if self.mode == "RNN_RELU":
            s += ", nonlinearity='relu'"
        return s

    # -- forward ------------------------------------------------------------------------
    def _state_shapes(self, batch: int) -> list[tuple]:
        rows = self.num_layers * (2 if self.bidirectional else 1)
        shapes = [(rows, batch, self.proj_size or self.hidden_size)]
        if self.mode == "LSTM":
            shapes.append((rows, batch, self.hidden_size))
        return shapes

    def _prepare(self, input, hx):
        """Time/batch layout, lengths and initial states of a call; see ``forward``."""
        if isinstance(input, PackedSequence):
            if input.data.ndim != 2:
                raise module_error(
                    self, f"expected packed data of shape (N, {self.input_size}), got {tuple(input.data.shape)}"
                )
            batch_sizes = packed_batch_sizes(input)
            x, lengths = packed_to_padded(input.data, batch_sizes), packed_lengths(batch_sizes)
            batch_first = unbatched = False
        else:
            if not isinstance(input, Tensor) or input.ndim not in (2, 3):
                got = f"{input.ndim}D input" if isinstance(input, Tensor) else type(input).__name__
                raise module_error(self, f"Expected input to be 2D or 3D, got {got} instead")
            lengths, unbatched = None, input.ndim == 2
            x = input.unsqueeze(1) if unbatched else input
            batch_first = self.batch_first and not unbatched
        if x.shape[-1] != self.input_size:
            raise module_error(
                self, f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {x.shape[-1]}"
            )
        batch = x.shape[0 if batch_first else 1]
        states = self._initial_states(hx, batch, unbatched)
        if isinstance(input, PackedSequence) and input.sorted_indices is not None and hx is not None:
            states = [_F.index_select(s, 1, input.sorted_indices) for s in states]
        return x, lengths, batch_first, unbatched, states

    def _initial_states(self, hx, batch: int, unbatched: bool) -> list:
        shapes = self._state_shapes(batch)
        if hx is None:
            return [None] * len(shapes)
        given = list(hx) if self.mode == "LSTM" and isinstance(hx, (tuple, list)) else [hx]
        if len(given) != len(shapes) or not all(isinstance(h, Tensor) for h in given):
            what = "a tuple (h_0, c_0) of Tensors" if self.mode == "LSTM" else "a Tensor"
            raise module_error(self, f"expected hx to be {what}, got {type(hx).__name__}")
        states = []
        for h, shape in zip(given, shapes):
            if unbatched:
                if h.ndim != 2:
                    raise module_error(
                        self, f"For unbatched 2-D input, hx should also be 2-D but got {h.ndim}-D tensor"
                    )
                h = h.unsqueeze(1)
            elif h.ndim != 3:
                raise module_error(self, f"For batched 3-D input, hx should also be 3-D but got {h.ndim}-D tensor")
            if tuple(h.shape) != shape:
                raise module_error(self, f"Expected hidden size {shape}, got {tuple(h.shape)}")
            states.append(h)
        return states

    def _run(self, input, hx):
        """The layer loop: ``(output, [h_n] or [h_n, c_n])`` with torch's packing and batching.
        Without packing or dropout between layers it is one kernel (``_stacked``): a decoder that
        calls the module once per token dispatches one op, not a split of the states, the layers
        and a stack."""
        x, lengths, batch_first, unbatched, states = self._prepare(input, hx)
        directions = 2 if self.bidirectional else 1
        weights = [getattr(self, n) for names in self._all_weights for n in names]
        config = (self.mode, self.num_layers, directions, self.unroll, batch_first)
        if lengths is None and not (self.dropout and self.training and self.num_layers > 1):
            out, *finals = _stacked(*config, unbatched, len(states), x, *states, *weights)
            return out, finals
        dropout = self.dropout if self.training else 0.0
        lengths_t = None if lengths is None else tensor(lengths)
        x, finals = _stack(*config, dropout, lengths_t, x, states, weights)
        if isinstance(input, PackedSequence):
            x = PackedSequence(padded_to_packed(x, packed_batch_sizes(input)), *input[1:])
            if input.unsorted_indices is not None:
                finals = [_F.index_select(f, 1, input.unsorted_indices) for f in finals]
        elif unbatched:
            x = x.squeeze(1)
            finals = [f.squeeze(1) for f in finals]
        return x, finals


def _stack(mode, num_layers, directions, unroll, batch_first, dropout, lengths_t, x, states, weights):
    """The layers of a recurrent module on time/batch input ``x``: ``(output, final states)``,
    each layer and direction ONE op call. ``states``: the initial states (``None``: zeros), each
    ``(num_layers * directions, batch, size)``; ``weights``: every layer's and direction's, in
    torch's order (``w_ih, w_hh[, b_ih, b_hh][, w_hr]``)."""
    per_state = [None if s is None else s.unbind(0) for s in states]
    finals = [[] for _ in states]
    per_k = len(weights) // (num_layers * directions)
    for layer in range(num_layers):
        outs = []
        for direction in range(directions):
            k = layer * directions + direction
            init_k = [None if s is None else s[k] for s in per_state]
            w = weights[k * per_k : (k + 1) * per_k]
            biases = w[2:4] if per_k >= 4 else (None, None)
            static = dict(reverse=direction == 1, batch_first=batch_first, unroll=unroll)
            if mode == "LSTM":
                w_hr = w[-1] if per_k % 2 else None
                out, h, c = _F.lstm_layer(x, *init_k, w[0], w[1], *biases, w_hr, lengths_t, **static)
                new = (h, c)
            else:
                op = {"GRU": _F.gru_layer, "RNN_TANH": _F.rnn_tanh_layer, "RNN_RELU": _F.rnn_relu_layer}[mode]
                out, h = op(x, init_k[0], w[0], w[1], *biases, lengths_t, **static)
                new = (h,)
            outs.append(out)
            for acc, s in zip(finals, new):
                acc.append(s)
        x = outs[0] if directions == 1 else _F.cat(outs, -1)
        if dropout and layer < num_layers - 1:
            x = F.dropout(x, dropout, True)
    return x, [_F.stack(f, 0) for f in finals]


def _stacked_layers(mode, num_layers, directions, unroll, batch_first, unbatched, n_states, x, *tensors):
    """``_stack`` without packing or dropout, as ``(output, *final states)``, unbatched squeezed."""
    x, finals = _stack(
        mode, num_layers, directions, unroll, batch_first, 0.0, None, x, tensors[:n_states], tensors[n_states:]
    )
    if unbatched:
        return (x.squeeze(1), *(f.squeeze(1) for f in finals))
    return (x, *finals)


_stacked = kernel_of("rnn_layers", _stacked_layers)


class RNN(RNNBase):
    """Elman RNN ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (``act`` tanh or relu).

    torch's arguments: ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh',
    bias=True, batch_first=False, dropout=0.0, bidirectional=False)``; ``forward(input, hx=None)``
    returns ``(output, h_n)``. ``input`` may be a :class:`~fjax.nn.utils.rnn.PackedSequence`.

    Example::

        >>> rnn = nn.RNN(input_size=4, hidden_size=3, num_layers=2, nonlinearity='tanh')
        >>> out, h_n = rnn(fjax.ones(5, 2, 4))  # (L, N, input_size)
        >>> out.shape, h_n.shape
        (fjax.Size([5, 2, 3]), fjax.Size([2, 2, 3]))
        >>> bool((out[-1] == h_n[-1]).all())  # last step of the top layer
        True
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("RNN: proj_size argument is only supported for LSTM, not RNN or GRU")
        args = list(args)
        if len(args) > 3:
            kwargs["nonlinearity"] = args.pop(3)
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)

    def forward(self, input, hx: Tensor | None = None):
        output, (h_n,) = self._run(input, hx)
        return output, h_n


class LSTM(RNNBase):
    """Long short-term memory, gates ``i, f, g, o`` stacked in ``weight_ih_l{k}`` as torch.

    torch's arguments: ``LSTM(input_size, hidden_size, num_layers=1, bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, proj_size=0)``;
    ``forward(input, (h_0, c_0)=None)`` returns ``(output, (h_n, c_n))``.

    Example::

        >>> lstm = nn.LSTM(input_size=4, hidden_size=3, batch_first=True, bidirectional=True)
        >>> lstm.weight_ih_l0.shape  # 4 gates * hidden_size
        fjax.Size([12, 4])
        >>> out, (h_n, c_n) = lstm(fjax.ones(2, 5, 4))
        >>> out.shape, h_n.shape, c_n.shape
        (fjax.Size([2, 5, 6]), fjax.Size([2, 2, 3]), fjax.Size([2, 2, 3]))
        >>> nn.LSTM(4, 6, proj_size=2)(fjax.ones(5, 4))[0].shape  # unbatched, projected
        fjax.Size([5, 2])
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx: tuple[Tensor, Tensor] | None = None):
        output, (h_n, c_n) = self._run(input, hx)
        return output, (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit, gates ``r, z, n`` as torch: ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``.

    torch's arguments: ``GRU(input_size, hidden_size, num_layers=1, bias=True,
    batch_first=False, dropout=0.0, bidirectional=False)``; ``forward(input, hx=None)`` returns
    ``(output, h_n)``.

    Example::

        >>> gru = nn.GRU(input_size=4, hidden_size=3, num_layers=1, batch_first=True)
        >>> gru.weight_hh_l0.shape  # 3 gates * hidden_size
        fjax.Size([9, 3])
        >>> out, h_n = gru(fjax.ones(2, 5, 4))
        >>> out.shape, h_n.shape
        (fjax.Size([2, 5, 3]), fjax.Size([1, 2, 3]))
        >>> out, h_n = gru(fjax.ones(5, 4))  # unbatched
        >>> out.shape, h_n.shape
        (fjax.Size([5, 3]), fjax.Size([1, 3]))
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("GRU: proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx: Tensor | None = None):
        output, (h_n,) = self._run(input, hx)
        return output, h_n


# -- cells --------------------------------------------------------------------------------


class RNNCellBase(Module):
    """Shared parameters of the cells: ``weight_ih`` ``(chunks*H, I)``, ``weight_hh`` ``(chunks*H, H)``.

    Args:
        input_size: the number of input features.
        hidden_size: the number of hidden features ``H``.
        bias: if True, learn the biases ``bias_ih`` and ``bias_hh``.
        num_chunks: the number of gates (4 for LSTM, 3 for GRU, 1 for RNN).
        device: the device of the parameters (default None: the default device).
        dtype: the dtype of the parameters (default None: the default float dtype).

    Example::

        >>> isinstance(nn.GRUCell(2, 3), nn.RNNCellBase), tuple(nn.RNNCellBase(2, 3, True, 4).weight_ih.shape)
        (True, (12, 2))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None):
        super().__init__()
        for arg, value in (("input_size", input_size), ("hidden_size", hidden_size)):
            _checks.at_least(type(self).__name__, arg, value, 0)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty(num_chunks * hidden_size, input_size, device=device, dtype=dtype))
        self.weight_hh = Parameter(empty(num_chunks * hidden_size, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as torch.

        Example:
            >>> m = nn.LSTMCell(2, 4)
            >>> m.reset_parameters()
            >>> bool(m.weight_hh.abs().max() <= 0.5)
            True
        """
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def _batched(self, input: Tensor, hx, n_states: int):
        """``(input (B, I), states (B, H) each, unbatched)``; zeros where ``hx`` is None."""
        if not isinstance(input, Tensor) or input.ndim not in (1, 2):
            got = f"{input.ndim}D" if isinstance(input, Tensor) else type(input).__name__
            raise module_error(self, f"Expected input to be 1D or 2D, got {got} instead")
        if input.shape[-1] != self.input_size:
            raise module_error(
                self, f"input has inconsistent input_size: got {input.shape[-1]} expected {self.input_size}"
            )
        unbatched = input.ndim == 1
        x = input.unsqueeze(0) if unbatched else input
        if hx is None:
            zero = zeros(x.shape[0], self.hidden_size, dtype=x.dtype)
            return x, [zero] * n_states, unbatched
        states = list(hx) if n_states > 1 else [hx]
        if len(states) != n_states or not all(isinstance(h, Tensor) for h in states):
            raise module_error(self, f"expected hx to be {'a tuple of 2 Tensors' if n_states > 1 else 'a Tensor'}")
        out = []
        for h in states:
            if h.ndim != input.ndim:
                raise OpError(
                    f"{self._get_name()}: Expected hidden to be {input.ndim}D for {input.ndim}D input, got {h.ndim}D"
                )
            h = h.unsqueeze(0) if unbatched else h
            if tuple(h.shape) != (x.shape[0], self.hidden_size):
                raise module_error(
                    self, f"hidden has shape {tuple(h.shape)}, expected {(x.shape[0], self.hidden_size)}"
                )
            out.append(h)
        return x, out, unbatched


class RNNCell(RNNCellBase):
    """One Elman step ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (``nonlinearity`` tanh or relu).

    torch's arguments: ``RNNCell(input_size, hidden_size, bias=True, nonlinearity='tanh')``;
    ``forward(input, hx=None)`` takes ``(N, input_size)`` or unbatched ``(input_size,)`` input and
    returns ``h'``; ``hx=None`` starts from zeros.

    Args:
        input_size: the size of each input's last dim.
        hidden_size: the size of the hidden state.
        bias: if True, learn the input and hidden biases (default True).
        nonlinearity: ``'tanh'`` or ``'relu'`` (default 'tanh').
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> cell = nn.RNNCell(input_size=4, hidden_size=3, nonlinearity='relu')
        >>> h = cell(fjax.ones(2, 4))
        >>> h.shape
        fjax.Size([2, 3])
        >>> bool((h >= 0).all())
        True
        >>> cell(fjax.ones(2, 4), h).shape
        fjax.Size([2, 3])
    """

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", device=None, dtype=None
    ):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), unbatched = self._batched(input, hx, 1)
        op = _F.rnn_tanh_cell if self.nonlinearity == "tanh" else _F.rnn_relu_cell
        out = op(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out.squeeze(0) if unbatched else out


class LSTMCell(RNNCellBase):
    """One LSTM step: ``forward(input, (h, c)=None)`` returns ``(h', c')``.

    torch's arguments: ``LSTMCell(input_size, hidden_size, bias=True)``; the gates ``i, f, g, o``
    are stacked in ``weight_ih`` ``(4 * hidden_size, input_size)`` and ``weight_hh``; states
    default to zeros.

    Args:
        input_size: the size of each input's last dim.
        hidden_size: the size of the hidden state.
        bias: if True, learn the input and hidden biases (default True).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> cell = nn.LSTMCell(input_size=4, hidden_size=3)
        >>> cell.weight_ih.shape
        fjax.Size([12, 4])
        >>> h, c = cell(fjax.ones(2, 4))
        >>> h, c = cell(fjax.ones(2, 4), (h, c))
        >>> h.shape, c.shape
        (fjax.Size([2, 3]), fjax.Size([2, 3]))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        x, states, unbatched = self._batched(input, hx, 2)
        h, c = _F.lstm_cell(x, states, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class GRUCell(RNNCellBase):
    """One GRU step: ``forward(input, hx=None)`` returns ``h'``.

    torch's arguments: ``GRUCell(input_size, hidden_size, bias=True)``; the gates ``r, z, n`` are
    stacked in ``weight_ih`` ``(3 * hidden_size, input_size)`` and ``weight_hh``; ``bias=False``
    leaves ``bias_ih`` and ``bias_hh`` as None.

    Args:
        input_size: the size of each input's last dim.
        hidden_size: the size of the hidden state.
        bias: if True, learn the input and hidden biases (default True).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> cell = nn.GRUCell(input_size=4, hidden_size=3, bias=False)
        >>> cell.weight_hh.shape, cell.bias_hh
        (fjax.Size([9, 3]), None)
        >>> h = cell(fjax.ones(2, 4))
        >>> cell(fjax.ones(2, 4), h).shape
        fjax.Size([2, 3])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), unbatched = self._batched(input, hx, 1)
        out = _F.gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out.squeeze(0) if unbatched else out
