import fc from "fast-check";

// Property tests draw fresh inputs on every local run, so they keep finding new cases; in CI they
// draw from a fixed seed, so whether a commit lands does not depend on the draw. FC_SEED replays
// any run (fast-check prints the seed of a failure).
const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : process.env.CI ? 20_261_123 : undefined;
if (seed !== undefined) fc.configureGlobal({ seed });
