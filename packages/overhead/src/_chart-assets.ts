/**
 * Reads the chart library's browser builds so the HTML report can inline them (the page opens
 * offline and makes no request). Read at run time from the installed dependency: bundled into
 * the `auditpipe` CLI, `import.meta.url` is the CLI's own chunk, so the files come from the CLI's
 * node_modules, and apps/cli lists these libraries in its runtime `dependencies` for that reason.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

export interface ChartAssets {
  /** Library sources in load order: Chart.js, then its error-bar controllers (which need `Chart`). */
  scripts: string[];
}

/**
 * Each library's minified UMD build, beside its CommonJS entry (neither package's `exports` map
 * names the UMD file, so it is found from the entry the map does name).
 */
const LIBRARIES = [
  { name: "chart.js", file: "chart.umd.min.js" },
  { name: "chartjs-chart-error-bars", file: "index.umd.min.js" },
] as const;

/** `</script` or `<!--` inside an inlined script would end it early or change how HTML parses it. */
const UNSAFE_IN_SCRIPT = /<\/script|<!--/i;

export function loadChartAssets(): ChartAssets {
  const require = createRequire(import.meta.url);
  return {
    scripts: LIBRARIES.map(({ name, file }) => {
      let path: string;
      try {
        path = join(dirname(require.resolve(name)), file);
      } catch (error) {
        throw new Error(
          `the HTML report needs the ${name} package, which is not installed beside auditpipe (${(error as Error).message})`,
        );
      }
      // A source map comment would make a browser's developer tools look for a file that is not there.
      const source = readFileSync(path, "utf8").replace(/\n\/\/# sourceMappingURL=\S+\s*$/, "\n");
      if (UNSAFE_IN_SCRIPT.test(source)) throw new Error(`${path} cannot be inlined in a <script> element`);
      return source;
    }),
  };
}
