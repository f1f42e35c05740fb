"""The training runs kata 27's grader steps an optimizer through.

One small model, one loss, one schedule: the grader draws every gradient itself (backward on
its own model) and hands the optimizer only what a training loop hands it — the parameters,
the learning rate of each group before every step, `step()`, and for a resumed run
`state_dict()` / `load_state_dict()`. The learner's AdamW, `torch.optim.AdamW(foreach=False)`
and each of the twin's mistakes go through the same run, so their results line up step for
step.
"""

from __future__ import annotations

import copy
import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch._compile
from torch import Tensor, nn

# The constructor's arguments of a graded run: eps large enough that where it is added
# shows, weight decay and lr large enough that every way of decaying differs.
HYPER = dict(lr=0.05, betas=(0.9, 0.99), eps=1e-3, weight_decay=0.5)
# The second group (biases and the norm's weight), as Hugging Face's trainers split them.
NO_DECAY = dict(weight_decay=0.0, betas=(0.8, 0.95))
# lr_at's arguments for the learning rate before every step; the second group gets half.
SCHEDULE = dict(max_lr=0.05, min_lr=0.005, warmup_steps=5, cosine_steps=40)
BATCH, D_IN, D_HIDDEN, D_OUT, D_AUX = 5, 6, 8, 3, 2
AUX_EVERY = 3  # the auxiliary head gets a gradient on every third step only


def schedule(step: int) -> float:
    """CS336 a1's get_lr_cosine_schedule at SCHEDULE (the grader's own copy)."""
    s = SCHEDULE
    if step < s["warmup_steps"]:
        return s["max_lr"] * step / s["warmup_steps"]
    if step > s["cosine_steps"]:
        return s["min_lr"]
    progress = (step - s["warmup_steps"]) / (s["cosine_steps"] - s["warmup_steps"])
    return s["min_lr"] + 0.5 * (1 + math.cos(math.pi * progress)) * (s["max_lr"] - s["min_lr"])


class Net(nn.Module):
    """(batch, 6) -> (batch, 3): Linear, LayerNorm, Tanh, Linear; with ``extra``, an auxiliary
    head (batch, 8) -> (batch, 2) used on some steps and a parameter never used."""

    def __init__(self, extra: bool):
        super().__init__()
        self.lin1 = nn.Linear(D_IN, D_HIDDEN)
        self.norm = nn.LayerNorm(D_HIDDEN)
        self.lin2 = nn.Linear(D_HIDDEN, D_OUT)
        if extra:
            self.aux = nn.Linear(D_HIDDEN, D_AUX)
            self.unused = nn.Parameter(torch.ones(2, 3))

    def forward(self, x: Tensor, y: Tensor, y_aux: Tensor, with_aux: bool) -> Tensor:
        h = torch.tanh(self.norm(self.lin1(x)))
        loss = ((self.lin2(h) - y) ** 2).mean()
        if with_aux:
            loss = loss + ((self.aux(h) - y_aux) ** 2).mean()
        return loss


@dataclass(frozen=True)
class Training:
    """One graded run: ``steps`` steps in ``dtype``; ``extra``: the auxiliary head and the
    unused parameter; ``resume_at``: a fresh optimizer loads the state after that many
    steps; ``defaults``: AdamW(model.parameters()) with the constructor's defaults."""

    dtype: torch.dtype
    steps: int = 50
    extra: bool = False
    resume_at: int | None = None
    defaults: bool = False

    def make_net(self) -> Net:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(27)
            net = Net(self.extra).to(self.dtype)
        if self.extra:
            with torch.no_grad():
                net.norm.weight.uniform_(0.5, 1.5, generator=torch.Generator().manual_seed(5))
        return net

    def params(self, net: Net) -> Any:
        """What the optimizer is built on: two groups, or the plain parameters."""
        if self.defaults:
            return net.parameters()
        decay = [p for p in net.parameters() if p.dim() >= 2]
        no_decay = [p for p in net.parameters() if p.dim() < 2]
        return [{"params": decay}, {"params": no_decay, **NO_DECAY}]

    def kwargs(self) -> dict:
        return {} if self.defaults else dict(HYPER)

    def batches(self) -> list[tuple[Tensor, Tensor, Tensor]]:
        g = torch.Generator().manual_seed(2027)
        return [tuple(torch.randn(BATCH, d, generator=g, dtype=torch.float64).to(self.dtype)
                      for d in (D_IN, D_OUT, D_AUX)) for _ in range(self.steps)]


