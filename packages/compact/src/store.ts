/**
 * An archive to read and compact: a local directory (the local-dir sink's) or an S3 prefix (the S3
 * sink's). Keys are relative to the archive's root. The AWS SDK is imported when an S3 archive is
 * first used, so a local archive never loads it.
 */
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, readdir, readFile, rm, stat } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import { pipeline } from "node:stream/promises";
import { writeFileDurably } from "@auditpipe/ship";
import type { S3Client } from "@aws-sdk/client-s3";
import { CompactError, CompactErrorCode } from "./errors.ts";

export interface StoredObject {
  key: string;
  size: number;
  /** The store's entity tag (S3), for telling a changed object from one read before; none on disk. */
  etag?: string;
}

export interface ArchiveStore {
  /** `dir` or `s3://bucket/prefix`, for messages. */
  readonly url: string;
  /** Every object whose key starts with `under` (relative; "" for all), in key order. */
  list(under: string): AsyncIterable<StoredObject>;
  /** The object's bytes; null when it does not exist. */
  read(key: string): Promise<Buffer | null>;
  /** Copies the object to a local file. */
  download(key: string, path: string): Promise<void>;
  /** Stores a local file under `key`, whole or not at all. */
  upload(key: string, path: string, contentType: string): Promise<void>;
  /** Stores `body` under `key`, whole or not at all. */
  write(key: string, body: Buffer, contentType: string): Promise<void>;
  delete(key: string): Promise<void>;
  /** The local path of `key` when the archive is a directory (engines read it in place), else null. */
  localPath(key: string): string | null;
  close(): void;
}

/** S3 connection settings; credentials always come from the AWS SDK's default chain. */
export interface S3Settings {
  endpoint?: string;
  region?: string;
  forcePathStyle?: boolean;
}

/** A local directory archive. */
export class LocalArchiveStore implements ArchiveStore {
  readonly url: string;
  private readonly root: string;

  constructor(root: string) {
    this.root = root;
    this.url = root;
  }

  async *list(under: string): AsyncIterable<StoredObject> {
    const start = join(this.root, under);
    const base = under.endsWith("/") || under === "" ? start : dirname(start);
    const found: StoredObject[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries: import("node:fs").Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
        throw error;
      }
      for (const e of entries) {
        const path = join(dir, e.name);
        if (e.isDirectory()) await walk(path);
        else if (e.isFile()) {
          const key = relative(this.root, path).split(sep).join("/");
          if (key.startsWith(under) && !e.name.includes(".tmp-"))
            found.push({ key, size: (await stat(path)).size });
        }
      }
    };
    await walk(base);
    found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    yield* found;
  }

  async read(key: string): Promise<Buffer | null> {
    try {
      return await readFile(join(this.root, key));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw error;
    }
  }

  async download(key: string, path: string): Promise<void> {
    await pipeline(createReadStream(join(this.root, key)), createWriteStream(path));
  }

  async upload(key: string, path: string): Promise<void> {
    await this.write(key, await readFile(path));
  }

  async write(key: string, body: Buffer): Promise<void> {
    const path = join(this.root, key);
    await mkdir(dirname(path), { recursive: true });
    await writeFileDurably(path, body);
  }

  async delete(key: string): Promise<void> {
    await rm(join(this.root, key), { force: true });
  }

  localPath(key: string): string {
    return join(this.root, key);
  }

  close(): void {}
}

/** An S3 (or S3-compatible) archive under `s3://bucket/prefix`. */
export class S3ArchiveStore implements ArchiveStore {
  readonly url: string;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly settings: S3Settings;
  private client: Promise<{ client: S3Client; sdk: typeof import("@aws-sdk/client-s3") }> | undefined;

  constructor(bucket: string, prefix: string, settings: S3Settings = {}) {
    this.bucket = bucket;
    this.prefix = prefix.replace(/^\/+|\/+$/g, "");
    this.settings = settings;
    this.url = `s3://${bucket}/${this.prefix}`;
  }

