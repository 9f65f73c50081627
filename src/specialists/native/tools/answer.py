"""`final_answer`: the structured-output tool of a native job whose answer has a JSON schema.

A workflow child with `schema` on the native runtime gets this one extra tool and every model
request of its run says a tool call is required (ModelRequest.tool_choice "required"), so the
model can read and run what it needs and must end by calling final_answer. The arguments are
validated against the schema here: a mismatch is an error result the model reads and fixes in
the same run; a valid call ends the run (the loop takes `answer_text` as its final text).
An object schema is the tool's parameters as it is; any other schema is wrapped as
{"answer": <schema>}, since tool parameters must be an object.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from specialists.native.tools.base import Tool, ToolContext, ToolOutput

ANSWER_TOOL = "final_answer"
DESCRIPTION = (
    "Give your final answer here, once, when you are done: its arguments are your answer and "
    "must satisfy the schema. A mismatch comes back as an error to fix; a valid call ends "
    "your run. Do not answer in plain text."
)


def wraps(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") != "object"


def answer_tool(schema: Mapping[str, Any]) -> Tool:
    parameters: Mapping[str, Any] = (
        {"type": "object", "properties": {"answer": dict(schema)}, "required": ["answer"]}
        if wraps(schema)
        else dict(schema)
    )
    from jsonschema import validators

    validator = validators.validator_for(schema)(schema)

    def run(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        value = answer_value(schema, args)
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
        if errors:
            e = errors[0]
            at = "/".join(str(p) for p in e.path) or "the top"
            return ToolOutput(
                f"not accepted: {e.message} (at {at}); call {ANSWER_TOOL} again", True
            )
        return ToolOutput("accepted: your answer is recorded; your run ends here")

    return Tool(ANSWER_TOOL, DESCRIPTION, parameters, run)


def answer_value(schema: Mapping[str, Any], args: Mapping[str, Any]) -> Any:
    return args.get("answer") if wraps(schema) else dict(args)


def answer_text(schema: Mapping[str, Any], args: Mapping[str, Any]) -> str:
    return json.dumps(answer_value(schema, args), ensure_ascii=False)
