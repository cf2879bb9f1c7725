/** The cost flags of estimate and recommend, checked: each bad value names its flag. */
import { type CostOptions, DEFAULT_PRICE_PER_GB } from "@auditpipe/estimate";
import { decimal, flagValue, wholeNumber } from "../flags.ts";

type FlagValue = string | boolean | string[] | undefined;

export const COST_FLAGS = {
  "price-per-gb": { type: "string" },
  "storage-price": { type: "string" },
  "compression-ratio": { type: "string" },
  "retention-days": { type: "string" },
} as const;

function positive(command: string, flag: string, value: FlagValue, unit: string, min: number): number {
  return flagValue(command, flag, value, decimal({ min, unit }));
}

export function priceOf(value: FlagValue, command: string): number {
  if (value === undefined) return DEFAULT_PRICE_PER_GB;
  return positive(command, "price-per-gb", value, "dollars per GB", 0);
}

/** --price-per-gb, --storage-price, --compression-ratio and --retention-days as CostOptions. */
export function costOptions(values: Record<string, FlagValue>, command: string): CostOptions {
  const out: CostOptions = { pricePerGb: priceOf(values["price-per-gb"], command) };
  if (values["storage-price"] !== undefined)
    out.storagePricePerGbMonth = positive(
      command,
      "storage-price",
      values["storage-price"],
      "dollars per GB-month",
      0,
    );
  if (values["compression-ratio"] !== undefined)
    out.compressionRatio = positive(
      command,
      "compression-ratio",
      values["compression-ratio"],
      "raw bytes per archived byte",
      1,
    );
  if (values["retention-days"] !== undefined)
    out.retentionDays = flagValue(
      command,
      "retention-days",
      values["retention-days"],
      wholeNumber({ min: 1, unit: "days" }),
    );
  return out;
}
