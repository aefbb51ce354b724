"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict (torch's API)."""

from __future__ import annotations

import operator
from collections import OrderedDict
from typing import Any, Iterable, Iterator, Mapping

from ..tensor import Tensor
from .module import Module, _addindent
from .parameter import Parameter


def _index(name: str, idx: int, n: int) -> int:
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"{name}: index {idx} is out of range for length {n}")
    return idx % n


class Sequential(Module):
    """Modules called in order, each on the previous one's output.

    Built from modules as positional arguments (children ``'0'``, ``'1'``, ...) or from one
    ``OrderedDict`` of named modules. Indexing gives a child; a slice gives a new Sequential.

    Example::

        >>> net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        >>> net(fjax.ones(5, 3)).shape
        fjax.Size([5, 2])
        >>> net[1], len(net[:2])
        (ReLU(), 2)
        >>> from collections import OrderedDict
        >>> net = nn.Sequential(OrderedDict(fc=nn.Linear(3, 4), act=nn.ReLU()))
        >>> net.fc
        Linear(in_features=3, out_features=4, bias=True)
    """

    def __init__(self, *args: Module):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        keys = list(self._modules)
        return self._modules[keys[_index("Sequential", idx, len(keys))]]

    def __setitem__(self, idx: int, module: Module) -> None:
        keys = list(self._modules)
        setattr(self, keys[_index("Sequential", idx, len(keys))], module)

    def __delitem__(self, idx) -> None:
        keys = list(self._modules)
        doomed = keys[idx] if isinstance(idx, slice) else [keys[_index("Sequential", idx, len(keys))]]
        for key in doomed:
            delattr(self, key)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __add__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"Sequential: can only add another Sequential, got {type(other).__name__}")
        return Sequential(*self, *other)

    def append(self, module: Module) -> "Sequential":
        """Add ``module`` at the end; returns this Sequential.

        Args:
            module: the module to add.

        Example:
            >>> len(nn.Sequential(nn.ReLU()).append(nn.Tanh()))
            2
        """
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> "Sequential":
        """Insert ``module`` before position ``index``; returns this Sequential.

        Args:
            index: the position (negative counts from the end).
            module: the module to insert.

        Example:
            >>> nn.Sequential(nn.ReLU()).insert(0, nn.Tanh())[0]
            Tanh()
        """
        if not isinstance(module, Module):
            raise AssertionError(f"Sequential.insert: module should be of type Module, got {type(module).__name__}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Sequential.insert: index {index} is out of range for length {n}")
        modules = list(self._modules.values())
        modules.insert(index % (n + 1) if index < 0 else index, module)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(modules))
        return self

    def extend(self, sequential: Iterable[Module]) -> "Sequential":
        """Append every module of ``sequential``; returns this Sequential.

        Args:
            sequential: an iterable of modules.

        Example:
            >>> len(nn.Sequential(nn.ReLU()).extend([nn.Tanh(), nn.ReLU()]))
            3
        """
        for module in sequential:
            self.append(module)
        return self

    def pop(self, key: int) -> Module:
        """Remove the module at ``key`` and return it; later modules move down.

        Args:
            key: the position.

        Example:
            >>> net = nn.Sequential(nn.ReLU(), nn.Tanh())
            >>> net.pop(0), len(net)
            (ReLU(), 1)
        """
        module = self[key]
        del self[key]
        return module

    def forward(self, input):
        """Call each module in order on the previous one's output.

        Args:
            input: the input of the first module.

        Example:
            >>> nn.Sequential(nn.Linear(3, 2), nn.ReLU()).forward(fjax.ones(4, 3)).shape
            fjax.Size([4, 2])
        """
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered as children ``'0'``, ``'1'``, ... (no ``forward``).

    Unlike a plain Python list, its modules' parameters show up in ``parameters()``,
    ``state_dict()`` and ``.to()``. Supports indexing, slicing, ``append``, ``extend``,
    ``insert`` and iteration.

    Args:
        modules: initial modules, an iterable (default None).

    Example::

        >>> layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
        >>> _ = layers.append(nn.ReLU())
        >>> len(layers), layers[-1]
        (4, ReLU())
        >>> len(list(layers.parameters()))  # 3 weights and 3 biases
        6
    """

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index("ModuleList", idx, len(self)))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_index("ModuleList", idx, len(self))), module)

    def __delitem__(self, idx) -> None:
        keys = list(self._modules)
        doomed = keys[idx] if isinstance(idx, slice) else [str(_index("ModuleList", idx, len(keys)))]
        for key in doomed:
            delattr(self, key)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> "ModuleList":
        return ModuleList([*self, *other])

    def append(self, module: Module) -> "ModuleList":
        """Add ``module`` at the end; returns this list.

        Args:
            module: the module to add.

        Example:
            >>> len(nn.ModuleList([nn.ReLU()]).append(nn.Tanh()))
            2
        """
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        """Append every module of ``modules``; returns this list.

        Args:
            modules: an iterable of modules.

        Example:
            >>> len(nn.ModuleList().extend([nn.ReLU(), nn.Tanh()]))
            2
        """
        if isinstance(modules, Tensor) or not hasattr(modules, "__iter__"):  # (a Sequential is iterable)
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got {type(modules).__name__}")
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before position ``index``.

        Args:
            index: the position.
            module: the module to insert.

        Example:
            >>> layers = nn.ModuleList([nn.ReLU()])
            >>> layers.insert(0, nn.Tanh())
            >>> layers[0]
            Tanh()
        """
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList.insert: {type(module).__name__} is not a Module subclass")
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(modules))

    def pop(self, key: int) -> Module:
        """Remove the module at ``key`` and return it; later modules move down.

        Args:
            key: the position.

        Example:
            >>> layers = nn.ModuleList([nn.ReLU(), nn.Tanh()])
            >>> layers.pop(0), len(layers)
            (ReLU(), 1)
        """
        module = self[key]
        del self[key]
        return module

    def __repr__(self) -> str:
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        blocks = []  # [start, end, repr] of runs of identical modules, printed once as "n x"
        for i, r in enumerate(reprs):
            if blocks and blocks[-1][2] == r:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, r])
        lines = [_addindent(f"({s}): {r}" if s == e else f"({s}-{e}): {e - s + 1} x {r}", 2) for s, e, r in blocks]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of named child modules (no ``forward``).

    Keys keep insertion order; the modules are registered, so their parameters belong to the
    parent. Supports ``[]``, ``in``, ``keys()``, ``values()``, ``items()``, ``update`` and ``pop``.

    Args:
        modules: initial ``(name, module)`` entries, a mapping or an iterable of pairs (default None).

    Example::

        >>> acts = nn.ModuleDict({'relu': nn.ReLU(), 'tanh': nn.Tanh()})
        >>> acts['relu'](fjax.tensor([-1., 2.]))
        tensor([0., 2.], dtype=fjax.float32)
        >>> list(acts.keys()), 'tanh' in acts
        (['relu', 'tanh'], True)
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove every module.

        Example:
            >>> acts = nn.ModuleDict({'relu': nn.ReLU()})
            >>> acts.clear()
            >>> len(acts)
            0
        """
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Remove the module under ``key`` and return it.

        Args:
            key: the name.

        Example:
            >>> acts = nn.ModuleDict({'relu': nn.ReLU(), 'tanh': nn.Tanh()})
            >>> acts.pop('relu'), list(acts)
            (ReLU(), ['tanh'])
        """
        module = self[key]
        del self[key]
        return module

    def keys(self):
        """The names, in insertion order.

        Example:
            >>> list(nn.ModuleDict({'relu': nn.ReLU(), 'tanh': nn.Tanh()}).keys())
            ['relu', 'tanh']
        """
        return self._modules.keys()

    def items(self):
        """The ``(name, module)`` pairs, in insertion order.

        Example:
            >>> list(nn.ModuleDict({'relu': nn.ReLU()}).items())
            [('relu', ReLU())]
        """
        return self._modules.items()

    def values(self):
        """The modules, in insertion order.

        Example:
            >>> list(nn.ModuleDict({'relu': nn.ReLU()}).values())
            [ReLU()]
        """
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add modules from a mapping or from ``(name, module)`` pairs.

        Args:
            modules: a mapping of names to modules, or an iterable of ``(name, module)`` pairs.

        Example:
            >>> acts = nn.ModuleDict()
            >>> acts.update([('relu', nn.ReLU())])
            >>> list(acts)
            ['relu']
        """
        items = modules.items() if isinstance(modules, Mapping) else modules
        for i, item in enumerate(items):
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise ValueError(f"ModuleDict.update: element #{i} should be a (name, module) pair, got {item!r}")
            self[item[0]] = item[1]


def _as_parameter(value: Any) -> Any:
    """torch wraps plain tensors put into parameter containers as Parameters."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _param_line(key, value) -> str:
    if isinstance(value, Tensor):
        kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
        size = "x".join(str(s) for s in value.shape)
        device = f" ({value.device})" if value.device.type == "cuda" else ""
        return f"  ({key}): {kind} containing: [{value.dtype} of size {size}{device}]"
    return f"  ({key}): Object of type: {type(value).__name__}"


