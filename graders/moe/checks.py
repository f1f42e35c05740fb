"""Grader for kata 20: ``Expert``, ``SparseMoeBlock``, ``load_balancing_loss`` and
``router_z_loss``, in Mixtral's names.

The numbers come from the twin (graders.moe.twin), in float64, on the learner's module loaded
with the grader's weights (strict=True); a wrong number is named by the mistake whose
reproduction it matches. The sparse dispatch changes no number, so it is graded by forward
pre-hooks on every ``experts[i]``: each expert is called at most once, on exactly the rows of
``x.reshape(T, dim)`` routed to it and kept, bit for bit, in any order.

Precision. The routing weights may be float32-precise in float64 (transformers takes the
router's softmax in float32): float64 outputs and gradients are compared at
:data:`ROUTER_RTOL`, not float64's own tolerance. Graded routings keep every token's
top_k-th and (top_k+1)-th probabilities :data:`MIN_MARGIN` apart, so no selection flips.
"""

from __future__ import annotations

import pytest
import torch
from torch import Tensor, nn

from graders.core.compare import expect_close, expect_tracks_grad, expect_tuple, tolerance
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.mistakes import Suspect, identify
from graders.core.modules import construct, expect_state_dict, load
from graders.core.report import describe_inputs, describe_value, title, verdict
from graders.moe import twin
from graders.moe.twin import AUX_MISTAKES, CAPACITY_MISTAKES, FORWARD_MISTAKES, Z_MISTAKES, Config

__all__ = ["test_expert", "test_state_dict", "test_forward", "test_sparse_dispatch",
           "test_load_balancing_loss", "test_router_z_loss", "test_capacity", "test_gradients",
           "test_float32"]

ROUTER_RTOL = 1e-5  # float64 with a float32 router softmax (see the module docstring)
MIN_MARGIN = 2e-3


def twin_state_and_input(cfg: Config, x_shape: tuple[int, int], seed: int) -> tuple[dict, Tensor]:
    """Weights and an input (float64) whose routing keeps the top_k margin (seeds tried in
    order from ``seed``: deterministic)."""
    for attempt in range(seed, seed + 200):
        state = twin.random_state(cfg, attempt)
        x = torch.randn(*x_shape, cfg.dim, generator=torch.Generator().manual_seed(attempt + 7),
                        dtype=torch.float64)
        logits = x.reshape(-1, cfg.dim) @ state["gate.weight"].T
        if twin.top_k_margin(cfg, logits) >= MIN_MARGIN:
            return state, x
    raise AssertionError("no routing with a margin")  # pragma: no cover


def learner_moe(impl: Implementation, cfg: Config, state: dict, dtype=torch.float64) -> nn.Module:
    """The learner's SparseMoeBlock for ``cfg``, loaded with the twin's ``state`` (Mixtral's
    names), in ``dtype``."""
    kwargs = {"top_k": cfg.top_k}
    if not cfg.norm_topk_prob:
        kwargs["norm_topk_prob"] = False
    if cfg.capacity_factor is not None:
        kwargs["capacity_factor"] = cfg.capacity_factor
    what = cfg.name()
    module = construct(impl, "SparseMoeBlock", (cfg.dim, cfg.hidden_dim, cfg.num_experts),
                       kwargs, what)
    expect_state_dict(impl, module, {k: tuple(t.shape) for k, t in state.items()}, what,
                      names=_("expected exactly Mixtral's keys: {keys}", keys="{keys}"))
    return load(impl, module, state, what, dtype, "cpu")


def forward_with_hooks(impl: Implementation, module: nn.Module, x: Tensor, on: str
                       ) -> tuple[Tensor, Tensor, list[list[Tensor]]]:
    """The learner's forward, every call of each expert recorded (its first argument)."""
    calls: list[list[Tensor]] = [[] for _ in module.experts]
    handles = [e.register_forward_pre_hook(
        lambda mod, args, i=i: calls[i].append(args[0].detach().clone() if args else None))
        for i, e in enumerate(module.experts)]
    try:
        result = impl.call(module, x, what="SparseMoeBlock.forward", on=on)
    finally:
        for handle in handles:
            handle.remove()
    out, logits = expect_tuple(result, 2, _("SparseMoeBlock's result"), on,
                               "(output, router_logits)")
    return out, logits, calls


