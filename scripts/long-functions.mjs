// Lists the functions of apps/*/src and packages/*/src (not tests, not dist/) longer than a
// threshold, longest first: function declarations, methods, accessors, constructors, function
// expressions and arrows, counted from their first line to their last (the measurement issue 25's
// review took; rerun it before and after splitting one).
// Usage: node scripts/long-functions.mjs [min-lines, default 100]
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

const root = new URL("..", import.meta.url).pathname;
const min = Number(process.argv[2] ?? 100);

function* sources(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (/\.(ts|mts|tsx)$/.test(name) && !/\.d\.ts$|\.test\.ts$/.test(name)) yield path;
  }
}

function nameOf(node) {
  if (node.name) return node.name.getText();
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText();
  return "<anonymous>";
}

const found = [];
for (const top of ["apps", "packages"]) {
  for (const pkg of readdirSync(join(root, top))) {
    const src = join(root, top, pkg, "src");
    if (!statSync(join(root, top, pkg)).isDirectory()) continue;
    try {
      statSync(src);
    } catch {
      continue;
    }
    for (const file of sources(src)) {
      const text = readFileSync(file, "utf8");
      const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
      const visit = (node) => {
        if (ts.isFunctionLike(node) && "body" in node && node.body) {
          const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
          const last = sf.getLineAndCharacterOfPosition(node.end).line;
          const lines = last - first + 1;
          if (lines >= min)
            found.push({ lines, name: nameOf(node), file: relative(root, file), line: first + 1 });
        }
        ts.forEachChild(node, visit);
      };
      visit(sf);
    }
  }
}
found.sort((a, b) => b.lines - a.lines);
for (const f of found) console.log(`${String(f.lines).padStart(4)}  ${f.name}  ${f.file}:${f.line}`);
