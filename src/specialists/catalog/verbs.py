"""The `show` op (base/ops.py): `specialists show NAME` is generated from it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specialists.base.ops import Noun, Op

if TYPE_CHECKING:
    from specialists.native.agent_tools import Caller


def show(caller: Caller, name: str, /) -> dict[str, Any]:
    """One specialist's resolved definition (after scope precedence), and what it shadows.

    Args:
        name: specialist name, as printed by 'specialists list'
    """
    from specialists.catalog import load_catalog, specialist_to_dict

    catalog = load_catalog(caller.root)
    spec = catalog.get(name)  # NotFound: one line with suggestions, exit 2
    data = specialist_to_dict(spec)
    data["shadowed"] = [str(s.source) for s in catalog.shadowed_by(spec.name)]
    return data


SHOW = Noun("show", "show one specialist's resolved definition", (Op(show, reads=True, tool=None),))