class ParameterList(Module):
    """A list of parameters registered as ``'0'``, ``'1'``, ...; plain tensors become Parameters.

    Use it for a variable number of parameters that an optimizer must see through
    ``parameters()``.

    Args:
        values: initial parameters (plain tensors become Parameters), an iterable (default None).

    Example::

        >>> params = nn.ParameterList([fjax.ones(2), fjax.zeros(3)])
        >>> type(params[0]).__name__, params[0].requires_grad
        ('Parameter', True)
        >>> _ = params.append(fjax.ones(1))
        >>> sum(p.numel() for p in params.parameters())
        6
    """

    def __init__(self, values: Iterable[Any] | None = None):
        super().__init__()
        object.__setattr__(self, "_size", 0)
        if values is not None:
            self.extend(values)

    def _key(self, idx: int) -> str:
        return str(_index("ParameterList", idx, self._size))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(self._size)[idx]])
        return getattr(self, self._key(idx))

    def __setitem__(self, idx: int, param: Any) -> None:
        setattr(self, self._key(idx), _as_parameter(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(self._size))

    def __iadd__(self, parameters: Iterable[Any]) -> "ParameterList":
        return self.extend(parameters)

    def append(self, value: Any) -> "ParameterList":
        """Add ``value`` at the end (a plain tensor becomes a Parameter); returns this list.

        Args:
            value: a Parameter or tensor.

        Example:
            >>> params = nn.ParameterList().append(fjax.ones(2))
            >>> type(params[0]).__name__
            'Parameter'
        """
        object.__setattr__(self, "_size", self._size + 1)
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> "ParameterList":
        """Append every value of ``values``; returns this list.

        Args:
            values: an iterable of Parameters or tensors.

        Example:
            >>> len(nn.ParameterList().extend([fjax.ones(2), fjax.zeros(3)]))
            2
        """
        if isinstance(values, Tensor) or not hasattr(values, "__iter__"):
            raise TypeError(f"ParameterList.extend should be called with an iterable, got {type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        """One line per parameter: its index, dtype and shape.

        Example:
            >>> print(nn.ParameterList([fjax.ones(2)]).extra_repr())
            (0): Parameter containing: [fjax.float32 of size 2]
        """
        return "\n".join(_param_line(i, p) for i, p in enumerate(self))


class ParameterDict(Module):
    """An ordered dict of parameters; plain tensors become Parameters.

    Keys keep insertion order and name the parameters in ``named_parameters()`` and
    ``state_dict()``.

    Args:
        parameters: initial ``(name, value)`` entries, a mapping or an iterable of pairs (default None).

    Example::

        >>> params = nn.ParameterDict({'scale': fjax.ones(2)})
        >>> params['shift'] = fjax.zeros(2)
        >>> type(params['shift']).__name__, params['shift'].requires_grad
        ('Parameter', True)
        >>> [name for name, _ in params.named_parameters()]
        ['scale', 'shift']
    """

    def __init__(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None):
        super().__init__()
        object.__setattr__(self, "_keys", {})
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict: keys must be strings, got {type(key).__name__}")
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def keys(self):
        """The names, in insertion order.

        Example:
            >>> list(nn.ParameterDict({'a': fjax.ones(1), 'b': fjax.ones(1)}).keys())
            ['a', 'b']
        """
        return self._keys.keys()

    def items(self):
        """The ``(name, parameter)`` pairs, in insertion order.

        Example:
            >>> [(k, tuple(v.shape)) for k, v in nn.ParameterDict({'a': fjax.ones(2)}).items()]
            [('a', (2,))]
        """
        return [(k, self[k]) for k in self._keys]

    def values(self):
        """The parameters, in insertion order.

        Example:
            >>> [tuple(v.shape) for v in nn.ParameterDict({'a': fjax.ones(2)}).values()]
            [(2,)]
        """
        return [self[k] for k in self._keys]

    def pop(self, key: str) -> Any:
        """Remove the parameter under ``key`` and return it.

        Args:
            key: the name.

        Example:
            >>> params = nn.ParameterDict({'a': fjax.ones(2), 'b': fjax.ones(1)})
            >>> params.pop('a').shape, list(params)
            (fjax.Size([2]), ['b'])
        """
        value = self[key]
        del self[key]
        return value

    def clear(self) -> None:
        """Remove every parameter.

        Example:
            >>> params = nn.ParameterDict({'a': fjax.ones(2)})
            >>> params.clear()
            >>> len(params)
            0
        """
        for key in list(self._keys):
            del self[key]

    def get(self, key: str, default: Any = None) -> Any:
        """The parameter under ``key``, or ``default`` when there is none.

        Args:
            key: the name.
            default: the value when ``key`` is absent.

        Example:
            >>> nn.ParameterDict({'a': fjax.ones(2)}).get('b') is None
            True
        """
        return self[key] if key in self else default

    def update(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
        """Add parameters from a mapping or from ``(name, value)`` pairs (tensors become Parameters).

        Args:
            parameters: a mapping of names to tensors, or an iterable of ``(name, tensor)`` pairs.

        Example:
            >>> params = nn.ParameterDict()
            >>> params.update({'a': fjax.ones(2)})
            >>> list(params)
            ['a']
        """
        items = parameters.items() if isinstance(parameters, Mapping) else parameters
        for key, value in items:
            self[key] = value

    def extra_repr(self) -> str:
        """One line per parameter: its name, dtype and shape.

        Example:
            >>> print(nn.ParameterDict({'a': fjax.ones(2)}).extra_repr())
            (a): Parameter containing: [fjax.float32 of size 2]
        """
        return "\n".join(_param_line(k, p) for k, p in self.items())