def forward_suspects(cfg: Config, state: dict, x64: Tensor, dtype, switches: list[str]
                     ) -> list[Suspect]:
    return [Suspect(twin.slug(s), lambda s=s: twin.moe(cfg, state, x64, s)[0].to(dtype))
            for s in switches]


def check_forward(impl: Implementation, cfg: Config, b: int, n: int, seed: int,
                  dtype=torch.float64, state=None, x64=None) -> list[list[Tensor]]:
    """Output and router logits against the twin; returns the experts' recorded calls."""
    if state is None:
        state, x64 = twin_state_and_input(cfg, (b, n), seed)
    module = learner_moe(impl, cfg, state, dtype)
    x = x64.to(dtype)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x), module=cfg.name())
    out, logits, calls = forward_with_hooks(impl, module, x.clone(), on)
    expected_out, expected_logits = twin.moe(cfg, state, x64)
    slack = ROUTER_RTOL / tolerance(torch.float64)[0] if dtype == torch.float64 else 1.0
    expect_close(logits, expected_logits.to(dtype),
                 _("router_logits (T, num_experts), T = b·n"), on)
    switches = FORWARD_MISTAKES + (CAPACITY_MISTAKES if cfg.capacity_factor is not None else [])
    expect_close(out, expected_out.to(dtype), _("the output (b, n, dim)"), on,
                 forward_suspects(cfg, state, x64, dtype, switches), slack=slack)
    return calls


def check_dispatch(impl: Implementation, cfg: Config, b: int, n: int, seed: int) -> None:
    """Every expert called at most once, on exactly its routed and kept rows."""
    state, x64 = twin_state_and_input(cfg, (b, n), seed)
    module = learner_moe(impl, cfg, state)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x64), module=cfg.name())
    _out, _logits, calls = forward_with_hooks(impl, module, x64.clone(), on)
    tokens = x64.reshape(b * n, cfg.dim)
    wanted = twin.expected_rows(cfg, x64, state)
    check = _("which rows each expert is called on (forward pre-hooks on experts[i])")
    for i, (seen, rows) in enumerate(zip(calls, wanted)):
        if len(seen) > 1:
            raise verdict(check, on, [_("experts[{i}] was called {count} times in one forward; "
                                        "expected once, with all {rows} of its rows",
                                        i=i, count=len(seen), rows=len(rows))],
                          "expert-called-repeatedly")
        if not seen:
            if rows:
                raise verdict(check, on, [_(
                    "experts[{i}] was never called as a module, yet {rows} token(s) are routed "
                    "to it: call self.experts[{i}](rows), not .forward, so hooks see it",
                    i=i, rows=len(rows))])
            continue
        given = seen[0]
        if given is None or given.dim() != 2 or given.shape[-1] != cfg.dim:
            raise verdict(check, on, [_("experts[{i}] was called on {value}; expected a 2-D "
                                        "tensor of its {rows} rows (rows, dim)", i=i,
                                        value=describe_value(given), rows=len(rows))],
                          "dense-expert-compute" if given is not None and given.numel()
                          == tokens.numel() else None)
        matches = (given[:, None, :] == tokens[None, :, :]).all(dim=-1)  # (rows, T)
        unmatched = int((~matches.any(dim=1)).sum())
        if unmatched:
            raise verdict(check, on, [_(
                "{count} of the rows experts[{i}] was called on are no rows of "
                "x.reshape(T, dim): gather the rows from x as they are (an expert is not "
                "linear: weighting its input is not weighting its output)", count=unmatched, i=i)])
        got_rows = sorted(int(matches[r].nonzero()[0]) for r in range(given.shape[0]))
        if got_rows != rows:
            extra, missing = set(got_rows) - set(rows), set(rows) - set(got_rows)
            details = [_("experts[{i}] got tokens {got}; routed to it and kept: {want}",
                         i=i, got=got_rows, want=rows)]
            if missing:  # another routing altogether: the output check says which
                details.append(_("the router chose other experts than the contract's "
                                 "(softmax over the experts, then the top_k largest)"))
            everyone = len(got_rows) == tokens.shape[0]  # run on all T rows, then masked
            raise verdict(check, on, details, "dense-expert-compute" if extra and everyone
                          else None)


