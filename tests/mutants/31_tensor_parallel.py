"""Kata 31's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

F_BACKWARD = "        grad = grad.clone()\n        dist.all_reduce(grad, group=ctx.group)\n"
F_FORWARD = "        ctx.group = group\n        return x.view_as(x)\n"
G_APPLY = "    return ReduceFromModelParallelRegion.apply(x, group) if world(group)[1] > 1 else x\n"
G_BACKWARD = ("    def backward(ctx, grad):\n        return grad, None\n\n\n"
              "def copy_to_tensor_model_parallel_region")
ROW_FORWARD = ("        partial = F.linear(x_local, self.weight)\n"
               "        out = reduce_from_tensor_model_parallel_region(partial, self.group)\n")
ROW_BIAS = "        return out + self.bias if self.bias is not None else out  # the bias once, after g\n"
COLUMN_WEIGHT = "        self.weight = nn.Parameter(torch.empty(out_features // ws, in_features))\n"
ROWS = "        rows = slice(r * width, (r + 1) * width)  # heads r*h/ws ... (r+1)*h/ws - 1\n"
W_QKV = '        w_q, w_k, w_v = state_dict["in_proj_weight"].chunk(3, dim=0)\n'
B_QKV = '            b_q, b_k, b_v = state_dict["in_proj_bias"].chunk(3, dim=0)\n'
FUSED = "[r * 3 * width:(r + 1) * 3 * width]"
HEADS = "            return t.view(b, n, self.local_heads, self.head_dim).transpose(1, 2)\n"

MUTANTS = [
    Mutant("missing-backward-all-reduce", why="f is the identity in both directions.",
           edits=[(F_BACKWARD, "        grad = grad.clone()\n")]),
    Mutant("all-reduce-in-both-directions",
           why="g is torch.distributed.nn.functional.all_reduce, whose backward all-reduces too.",
           edits=[("import torch.distributed as dist\n",
                   "import torch.distributed as dist\nimport torch.distributed.nn.functional "
                   "as dist_nn\n"),
                  (G_APPLY, "    return dist_nn.all_reduce(x, group=group or dist.group.WORLD) "
                            "if world(group)[1] > 1 else x\n")]),
    Mutant("all-reduce-in-both-directions", variant="hand_written",
           why="g's hand-written backward all-reduces the gradient as well.",
           edits=[(G_BACKWARD, "    def backward(ctx, grad):\n        grad = grad.clone()\n"
                               "        dist.all_reduce(grad)\n        return grad, None\n\n\n"
                               "def copy_to_tensor_model_parallel_region")]),
    Mutant("bias-added-on-every-rank",
           why="each rank adds out_proj's full bias to its partial output before the all-reduce.",
           edits=[(ROW_FORWARD, ROW_FORWARD.replace("(x_local, self.weight)",
                                                    "(x_local, self.weight, self.bias)")),
                  (ROW_BIAS, "        return out\n")]),
    Mutant("sharded-wrong-axis",
           why="ColumnParallelLinear keeps a slice of the input features, not of the outputs.",
           edits=[(COLUMN_WEIGHT, "        self.weight = nn.Parameter(torch.empty(out_features, "
                                  "in_features // ws))\n")]),
    Mutant("fused-qkv-sliced-contiguously",
           why="rank r takes rows r*3E/ws ... of the fused in_proj_weight, then splits them.",
           edits=[(W_QKV, W_QKV.replace('"]', '"]' + FUSED)),
                  ("            proj.weight.copy_(w[rows])\n", "            proj.weight.copy_(w)\n"),
                  (B_QKV, B_QKV.replace('"]', '"]' + FUSED)),
                  ("                proj.bias.copy_(b[rows])\n",
                   "                proj.bias.copy_(b)\n")]),
    Mutant("heads-not-contiguous", why="rank r takes the strided rows r, r + ws, r + 2 ws, ...",
           edits=[(ROWS, "        rows = slice(r, None, self.world_size)\n")]),
    Mutant("local-heads-wrong", why="the local projections are viewed as h heads, not h / ws.",
           edits=[(HEADS, "            return t.view(b, n, self.num_heads, -1).transpose(1, 2)\n")]),
    Mutant("output-not-reduced", why="RowParallelLinear returns its partial sum plus the bias.",
           edits=[(ROW_FORWARD, "        out = F.linear(x_local, self.weight)\n")]),
    Mutant("input-modified-in-place",
           why="f averages the caller's x over the ranks in place, to be sure they agree.",
           edits=[(F_FORWARD, "        ctx.group = group\n"
                              "        dist.all_reduce(x, op=dist.ReduceOp.AVG, group=group)\n"
                              "        return x.view_as(x)\n")]),
    Mutant("all-gather-instead-of-reduce",
           why="RowParallelLinear gathers every rank's input slice and weight columns, then runs "
               "the full linear.",
           edits=[(ROW_FORWARD,
                   "        ws = world(self.group)[1]\n"
                   "        xs = [torch.empty_like(x_local) for _ in range(ws)]\n"
                   "        cols = [torch.empty_like(self.weight) for _ in range(ws)]\n"
                   "        dist.all_gather(xs, x_local.contiguous(), group=self.group)\n"
                   "        dist.all_gather(cols, self.weight.detach().contiguous(), "
                   "group=self.group)\n"
                   "        out = F.linear(torch.cat(xs, -1), torch.cat(cols, -1))\n")]),
]
