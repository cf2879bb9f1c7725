"""Validates OCSF events (one JSON object per line on stdin) against the Datastore Activity class
as the ocsf-emitter package bundles the OCSF schema (offline: nothing is fetched).

Three checks per event: the class's generated model validates it (required attributes, types,
enums), ocsf_emitter.validate() checks the OCSF invariants (class/category identity, type_uid,
sibling names, the schema version), and every attribute present is one the schema defines (the
models allow extra keys, so a misspelt attribute would otherwise pass). `unmapped` holds anything.

Prints {"validated": N, "version": "...", "errors": [...]} and exits 1 on any error.
"""
import json
import sys
import typing

import pydantic
from ocsf_emitter import _models as models
from ocsf_emitter import defaults, validate

EVENT = models.DatastoreActivity
FREE_FORM = {"unmapped"}


def model_of(annotation):
    """The pydantic model inside an annotation (Optional[X], list[X], X), if any."""
    origin = typing.get_origin(annotation)
    if origin is None:
        return annotation if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel) else None
    for arg in typing.get_args(annotation):
        found = model_of(arg)
        if found is not None:
            return found
    return None


def unknown_keys(cls, value, path):
    problems = []
    if isinstance(value, list):
        for i, item in enumerate(value):
            problems += unknown_keys(cls, item, f"{path}[{i}]")
        return problems
    if not isinstance(value, dict):
        return problems
    fields = {(f.alias or name): f for name, f in cls.model_fields.items()}
    for key, item in value.items():
        if key not in fields:
            problems.append(f"{path}.{key}: not an attribute of {cls.__name__}")
            continue
        if key in FREE_FORM:
            continue
        inner = model_of(fields[key].annotation)
        if inner is not None and inner.__name__ != "Object":
            problems += unknown_keys(inner, item, f"{path}.{key}")
    return problems


def main():
    errors = []
    count = 0
    for n, line in enumerate(sys.stdin, 1):
        if not line.strip():
            continue
        count += 1
        event = json.loads(line)
        try:
            validate(EVENT.model_validate(event))
        except Exception as exc:  # noqa: BLE001 - every failure is reported with its line
            detail = getattr(exc, "field_errors", None) or str(exc)
            errors.append({"line": n, "error": str(detail)[:2000]})
            continue
        for problem in unknown_keys(EVENT, event, "event"):
            errors.append({"line": n, "error": problem})
    print(json.dumps({"validated": count, "version": defaults.OCSF_SCHEMA_VERSION, "errors": errors[:50]}))
    sys.exit(1 if errors else 0)


main()