def hand_made(logits: list[list[float]], b: int, n: int, hidden: int, top_k: int,
              capacity_factor: float | None, norm: bool = True, seed: int = 0
              ) -> tuple[Config, dict, Tensor]:
    """A layer whose router logits are exactly ``logits`` (T, N): gate = 2·I, x = logits / 2."""
    num_experts = len(logits[0])
    cfg = Config(num_experts, hidden, num_experts, top_k, norm, capacity_factor)
    state = twin.random_state(cfg, seed)
    state["gate.weight"] = 2 * torch.eye(num_experts, dtype=torch.float64)
    x = torch.tensor(logits, dtype=torch.float64).reshape(b, n, num_experts) / 2
    return cfg, state, x


# The contract's capacity examples, and one where floor and ceil differ.
CAPACITY_CASES = [
    # N = 2, top_k = 1, factor 1.0, tokens routed [0, 0, 0, 1]: C = 2, token 2 dropped.
    ([[2, 0], [1, -1], [0, -2], [-1, 1]], 1, 4, 1, 1.0),
    # N = 4, top_k = 2, factor 1.0, choices (1,0), (0,2), (0,1), (0,3): C = 2.
    ([[2, 3, 0, -1], [3, 0, 2, -1], [3, 2, 0, -1], [3, -1, 0, 2]], 2, 2, 2, 1.0),
    # C = 2 of 8 tokens' 16 assignments: drops in both slots, token 5 loses both.
    ([[3, 2, 0, -1], [2, 3, 0, -1], [3, -1, 2, 0], [-1, 2, 3, 0], [-1, 3, 0, 2],
      [3, 2, -1, 0], [2, -1, 0, 3], [-1, 3, 2, 0]], 2, 4, 2, 0.5),
    # 6 tokens, 2.7 assignments per expert: C = 3 (floor would keep 2).
    ([[3, 2, 0, -1], [3, 0, 2, -1], [2, 3, -1, 0], [3, -1, 0, 2], [0, 3, 2, -1],
      [3, 2, -1, 0]], 1, 6, 2, 0.9),
]


# ------------------------------------------------------------------------------ core


@pytest.mark.core
@title(N_("an Expert: w2(silu(w1(x)) * w3(x))"))
def test_expert(impl):
    """Kata 15's SwiGLU in Mixtral's names; its three weights and nothing else."""
    cfg = Config(8, 12, 1)
    state = {k.removeprefix("experts.0."): v for k, v in twin.random_state(cfg, 5).items()
             if k.startswith("experts.0.")}
    module = construct(impl, "Expert", (8, 12), {}, "Expert(8, 12)")
    expect_state_dict(impl, module, {k: tuple(t.shape) for k, t in state.items()},
                      "Expert(8, 12)", names=_("expected exactly Mixtral's keys: {keys}", keys="{keys}"))
    module = load(impl, module, state, "Expert(8, 12)", torch.float64, "cpu")
    for shape in ((5, 8), (2, 3, 8)):
        x = torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(9))
        on = describe_inputs(x=x)
        got = impl.call(module, x.clone(), what="Expert.forward", on=on)
        full = {f"experts.0.{k}": v for k, v in state.items()}
        expect_close(got, twin.expert(full, 0, x), _("the expert's output (..., dim)"), on,
                     [Suspect("swiglu-gate-swapped",
                              lambda: twin.expert(full, 0, x, "swiglu-gate-swapped"))])


