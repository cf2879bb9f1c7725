import { newPgClient } from "./_pg.ts";
import { sampleError } from "./errors.ts";

/** How long to wait for the server before giving up (the caller is starting up). */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * A setting's value as the running server has it (`current_setting(name)`), e.g. the
 * `log_line_prefix` its log lines were written with. Any role may read it. Errors are
 * EstimateErrors that never carry the connection string.
 */
export async function showSetting(connection: string | undefined, name: string): Promise<string> {
  const client = await newPgClient({
    ...(connection ? { connectionString: connection } : {}),
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  client.on("error", () => {});
  try {
    await client.connect();
  } catch (error) {
    throw sampleError("connect", error);
  }
  try {
    const result = await client.query<{ value: string }>("SELECT current_setting($1) AS value", [name]);
    return result.rows[0]!.value;
  } catch (error) {
    throw sampleError("sample", error);
  } finally {
    await client.end().catch(() => {});
  }
}
