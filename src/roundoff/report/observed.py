"""`roundoff observe`'s terminal report, rendered from its JSON document (`report.observed_document`)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roundoff.analyze.verdict import EXCESS_LIMIT
from roundoff.report.cells import fmt_num, none_finite, number, verdict_text, where_cell
from roundoff.report.notes import break_notes
from roundoff.report.observed_outputs import (
    eager_wrong_notes,
    failing_too_notes,
    named_outputs,
    no_worse_than_eager,
    outputs_table,
    unflagged_notes,
)


def _nonfinite_beyond(m: dict[str, Any]) -> int:
    """Elements NaN/inf in a value where its reference (metrics `m`'s) is finite."""
    return max(int(m.get("nan", 0)) + int(m.get("inf", 0)) - int(m.get("ref_nan", 0)) - int(m.get("ref_inf", 0)), 0)


def _made_nonfinite(k: dict[str, Any]) -> int:
    """Elements NaN/inf in the kernel's buffer where fp64 (from its operands, or of the whole program,
    whichever has fewer) is finite."""
    return max(_nonfinite_beyond(k["vs_oracle"]), _nonfinite_beyond(k["vs_fp64_total"]))


def _eager_nonfinite(doc: dict[str, Any]) -> str:
    """Against eager: the buffers where eager's own kernel, from the same operands, is NaN/inf where fp64
    is finite (such a reference judges little), named; else ""."""
    if doc["against"] != "eager":
        return ""

    def count(m: dict[str, Any]) -> int:
        return int(m.get("ref_nan", 0)) + int(m.get("ref_inf", 0))

    bad = [k for k in doc["kernels"] if count(k["vs_eager"]) > count(k["vs_oracle"])]
    if not bad:
        return ""
    first = bad[0]
    return (f"; but eager's own kernel is NaN/inf where fp64 is finite in {len(bad)} buffer(s) (first: {first['buffer']}, "
            f"node {first['node']} {first['op']} at {first['source'] or 'an unknown line'}): --against oracle judges "
            "those by fp64")


def _in_module(k: dict[str, Any]) -> str:
    """`` in features.3.conv.4``: the module whose call made what buffer `k` computes, where known."""
    return f" in {k['module']}" if k.get("module") else ""


def _made_at(k: dict[str, Any]) -> str:
    """Where inside the kernel the NaN/inf was made, when that is another node than the buffer's."""
    made = k.get("made_at")
    if not made:
        return ""
    return f", made first inside the kernel by {made['op']} ({made['node']}) at {made['source'] or 'an unknown line'}"


def _later_nonfinite(doc: dict[str, Any], first: dict[str, Any]) -> str:
    """Where the first diverging kernel makes no NaN/inf but later ones do: how many, and the first of
    them (a NaN matters more than an accuracy loss before it); else ""."""
    if first["verdict"] == "nonfinite":
        return ""
    bad = [k for k in doc["kernels"] if k["verdict"] == "nonfinite"]
    if not bad:
        return ""
    k = bad[0]
    return (f". Later, {len(bad)} kernel buffer(s) are NaN/inf where fp64 is finite, first {k['kernel']} ({k['buffer']}: "
            f"{_made_nonfinite(k)} element(s)) at {k['source'] or 'an unknown line'}, node {k['node']} {k['op']}{_made_at(k)}")


def _out_of_range(k: dict[str, Any], rule: str = "same", against: str = "oracle") -> str:
    """Why a buffer at an excess within the limit diverges: its format cannot hold its values (under the
    default rule; under another, it is not what that rule asks, `_by_rule`)."""
    if k["verdict"] != "diverges" or k["excess"] == "inf" or float(k["excess"]) > EXCESS_LIMIT:
        return ""
    if rule != "same":
        return _by_rule(rule, against)
    fmt = k.get('judged_in') or k['dtype']  # (trial 80: subnormal values were called "outside float16's range")
    where = (f"beyond {fmt}'s largest finite value" if (number(k["vs_oracle"].get("inf")) or 0) > 0
             else f"below {fmt}'s normal range")
    return (f", but its values lie {where} (fp64 correctly rounded to it is "
            f"itself {fmt_num(k['format_loss'], 3)} off, normwise) and the buffer loses them too: scale them (in a "
            "backward pass, the loss: torch.amp.GradScaler) or compute in bf16/fp32"
            + ("; harmless here: fp64 run again with its values as that format holds them moves no output beyond the limit"
               if k.get("moves_no_output") else ""))


def _by_rule(rule: str, against: str = "oracle") -> str:
    """Why a buffer within the default limit diverges under `rule` (trial 60: "outside float16's range"
    was said of an fp16 mean of values near 45 that the `bitwise` rule held to fp64 correctly rounded); against
    eager, to eager's kernel's value (trial 75: the sentence spoke of fp64 under --against eager)."""
    if against == "eager":
        return (f": the `{rule}` rule holds it to eager's kernel's value from the same operands, which it is not "
                "(its excess, against fp64, is within the limit)")
    return f": the `{rule}` rule holds it to fp64 correctly rounded to its format, which it is not"


def _but_range(doc: dict[str, Any]) -> str:
    """Where the only diverging buffers lose values outside their format's range and move no output."""
    return " (but for values outside a format's range that move no output)" if any(
        k["verdict"] != "ok" for k in doc["kernels"]) else ""


def _harmless(doc: dict[str, Any]) -> list[Text]:
    """A line counting the buffers that lose values outside their format's range without moving any
    output, where the headline names another (they rank after the buffers that matter)."""
    first = doc["first_divergent"]
    if doc["verdict"] == "ok":  # the headline says no output fails for any of them
        return []
    harmless = [k for k in doc["kernels"] if k["verdict"] != "ok" and k.get("moves_no_output")
                and (first is None or k["node"] != first["node"])]
    if not harmless:
        return []
    k = harmless[0]
    return [Text(f"{len(harmless)} buffer(s) lose values outside their format's range but move no output beyond the "
                 f"limit (fp64 run again with their values as the format holds them), first {k['buffer']} (node "
                 f"{k['node']} {k['op']} at {k['source'] or 'an unknown line'}): listed after the buffers that matter.",
                 style="dim")]


def _emulation(k: dict[str, Any]) -> str:
    return "identical" if k["emulated_identical"] else f"{k['emulated_mismatch']} differ ({k['emulation_cause']})"


_KERNEL_INDEX = re.compile(r"^(cpp_fused|triton_\w{3,4}_fused)_\w*?(_\d+)$")


def short_kernel(name: str) -> str:
    """A generated kernel's name as the table shows it: its kind and index (``cpp_fused_…_5``), the
    fused ops its full name lists being in the node column and --json; other names unchanged."""
    m = _KERNEL_INDEX.match(name)
    return f"{m.group(1)}_…{m.group(2)}" if m and len(name) > 24 else name


def _verdict_cell(k: dict) -> Text:
    """A buffer's verdict as the table shows it: "harmless" for one that diverges but moves no output (trial 95:
    "diverges" beside exit 0 read as a failure; --json keeps "diverges" and `moves_no_output`)."""
    return Text("harmless", style="yellow") if k["verdict"] == "diverges" and k.get("moves_no_output") else (
        verdict_text(k["verdict"]))


def _remark(k: dict, rule: str) -> str:
    """Beside a buffer's verdict: " (out of range)" where it diverges only because its format cannot hold its
    values (its excess 1, trial 78: "diverges" beside "1" read as a contradiction), "moves no output" where
    that loss moves no output, "NaN/inf from its operands" where it passes from its operands but holds NaN/inf
    where fp64 of the whole program is finite (trial 91: a VAE's inf loss buffer read "ok")."""
    said = [w for w, holds in (("out of range", rule == "same" and bool(_out_of_range(k))),
                               ("moves no output", bool(k.get("moves_no_output"))),
                               ("NaN/inf from its operands", k["verdict"] == "ok" and _nonfinite_beyond(k["vs_fp64_total"]) > 0))
            if holds]
    return f" ({'; '.join(said)})" if said else ""


def _excess_cell(k: dict) -> str:
    """A buffer's excess as the table shows it: its figures cover finite elements only, so none for a buffer
    with no finite element (trial 70: "0" beside an all-NaN buffer), and said so beside a NaN/inf one."""
    if none_finite(k["vs_oracle"]):
        return "-"
    return fmt_num(k["excess"], 3) + (" (finite elements)" if k["verdict"] == "nonfinite" else "")


#: A node id inside a cause (`(n76)`, `(n140.3)`, `(n108@k36)`): causes that differ only in them share a number.
_NODE_IN_CAUSE = re.compile(r" \((n[0-9][0-9.]*(?:@k[0-9]+)?)\)")


def _cause_notes(rows: list[dict[str, Any]]) -> tuple[list[str], dict[str, int]]:
    """The distinct causes of the rows the emulation did not predict, numbered in order of first row; causes
    that differ only in the node they name (a loop's steps: trial 74's LSTM, 14 numbers for one sigmoid line)
    share a number, their nodes listed once."""
    groups: dict[str, int] = {}  # the cause without its node ids -> its number
    numbers: dict[str, int] = {}  # each cause as a row has it -> its number
    nodes: dict[str, list[str]] = {}
    for k in rows:
        if not k["emulated_identical"]:
            cause = k["emulation_cause"]
            key = _NODE_IN_CAUSE.sub("", cause)
            numbers[cause] = groups.setdefault(key, len(groups) + 1)
            seen = nodes.setdefault(key, [])
            seen.extend(i for i in _NODE_IN_CAUSE.findall(cause) if i not in seen)
    notes = []
    for key, n in groups.items():
        ids = nodes[key]
        at = f" (at {', '.join(ids[:6])}{f' and {len(ids) - 6} more' if len(ids) > 6 else ''})" if ids else ""
        notes.append(f"[{n}] {key}{_CAUSE_WORDS.get(key, '')}{at}")
    return notes, numbers


#: What a bare cause means where its words alone puzzle (trial 83: an `add` said to differ by a
#: "transcendental implementation": the exp it is computed from, in the same kernel).
_CAUSE_WORDS = {
    "transcendental implementation": (
        " (an exp, log, sin, erf, ... the kernel computes, in the value or in what the value is computed from "
        "inside the kernel: Inductor's own implementation, not eager's)"),
    "summation order or transcendental implementation": (
        " (a sum the kernel orders its own way, or an exp, log, ... it computes with its own implementation)"),
    # (trial 105: "[3] unmodelled decision" stood bare beside explained causes)
    "unmodelled decision": (
        " (the kernel computes the value otherwise than the plan says, by a rewrite or a rounding of Inductor's "
        "that roundoff does not model; its generated code shows how)"),
}


def observe_report(doc: dict[str, Any], top: int = 20) -> RenderableType:
    """A headline naming the first diverging kernel (as the table does, `short_kernel`: its fused ops follow; trial
    92: a 300-character name), the user's line, whether the emulated policy predicted it, then the kernels: diverging ones first, then those the emulation
    did not predict bit for bit, at most `top` rows (a line counts the rest)."""
    first = doc["first_divergent"]
    if first is None and doc.get("failing_outputs"):
        head = _outputs_only(doc)
    elif first is None:
        head = Text(f"{doc['program']}: every judged kernel buffer of {doc['backend']} on {doc['device']} is within "
                    f"tolerance against {doc['against']}{_coverage(doc)}{_eager_nonfinite(doc)}", style="bold green")
    elif doc["verdict"] == "ok":  # only buffers whose values their format cannot hold, and no output fails
        lost = [k for k in doc["kernels"] if k["verdict"] != "ok"]
        rule = doc.get("rule", "same")
        why = ("hold values outside their format's range" if rule == "same"
               else f"are not what the `{rule}` rule asks")
        head = Text(
            f"{doc['program']}: no kernel of {doc['backend']} on {doc['device']} is over the limit against "
            f"{doc['against']} and no output fails{_coverage(doc)}; but {len(lost)} buffer(s) {why}, "
            f"first {short_kernel(first['kernel'])} ({first['buffer']}) at {first['source'] or 'an unknown line'}, "
            f"node {first['node']} {first['op']}" + _out_of_range(first, rule, doc["against"]).replace(", but its", ": its", 1)
            + f"; no output fails for them (check lists such a node the same way); emulated {doc['policy']}: "
            f"{_emulation(first)}", style="bold yellow")
    else:
        head = Text(
            f"{doc['program']}: first diverging kernel against {doc['against']}: {short_kernel(first['kernel'])} "
            f"({first['buffer']}, {first['kind']}: {_chain(first['fused_ops']) or first['op']}) "
            f"at {first['source'] or 'an unknown line'}{_in_module(first)}, node {first['node']} {first['op']}; "
            + (f"NaN/inf where fp64 is finite ({_made_nonfinite(first)} element(s)){_made_at(first)}"
               if first["verdict"] == "nonfinite" else f"excess {fmt_num(first['excess'], 3)}x fp64 correctly rounded"
               + _out_of_range(first, doc.get("rule", "same"), doc["against"]))
            + f"; emulated {doc['policy']}: {_emulation(first)}{_later_nonfinite(doc, first)}", style="bold red")
    title = (f"kernel buffers: {doc['buffers']} from {doc['launches']} kernel launches "
             f"(compiled as {doc.get('compiled_as', 'one graph')})")
    table = Table(title=title, title_justify="left")
    # the normwise relative error, what the excess judges (a per-element maximum is large wherever fp64 is
    # near 0 and judges nothing; --json has it)
    columns = ("kernel", "buffer", "kind", "node", "source", "verdict", "excess", "rel error vs fp64")
    for col in (*columns, f"vs {doc['policy']}"):  # names, buffers and lines whole; the rest may wrap
        table.add_column(col, no_wrap=col in ("kernel", "buffer", "source"))
    # the kernel the headline names first (trial 49: it was not always the first row), then diverging
    # kernels (those whose loss moves no output after the others), then the ones the emulation did not
    # predict bit for bit, then the rest
    named = doc["first_divergent"] or doc.get("amplified_at")
    ranked = sorted(doc["kernels"], key=lambda k: (
        named is None or (k["kernel"], k["buffer"], k["node"]) != (named["kernel"], named["buffer"], named["node"]),
        k["verdict"] == "ok",
        bool(k.get("moves_no_output")), bool(k["emulated_identical"])))
    rows = ranked[: max(top, 0)]
    notes, numbers = _cause_notes(rows)
    for k in rows:
        emulated = "identical" if k["emulated_identical"] else (
            f"{k['emulated_mismatch']} differ [{numbers[k['emulation_cause']]}]")
        table.add_row(short_kernel(k["kernel"]), k["buffer"], k["kind"], f"{k['node']} {k['op']}",
                      where_cell(k["source"], k.get("module")),
                      Text.assemble(_verdict_cell(k), _remark(k, doc.get("rule", "same"))),
                      _excess_cell(k), "-" if none_finite(k["vs_oracle"]) else fmt_num(k["vs_oracle"].get("norm_rel"), 3),
                      emulated)
    agree = ", ".join(f"{kind} {v['identical']}/{v['buffers']}" for kind, v in doc["agreement"].items())
    s = doc["seconds"]
    foot = Text(f"bit-identical to emulated {doc['policy']}: {agree}; "
                f"compiled step {fmt_num(s['compiled_step'], 3)} s, "
                f"observed {fmt_num(s['observed_step'], 3)} s (each the fastest of a few "
                "interleaved runs: noisy on a loaded machine; bench/observe.py measures them), "
                f"comparison {fmt_num(s['comparison'], 3)} s")
    more = len(ranked) - len(rows)
    rest = Text(f"... and {more} more buffer(s), all within tolerance and bit-identical to the emulation "
                f"(--top {len(ranked)} or --json shows them)" if more and all(
                    k["verdict"] == "ok" and k["emulated_identical"] for k in ranked[len(rows):])
                else f"... and {more} more buffer(s) (--top {len(ranked)} or --json shows them)", style="dim")
    causes = [Text(f"where the emulation differs: {'; '.join(notes)}", style="dim")] if notes else []
    shown = [table] if rows else []  # (--top 0: the headline and the counts only)
    breaks = [Text(f"note: {s}", style="yellow") for s in break_notes(doc)]
    return Group(*_torch_compile(doc), head, *breaks, *_fallbacks(doc), *eager_wrong_notes(doc), *failing_too_notes(doc), *_harmless(doc), *unflagged_notes(doc), Text(_legend(doc), style="dim"), *shown, *causes, *([rest] if more else []),
                 *_not_judged(doc), *(outputs_table(doc, min(top, 10)) if rows else []), foot)


def _torch_compile(doc: dict[str, Any]) -> list[Text]:
    """What torch.compile's own step of the function computes otherwise than the step observe compiled
    (`ObserveResult.torch_compile`): a headline where it gets outputs wrong, else a note."""
    tc = doc.get("torch_compile") or {}
    if tc.get("not_compared"):
        return [Text(f"note: torch.compile's own step of the function was not compared: {tc['not_compared']}",
                     style="dim")]
    departed = tc.get("departures") or []
    wrong = [o for o in departed if o["fails"]]
    if wrong:
        # outputs 0 in every element where observe's step's are not come first and are counted: no rounding
        # zeroes a whole output (trial 110: 14 gradients of a bf16 UNet step, the headline named another)
        blank = [o for o in wrong if o["numel"] and o["zeros"] == o["numel"]]
        o = (blank or wrong)[0]
        zeros = f"; {o['zeros']} of {o['numel']} elements 0" if o["zeros"] else ""
        lost = f"; {o['nonfinite']} NaN/inf where fp64 is finite" if o["nonfinite"] else ""
        more = f" and {len(wrong) - 1} more output(s)" if len(wrong) > 1 else ""
        if len(blank) > 1:
            names = ", ".join(f"`{b['name']}`" for b in blank[:4]) + (", ..." if len(blank) > 4 else "")
            zeros += (f" ({len(blank)} outputs are 0 in every element where observe's step's are not: {names}; no "
                      "rounding makes a whole output 0)")
        elif blank:
            zeros += " (every element: no rounding makes a whole output 0)"
        return [Text(
            f"{doc['program']}: torch.compile's own step of the function computes `{o['name']}`{more} wrong: RMSE "
            f"{fmt_num(o['rmse'], 3)} against fp64{zeros}{lost}, where the step observe compiled from the captured "
            f"program has {fmt_num(o['observed_rmse'], 3)} (limit {EXCESS_LIMIT:g}x that and the reference's "
            f"{fmt_num(o['reference_rmse'], 3)}). The buffers below are of observe's step, not of the kernels that made "
            + ("these values: torch.compile differentiates the forward after Inductor's decompositions, observe the "
               "captured program's backward, and the two graphs compile to other kernels. "
               if any(out["name"].startswith("grad_") for out in doc.get("outputs", [])) else  # (a backward's)
               "these values: torch.compile traces the function with Dynamo, observe compiles the captured program, "
               "and the two graphs compile to other kernels. ")
            + "A defect of torch.compile's "
            "graph: reproduce it with torch.compile alone against eager, and narrow it down with "
            "torch._inductor.config (--inductor-config max_fusion_size=1 for fusion) or backend='aot_eager'.",
            style="bold red")]
    if departed:
        return [Text(f"note: torch.compile's own step of the function differs from observe's in the bits of "
                     f"{len(departed)} output(s) (first `{departed[0]['name']}`: {departed[0]['differing']} of "
                     f"{departed[0]['numel']} elements), each within {EXCESS_LIMIT:g}x observe's error against fp64: "
                     "it compiles another graph of the same program (Inductor's decompositions before the "
                     "backward), with other kernels; --json's torch_compile has each.", style="dim")]
    return []


def _fallbacks(doc: dict[str, Any]) -> list[Text]:
    """A line per module torch.compile runs eagerly, which observe compiles (`ObserveResult.dynamo_fallbacks`)."""
    return [Text(f"note: torch.compile runs {f['module']} at {f['source'] or 'an unknown line'} eagerly (Dynamo "
                 "graph-breaks on nn.RNN, nn.GRU and nn.LSTM unless torch._dynamo.config.allow_rnn = True); observe "
                 "compiles it with the rest of the captured program, as with allow_rnn: the real compiled program "
                 "computes it as eager does.", style="yellow") for f in doc.get("dynamo_fallbacks") or []]


def _outputs_only(doc: dict[str, Any]) -> Text:
    """The headline where outputs fail against fp64 of the whole program but no kernel diverges."""
    named, more = named_outputs(doc["failing_outputs"])
    if no_worse_than_eager(doc):
        return Text(
            f"{doc['program']}: no kernel of {doc['backend']} fails against eager's kernel from its own operands; "
            f"the compiled program's outputs {named}{more} fail against eager's, but real eager's outputs are NaN/inf "
            "at the same elements: eager fails there as the compiled program does, and the compiled program is no "
            "worse. `roundoff observe --against oracle` shows the first kernel that makes it; `roundoff check -p "
            "eager --against oracle` names the op in the program.", style="bold red")
    if doc["against"] == "eager":
        rule = doc.get("rule", "same")
        return Text(
            f"{doc['program']}: no kernel of {doc['backend']} fails against eager's kernel from its own operands, "
            f"but the compiled program's outputs {named}{more} fail the `{rule}` rule against eager's outputs "
            "(RMSE against fp64 of the whole program; its reference: eager's): an error carried between kernels "
            f"and grown later. `roundoff observe --against oracle` shows where it first shows; `roundoff check "
            f"--against eager --policy {doc['policy']}` names the node that makes it.", style="bold red")
    amp = doc.get("amplified_at")
    flips = doc.get("selection_flips") or []
    if flips:  # a discrete choice: what follows it is computed from another choice, not amplified
        named_flips = "; ".join(f"`{f['op']}` ({f['node']} at {f['source'] or 'an unknown line'}) at {f['differing']} "
                                f"of {f['of']} positions" for f in flips[:3])
        return Text(
            f"{doc['program']}: no kernel of {doc['backend']} diverges from fp64 of its own operands{_but_range(doc)}, but the compiled "
            f"program's outputs {named}{more} diverge from fp64 of the whole program: from the operands the compiled "
            f"program gave {'it' if len(flips) == 1 else 'them'}, {named_flips} "
            f"choose{'s' if len(flips) == 1 else ''} otherwise than fp64 (scores or operands near a tie, rounded, fall "
            "the other way), and fp64 given that choice moves the outputs beyond the limit: what follows is computed "
            "from another choice. Computing the scores it ranks in fp32 makes such flips rarer; `roundoff check "
            f"--against oracle --policy {doc['policy']}` names it too.", style="bold red")
    shows = "" if amp is None else (
        f" It first shows in {amp['kernel']} ({amp['buffer']}, {amp['kind']}: "
        f"{_chain(amp['fused_ops']) or amp['op']}) at {amp['source'] or 'an unknown line'}, node {amp['node']} "
        f"{amp['op']}: {fmt_num(amp['total_excess'], 3)}x fp64 correctly rounded away from fp64 of the whole "
        f"program, though within tolerance of fp64 of its own operands: an operand it reads carries the error"
        f"{_carriers(doc, amp)}{_amplifiers(amp)}.")
    return Text(
        f"{doc['program']}: no kernel of {doc['backend']} diverges from fp64 of its own operands{_but_range(doc)}, but the compiled "
        f"program's outputs {named}{more} diverge from fp64 of the whole program (over {EXCESS_LIMIT:g}x their "
        "reference, check's output rule): an error a value carries that later kernels amplify, such as a "
        f"correctly rounded 16-bit mean subtracted from values close to it.{shows} `roundoff check --against "
        f"oracle --policy {doc['policy']} --by-values` (with --backward for a training step) names the roundings "
        "that move those outputs; without --by-values check may pass them, where no one node of its emulation is "
        "over the limit (its path rule).", style="bold red")


def _chain(ops: list[str], most: int = 8) -> str:
    """A kernel's fused ops in order, the first `most` of a longer chain and a count of the rest (--json lists all)."""
    if len(ops) <= most:
        return " -> ".join(ops)
    return " -> ".join(ops[:most]) + f" -> ... ({len(ops) - most} more ops: --json's fused_ops)"


def _carriers(doc: dict[str, Any], k: dict[str, Any]) -> str:
    """The 16-bit values the kernel reads from other buffers (candidates for a carried error), named."""
    by_node = {o["node"]: o for o in doc["kernels"]}
    named = [f"{o['op']} ({i}) at {o['source'] or 'an unknown line'}, stored in {o['dtype']}"
             for i in k.get("reads_narrow", ()) if (o := by_node.get(i)) is not None]
    return f"; of those stored in 16 bits it reads {'; '.join(named[:3])}" if named else ""


def _amplifiers(k: dict[str, Any]) -> str:
    """Where in kernel `k` the carried error grows: the nodes it computes that amplify what they read."""
    found = [a for a in k.get("amplifying") or () if a["node"] != k["node"]]
    named = "; ".join(f"`{a['op']}` ({a['node']} at {a['source'] or 'an unknown line'})" for a in found[:3])
    if not found:
        return "; the buffer's own op amplifies it beyond its format"
    return (f"; inside the kernel, {named} amplif{'ies' if len(found) == 1 else 'y'} it beyond {'its' if len(found) == 1 else 'their'} "
            "format (computed there and not stored: more than "
            f"{EXCESS_LIMIT:g}x its rounding away from fp64 of the whole program, and {EXCESS_LIMIT:g}x the error of what it reads)")


def _coverage(doc: dict[str, Any]) -> str:
    """`` (N of M buffers judged ...)`` where some buffers written were not judged, else ""."""
    skipped = len(doc.get("unmapped") or []) + len(doc.get("untapped") or [])
    if not skipped:
        return ""
    return (f" ({doc['buffers']} of {doc['buffers'] + skipped} buffers written judged; the rest, named below, "
            "only through the outputs)")


def _not_judged(doc: dict[str, Any]) -> list[Text]:
    """A line naming the buffers observe read but did not judge, and why, if any."""
    unmapped, untapped = doc.get("unmapped") or [], doc.get("untapped") or []
    parts = []
    if unmapped:
        ops = Counter(p.split(" ", 1)[-1] for u in doc.get("unmapped_detail") or () for p in u["part_of"][-1:])
        of = ", ".join(f"{op} {n}" for op, n in ops.most_common(4)) + (", ..." if len(ops) > 4 else "")
        parts.append(f"{len(unmapped)} hold no Program node's whole value after any one kernel (a partial result: a "
                     "softmax's max or sum, a layer norm's mean or variance; a concatenation whose slices several "
                     "kernels write)" + (f"; parts of, by the last op they were computed for: {of}" if of else ""))
    if untapped:
        parts.append(f"{len(untapped)} ({', '.join(untapped[:4])}{', ...' if len(untapped) > 4 else ''}) were finished "
                     "by an op observe does not tap, after a kernel wrote them (an in-place fallback such as "
                     "scatter_add_), or hold what their kernel wrote into a fill's memory (a gradient scattered "
                     "into a new_zeros) or wrote over them in place (a slice copied over), so the value a tap "
                     "sees is not their node's")
    return [Text(f"not judged: {'; '.join(parts)} (--json lists them)", style="dim")] if parts else []


def _legend(doc: dict[str, Any]) -> str:
    """What the columns mean and how a kernel is judged against `doc["against"]`."""
    by = doc.get("rule", "same")
    if by != "same":
        rule = (f"it is judged by the `{by}` rule against "
                + ("eager's kernel" if doc["against"] == "eager" else "fp64 correctly rounded to its format"))
    elif doc["against"] in ("oracle", "fp64"):
        rule = (f"it diverges when its excess is above {EXCESS_LIMIT:g}, or when its format cannot hold its values "
                "(fp64 correctly rounded to it is itself over that many roundings off: underflow or overflow) and "
                "it loses them too")
    else:
        rule = ("it is judged against eager's kernel by PyTorch's `same` rule (RMSE against fp64 within a "
                "small multiple of eager's, plus an absolute 1e-5), so where values are small a kernel far less "
                "accurate than eager can pass: use --against oracle to judge it by its excess")
    return (f"each buffer is recomputed from the operands the compiled program gave its kernel; excess: its "
            f"error against fp64 over fp64 correctly rounded to its format (or to a narrower one of a value the "
            f"same kernel stored and computes it from, which it may read unrounded: --json's judged_in); {rule}; "
            f"vs {doc['policy']}: the emulated policy's value from the same operands, bit for bit.")