@pytest.mark.core
@title(N_("the state dict: Mixtral's gate and experts"))
def test_state_dict(impl):
    """gate.weight and experts.{i}.w1/w2/w3.weight, loaded with strict=True."""
    for cfg in (Config(8, 12, 4), Config(6, 10, 8, top_k=1)):
        learner_moe(impl, cfg, twin.random_state(cfg, 1))


@pytest.mark.core
@title(N_("SparseMoeBlock against its twin"))
def test_forward(impl):
    """Output and router logits, several shapes: top_k 1, 2 and 3 of 3 to 8 experts, with
    and without renormalisation, batch > 1."""
    check_forward(impl, Config(8, 12, 4, top_k=2), b=2, n=5, seed=10)
    check_forward(impl, Config(6, 10, 8, top_k=2), b=3, n=4, seed=20)
    check_forward(impl, Config(8, 12, 4, top_k=1, norm_topk_prob=False), b=2, n=6, seed=30)
    check_forward(impl, Config(6, 8, 3, top_k=2, norm_topk_prob=False), b=1, n=7, seed=40)
    check_forward(impl, Config(6, 8, 4, top_k=3), b=2, n=3, seed=50)


@pytest.mark.core
@title(N_("sparse dispatch: each expert once, on its own rows"))
def test_sparse_dispatch(impl):
    check_dispatch(impl, Config(8, 12, 4, top_k=2), b=2, n=5, seed=60)
    check_dispatch(impl, Config(6, 10, 8, top_k=1), b=3, n=4, seed=70)


def loss_case(seed: int, tokens: int, experts: int, scale: float = 2.0) -> Tensor:
    return torch.randn(tokens, experts, dtype=torch.float64,
                       generator=torch.Generator().manual_seed(seed)) * scale


def check_aux(impl: Implementation, logits: Tensor, top_k: int) -> None:
    fn = impl.attr("load_balancing_loss")
    leaf = logits.clone().requires_grad_(True)
    on = describe_inputs(router_logits=logits, top_k=top_k)
    got = impl.call(fn, leaf, top_k, what="load_balancing_loss", on=on)
    expected = twin.load_balancing_loss(logits, top_k)
    check = _("the load-balancing loss N·Σ f_i·P_i (or top_k times it, Hugging Face's)")
    scale = 1.0
    rtol, atol = tolerance(expected.dtype)  # each accepted form at the plain one's tolerance
    if isinstance(got, Tensor) and got.shape == () and top_k > 1 and torch.isclose(
            got.detach().double(), expected * top_k, rtol=rtol, atol=atol):
        scale = float(top_k)  # Hugging Face's normalisation: f counted per token (float32 counts)
    suspects = [Suspect(twin.slug(s), lambda s=s: twin.load_balancing_loss(logits, top_k, s))
                for s in AUX_MISTAKES]
    expect_close(got, expected * scale, check, on, suspects)
    if not got.requires_grad:
        raise verdict(check, on, [_("the loss does not track gradients: P_i must come from the "
                                    "router's softmax, not from counts or a detached tensor")],
                      "aux-loss-no-gradient")
    (grad,) = torch.autograd.grad(got, leaf, allow_unused=True)
    want = torch.autograd.grad(twin.load_balancing_loss(leaf, top_k) * scale, leaf)[0]
    what = _("the gradient of the load-balancing loss w.r.t. router_logits")
    if grad is None or (not bool(grad.abs().sum()) and bool(want.abs().sum())):
        raise verdict(what, on, [_("expected {value}", value=describe_value(want)),
                                 _("got      {value}", value=describe_value(grad))],
                      "aux-loss-no-gradient")
    expect_close(grad, want, what, on)


@pytest.mark.core
@title(N_("the load-balancing loss"))
def test_load_balancing_loss(impl):
    """Balanced routing gives 1; random logits with top_k 1 and 2; its gradient flows through
    P_i only."""
    check_aux(impl, torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64), 1)
    check_aux(impl, loss_case(80, 6, 4), 1)
    check_aux(impl, loss_case(81, 10, 4), 2)
    check_aux(impl, loss_case(82, 3, 5, 0.5).reshape(1, 3, 5), 2)


