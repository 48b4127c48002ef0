"""The MCP server of ``a1x-tui mcp``, on the official ``mcp`` SDK (``MCPServer``), over stdio.

Tools answer with the JSON the matching command prints (``tools``, ``follows``). Arguments are
checked before a tool runs, against the tool's own signature with unknown names refused: a bad
argument is a JSON-RPC ``invalid params`` error of one line (``stop: confirm: must be true ...``).
What only the files can tell (no such path, not a run, the TOML changed since the preview) is a tool
error (``isError``) of one line. No traceback reaches the client or stderr. No tool starts a run.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from a1x_tui import __version__
from a1x_tui.commands.mcp import tools
from a1x_tui.commands.mcp.follows import BadCursor, Follows

INSTRUCTIONS = """\
a1x-tui diagnoses NVIDIA Cosmos-RL GRPO training runs (Alpamayo RL post-training) from their logs.
check(path): the health report of a run's log folder (status ok/warning/critical/unknown, outcome,
findings with evidence and TOML fixes). findings_since(path, cursor): poll a live run; pass back the
cursor of the last answer to get only what was raised, updated or resolved since. lint(toml): check a
recipe TOML before launch. fix_preview(toml, finding) shows the diff of a fix and its hash;
fix_apply(toml, finding, hash) writes exactly that diff (backup, atomic). status(run_dir) and
stop(run_dir, confirm=true) act on a run supervised by a1x-tui. Runs are never started from here."""

Path_ = Annotated[str, Field(min_length=1, pattern=r"^[^\x00]+$", description="a path on this machine")]
OptPath = Annotated[str | None, Field(default=None, min_length=1, pattern=r"^[^\x00]+$")]
Count = Annotated[int | None, Field(default=None, ge=1, le=65536)]
Compute = Literal["local", "cluster"] | None
Values = Annotated[dict[str, Any] | None, Field(default=None, description="dotted TOML key -> value the fix needs")]

_RO = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The tool's body with every failure as one line: ``Refused`` and anything unforeseen a tool error,
    a bad argument an ``invalid params`` error (the SDK logs no traceback for either)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (MCPError, ToolError):
            raise
        except BadCursor as exc:
            raise MCPError(INVALID_PARAMS, f"{fn.__name__}: {exc}") from None
        except tools.Refused as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:  # one line, never a traceback: what the command would say on stderr
            raise ToolError(f"{type(exc).__name__}: {_one_line(exc)}") from None

    call.__name__ = fn.__name__
    call.__doc__ = fn.__doc__
    call.__signature__ = inspect.signature(fn, eval_str=True)  # type: ignore[attr-defined]
    call.__annotations__ = typing.get_type_hints(fn, include_extras=True)
    return call


def _arguments_model(name: str, fn: Callable[..., Any]) -> type[BaseModel]:
    """The tool's signature as a strict model that refuses unknown names."""
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], default)
    return create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid", strict=True), **fields)


def _problem(tool: str, exc: ValidationError, known: list[str]) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "arguments"
    if err["type"] == "extra_forbidden":
        return f"{tool}: {where}: unknown argument ({tool} takes: {', '.join(known)})"
    if err["type"] == "missing":
        return f"{tool}: {where}: required"
    return f"{tool}: {where}: {err['msg']}"


class StrictArguments(ServerMiddleware[Any]):
    """``tools/call`` arguments checked against the tool's model before the SDK sees them."""

    def __init__(self, models: dict[str, type[BaseModel]]) -> None:
        self.models = models

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call" and isinstance(ctx.params, dict):
            name, arguments = ctx.params.get("name"), ctx.params.get("arguments") or {}
            model = self.models.get(name) if isinstance(name, str) else None
            if model is not None and isinstance(name, str):
                if not isinstance(arguments, dict):
                    raise MCPError(INVALID_PARAMS, f"{name}: arguments must be an object")
                try:
                    model.model_validate(arguments)
                except ValidationError as exc:
                    raise MCPError(INVALID_PARAMS, _problem(name, exc, list(model.model_fields))) from None
        return await call_next(ctx)


