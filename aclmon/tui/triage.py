"""The TRIAGE and LAUNCHED AT parts of an exception's detail (docs/triage.md).

The triage comes a few seconds after its exception (the agent waits for the
device's error lines and the exception dump), so the detail shows what it has:
the launch site at once, "waiting" until the triage is in, then the verdict
first, the error bits in words, the offending addresses, the NaN/Inf inputs, the
re-run script, and the launches around the failing one.

Everything is key/value lines (the key dim, the value folding under itself), so
nothing is cut at 80 columns; the launches are a table where it fits.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text

from aclmon import events as ev
from aclmon.dump.triage import CAUSE_LABELS
from aclmon.tui import fmt
from aclmon.tui.style import Fitted, key_values

#: after this long (event time) with no triage, none is coming: the agent sends it
#: within 7 s (5 s for the device lines, 2 s more for the dump; docs/triage.md)
TRIAGE_WAIT_NS = 10_000_000_000
#: error-bit lines, stack frames shown at most (the JSON has them all)
MAX_BIT_LINES = 8
MAX_STACK = 8


class Styles(NamedTuple):
    dim: Style
    bad: Style
    bold: Style


def triage_part(
    exception: ev.AclException, triage: dict[str, Any] | None, newest_ns: int, styles: Styles
) -> RenderableType:
    """The TRIAGE part: the verdict first, then the evidence; or what it waits for."""
    title = Text("TRIAGE", style=styles.bold)
    if triage is None:
        if newest_ns - exception.ts_ns < TRIAGE_WAIT_NS:
            title.append(
                "  waiting: the agent reads the device's error lines and the exception dump first",
                style=styles.dim,
            )
        else:
            title.append(
                "  none received (an agent without triage, or a recording made before it)",
                style=styles.dim,
            )
        return title
    cause = str(triage.get("cause") or "")
    title.append(f"  {CAUSE_LABELS.get(cause, cause.replace('_', ' '))}", style=styles.bad)
    rows: list[tuple[str, RenderableType]] = [
        ("verdict", Text(str(triage.get("verdict") or "–"), style=styles.bold))
    ]
    addresses = _addresses_text(triage.get("address_findings") or [], styles)
    if addresses is not None:
        rows.append(("addresses", addresses))
    for found in triage.get("nan_inf_inputs") or []:
        rows.append(("NaN/Inf", Text(_nan_inf_text(found), style=styles.bad)))
    bits = [str(line) for line in triage.get("error_bits") or []]
    if bits:
        shown = bits[:MAX_BIT_LINES]
        more = (
            f"\n… {len(bits) - len(shown)} more (--once --json)" if len(bits) > len(shown) else ""
        )
        rows.append(("bits", Text("\n".join(shown) + more)))
    error_str = str(triage.get("error_str") or "")
    if error_str:
        rows.append(("runtime", Text(error_str)))
    kernel = _kernel_text(triage)
    if kernel:
        rows.append(("kernel", Text(kernel)))
    repro = str(triage.get("repro") or "")
    if repro:
        value = Text(f"python {repro} --device N")
        value.append(
            "\nthe operator alone on these inputs: exit 1 if it fails again, 0 if the fault"
            " needs the job's context",
            style=styles.dim,
        )
        rows.append(("re-run", value))
    for note in triage.get("notes") or []:
        rows.append(("note", Text(str(note), style=styles.dim)))
    sources = triage.get("sources") or []
    if sources:
        rows.append(("from", Text(" · ".join(map(str, sources)), style=styles.dim)))
    return Group(title, key_values(rows, styles.dim))


def _kernel_text(triage: dict[str, Any]) -> str:
    """The failing kernel and where on the device: core, pc, the scheduler's code."""
    device = triage.get("device") or {}
    parts = []
    cores = device.get("core_ids") or []
    if cores:
        parts.append(f"{device.get('core_type') or 'core'} {','.join(map(str, cores))}")
    if device.get("current_pc"):
        parts.append(f"pc {device['current_pc']}")
    if device.get("ret_code"):
        parts.append(f"retCode {device['ret_code']} {device.get('ret_text') or ''}".rstrip())
    kernel = str(triage.get("kernel") or "")
    where = " · ".join(parts)
    if kernel and where:
        return f"{kernel} ({where})"
    return kernel or where


