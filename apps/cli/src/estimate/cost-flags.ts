/** The cost flags of estimate and recommend, checked: each bad value names its flag. */
import { type CostOptions, DEFAULT_PRICE_PER_GB } from "@auditpipe/estimate";
import { UsageError } from "../usage-error.ts";

type FlagValue = string | boolean | string[] | undefined;

export const COST_FLAGS = {
  "price-per-gb": { type: "string" },
  "storage-price": { type: "string" },
  "compression-ratio": { type: "string" },
  "retention-days": { type: "string" },
} as const;

function positive(command: string, flag: string, value: FlagValue, what: string, min: number): number {
  const n = Number(value);
  if (value === true || !Number.isFinite(n) || n < min)
    throw new UsageError(`${command}: --${flag} must be ${what} (got ${JSON.stringify(value)})`);
  return n;
}

export function priceOf(value: FlagValue, command: string): number {
  if (value === undefined) return DEFAULT_PRICE_PER_GB;
  return positive(command, "price-per-gb", value, "a number of dollars, 0 or more", 0);
}

/** --price-per-gb, --storage-price, --compression-ratio and --retention-days as CostOptions. */
export function costOptions(values: Record<string, FlagValue>, command: string): CostOptions {
  const out: CostOptions = { pricePerGb: priceOf(values["price-per-gb"], command) };
  if (values["storage-price"] !== undefined)
    out.storagePricePerGbMonth = positive(
      command,
      "storage-price",
      values["storage-price"],
      "a number of dollars per GB-month, 0 or more",
      0,
    );
  if (values["compression-ratio"] !== undefined)
    out.compressionRatio = positive(
      command,
      "compression-ratio",
      values["compression-ratio"],
      "raw bytes per archived byte, 1 or more",
      1,
    );
  if (values["retention-days"] !== undefined) {
    const days = positive(
      command,
      "retention-days",
      values["retention-days"],
      "a whole number of days, 1 or more",
      1,
    );
    if (!Number.isInteger(days))
      throw new UsageError(
        `${command}: --retention-days must be a whole number of days, 1 or more (got ${JSON.stringify(values["retention-days"])})`,
      );
    out.retentionDays = days;
  }
  return out;
}