def build_server(follows: Follows | None = None) -> MCPServer[Any]:
    follows = follows or Follows()

    def check(path: Path_, config: OptPath = None, run: OptPath = None) -> CallToolResult:
        """The health report of a Cosmos-RL run (its --log-dir, one logs_<ts>, a log file, a SLURM job folder or
        a run directory of a1x-tui): `a1x-tui --check PATH --format json`. config: the run's TOML (adds the
        config lint and current values to fixes). run: which logs_<ts> (default: the latest). A path that
        holds no run answers with its status-unknown report, flagged as an error."""
        report = tools.check(path, config, run)
        text = json.dumps(report, indent=2)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=report,
                              is_error=report.get("status") == "unknown")

    def findings_since(
        path: Path_,
        cursor: Annotated[str | None, Field(default=None, max_length=200)] = None,
        config: OptPath = None,
        run: OptPath = None,
        wait: Annotated[float, Field(ge=0, le=60)] = 0.0,
    ) -> dict[str, Any]:
        """Poll a live run: the findings raised, updated and resolved (and outcome changes) since `cursor`,
        as the JSON lines of `a1x-tui watch --format json`. No cursor: the state now (the open findings as
        finding_raised). Pass back the answer's `cursor` next time; `reset: true` means the server could not
        continue that cursor and sends the state now. wait: seconds to wait for something new (max 60)."""
        return follows.since(path, cursor=cursor, config=config, run=run, wait=wait)

    def lint(toml: Path_, gpus: Count = None, nodes: Count = None, compute: Compute = None) -> dict[str, Any]:
        """Check a recipe TOML before launch: `a1x-tui lint TOML --format json` (misspelled keys Cosmos-RL
        ignores, GPU arithmetic, GRPO becoming SFT...). gpus/nodes/compute: what the TOML cannot say."""
        return tools.lint(toml, gpus, nodes, compute)

    def fix_preview(toml: Path_, finding: Annotated[str, Field(min_length=1, max_length=100)], run: OptPath = None,
                    values: Values = None, gpus: Count = None, nodes: Count = None,
                    compute: Compute = None) -> dict[str, Any]:
        """The unified diff of the TOML change that cures `finding` (`a1x-tui fix TOML --finding ID
        --format json`), nothing written, and its `hash` for fix_apply. run: the run's log folder, for a
        finding of the logs (its --check report with this TOML is read). values: what only you know."""
        return tools.fix_preview(toml, finding, run, values, gpus, nodes, compute)

    def fix_apply(toml: Path_, finding: Annotated[str, Field(min_length=1, max_length=100)],
                  hash: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$", description="from fix_preview")],
                  run: OptPath = None, values: Values = None, gpus: Count = None, nodes: Count = None,
                  compute: Compute = None) -> dict[str, Any]:
        """Write the fix fix_preview showed (same arguments, plus its `hash`): a backup beside the file, an
        atomic write, the lint after. Refused when the file or the diff changed since the preview."""
        return tools.fix_apply(toml, finding, hash, run, values, gpus, nodes, compute)

    def status(run_dir: Path_) -> dict[str, Any]:
        """The state of a run supervised by a1x-tui (`a1x-tui status RUN --json`): stages, processes,
        progress; `live` when its supervisor answered, else state.json as last written and a `note`."""
        return tools.status(run_dir)

    def stop(run_dir: Path_, confirm: bool = False) -> dict[str, Any]:
        """Stop a supervised run and every process it started (`a1x-tui stop RUN`): SIGTERM, then SIGKILL
        after the grace period. Needs confirm: true."""
        if confirm is not True:
            raise MCPError(INVALID_PARAMS, "stop: confirm: must be true (stopping ends the run's processes)")
        return tools.stop(run_dir)

    table: list[tuple[Callable[..., Any], ToolAnnotations]] = [
        (check, _RO),
        (findings_since, _RO),
        (lint, _RO),
        (fix_preview, _RO),
        (fix_apply, ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                    open_world_hint=False)),
        (status, _RO),
        (stop, ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)),
    ]
    models = {fn.__name__: _arguments_model(fn.__name__, fn) for fn, _ in table}
    server: MCPServer[Any] = MCPServer(
        "a1x-tui",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="ERROR",
        middleware=[StrictArguments(models)],
    )
    for fn, hints in table:
        server.add_tool(_guarded(fn), name=fn.__name__, description=inspect.cleandoc(fn.__doc__ or ""),
                        annotations=hints)
    return server


def serve_stdio() -> int:
    """Serve until the client closes stdin."""
    follows = Follows()
    try:
        build_server(follows).run("stdio")
    finally:
        follows.close()
    return 0
