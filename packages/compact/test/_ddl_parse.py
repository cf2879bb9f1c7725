"""Parses DDL with sqlglot in a given dialect (Athena, Trino) and prints what it understood: the
table, its columns with their types, and the partition columns. Fails on anything sqlglot cannot
parse. argv: DIALECT; the DDL on stdin."""
import json
import sys

import sqlglot
from sqlglot import exp

dialect = sys.argv[1]
statements = sqlglot.parse(sys.stdin.read(), read=dialect, error_level=sqlglot.ErrorLevel.RAISE)
create = next(s for s in statements if isinstance(s, exp.Create))
schema = create.this
columns = {c.name: c.args["kind"].sql(dialect=dialect) for c in schema.expressions if isinstance(c, exp.ColumnDef)}
partitioned = []
for prop in create.args.get("properties").expressions if create.args.get("properties") else []:
    if isinstance(prop, exp.PartitionedByProperty):
        target = prop.this
        for e in target.expressions if hasattr(target, "expressions") else []:
            partitioned.append(e.name if hasattr(e, "name") else e.sql(dialect=dialect))
    elif isinstance(prop, exp.Property) and prop.name.lower() == "partitioned_by":
        partitioned += [e.name for e in prop.args["value"].expressions]
print(json.dumps({"table": schema.this.sql(dialect=dialect), "columns": columns, "partitioned": partitioned}))
