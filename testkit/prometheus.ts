// A parser of the Prometheus text exposition format (version 0.0.4), strict
// enough to catch what a scraper would refuse: every sample belongs to a family
// declared by # TYPE, names and labels are well formed, values are numbers,
// and no series appears twice.
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: "counter" | "gauge" | "histogram" | "summary" | "untyped";
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)/y;

function labelsOf(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const at = LABEL.lastIndex;
    const m = LABEL.exec(text);
    if (!m || LABEL.lastIndex === at) throw new Error(`bad labels in ${JSON.stringify(line)}`);
    if (m[1]! in labels) throw new Error(`label ${m[1]} twice in ${JSON.stringify(line)}`);
    labels[m[1]!] = m[2]!.replace(/\\n/g, "\n").replace(/\\"/g, '"').replace(/\\\\/g, "\\");
  }
  return labels;
}

function familyOf(sample: string, families: Map<string, Family>): Family | undefined {
  for (const suffix of ["", "_bucket", "_sum", "_count"]) {
    if (!sample.endsWith(suffix)) continue;
    const family = families.get(sample.slice(0, sample.length - suffix.length));
    if (family && (suffix === "" || family.type === "histogram" || family.type === "summary")) return family;
  }
  return undefined;
}

/** A value as Prometheus reads it (Go's ParseFloat: Inf and NaN in any case; prom-client writes "Nan"). */
function floatOf(raw: string): number | undefined {
  if (/^nan$/i.test(raw)) return NaN;
  const inf = /^([+-]?)inf(inity)?$/i.exec(raw);
  if (inf) return inf[1] === "-" ? -Infinity : Infinity;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(raw)) return undefined;
  return Number(raw);
}

export function parsePrometheus(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const seen = new Set<string>();
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    if (line.startsWith("#")) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) continue; // a comment
      const [, kind, name, rest] = m;
      if (!NAME.test(name!)) throw new Error(`bad metric name ${name}`);
      const family = families.get(name!) ?? { name: name!, type: "untyped", help: "", samples: [] };
      if (kind === "TYPE") {
        if (!["counter", "gauge", "histogram", "summary", "untyped"].includes(rest!)) throw new Error(`bad type in ${line}`);
        family.type = rest as Family["type"];
      } else family.help = rest!;
      families.set(name!, family);
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`bad sample line ${JSON.stringify(line)}`);
    const [, name, labelText, raw] = m;
    const value = floatOf(raw!);
    if (value === undefined) throw new Error(`bad value in ${JSON.stringify(line)}`);
    const family = familyOf(name!, families);
    if (!family) throw new Error(`sample ${name} has no # TYPE before it`);
    const labels = labelText ? labelsOf(labelText, line) : {};
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (seen.has(key)) throw new Error(`series ${key} appears twice`);
    seen.add(key);
    family.samples.push({ name: name!, labels, value });
  }
  return families;
}

/** The value of one series (sample name and exactly these labels); undefined when absent. */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  const family = familyOf(name, families);
  const want = JSON.stringify(Object.entries(labels).sort());
  return family?.samples.find((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === want)?.value;
}
