// Lists the functions of packages/*/src longer than N lines (default 80), longest first: issue 44 keeps them short.
// Usage: node scripts/long-functions.mjs [N]

import { execSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import ts from 'typescript';

const files = execSync("git ls-files 'packages/*/src/**/*.ts'", { encoding: 'utf8' })
  .split('\n')
  .filter((f) => f && !f.endsWith('.test.ts'));
const min = Number(process.argv[2] ?? 80);
const out = [];
for (const f of files) {
  let text;
  try {
    text = readFileSync(f, 'utf8');
  } catch {
    continue;
  }
  const sf = ts.createSourceFile(f, text, ts.ScriptTarget.Latest, true);
  const visit = (n) => {
    if (ts.isFunctionLike(n) && n.body) {
      const a = sf.getLineAndCharacterOfPosition(n.getStart()).line,
        b = sf.getLineAndCharacterOfPosition(n.end).line;
      const lines = b - a + 1;
      if (lines > min) {
        const name =
          n.name?.getText?.() ??
          (n.parent && ts.isVariableDeclaration(n.parent)
            ? n.parent.name.getText()
            : n.parent && ts.isPropertyAssignment(n.parent)
              ? n.parent.name.getText()
              : '<anon>');
        out.push([lines, `${f}:${a + 1}`, name]);
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
}
out.sort((x, y) => y[0] - x[0]);
for (const o of out) console.log(o.join('\t'));
