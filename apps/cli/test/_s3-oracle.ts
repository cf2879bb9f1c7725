import { decompress } from "@auditpipe/ship";
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";

/** Every shipped record in a bucket's data objects (manifests excluded), as session_id:session_line keys. */
export async function s3Keys(
  client: S3Client,
  bucket: string,
  prefix = "",
): Promise<{ keys: string[]; objects: number }> {
  const keys: string[] = [];
  let objects = 0;
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
    );
    for (const o of page.Contents ?? []) {
      if (!o.Key || o.Key.includes("/_manifests/") || !/\.ndjson\.(gz|zst)$/.test(o.Key)) continue;
      objects++;
      const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: o.Key }));
      const body = Buffer.from(await got.Body!.transformToByteArray());
      const text = (await decompress(body, o.Key.endsWith(".zst") ? "zstd" : "gzip")).toString("utf8");
      for (const line of text.split("\n")) {
        if (!line) continue;
        const r = JSON.parse(line) as { session_id: string; session_line: number };
        keys.push(`${r.session_id}:${r.session_line}`);
      }
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return { keys, objects };
}
