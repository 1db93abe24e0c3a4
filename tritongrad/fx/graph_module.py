"""``GraphModule``: an ``nn.Module`` whose ``forward`` is Python code generated from a
:class:`Graph` (PyTorch's ``torch.fx.GraphModule``)."""

from __future__ import annotations

import copy
import itertools
import linecache
import os
import warnings
from pathlib import Path
from typing import Any

from ..nn.module import Module
from .graph import Graph, PythonCode


__all__ = ["GraphModule"]

_counter = itertools.count()


def _forward_from_src(src: str, globals_: dict[str, Any]) -> Any:
    """Compiles ``src`` (one ``def forward``) under a file name that ``linecache`` knows, so
    tracebacks through generated code show its lines."""
    key = f"<eval_with_key>.{next(_counter)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    scope = dict(globals_)
    exec(compile(src, key, "exec"), scope)  # noqa: S102  (our own generated source)
    return scope["forward"]


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    """Installs ``from_module``'s attribute at dotted path ``target`` on ``to_module``,
    making empty Modules for the missing levels; a plain Tensor becomes a buffer."""
    from ..autograd.tensor import Tensor
    from ..nn.parameter import Parameter
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:  # (installed already, with everything below it)
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj: Any, to_module: Module, target: str) -> None:
    """As ``_copy_attr`` for a value given directly (the dict form of ``root``)."""
    from ..autograd.tensor import Tensor
    from ..nn.parameter import Parameter
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(from_obj, Tensor) and not isinstance(from_obj, Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


class GraphModule(Module):
    """An ``nn.Module`` made from a :class:`Graph`: it holds the submodules, parameters and
    buffers the graph refers to (copied from ``root``) and a ``forward`` generated from the
    graph (``gm.code``). After changing ``gm.graph``, call :meth:`recompile`.

    Args:
        root: the module the graph's ``get_attr``/``call_module`` targets are taken from, or
            a dict from those targets to the objects.
        graph: the graph.
        class_name: the name the module prints as (each GraphModule gets its own class, so
            that its generated ``forward`` is its own).
    """

    def __new__(cls, *args, **kwargs):
        # a class per instance: recompile() sets ``forward`` on the class
        for t in cls.__mro__:
            if t.__qualname__.split(".")[-1] != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):  # type: ignore[valid-type, misc]
            pass
        return super().__new__(GraphModuleImpl)

    def __init__(self, root: Module | dict[str, Any], graph: Graph,
                 class_name: str = "GraphModule") -> None:
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if not isinstance(node.target, str):
                        raise TypeError(f"GraphModule: node {node.name} target must be a str, "
                                        f"got {type(node.target).__name__}")
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but "
                                           f"that target was not provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError(f"GraphModule: root must be an nn.Module or a dict from targets "
                               f"to objects, got {type(root).__name__}")
        self.__dict__["_tracer_cls"] = graph._tracer_cls
        self.__dict__["meta"] = copy.copy(getattr(root, "meta", {})) \
            if isinstance(root, Module) else {}
        self.graph = graph

    # -- the graph and its code --------------------------------------------------------------

    @property
    def graph(self) -> Graph:
        """The graph this module's ``forward`` is generated from (assigning one recompiles)."""
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise TypeError(f"GraphModule.graph: expected a Graph, got {type(g).__name__}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of the generated ``forward``."""
        if "_code" not in self.__dict__:
            raise RuntimeError("Code has not been generated! Please report a bug to "
                               "tritongrad")
        return self.__dict__["_code"]

    def recompile(self) -> PythonCode:
        """Regenerates ``forward`` from ``self.graph`` (after the graph was changed)."""
        python_code = self.graph.python_code(root_module="self")
        self.__dict__["_code"] = python_code.src
        cls = type(self)
        cls.forward = _forward_from_src(python_code.src, python_code.globals)
        return python_code

    def print_readable(self, print_output: bool = True) -> str:
        """The module as Python source (``class <name>(tritongrad.nn.Module)`` with the
        ``forward``, and the same for GraphModule submodules), printed unless
        ``print_output`` is False."""
        out = self._readable(type(self).__name__)
        if print_output:
            print(out)
        return out

    def _readable(self, name: str) -> str:
        # the verbose code (where the nodes were traced from, ShapeProp's shapes), then the
        # GraphModule submodules' classes, as PyTorch's
        body = self.graph.python_code("self", verbose=True).src.strip("\n").rstrip()
        lines = [f"class {name}(tritongrad.nn.Module):"]
        lines += ["    " + ln if ln.strip() else "" for ln in body.splitlines()]
        for sub_name, sub in self.named_children():
            if isinstance(sub, GraphModule):
                inner = sub._readable(sub_name)
                lines.append("")
                lines += ["    " + ln if ln else ln for ln in inner.splitlines()]
        return "\n".join(lines) + "\n"

    def to_folder(self, folder: str | os.PathLike, module_name: str = "FxModule") -> None:
        """Dumps out module to ``folder`` with ``module_name`` so that it can be imported
        with ``from <folder> import <module_name>``: ``module.py`` (the class, its
        ``forward`` the generated code), ``state_dict.pt``, and a ``<name>.pt`` for each
        child module that is not a layer rebuilt from its repr (Linear, Conv, BatchNorm).
        As PyTorch's, functions the code reaches through its own globals (``wrap``ped or
        autowrapped ones) are not written out.

        Args:
            folder: The folder to write the code out to.
            module_name: Top-level name to use for the ``Module`` while writing out the code.
        """
        import tritongrad as tg
        from ..nn import BatchNorm1d, BatchNorm2d, BatchNorm3d, Conv1d, Conv2d, Conv3d, Linear
        folder = Path(folder)
        folder.mkdir(exist_ok=True)
        tg.save(self.state_dict(), folder / "state_dict.pt")
        tab = " " * 4
        lines = ["", "import tritongrad", "from math import inf", "from math import nan",
                 "NoneType = type(None)", "", "from tritongrad.nn import *",
                 f"class {module_name}(tritongrad.nn.Module):", f"{tab}def __init__(self):",
                 f"{tab * 2}super().__init__()"]
        safe_reprs = (Linear, Conv1d, Conv2d, Conv3d, BatchNorm1d, BatchNorm2d, BatchNorm3d)
        blobified: list[str] = []
        for name, module in self.named_children():
            if type(module) in safe_reprs:
                lines.append(f"{tab * 2}setattr(self, '{name}', {module!r})")
                continue
            module_file = folder / f"{name}.pt"
            tg.save(module, module_file)
            blobified.append(name)
            one_line = repr(module).replace("\r", " ").replace("\n", " ")
            lines.append(f"{tab * 2}setattr(self, '{name}', tritongrad.load(r'{module_file}', "
                         f"weights_only=False)) # {one_line}")
        for kind, table in (("buffer", self._buffers), ("param", self._parameters)):
            for name, t in table.items():
                if t is None:
                    continue
                empty = f"tritongrad.empty({list(t.shape)}, dtype={t.dtype})"
                lines.append(f"{tab * 2}self.register_buffer('{name}', {empty})"
                             if kind == "buffer" else
                             f"{tab * 2}setattr(self, '{name}', "
                             f"tritongrad.nn.Parameter({empty}))")
        lines.append(f"{tab * 2}self.load_state_dict(tritongrad.load(r'{folder}/state_dict.pt'))")
        lines += [tab + ln if ln.strip() else ln for ln in self.code.splitlines()]
        (folder / "module.py").write_text("\n".join(lines) + "\n")
        (folder / "__init__.py").write_text("from .module import *")
        if blobified:
            warnings.warn("Was not able to save the following children modules as reprs -"
                          f"saved as pickled files instead: {blobified}")

    def __str__(self) -> str:
        return "\n".join([super().__repr__(), self.code,
                          "# To see more debug info, please use "
                          "`graph_module.print_readable()`"])

    # -- submodules --------------------------------------------------------------------------

    def add_submodule(self, target: str, m: Module) -> bool:
        """Installs ``m`` at dotted path ``target``, making empty Modules for missing levels;
        False when some level is taken by something that is not a Module."""
        *prefix, field = target.split(".")
        mod: Any = self
        for item in prefix:
            submod = getattr(mod, item, None)
            if submod is None:
                submod = Module()
                setattr(mod, item, submod)
            if not isinstance(submod, Module):
                return False
            mod = submod
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Deletes the submodule at ``target``; False when there is none."""
        atoms = target.split(".")
        path, target_submod = atoms[:-1], atoms[-1]
        mod: Any = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, target_submod) or \
                not isinstance(getattr(mod, target_submod), Module):
            return False
        delattr(mod, target_submod)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Deletes the submodules no ``call_module`` or ``get_attr`` node refers to (nor
        contains, for ``call_module``)."""
        used: set[str] = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                used.update(itertools.accumulate(node.target.split("."),
                                                 lambda x, y: f"{x}.{y}"))
                if node.op == "call_module":
                    try:
                        submod = self.get_submodule(node.target)
                    except AttributeError:
                        continue
                    used.update(f"{node.target}.{n}" for n, _ in submod.named_modules() if n)
        for name in [n for n, _ in self.named_modules() if n and n not in used]:
            self.delete_submodule(name)

    # -- copying and pickling ----------------------------------------------------------------

    def __deepcopy__(self, memo: dict) -> GraphModule:
        res = type(self).__new__(type(self))
        memo[id(self)] = res
        fake = Module()
        fake.__dict__.update(copy.deepcopy(self.__dict__, memo))
        GraphModule.__init__(res, fake, fake.__dict__["_graph"], type(self).__name__)
        for k in ("_forward_hooks", "_forward_pre_hooks", "meta"):
            res.__dict__[k] = fake.__dict__.get(k, res.__dict__.get(k))
        return res

    def __copy__(self) -> GraphModule:
        res = GraphModule(self, self.graph, type(self).__name__)
        res.__dict__["meta"] = getattr(self, "meta", {})
        return res

    def __reduce__(self):
        state = {k: v for k, v in self.__dict__.items() if k != "_code"}
        tracer_cls = state.get("_tracer_cls")
        if tracer_cls is not None and "<locals>" in tracer_cls.__qualname__:
            state["_tracer_cls"] = None  # (a class defined in a function cannot be pickled)
        return (_rebuild_graph_module, (type(self).__name__, state))


def _rebuild_graph_module(class_name: str, state: dict) -> GraphModule:
    gm = GraphModule.__new__(GraphModule)
    type(gm).__name__ = class_name
    gm.__dict__.update(state)
    gm.graph = state["_graph"]  # (sets the owning module, regenerates forward)
    return gm



