"""Facts from XLA's optimized HLO text: fusions, kernels, fused elementwise ops, a fingerprint.

Pure text processing (no framework import), so the worker, the tests and the report share it.
Input: the text XLA prints for a compiled module — JAX ``jit(f).lower(*a).compile().as_text()``,
TF ``experimental_get_compiler_ir(*a)(stage="optimized_hlo")``, or an ``*after_optimizations.txt``
file of ``XLA_FLAGS=--xla_dump_to``. Shape of that text::

    HloModule jit_f, entry_computation_layout={...}
    %fused_computation (param_0: f32[64,64]) -> f32[64,64] { ...instructions... }
    ENTRY %main.2 (w.1: f32[64,64], ...) -> f32[64,64] {
      %w.1 = f32[64,64]{1,0} parameter(0), metadata={op_name="w"}
      ROOT %f = f32[64,64]{1,0} fusion(%w.1, ...), kind=kLoop, calls=%fused_computation
    }

Definitions (per program, then summed over the programs one call runs, :func:`summarize`):

- **kernel**: an instruction that does work at run time in a computation that runs on its own
  (the entry, while bodies, conditional branches): not a parameter, constant, tuple, bitcast...
- **fusion**: a kernel whose opcode is ``fusion`` (XLA merged several ops into one kernel).
- **unfused elementwise**: a kernel doing only elementwise work (an elementwise op, or a
  fusion of nothing else) that reads another kernel's output — the elementwise op was *not*
  fused into its producer and costs its own pass over memory. In a program after the first of
  a multi-program call (``split`` variants), its parameters are the previous program's output.
- **fingerprint**: a hash of the text with what does not change the program removed (metadata,
  source locations, module and instruction names, which carry per-process counters in TF), so
  unchanged code gives the same fingerprint in every run and process.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# XLA's FLOP count this far (as a fraction) from the workload's formula is flagged: XLA's cost
# analysis is known to miscount some ops, so it is a cross-check of the formula
FLOPS_MISMATCH = 0.10


class NoProgram(Exception):
    """A mode that has no XLA program to show; ``str(exc)`` says why (for the row's note)."""


@dataclasses.dataclass
class Program:
    """One XLA program a mode runs: ``hlo`` optimized HLO text, ``dot`` Graphviz source of it
    (None where the framework gives none), ``cost`` XLA's cost analysis (``flops``,
    ``transcendentals``, ``bytes_accessed``; None where the framework gives none, and
    ``cost_note`` says why), ``memory`` the bytes XLA's memory analysis says the compiled
    program needs on its device: arguments, outputs, temporaries and generated code (None
    where the framework gives none)."""

    name: str
    hlo: str
    dot: str | None = None
    cost: Mapping[str, float] | None = None
    cost_note: str = ""
    memory: int | None = None


# instructions that launch no work of their own
_FREE = frozenset({
    "parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all",
    "add-dependency", "opt-barrier", "partition-id", "replica-id", "domain", "call", "while",
    "conditional"})
# ops that only pass a value on, looked through when finding who produced an operand
_PASS = frozenset({"get-tuple-element", "bitcast", "copy", "reshape"})
ELEMENTWISE = frozenset({
    "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "compare", "complex", "convert",
    "cosine", "divide", "erf", "exponential", "exponential-minus-one", "floor", "imag",
    "is-finite", "log", "log-plus-one", "logistic", "maximum", "minimum", "multiply", "negate",
    "not", "or", "popcnt", "power", "real", "reduce-precision", "remainder",
    "round-nearest-afz", "round-nearest-even", "rsqrt", "select", "shift-left",
    "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "sqrt", "subtract", "tan",
    "tanh", "xor"})
# allowed beside elementwise ops in a fusion that is still "only elementwise work"
_SHAPE_ONLY = frozenset({"parameter", "constant", "broadcast", "bitcast", "reshape", "copy"})

_NAME = r"%?([\w.\-]+)"
_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*(\(.*\))?\s*(->.*)?\{\s*$")
_INSTR = re.compile(r"^\s*(ROOT\s+)?" + _NAME + r"\s*=\s*(.*)$")
_CALLS = re.compile(r"\b(calls|body|condition|to_apply|true_computation|false_computation)="
                    + _NAME)
_CALL_LISTS = re.compile(r"\b(branch_computations|called_computations)=\{([^}]*)\}")
_KIND = re.compile(r"\bkind=(k\w+)")
_FLOW_ATTRS = ("body", "condition", "true_computation", "false_computation",
               "branch_computations")


@dataclasses.dataclass
class Instruction:
    name: str
    opcode: str
    operands: list[str]
    calls: dict[str, list[str]]  # attribute -> computation names
    kind: str | None  # fusion kind (kLoop, kInput, kOutput, kCustom)


@dataclasses.dataclass
class Computation:
    name: str
    entry: bool
    instructions: list[Instruction]


def _balanced(text: str, start: int, open_: str, close: str) -> int:
    """Index just past the bracket closing the one at ``start`` (quotes respected)."""
    depth, i, quoted = 0, start, False
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch == open_:
            depth += 1
        elif ch == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def _split_top(text: str) -> list[str]:
    """``a, f(b, c), {d, e}`` -> ``["a", "f(b, c)", "{d, e}"]``."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _instruction(name: str, rest: str) -> Instruction | None:
    # rest: "<shape> <opcode>(<operands>), attr=..."; a tuple shape has parentheses of its own
    i = _balanced(rest, 0, "(", ")") if rest.startswith("(") else rest.find(" ")
    if i < 0:
        return None
    tail = rest[i:].lstrip()
    m = re.match(r"([\w\-]+)\(", tail)
    if not m:
        return None
    end = _balanced(tail, m.end() - 1, "(", ")")
    operands = [p.split()[-1].lstrip("%") for p in _split_top(tail[m.end():end - 1]) if p]
    attrs = tail[end:]
    calls: dict[str, list[str]] = collections.defaultdict(list)
    for key, callee in _CALLS.findall(attrs):
        calls[key].append(callee)
    for key, names in _CALL_LISTS.findall(attrs):
        calls[key].extend(n.strip().lstrip("%") for n in names.split(",") if n.strip())
    kind = _KIND.search(attrs)
    return Instruction(name, m.group(1), operands, dict(calls), kind.group(1) if kind else None)


def parse(text: str) -> dict[str, Computation]:
    """The computations of an HLO module, by name, in text order."""
    comps: dict[str, Computation] = {}
    current: Computation | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if current is None:
            m = _HEADER.match(stripped)
            if m and not stripped.startswith("HloModule"):
                current = Computation(m.group(2), bool(m.group(1)), [])
            continue
        if stripped == "}":
            comps[current.name] = current
            current = None
            continue
        m = _INSTR.match(line)
        if m:
            instr = _instruction(m.group(2), m.group(3).strip())
            if instr is not None:
                current.instructions.append(instr)
    return comps


def _kernel_level(comps: Mapping[str, Computation]) -> list[Computation]:
    """The entry and the computations it runs as control flow (not fused or scalar lambdas)."""
    entry = [c for c in comps.values() if c.entry] or list(comps.values())[-1:]
    seen, todo = [], list(entry)
    while todo:
        comp = todo.pop(0)
        if comp.name in (c.name for c in seen):
            continue
        seen.append(comp)
        for instr in comp.instructions:
            if instr.opcode in ("while", "conditional", "call"):
                for key, names in instr.calls.items():
                    if key in _FLOW_ATTRS or instr.opcode == "call":
                        todo.extend(comps[n] for n in names if n in comps)
    return seen


def _only_elementwise(instr: Instruction, comps: Mapping[str, Computation]) -> bool:
    if instr.opcode in ELEMENTWISE:
        return True
    if instr.opcode != "fusion":
        return False
    body = [comps[n] for n in instr.calls.get("calls", []) if n in comps]
    ops = {i.opcode for c in body for i in c.instructions}
    return bool(body) and bool(ops & ELEMENTWISE) and ops <= (ELEMENTWISE | _SHAPE_ONLY)


def _producer(by_name: Mapping[str, Instruction], name: str) -> Instruction | None:
    """The instruction whose value ``name`` is, looking through pass-through ops."""
    instr = by_name.get(name)
    while instr is not None and instr.opcode in _PASS and instr.operands:
        instr = by_name.get(instr.operands[0])
    return instr


@dataclasses.dataclass
class Facts:
    """What one program does (see the module docstring for the definitions)."""

    kernels: int
    fusions: int
    fusion_kinds: dict[str, int]
    unfused_elementwise: list[str]
    fingerprint: str


def facts(text: str, after_another: bool = False) -> Facts:
    """Facts of one program. ``after_another``: the program runs on the output of a previous
    program of the same call (a later stage), so reading a parameter is reading a kernel's
    output."""
    comps = parse(text)
    kernels = fusions = 0
    kinds: collections.Counter = collections.Counter()
    unfused: list[str] = []
    for comp in _kernel_level(comps):
        by_name = {i.name: i for i in comp.instructions}
        for instr in comp.instructions:
            if instr.opcode in _FREE:
                continue
            kernels += 1
            if instr.opcode == "fusion":
                fusions += 1
                kinds[instr.kind or "?"] += 1
            if not _only_elementwise(instr, comps):
                continue
            sources = [_producer(by_name, o) for o in instr.operands]
            if any(s is not None and (s.opcode not in _FREE or (
                    after_another and comp.entry and s.opcode == "parameter"))
                   for s in sources):
                unfused.append(instr.name)
    return Facts(kernels, fusions, dict(sorted(kinds.items())), unfused, fingerprint(text))


# --------------------------------------------------------------------------- fingerprint

_TABLE_TITLE = re.compile(r"^[A-Z]\w*$")  # FileNames, FunctionNames, StackFrames, ...
_PARAM = re.compile(r"%?([\w.\-]+):\s")
_TOKEN = re.compile(r"%?[A-Za-z_][\w.\-]*")


def _drop_attr(line: str, attr: str) -> str:
    key = f", {attr}={{"
    while key in line:
        start = line.index(key)
        end = _balanced(line, start + len(key) - 1, "{", "}")
        line = line[:start] + line[end:]
    return line


def canonical(text: str) -> str:
    """The text with what does not change the program removed: metadata and source tables,
    the module name, and every defined name replaced by its order of first definition."""
    lines, skipping = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if skipping:
            skipping = bool(stripped)
            continue
        if _TABLE_TITLE.match(stripped):
            skipping = True
            continue
        if not stripped:
            continue
        if stripped.startswith("HloModule"):
            line = re.sub(r"^HloModule\s+[^,\s]+", "HloModule _", stripped)
        lines.append(_drop_attr(line, "metadata"))
    names: dict[str, str] = {}
    for line in lines:
        m = _HEADER.match(line.strip())
        if m and not line.startswith("HloModule"):
            names.setdefault(m.group(2), f"c{len(names)}")
            for param in _PARAM.findall(m.group(3) or ""):
                names.setdefault(param, f"v{len(names)}")
            continue
        m = _INSTR.match(line)
        if m:
            names.setdefault(m.group(2), f"v{len(names)}")

    def rename(m: re.Match) -> str:
        token = m.group(0)
        bare = token.lstrip("%")
        return ("%" if token.startswith("%") else "") + names[bare] if bare in names else token

    return "\n".join(_TOKEN.sub(rename, line) for line in lines)


def fingerprint(text: str) -> str:
    """16 hex digits identifying the program (see :func:`canonical`)."""
    return hashlib.sha256(canonical(text).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- row fields

def summarize(programs: Sequence[Program]) -> dict[str, Any]:
    """Row fields of the programs one call runs, in call order (bench/results/fields.py):
    ``hlo_programs``, ``hlo_kernels``, ``hlo_fusions``, ``hlo_fusion_kinds``,
    ``hlo_elementwise_fused``, ``hlo_unfused_elementwise``, ``hlo_fingerprint``."""
    per = [facts(p.hlo, after_another=i > 0) for i, p in enumerate(programs)]
    kinds: collections.Counter = collections.Counter()
    for f in per:
        kinds.update(f.fusion_kinds)
    unfused = [name for f in per for name in f.unfused_elementwise]
    combined = per[0].fingerprint if len(per) == 1 else hashlib.sha256(
        "|".join(f.fingerprint for f in per).encode()).hexdigest()[:16]
    return {"hlo_programs": len(per), "hlo_kernels": sum(f.kernels for f in per),
            "hlo_fusions": sum(f.fusions for f in per), "hlo_fusion_kinds": dict(kinds),
            "hlo_elementwise_fused": not unfused, "hlo_unfused_elementwise": unfused[:20],
            "hlo_fingerprint": combined}


def compiled_memory(programs: Sequence[Program]) -> dict[str, Any]:
    """``compiled_memory_bytes``: the most any one of a call's programs needs (they run one
    after another), where XLA's memory analysis covers them all; ``{}`` otherwise."""
    sizes = [p.memory for p in programs]
    if not sizes or any(m is None for m in sizes):
        return {}
    return {"compiled_memory_bytes": int(max(sizes))}


def sum_costs(costs: Iterable[Mapping[str, float] | None]) -> dict[str, float] | None:
    """XLA's cost analyses of the programs of one call added up; None if any is missing."""
    total: dict[str, float] = {"flops": 0.0, "transcendentals": 0.0, "bytes_accessed": 0.0}
    for cost in costs:
        if cost is None:
            return None
        for key in total:
            total[key] += float(cost.get(key) or 0.0)
    return total


# --------------------------------------------------------------------------- graph

def to_dot(text: str, title: str = "") -> str:
    """Graphviz source of the kernels of a program and the values they pass (for a framework
    that gives no graph of its own): one box per kernel, fusions filled."""
    comps = parse(text)
    out = ["digraph hlo {", "  rankdir=TB; node [shape=box, fontname=monospace, fontsize=10];",
           f'  label="{title}"; labelloc=t;']
    for ci, comp in enumerate(_kernel_level(comps)):
        by_name = {i.name: i for i in comp.instructions}
        out.append(f'  subgraph cluster_{ci} {{ label="{comp.name}";')
        shown = [i for i in comp.instructions if i.opcode not in _FREE - {"parameter"}]
        for instr in shown:
            label = instr.opcode + (f" {instr.kind}" if instr.kind else "")
            style = ', style=filled, fillcolor="#fde0c5"' if instr.opcode == "fusion" else ""
            out.append(f'    "{ci}:{instr.name}" [label="{instr.name}\\n{label}"{style}];')
        names = {i.name for i in shown}
        for instr in shown:
            for op in instr.operands:
                src = by_name.get(op)
                while src is not None and src.name not in names and src.operands:
                    src = by_name.get(src.operands[0])
                if src is not None and src.name in names:
                    out.append(f'    "{ci}:{src.name}" -> "{ci}:{instr.name}";')
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"