@dataclass
class Hooks:
    """How a run drives one optimizer: build it, step it (``step(opt, index)``), and for a
    resumed run its state_dict() and a fresh one's load_state_dict()."""

    build: Callable[[Any, dict], Any]
    step: Callable[[Any, int], None]
    save: Callable[[Any], dict] = lambda opt: opt.state_dict()
    load: Callable[[Any, dict], None] = lambda opt, state: opt.load_state_dict(state)


@dataclass
class Run:
    """A finished run: every parameter after every step, (steps, P) in float64, flattened in
    ``names``' order; the model and optimizer as they ended."""

    trajectory: Tensor
    names: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    net: Any = None
    optimizer: Any = None


def set_lrs(optimizer: Any, step: int, defaults: bool) -> None:
    if defaults:
        return
    lr = schedule(step)
    for i, group in enumerate(optimizer.param_groups):
        group["lr"] = lr if i == 0 else lr / 2


def train(training: Training, hooks: Hooks) -> Run:
    net = training.make_net()
    optimizer = hooks.build(training.params(net), training.kwargs())
    rows = []
    for i, (x, y, y_aux) in enumerate(training.batches()):
        if training.resume_at is not None and i == training.resume_at:
            state = copy.deepcopy(hooks.save(optimizer))  # what torch.save + torch.load give
            net = copy.deepcopy(net)
            optimizer = hooks.build(training.params(net), training.kwargs())
            hooks.load(optimizer, state)
        net.zero_grad(set_to_none=True)
        with torch.enable_grad():
            net(x, y, y_aux, training.extra and i % AUX_EVERY == 0).backward()
        set_lrs(optimizer, i, training.defaults)
        hooks.step(optimizer, i)
        rows.append(torch.cat([p.detach().to(torch.float64).flatten() for p in net.parameters()]))
    names = [(name, tuple(p.shape)) for name, p in net.named_parameters()]
    return Run(torch.stack(rows), names, net, optimizer)


def skip_optimizer_dynamo_import() -> None:
    """torch.optim.Optimizer's add_param_group, state_dict, load_state_dict and zero_grad are
    wrapped by torch._disable_dynamo, which imports torch._dynamo (as costly as ``import
    torch`` itself) on their first call, to keep TorchDynamo from tracing them. Nothing is
    compiled here: each wrapper is handed its plain function in advance, where it caches it
    (what graders.core.torch_shortcuts does for a TorchDispatchMode). A PyTorch of another
    shape is left alone: the run then pays for the import."""
    probe = torch._compile._disable_dynamo(lambda: None).__code__
    for fn in vars(torch.optim.Optimizer).values():
        raw = getattr(fn, "__wrapped__", None)
        if (getattr(fn, "__code__", None) is probe and raw is not None
                and not hasattr(raw, "__dynamo_disable")):
            raw.__dynamo_disable = raw


def torch_step(optimizer: torch.optim.AdamW) -> None:
    """torch.optim.AdamW.step without its wrappers: the profiler's hook and the graph breaks
    that keep a compiled step in no_grad mode (whose first call imports torch._dynamo); run
    in no_grad mode, as the wrapper does for a non-differentiable optimizer."""
    with torch.no_grad():
        inspect.unwrap(type(optimizer).step)(optimizer)


def torch_hooks() -> Hooks:
    """torch.optim.AdamW(foreach=False): the reference every run is compared with."""
    return Hooks(build=lambda params, kw: torch.optim.AdamW(params, foreach=False, **kw),
                 step=lambda opt, i: torch_step(opt))


def locate(names: list[tuple[str, tuple[int, ...]]], flat: int) -> str:
    """The parameter and index of entry ``flat`` of a trajectory row: ``lin1.weight[2, 3]``."""
    for name, shape in names:
        size = math.prod(shape)
        if flat < size:
            index = [int(i) for i in torch.unravel_index(torch.tensor(flat), shape)] if shape else []
            return f"{name}[{', '.join(map(str, index))}]"
        flat -= size
    return f"[{flat}]"
