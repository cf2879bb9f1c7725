import type pg from "pg";

/**
 * A node-postgres client. The driver is imported here, when a client is made, not with the
 * package: the sidecar imports this package for its advisor and never loads a driver it does not use.
 */
export async function newPgClient(config: pg.ClientConfig): Promise<pg.Client> {
  const { default: driver } = await import("pg");
  return new driver.Client(config);
}
