/** Synthetic runs for the pure tests: normal draws from the seeded generator. */
import { seededRng } from "@auditpipe/overhead";

/** Normal draws by Box–Muller from the seeded generator: synthetic runs with a known spread. */
export function normals(n: number, mean: number, sd: number, seed: number): number[] {
  const rng = seededRng(seed);
  return Array.from({ length: n }, () => {
    const u = Math.max(rng(), 1e-12);
    return mean + sd * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng());
  });
}
