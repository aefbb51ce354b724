"""OneFlow-style nn.Graph API surface: ``flow.nn.graph`` (Proxy, GraphModule, GraphTensor), graph
names, ``with_dynamic_input_shape`` as OneFlow's ``__init__`` decorator, ``nn.Graph.trace``,
``debug``, and build's inputs/outputs (nested lists and dicts, None, non-contiguous tensors)."""

import numpy as np
import pytest

import fjax as flow

nn = flow.nn
GraphModule, GraphTensor, Proxy = nn.graph.GraphModule, nn.graph.GraphTensor, nn.graph.Proxy


def test_nn_graph_imports_as_a_module():
    import importlib

    module = importlib.import_module("fjax.nn.graph")
    assert module is flow.nn.graph
    assert {"Graph", "GraphModule", "GraphTensor", "Proxy"} <= set(module.__all__)
    assert module.Graph is nn.Graph


class SubModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 1, 5)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.conv1(x))


class CustomModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = SubModule()
        self.fc1 = nn.Linear(36, 4)
        self.register_buffer("dummy_buff", flow.randn(1, 4))

    def forward(self, x):
        return self.fc1(flow.flatten(self.layer(x), 1)) + self.dummy_buff


def test_proxies_blocks_and_build_sees_the_module():
    m = CustomModule()
    seen = {}

    class NestedGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m

        def build(self, x):
            seen["is_custom"] = isinstance(self.m, CustomModule)  # as OneFlow: the module's class inside build
            seen["buffer_is_tensor"] = isinstance(self.m.dummy_buff, flow.Tensor)
            return self.m(x) + self.m.fc1.bias

    g = NestedGraph()
    assert isinstance(g.m, flow.nn.graph.Proxy) and isinstance(g.m, Proxy)
    assert g.m.to(GraphModule).type == "MODULE" and g.m.to(GraphModule).name == "m"
    assert isinstance(g.m.dummy_buff, Proxy) and g.m.dummy_buff.to(GraphTensor).type == "BUFFER"
    conv = g.m.layer.conv1
    assert isinstance(conv, Proxy)
    assert conv.to(GraphModule).name == "conv1" and conv.to(GraphModule).name_prefix == "m.layer."
    assert conv.weight.to(GraphTensor).type == "PARAMETER"
    assert conv.weight.to(flow.Tensor) is m.layer.conv1.weight and conv.to(nn.Module) is m.layer.conv1
    assert conv.kernel_size == (5, 5)
    np.testing.assert_array_equal(g.m.dummy_buff.numpy(), m.dummy_buff.numpy())
    with pytest.raises(TypeError, match="MODULE"):
        g.m.to(GraphTensor)
    g.m.layer.to(GraphModule).set_stage(0)
    assert g.m.layer.to(GraphModule).stage_id == 0

    x = flow.randn(2, 1, 10, 10)
    expected = (m(x) + m.fc1.bias).detach().numpy()
    np.testing.assert_allclose(g(x).numpy(), expected, rtol=1e-5, atol=1e-6)
    assert seen == {"is_custom": True, "buffer_is_tensor": True}
    np.testing.assert_allclose(g.build(x).detach().numpy(), expected, rtol=1e-5, atol=1e-6)  # build run eagerly


def test_graph_names_count_per_class():
    class ACustomGraph(nn.Graph):
        def build(self, x):
            return x

    class BCustomGraph(nn.Graph):
        def build(self, x):
            return x

    class CBCustomGraph(BCustomGraph):
        pass

    for _ in range(2):
        nn.Graph._child_init_cnt.clear()
        for i in range(3):
            assert ACustomGraph().name == f"ACustomGraph_{i}"
            assert BCustomGraph().name == f"BCustomGraph_{i}"
            assert CBCustomGraph().name == f"CBCustomGraph_{i}"


