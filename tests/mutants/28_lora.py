"""Kata 28's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

ZERO_B = "        nn.init.zeros_(self.lora_B.weight)\n"
INIT_A = "        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))\n"
SCALING = "        self.scaling = alpha / math.sqrt(r) if use_rslora else alpha / r\n"
ADAPTER = "        return result + self.lora_B(self.lora_A(dropped)) * self.scaling\n"
MERGE = "        self.base.weight += self.delta_weight()\n"
UNMERGE = "        self.base.weight -= self.delta_weight()\n"
MATCH = '    return any(name == t or name.endswith("." + t) for t in target_modules)\n'

MUTANTS = [
    Mutant("b-not-zero-initialised", why="leaves lora_B with nn.Linear's random initialisation.",
           edits=[(ZERO_B, "")]),
    Mutant("both-factors-zero", why="starts lora_A at zeros too.",
           edits=[(INIT_A, "        nn.init.zeros_(self.lora_A.weight)\n")]),
    Mutant("scaling-inverted", why="scales by r / alpha.",
           edits=[(SCALING, "        self.scaling = math.sqrt(r) / alpha if use_rslora else r / alpha\n")]),
    Mutant("scaling-missing", why="adds the adapter's output without the scaling.",
           edits=[(ADAPTER, "        return result + self.lora_B(self.lora_A(dropped))\n")]),
    Mutant("base-not-frozen", why="never freezes the base weight.",
           edits=[("        self.base.weight.requires_grad_(False)\n", "")]),
    Mutant("base-bias-not-frozen", why="freezes the base weight but not its bias.",
           edits=[("        if self.base.bias is not None:\n"
                   "            self.base.bias.requires_grad_(False)\n", "")]),
    Mutant("dropout-on-output", why="applies dropout to the sum.",
           edits=[(ADAPTER, "        out = result + self.lora_B(self.lora_A(x)) * self.scaling\n"
                            "        return F.dropout(out, self.dropout, training=self.training)\n")]),
    Mutant("dropout-on-output", variant="base_path", why="applies dropout to the base's output.",
           edits=[("        result = self.base(x)\n",
                   "        result = F.dropout(self.base(x), self.dropout, "
                   "training=self.training and not self.merged)\n"),
                  (ADAPTER, "        return result + self.lora_B(self.lora_A(x)) * self.scaling\n")]),
    Mutant("dropout-on-output", variant="after_b", why="applies dropout after lora_B.",
           edits=[(ADAPTER, "        return result + F.dropout(self.lora_B(self.lora_A(x)), "
                            "self.dropout, training=self.training) * self.scaling\n")]),
    Mutant("merge-without-scaling", why="merges B @ A without the scaling.",
           edits=[(MERGE, "        self.base.weight += self.lora_B.weight @ self.lora_A.weight\n")]),
    Mutant("merge-transposed", why="merges the transposed update.",
           edits=[(MERGE, "        self.base.weight += self.delta_weight().T\n")]),
    Mutant("merge-twice-applied", why="has no merged guard: a second merge() adds it again.",
           edits=[('        if self.merged:\n'
                   '            warnings.warn("merge(): the adapter is already merged; nothing '
                   'changed")\n            return\n', "")]),
    Mutant("merge-twice-applied", variant="forward_adds",
           why="the merged layer's forward still adds the adapter.",
           edits=[("        if self.merged:\n            return result\n", "")]),
    Mutant("unmerge-wrong", why="takes B @ A out without the scaling.",
           edits=[(UNMERGE, "        self.base.weight -= self.lora_B.weight @ self.lora_A.weight\n")]),
    Mutant("unmerge-wrong", variant="flag_kept",
           why="restores the weight but leaves the layer marked as merged.",
           edits=[("        self.base.weight -= self.delta_weight()\n        self.merged = False\n",
                   "        self.base.weight -= self.delta_weight()\n")]),
    Mutant("targets-every-linear", why="matches a suffix without the dot (kv_proj ends with "
           "v_proj).", edits=[(MATCH, "    return any(name.endswith(t) for t in target_modules)\n")]),
    Mutant("targets-every-linear", variant="every", why="wraps every nn.Linear.",
           edits=[("if isinstance(module, nn.Linear) and matches(name, target_modules)]",
                   "if isinstance(module, nn.Linear)]")]),
    Mutant("other-params-trainable", why="freezes only the wrapped layers.",
           edits=[("    for p in model.parameters():\n        p.requires_grad_(False)\n", "")]),
]
