"""Add▾ → Install a bundle (.mcpb): a bundle file's entry previewed, its inputs asked for, then
installed (``servers.install {bundle}``), as ``meworkctl servers install ./x.mcpb`` does."""

import os
from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Footer, Input, Static

from mework_ui.dialogs import PreviewDialog, read_inputs
from mework_ui.link import describe

__all__ = ["BundleDialog", "absolute", "bundle_report"]


def absolute(path: str) -> str:
    """The daemon takes an absolute path: ``~`` and a relative one are the UI's to resolve."""
    return os.path.abspath(os.path.expanduser(path))


def bundle_report(result: dict[str, Any]) -> str:
    """What installing the bundle did, or (a preview) would do, and what it still needs."""
    about = result.get("bundle") or {}
    head = f"{about.get('name', '?')} {about.get('version', '')}".strip()
    server = result.get("server") or {}
    command = " ".join([str(server.get("command") or ""), *map(str, server.get("args") or [])])
    lines = [
        f"✓ installed as {result.get('name')}" if result.get("installed") else f"bundle: {head}",
        f"entry {result.get('name')}: {command.strip()}",
    ]
    for need in result.get("needsInputs") or []:
        secret = " (secret: give a ${VAR} reference)" if need.get("secret") else ""
        about_input = f": {need['description']}" if need.get("description") else ""
        lines.append(f"needs {need.get('id')}{about_input}{secret}")
    lines += [f"! {warning}" for warning in result.get("warnings") or []]
    return "\n".join(lines)


class BundleDialog(PreviewDialog):
    """A path, the inputs as ``NAME=value`` pairs, Preview (a dry run: nothing unpacked) and
    Install; the daemon's answer or refusal below."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "apply", "Install", priority=True),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("Install a bundle (.mcpb): the file's path")
            yield Input(placeholder="~/Downloads/server.mcpb", id="path")
            with Horizontal(classes="row"):
                yield Static("Inputs:", classes="label")
                yield Input(placeholder="NAME=value …", password=True, id="inputs")
            with Horizontal(classes="row"):
                yield Button("Preview ^e", id="preview")
                yield Button("Install ^s", id="apply", variant="primary")
            yield Static("", id="report")
        yield Footer(compact=True, show_command_palette=False)

    @work(exclusive=True, group="bundle")
    async def send(self, dry_run: bool) -> None:  # type: ignore[override]
        report = self.query_one("#report", Static)
        path = self.query_one("#path", Input).value.strip()
        if not path:
            report.update("✘ the bundle file's path, please")
            return
        params: dict[str, Any] = {"bundle": absolute(path)}
        if (inputs := read_inputs(self, report)) is None:
            return
        if inputs:
            params["inputs"] = inputs
        if dry_run:
            params["dryRun"] = True
        try:
            result = await self.mework.link.call("servers.install", params)
        except Exception as exc:  # noqa: BLE001 - every refusal is shown in the dialog
            report.update(f"✘ {describe(exc)}")
            return
        report.update(bundle_report(result))
        if result.get("installed"):
            self.notify(f"installed {result.get('name')}")