def test_with_dynamic_input_shape_decorates_init_like_oneflow():
    model = nn.Linear(5, 3)

    class DynamicGraph(nn.Graph):
        @nn.Graph.with_dynamic_input_shape(size=2)
        def __init__(self, scale):
            super().__init__()
            self.model = model
            self.scale = scale

        def build(self, x):
            return self.model(x) * self.scale

    g = DynamicGraph(2.0)
    assert g.config.cache_size == 2 and g.scale == 2.0
    for batch in [1, 2, 3, 1, 4, 3]:
        x = flow.randn(batch, 5)
        np.testing.assert_allclose(g(x).numpy(), (model(x) * 2.0).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert len(g.compile_report()) == 5  # 1 (first, kept), 2, 3, 4, then 3 again after its eviction
    with pytest.raises(ValueError, match="size"):
        nn.Graph.with_dynamic_input_shape(size=0)
    assert DynamicGraph.__init__.__name__ == "__init__"
    assert DynamicGraph(1.0).with_dynamic_input_shape(size=4).config.cache_size == 4  # fjax's instance form


def test_trace_turns_a_function_into_a_graph():
    @nn.Graph.trace
    def double_plus(x, y):
        return x * 2 + y

    assert isinstance(double_plus, nn.Graph)
    x, y = flow.randn(3), flow.randn(3)
    np.testing.assert_allclose(double_plus(x, y).numpy(), (x * 2 + y).numpy(), rtol=1e-6, atol=1e-6)
    assert double_plus.is_compiled and double_plus.name.startswith("double_plus_graph_")
    with pytest.raises(TypeError, match="function"):
        nn.Graph.trace(3)


def test_debug_levels_and_init_arguments(capsys):
    class DebugGraph(nn.Graph):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())

        def build(self, x):
            return self.m(x)

    g = DebugGraph(debug_v_level=1)
    assert g.m[0].to(GraphModule)._debug_level == 1
    g(flow.randn(3, 2))
    assert f"[GraphCompile] {g.name} XLA compile:" in capsys.readouterr().out
    g.debug(-1)
    g(flow.randn(4, 2))
    assert "[GraphCompile]" not in capsys.readouterr().out
    g.debug(2, ranks=-1, max_py_stack_depth=4, only_user_py_stack=False, op_repr_with_py_stack=True)
    for bad in [4, -2, 1.5]:
        with pytest.raises(ValueError, match="v_level"):
            g.debug(bad)
    with pytest.raises(ValueError, match="max_py_stack_depth"):
        g.debug(0, max_py_stack_depth=-1)
    with pytest.raises(ValueError, match="ranks"):
        g.debug(0, ranks="all")
    with pytest.raises(NotImplementedError, match="enable_get_runtime_state_dict"):
        DebugGraph(enable_get_runtime_state_dict=True)


class IOModule(nn.Module):
    def forward(self, t, lt, n, i, s, **kwargs):
        return t, lt, n, i, s, kwargs


def test_asymmetric_nested_inputs_and_outputs_with_checkpointing():
    class IOGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = IOModule()
            self.m.to(GraphModule).activation_checkpointing = True

        def build(self, t, lt, n, **kwargs):
            rt, rlt, rn, ri, rs, dic = self.m(t, lt, n, 1, "2", **kwargs)
            assert ri == 1 and rs == "2"
            return t, lt, n, dic

    rand = lambda: flow.randn(1)  # noqa: E731
    x, t2, t3, t7, t4, t5, t6 = (rand() for _ in range(7))
    lt0 = [t2, t3, {"kw2": t7}]
    g = IOGraph()
    for _ in range(2):  # the second call takes the compiled path
        ot, olt, on, odic = g(x, lt0, None, kw0=t4, kw1=[t5, t6])
        np.testing.assert_array_equal(ot.numpy(), x.numpy())
        assert isinstance(olt, list) and isinstance(olt[2], dict) and on is None
        np.testing.assert_array_equal(olt[1].numpy(), t3.numpy())
        np.testing.assert_array_equal(olt[2]["kw2"].numpy(), t7.numpy())
        assert isinstance(odic, dict) and sorted(odic) == ["kw0", "kw1"]
        np.testing.assert_array_equal(odic["kw1"][1].numpy(), t6.numpy())


@pytest.mark.parametrize("wrap", [tuple, list, None])
def test_one_element_containers_keep_their_type(wrap):
    class FirstGraph(nn.Graph):
        def build(self, t):
            return t[0] if wrap is not None else t

    x = flow.ones(1, 10)
    arg = wrap([x]) if wrap is not None else x
    out = FirstGraph()(arg)
    assert isinstance(out, flow.Tensor)
    np.testing.assert_array_equal(out.numpy(), x.numpy())

    class ReturnGraph(nn.Graph):
        def build(self, t):
            return wrap([t]) if wrap is not None else None

    out = ReturnGraph()(x)
    if wrap is None:
        assert out is None
    else:
        assert type(out) is wrap and len(out) == 1 and isinstance(out[0], flow.Tensor)


def test_non_contiguous_inputs_give_eager_results():
    model = nn.Linear(4, 3)

    class LinearGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x, y):
            return self.model(x), y * 2

    base = flow.randn(4, 6)
    x = base.t()[1:5]  # a transposed window of a larger storage
    y = flow.randn(3, 8)[:, ::2]
    assert not x.is_contiguous() and not y.is_contiguous()
    g = LinearGraph()
    for _ in range(2):
        out, y2 = g(x, y)
        np.testing.assert_allclose(out.numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(y2.numpy(), (y * 2).numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(x.numpy(), base.numpy().T[1:5])  # the inputs are untouched


def test_unhashable_non_tensor_input_is_refused_with_its_name():
    class G(nn.Graph):
        def build(self, x, opts):
            return x

    with pytest.raises(Exception, match="neither a Tensor nor hashable"):
        G()(flow.randn(2), np.zeros(2))