  private sdk(): Promise<{ client: S3Client; sdk: typeof import("@aws-sdk/client-s3") }> {
    this.client ??= import("@aws-sdk/client-s3").then((sdk) => {
      const region =
        this.settings.region ??
        process.env.AWS_REGION ??
        process.env.AWS_DEFAULT_REGION ??
        (this.settings.endpoint ? "us-east-1" : undefined);
      const client = new sdk.S3Client({
        ...(this.settings.endpoint ? { endpoint: this.settings.endpoint } : {}),
        ...(region ? { region } : {}),
        forcePathStyle: this.settings.forcePathStyle === true,
      });
      return { client, sdk };
    });
    return this.client;
  }

  private full(key: string): string {
    return this.prefix === "" ? key : `${this.prefix}/${key}`;
  }

  async *list(under: string): AsyncIterable<StoredObject> {
    const { client, sdk } = await this.sdk();
    const strip = this.prefix === "" ? 0 : this.prefix.length + 1;
    let token: string | undefined;
    do {
      const page = await this.call("list", under, () =>
        client.send(
          new sdk.ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: this.full(under),
            ...(token ? { ContinuationToken: token } : {}),
          }),
        ),
      );
      for (const o of page.Contents ?? [])
        if (o.Key)
          yield { key: o.Key.slice(strip), size: Number(o.Size ?? 0), ...(o.ETag ? { etag: o.ETag } : {}) };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async read(key: string): Promise<Buffer | null> {
    const { client, sdk } = await this.sdk();
    try {
      const out = await client.send(new sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.full(key) }));
      return Buffer.from(
        await (out.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
      );
    } catch (error) {
      if ((error as { name?: string }).name === "NoSuchKey") return null;
      throw this.failure("read", key, error);
    }
  }

  async download(key: string, path: string): Promise<void> {
    const { client, sdk } = await this.sdk();
    const out = await this.call("read", key, () =>
      client.send(new sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.full(key) })),
    );
    await pipeline(out.Body as NodeJS.ReadableStream, createWriteStream(path));
  }

  async upload(key: string, path: string, contentType: string): Promise<void> {
    await this.write(key, await readFile(path), contentType);
  }

  async write(key: string, body: Buffer, contentType: string): Promise<void> {
    const { client, sdk } = await this.sdk();
    const { createHash } = await import("node:crypto");
    await this.call("write", key, () =>
      client.send(
        new sdk.PutObjectCommand({
          Bucket: this.bucket,
          Key: this.full(key),
          Body: body,
          ContentType: contentType,
          ChecksumSHA256: createHash("sha256").update(body).digest("base64"),
        }),
      ),
    );
  }

  async delete(key: string): Promise<void> {
    const { client, sdk } = await this.sdk();
    await this.call("delete", key, () =>
      client.send(new sdk.DeleteObjectCommand({ Bucket: this.bucket, Key: this.full(key) })),
    );
  }

  localPath(): null {
    return null;
  }

  close(): void {
    void this.client?.then(({ client }) => client.destroy());
  }

  private async call<T>(what: string, key: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      throw this.failure(what, key, error);
    }
  }

  private failure(what: string, key: string, error: unknown): CompactError {
    const e = error as { name?: string; message?: string };
    return new CompactError(
      CompactErrorCode.STORE,
      `cannot ${what} ${this.url}/${key}: ${e.name ?? "Error"}: ${e.message ?? String(error)}`,
    );
  }
}

/**
 * The store for an archive URL: `s3://bucket/prefix`, or a local directory (which must exist).
 */
export async function openArchive(url: string, s3: S3Settings = {}): Promise<ArchiveStore> {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(url);
  if (m?.[1]) return new S3ArchiveStore(m[1], m[2] ?? "", s3);
  if (url.startsWith("s3:"))
    throw new CompactError(
      CompactErrorCode.ARCHIVE,
      `the archive must be s3://bucket/prefix (got ${JSON.stringify(url)})`,
    );
  let info: import("node:fs").Stats;
  try {
    info = await stat(url);
  } catch {
    throw new CompactError(CompactErrorCode.ARCHIVE, `the archive ${url} does not exist`);
  }
  if (!info.isDirectory())
    throw new CompactError(CompactErrorCode.ARCHIVE, `the archive ${url} is not a directory`);
  return new LocalArchiveStore(url);
}
