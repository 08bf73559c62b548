"""What the core reads of a target's description, typed: the keys a backend's description
(``Target.description``) may hold that dfsbench itself acts on. A backend adds what else it
likes (pools, volume options, settings): those are shown, never read.

- ``system``, ``version``, ``client``: what it is, and how the client reaches it (the header,
  the comparability checks);
- ``fs_type``: the file system type the mount has in ``/proc/mounts`` ('fuse.ceph-fuse'),
  checked before every cell (a FUSE client that died leaves an empty directory: writing
  there would measure the local disk);
- ``mounted_by``: 'dfsbench' (it mounted the client, and may remount it) or 'the user';
- ``replicas``: copies kept of each byte written; ``storage_nodes``: over how many nodes
  they are spread (the ceilings, the room a cell needs: ``harness.api.tables.Placement``).

A description a backend hands over is :meth:`Described.checked` as it is attached: a key of
the wrong type is the backend's error, named. One read back from a store (an older
version's, an import) is :meth:`Described.read`: a key of the wrong type is not known.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.errors import DfsbenchError
from harness.system.files import printable

__all__ = ["CORE_KEYS", "Described"]


class Described(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, allow_inf_nan=False)

    system: str | None = Field(None, description="the system it is ('ceph')")
    version: str | None = Field(None, description="its version")
    client: str | None = Field(None, description="how the client reaches it ('ceph-fuse')")
    fs_type: str | None = Field(None, description="the mount's type in /proc/mounts, checked before each cell")
    mounted_by: Literal["dfsbench", "the user"] | None = Field(None, description="who mounted the client")
    replicas: int | float | None = Field(None, gt=0, description="copies kept of each byte written")
    storage_nodes: int | None = Field(None, ge=0, description="the nodes the copies are spread over")

    @classmethod
    def checked(cls, description: Mapping[str, Any], backend: str) -> Described:
        """The description a backend hands over, its core keys of the right types, or an
        error naming the backend and the key."""
        try:
            return cls.model_validate(dict(description))
        except ValidationError as exc:
            first = exc.errors()[0]
            key = str(first["loc"][0]) if first["loc"] else "?"
            raise DfsbenchError(f"backend '{printable(backend, 80)}' describes its target with {key} = "
                                f"{printable(repr(description.get(key)), 60)}, which is not {KINDS[key]}",
                                hint="a backend plugin's bug: its description's core keys are typed "
                                     "(harness.api.described)") from None

    @classmethod
    def read(cls, stored: Mapping[str, Any]) -> Described:
        """A stored description, what of its core keys is of the right type (the rest: not known)."""
        kept = {}
        for key in CORE_KEYS:
            if key in stored:
                try:
                    cls.model_validate({key: stored[key]})
                except ValidationError:
                    continue
                kept[key] = stored[key]
        return cls.model_validate(kept)


CORE_KEYS = tuple(Described.model_fields)
KINDS = {"system": "a text", "version": "a text", "client": "a text", "fs_type": "a text",
         "mounted_by": "'dfsbench' or 'the user'", "replicas": "a finite number above 0",
         "storage_nodes": "a whole number of at least 0", "?": "what it should be"}
