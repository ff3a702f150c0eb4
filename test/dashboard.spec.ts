// deploy/grafana/runledger.json is built on the metrics runledger serves: every
// runledger_ series its queries name is a family at GET /metrics.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { ROOT, startTestApp } from "../testkit/app.ts";
import { parsePrometheus } from "../testkit/prometheus.ts";
import type { App } from "../src/app.ts";

let fake: FakeOllama;
let app: App;
beforeAll(async () => {
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

describe("the Grafana dashboard", () => {
  it("uses only metrics /metrics serves, with the labels they carry", async () => {
    const dashboard = JSON.parse(fs.readFileSync(path.join(ROOT, "deploy", "grafana", "runledger.json"), "utf8"));
    const exprs: string[] = dashboard.panels.flatMap((p: any) => p.targets.map((t: any) => t.expr));
    expect(exprs.length).toBeGreaterThan(0);
    const families = parsePrometheus(await (await fetch(`${app.url}/metrics`)).text());
    const used = new Set(exprs.flatMap((e) => [...e.matchAll(/\b(runledger_[a-z_]+)/g)].map((m) => m[1]!)));
    for (const name of used) {
      const family = name.replace(/_(bucket|sum|count)$/, "");
      expect(families.has(family) || families.has(name), `${name} at /metrics`).toBe(true);
    }
    // The panels the issue asks for: runs by status, time to first token, tokens/s, queue depth, subscribers, errors by code.
    for (const name of [
      "runledger_runs_finished_total",
      "runledger_time_to_first_token_seconds_bucket",
      "runledger_tokens_total",
      "runledger_runs_queued",
      "runledger_subscriptions",
    ])
      expect(used).toContain(name);
    // Label names the queries group or filter by are labels of the metric they read.
    const labels: Record<string, string[]> = {
      runledger_runs_finished_total: ["agent", "kind", "status", "error_code"],
      runledger_subscriptions: ["transport"],
      runledger_tokens_total: ["agent"],
    };
    for (const expr of exprs) {
      for (const [metric, allowed] of Object.entries(labels)) {
        if (!expr.includes(metric)) continue;
        const named = [...expr.matchAll(/by \(([^)]*)\)/g)].flatMap((m) => m[1]!.split(",").map((l) => l.trim())).filter((l) => l !== "le");
        const filtered = [...expr.matchAll(/\{([^}]*)\}/g)].flatMap((m) => [...m[1]!.matchAll(/(\w+)\s*[!=~]/g)].map((l) => l[1]!));
        for (const label of [...named, ...filtered]) expect(allowed, `${label} in ${expr}`).toContain(label);
      }
    }
  });
});