def _addresses_text(findings: list[dict[str, Any]], styles: Styles) -> Text | None:
    """The offending findings, each on its line; the others counted in one dim line."""
    if not findings:
        return None
    text = Text()
    offending = [f for f in findings if f.get("offending")]
    for finding in offending:
        if text:
            text.append("\n")
        text.append(f"✗ {finding.get('text') or finding.get('address')}", style=styles.bad)
    others: dict[str, int] = {}
    for finding in findings:
        if not finding.get("offending"):
            status = str(finding.get("status") or "unknown")
            others[status] = others.get(status, 0) + 1
    if others:
        words = {"inside": "inside the job's blocks", "unknown": "in the runtime's own memory"}
        counted = ", ".join(f"{n} {words.get(s, s)}" for s, n in sorted(others.items()))
        lead = "others: " if offending else "none offending: "
        text.append(("\n" if text else "") + lead + counted, style=styles.dim)
    return text


def _nan_inf_text(found: dict[str, Any]) -> str:
    counts = ", ".join(
        f"{found[key]} {label}"
        for key, label in (("nan", "NaN"), ("pos_inf", "+Inf"), ("neg_inf", "-Inf"))
        if found.get(key)
    )
    shape = fmt.shape(found.get("shape") or []).replace(" ", "")
    total = found.get("elements")
    of = f" of {total}" if total else ""
    return f"input[{found.get('index')}] {found.get('dtype', '')} {shape}: {counts}{of}"


def launched_part(
    exception: ev.AclException, triage: dict[str, Any] | None, styles: Styles
) -> RenderableType:
    """LAUNCHED AT: the job's line that launched the failing work (at once), then the
    launches on that stream around it (once the triage is in) and its stack."""
    title = Text("LAUNCHED AT  ", style=styles.bold)
    site = exception.launch_site
    launch = (triage or {}).get("launch") or {}
    if not site:
        title.append("not known (no asynchronous launch on this stream was seen)", style=styles.dim)
        return title
    title.append(site, style=styles.bad)
    if launch.get("api"):
        title.append(f"  ({launch['api']})", style=styles.dim)
    recent = launch.get("recent") or []
    if not recent:
        return title
    failing = launch.get("index", -1)
    wide = Table.grid(padding=(0, 2))
    wide.add_column(no_wrap=True)
    wide.add_column(no_wrap=True)
    wide.add_column(no_wrap=True)
    wide.add_column(no_wrap=True, justify="right")
    narrow: list[tuple[str, RenderableType]] = []
    for index, item in enumerate(recent):
        mark, style = ("▶", styles.bad) if index == failing else (" ", Style())
        ago = f"{fmt.duration_ns(int(item.get('ago_ns') or 0))} before"
        wide.add_row(Text(f" {mark}", style=style), Text(str(item.get("site", "")), style=style),
                     Text(str(item.get("api", "")), style=styles.dim), Text(ago, style=styles.dim))  # fmt: skip
        value = Text(str(item.get("site", "")), style=style)
        value.append(f"\n{item.get('api', '')} · {ago}", style=styles.dim)
        narrow.append((mark, value))
    parts: list[RenderableType] = [title, Fitted(wide, key_values(narrow, styles.dim))]
    stack = _job_frames([str(frame) for frame in launch.get("stack") or []])
    if stack:
        parts.append(key_values([("stack", Text("\n".join(stack)))], styles.dim))
    return Group(*parts)


def _job_frames(stack: list[str]) -> list[str]:
    """The launch's stack, innermost first, down to the job's module level (the
    frames of whatever started the script, aclmon's own among them, go)."""
    frames = []
    for frame in stack:
        frames.append(frame)
        if frame.endswith(" <module>"):
            break
    if len(frames) > MAX_STACK:
        frames = [*frames[: MAX_STACK - 1], f"… {len(frames) - MAX_STACK + 1} more"]
    return frames
