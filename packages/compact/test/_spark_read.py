"""Reads the Parquet archive with a real Apache Spark (local mode) through S3A from MinIO, with the
Spark SQL DDL docs/archive.md ships (passed in), in ONE Spark session for every assertion.

argv: DDL_FILE LOCATION; env: S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, SPARK_JARS
(comma-separated). Prints one JSON object with what the test compares.
"""
import json
import os
import sys

from pyspark.sql import SparkSession

ddl_file, location = sys.argv[1], sys.argv[2]
spark = (
    SparkSession.builder.master("local[2]")
    .appName("auditpipe-archive-test")
    .config("spark.ui.enabled", "false")
    .config("spark.driver.memory", "1g")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.jars", os.environ["SPARK_JARS"])
    .config("spark.hadoop.fs.s3a.endpoint", os.environ["S3_ENDPOINT"])
    .config("spark.hadoop.fs.s3a.endpoint.region", "us-east-1")
    .config("spark.hadoop.fs.s3a.path.style.access", "true")
    .config("spark.hadoop.fs.s3a.connection.ssl.enabled", "false")
    .config("spark.hadoop.fs.s3a.aws.credentials.provider", "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider")
    .config("spark.hadoop.fs.s3a.access.key", os.environ["AWS_ACCESS_KEY_ID"])
    .config("spark.hadoop.fs.s3a.secret.key", os.environ["AWS_SECRET_ACCESS_KEY"])
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")

ddl = open(ddl_file, encoding="utf8").read().replace("s3a://audit-archive/pg/prod/parquet/", location)
for statement in [s.strip() for s in ddl.split(";") if s.strip()]:
    spark.sql(statement)

table = spark.table("pgaudit_archive")
out = {
    "schema": {f.name: f.dataType.simpleString() for f in table.schema.fields},
    "rows": table.count(),
    "distinct": table.select("host", "session_id", "session_line").distinct().count(),
    "byPartition": sorted(
        [r["dt"], r["hour"], r["host"], r["n"]]
        for r in spark.sql("SELECT dt, hour, host, count(*) AS n FROM pgaudit_archive GROUP BY dt, hour, host").collect()
    ),
    "byClass": {
        r["class"]: r["n"] for r in spark.sql("SELECT class, count(*) AS n FROM pgaudit_archive GROUP BY class").collect()
    },
    "firstTs": spark.sql("SELECT min(ts) AS t FROM pgaudit_archive").collect()[0]["t"].isoformat(),
    "withParameters": spark.sql("SELECT count(*) AS n FROM pgaudit_archive WHERE size(parameter) > 0").collect()[0]["n"],
    "sourceOffsets": spark.sql("SELECT count(DISTINCT source.file, source.offset) AS n FROM pgaudit_archive").collect()[0]["n"],
}
# A partition-pruned question: Spark's plan names the partition filter, and reads one host-hour.
pruned = spark.sql("SELECT count(*) AS n FROM pgaudit_archive WHERE dt = '2026-11-23' AND hour = '10'")
out["prunedRows"] = pruned.collect()[0]["n"]
plan = pruned._jdf.queryExecution().executedPlan().toString()
out["prunedPlanHasPartitionFilter"] = "PartitionFilters: [isnotnull(dt" in plan and "(hour" in plan
print(json.dumps(out))
spark.stop()