@pytest.mark.core
@title(N_("the router z-loss"))
def test_router_z_loss(impl):
    """(1/T)·Σ_t logsumexp(logits_t)²: all-zero logits over N experts give (ln N)²."""
    fn = impl.attr("router_z_loss")
    for logits in (torch.zeros(5, 8, dtype=torch.float64), loss_case(90, 7, 4),
                   loss_case(91, 6, 3, 4.0).reshape(2, 3, 3)):
        on = describe_inputs(router_logits=logits)
        got = impl.call(fn, logits.clone(), what="router_z_loss", on=on)
        suspects = [Suspect(twin.slug(s), lambda s=s, lg=logits: twin.router_z_loss(lg, s))
                    for s in Z_MISTAKES]
        expect_close(got, twin.router_z_loss(logits), _("the z-loss (a 0-d tensor)"), on,
                     suspects)


# ------------------------------------------------------------------------------ follow-ups


@pytest.mark.followup
@title(N_("capacity: the first C tokens in token order, zeros for a fully dropped token"))
def test_capacity(impl):
    """C = ceil(T·top_k / N · capacity_factor) over the whole batch; each expert keeps the
    first C tokens routed to it in token order; dropped assignments add nothing; the other
    weights stay as routed; a token with none kept outputs zeros. Then the dispatch rule
    with drops."""
    for i, (logits, b, n, top_k, factor) in enumerate(CAPACITY_CASES):
        cfg, state, x = hand_made(logits, b, n, 6, top_k, factor, seed=100 + i)
        check_forward(impl, cfg, b, n, seed=0, state=state, x64=x)
    cfg, state, x = hand_made(CAPACITY_CASES[2][0], 2, 4, 6, 2, 0.5, norm=False, seed=110)
    check_forward(impl, cfg, 2, 4, seed=0, state=state, x64=x)


@pytest.mark.followup
@title(N_("gradients through the routing weights and the experts"))
def test_gradients(impl):
    """float64, w.r.t. x, gate.weight and every expert's weights, against autograd through
    the twin (top_k = 1 with renormalisation leaves gate without a gradient: correct)."""
    from graders.core.compare import expect_grads_close

    for cfg, seed in ((Config(6, 8, 4, top_k=2), 120), (Config(6, 8, 4, top_k=1, norm_topk_prob=False), 130)):
        state, x64 = twin_state_and_input(cfg, (2, 3), seed)
        module = learner_moe(impl, cfg, state)
        x = x64.clone().requires_grad_(True)
        on = _("{inputs} with {module}", inputs=describe_inputs(x=x64), module=cfg.name())
        out, _logits, _calls = forward_with_hooks(impl, module, x, on)
        expect_tracks_grad({"output": out}, _("gradients (float64)"), on)
        weight = torch.randn(out.shape, dtype=torch.float64,
                             generator=torch.Generator().manual_seed(seed + 1))
        names = ["gate.weight"] + [f"experts.{i}.{w}.weight" for i in range(cfg.num_experts)
                                   for w in ("w1", "w2", "w3")]
        params = dict(module.named_parameters())
        leaves = [x] + [params[k] for k in names]
        got = torch.autograd.grad((out * weight).sum(), leaves, allow_unused=True)
        twin_state = {k: v.clone().requires_grad_(True) for k, v in state.items()}
        x_twin = x64.clone().requires_grad_(True)
        ref = twin.moe(cfg, twin_state, x_twin)[0]
        want = torch.autograd.grad((ref * weight).sum(), [x_twin] + [twin_state[k] for k in names],
                                   allow_unused=True)
        expect_grads_close(dict(zip(["x"] + names, got)), dict(zip(["x"] + names, want)),
                           _("gradients (float64)"), on, slack=ROUTER_RTOL / tolerance(torch.float64)[0])


@pytest.mark.followup
@title(N_("float32"))
def test_float32(impl):
    """The output and router logits keep x's dtype."""
    check_forward(impl, Config(8, 12, 4, top_k=2), b=2, n=4, seed=140, dtype=torch.float32)
