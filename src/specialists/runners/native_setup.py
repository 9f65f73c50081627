"""What a native job's loop is built from: its tools, their context, its session.

The tools are the tier's built-in ones plus the agent tool table (owner `job-<id>`, its
prompt section added to the system prompt, R-G1), unless the runner option `table_tools` is
false. The wave-2 settings ([bash], [overflow] in config.toml) give the bash guard and its
default timeout (R-B1..R-B5; the option `bash_timeout_s` wins) and the result guard's limits
(R-O1..R-O3), which bash output passes too.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specialists.base.errors import ConfigError
from specialists.catalog.config import Config
from specialists.events.owners import check_owner, owner_dir
from specialists.events.spill import SpillLimits
from specialists.native.agent_tools import Caller
from specialists.native.session import Session
from specialists.native.tool_settings import Settings, settings_from_config
from specialists.native.tools import Tool, ToolContext, ToolFailure, tools_for_permission
from specialists.native.tools.table import table_tools
from specialists.runners.base import LaunchSpec
from specialists.store.paths import STATE_DIR_NAME, find_project_root, state_dir

SESSION_FILE = "session.jsonl"


@dataclass(frozen=True)
class JobTools:
    tools: dict[str, Tool]
    context: ToolContext
    system_prompt: str
    limits: SpillLimits  # the result guard's, for tool results and long user messages
    answer_schema: Mapping[str, Any] | None = None  # the final_answer tool's (tools/answer.py)


def job_tools(
    spec: LaunchSpec,
    settings: Settings,
    env: Mapping[str, str],
    *,
    notify: Callable[[str], None],
    wall: Callable[[], float],
) -> JobTools:
    try:
        tools = tools_for_permission(spec.permission)
    except ToolFailure as exc:
        raise ConfigError(str(exc)) from exc
    if spec.tools is not None:  # the definition's allowlist narrows the tier's set
        tools = {name: tool for name, tool in tools.items() if name in spec.tools}
    state_root = state_dir(project_root(spec))
    owner = check_owner(f"job-{spec.job_id}")
    system_prompt = spec.system_prompt
    if spec.options.get("table_tools", True) is not False:
        from specialists.native.agent_table import offered, prompt_guidance

        table = offered(thread=spec.thread, tier=spec.permission)
        tools.update(table_tools(table))
        guidance = prompt_guidance(table) if table and not spec.bare else ""
        system_prompt = "\n\n".join(p for p in (system_prompt, guidance) if p)
    timeout_s = float(spec.options.get("bash_timeout_s", settings.bash.default_timeout_sec))
    if "bash" in tools:  # the description names the default the model gets (R-B4)
        bash = tools["bash"]
        tools["bash"] = dataclasses.replace(
            bash, description=f"{bash.description} Default timeout: {timeout_s:g} s."
        )
    answer_schema = spec.options.get("answer_schema")
    if isinstance(answer_schema, Mapping):  # a workflow child's schema: structured output
        from specialists.native.tools.answer import ANSWER_TOOL, answer_tool

        tools[ANSWER_TOOL] = answer_tool(answer_schema)
    else:
        answer_schema = None
    o = settings.overflow
    limits = SpillLimits(o.max_chars, o.head_chars, o.tail_chars)
    context = ToolContext(
        cwd=spec.cwd,
        spill_dir=spec.job_dir / "spill",
        permission=spec.permission,
        bash_timeout_s=timeout_s,
        env=env,
        result_limits=limits,
        bash_guard=settings.bash.guard,  # type: ignore[arg-type]  # checked by the settings
        bash_sleep_limit_s=settings.bash.sleep_limit_sec,
        caller=Caller(
            state_root, owner, spec.cwd, job_id=spec.job_id, settings=settings, clock=wall
        ),
        read_roots=(owner_dir(state_root, owner) / "spill",),  # spilled event bodies
        notify=notify,
    )
    return JobTools(tools, context, system_prompt, limits, answer_schema)


def load_settings(config: Config, notify: Callable[[str], None]) -> Settings:
    """The wave-2 settings; a mistake in them is a notice and the defaults, never a job that
    cannot start (as in the pi front's sidecar)."""
    try:
        return settings_from_config(config.raw)
    except ConfigError as exc:
        notify(f"{exc.one_line()}; using the default settings")
        return Settings()


def open_session(spec: LaunchSpec) -> Session:
    path = spec.job_dir / SESSION_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    if spec.resume_session and not path.exists():
        source = Path(spec.resume_session)
        if not source.is_file():
            raise ConfigError(f"session to resume not found: {source}")
        shutil.copyfile(source, path)
    meta = {"job_id": spec.job_id, "cwd": str(spec.cwd), "model": spec.model}
    return Session.open_or_create(path, meta)


def project_root(spec: LaunchSpec) -> Path:
    """<root>/.specialists/jobs/<id> -> <root>; otherwise search upward from cwd."""
    jobs = spec.job_dir.parent
    if jobs.name == "jobs" and jobs.parent.name == STATE_DIR_NAME:
        return jobs.parent.parent
    return find_project_root(spec.cwd)
