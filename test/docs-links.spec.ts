// The documentation's links between its own pages resolve: in README.md,
// bench/README.md and docs/*.md, every relative link names a file that exists
// and, with a #fragment, a heading of that file (GitHub's anchors: lower case,
// punctuation dropped, spaces as hyphens). Links inside code blocks are not
// links; absolute URLs are not checked.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

const PAGES = [
  "README.md",
  path.join("bench", "README.md"),
  ...fs
    .readdirSync(path.join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => path.join("docs", f)),
];

/** The page's lines outside fenced code blocks. */
function prose(file: string): string[] {
  let fenced = false;
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => {
      if (line.startsWith("```")) fenced = !fenced;
      return !fenced && !line.startsWith("```");
    });
}

/** The anchors GitHub gives a page's headings. */
function anchors(file: string): Set<string> {
  return new Set(
    prose(file).flatMap((line) => {
      const heading = /^#{1,6}\s+(.*)$/.exec(line)?.[1];
      return heading === undefined
        ? []
        : [
            heading
              .trim()
              .toLowerCase()
              .replace(/[^\p{L}\p{N}\- _]/gu, "")
              .replace(/ /g, "-"),
          ];
    }),
  );
}

/** Every link of the page that does not leave the repository: [text](target). */
function links(file: string): string[] {
  return prose(file).flatMap((line) => [...line.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((target) => !/^[a-z]+:/i.test(target)));
}

describe("the documentation's links", () => {
  it("name files that exist, and headings those files have", () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      const file = path.join(ROOT, page);
      for (const target of links(file)) {
        const [name, fragment] = target.split("#") as [string, string | undefined];
        const dest = name === "" ? file : path.resolve(path.dirname(file), name);
        if (!fs.existsSync(dest)) broken.push(`${page}: ${target} (no such file)`);
        else if (fragment !== undefined && dest.endsWith(".md") && !anchors(dest).has(fragment)) broken.push(`${page}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("reach every page under docs/ from the README", () => {
    const fromReadme = new Set(links(path.join(ROOT, "README.md")).map((target) => target.split("#")[0]));
    const unreached = PAGES.filter((page) => page.startsWith("docs") && !fromReadme.has(page.split(path.sep).join("/")));
    expect(unreached).toEqual([]);
  });
});
