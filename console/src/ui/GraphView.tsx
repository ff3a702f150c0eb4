// The conversation's agent drawn as LangGraph describes it (Agent.graph):
// nodes in layers from __start__, conditional edges dashed, a subgraph's nodes
// boxed together. While a run streams, the node it runs is lit; after a run
// that stopped short (waiting, failed, cancelled, interrupted), the node it
// stopped at, which is where a resume starts.
import { useEffect, useState } from "preact/hooks";
import type { Api } from "../api/client.ts";
import { AGENT_GRAPH } from "../api/state-documents.ts";
import type { ConsoleAgentGraphQuery } from "../api/generated.ts";
import type { RunView } from "../state/conversation-view.ts";
import { isActive } from "../state/run-live.ts";

type Graph = ConsoleAgentGraphQuery["agents"][number]["graph"];

/** Which nodes to light, and why. */
export interface GraphFocus {
  nodes: string[];
  mode: "running" | "stopped";
}

const STOPPED = new Set(["WAITING", "FAILED", "CANCELLED", "INTERRUPTED"]);

/**
 * The running run's node: the node of the tokens it is streaming, else the
 * nodes its latest checkpoint has next. Without a running run, the latest
 * run's pending nodes (the thread's next) when it stopped short.
 */
export function graphFocus(runs: readonly RunView[], next: readonly string[]): GraphFocus | null {
  const active = runs.find((r) => isActive(r.status));
  if (active) {
    const last = active.live?.items.at(-1);
    if (last?.kind === "text" && last.node) return { nodes: [last.node], mode: "running" };
    const checkpoint = active.live?.checkpoints.at(-1);
    if (checkpoint?.next.length) return { nodes: [...checkpoint.next], mode: "running" };
    return { nodes: ["__start__"], mode: "running" };
  }
  const latest = runs.at(-1);
  if (latest && STOPPED.has(latest.status) && next.length) return { nodes: [...next], mode: "stopped" };
  return null;
}

// The agents' graphs never change while the server runs: read once per connection.
const graphs = new Map<number, Promise<ConsoleAgentGraphQuery["agents"]>>();

function useGraph(api: Api, agentName: string | null): { graph: Graph | null; error: string | null } {
  const [state, setState] = useState<{ graph: Graph | null; error: string | null }>({ graph: null, error: null });
  useEffect(() => {
    if (!agentName) return;
    let read = graphs.get(api.id);
    if (!read) {
      read = api.query(AGENT_GRAPH, {}).then((data) => data.agents);
      read.catch(() => graphs.delete(api.id));
      graphs.set(api.id, read);
    }
    let live = true;
    read.then(
      (agents) => live && setState({ graph: agents.find((a) => a.name === agentName)?.graph ?? null, error: null }),
      (e: Error) => live && setState({ graph: null, error: e.message }),
    );
    return () => {
      live = false;
    };
  }, [api, agentName]);
  return state;
}

interface Placed {
  id: string;
  label: string;
  /** The subgraph it belongs to ("research" of "research:model"), or null. */
  group: string | null;
  x: number;
  y: number;
  width: number;
}

const LAYER_HEIGHT = 58;
const NODE_HEIGHT = 26;
const WIDTH = 340;
const TOP = 20;

/** Layers by the shortest path from __start__ (__end__ last); each layer's nodes spread across the width. */
function layout(graph: Graph): { nodes: Map<string, Placed>; height: number } {
  const ids = graph.nodes.map((n) => n.id);
  const layer = new Map<string, number>([["__start__", 0]]);
  const queue = ["__start__"];
  while (queue.length) {
    const at = queue.shift()!;
    for (const edge of graph.edges) {
      if (edge.source !== at || layer.has(edge.target) || edge.target === "__end__") continue;
      layer.set(edge.target, layer.get(at)! + 1);
      queue.push(edge.target);
    }
  }
  const deepest = Math.max(0, ...layer.values());
  for (const id of ids) if (!layer.has(id)) layer.set(id, id === "__end__" ? deepest + 1 : Math.max(1, deepest));
  const layers = new Map<number, string[]>();
  for (const id of ids) layers.set(layer.get(id)!, [...(layers.get(layer.get(id)!) ?? []), id]);
  const nodes = new Map<string, Placed>();
  for (const [depth, members] of layers) {
    members.forEach((id, i) => {
      const colon = id.lastIndexOf(":");
      const label = colon >= 0 ? id.slice(colon + 1) : id;
      nodes.set(id, {
        id,
        label,
        group: colon >= 0 ? id.slice(0, colon) : null,
        x: (WIDTH * (i + 1)) / (members.length + 1),
        y: TOP + depth * LAYER_HEIGHT,
        width: Math.max(64, label.length * 7.5 + 20),
      });
    });
  }
  return { nodes, height: TOP + (Math.max(...layers.keys()) + 1) * LAYER_HEIGHT };
}

/** A node's id for a name the stream gives (a subgraph's tokens name its inner node). */
function resolve(graph: Graph, name: string): string | null {
  if (graph.nodes.some((n) => n.id === name)) return name;
  return graph.nodes.find((n) => n.id.endsWith(`:${name}`))?.id ?? null;
}

export function GraphView({ api, agentName, focus }: { api: Api; agentName: string | null; focus: GraphFocus | null }) {
  const { graph, error } = useGraph(api, agentName);
  if (!agentName) return null;
  return (
    <section class="panel graph-panel" aria-labelledby="graph-heading">
      <h2 id="graph-heading">
        Graph <span class="count">{agentName}</span>
      </h2>
      {error && <p class="notice">Could not read the graph: {error}</p>}
      {!graph && !error && <p class="hint">Reading the graph…</p>}
      {graph && <GraphDrawing graph={graph} agentName={agentName} focus={focus} />}
    </section>
  );
}

function GraphDrawing({ graph, agentName, focus }: { graph: Graph; agentName: string; focus: GraphFocus | null }) {
  const { nodes, height } = layout(graph);
  const groups = new Map<string, Placed[]>();
  for (const node of nodes.values()) if (node.group) groups.set(node.group, [...(groups.get(node.group) ?? []), node]);
  const lit = new Set((focus?.nodes ?? []).map((name) => resolve(graph, name)).filter((id): id is string => id !== null));
  // A subgraph node is named as a whole (the parent's next) when it is not known which of its nodes: its box is lit.
  const litGroups = new Set((focus?.nodes ?? []).filter((name) => groups.has(name) && resolve(graph, name) === null));
  const named = [...lit, ...litGroups];
  const words = focus && named.length ? `${focus.mode === "running" ? "Running" : "Stopped at"}: ${named.join(", ")}` : "No run is at a node now.";
  return (
    <figure class="graph" aria-label={`Graph of agent ${agentName}`}>
      <svg viewBox={`0 0 ${WIDTH} ${height}`} width="100%" role="img" aria-label={`${graph.nodes.length} nodes, ${graph.edges.length} edges. ${words}`}>
        <defs>
          <marker id="graph-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" class="graph-arrowhead" />
          </marker>
        </defs>
        {[...groups].map(([name, members]) => {
          const left = Math.min(...members.map((m) => m.x - m.width / 2)) - 8;
          const right = Math.max(...members.map((m) => m.x + m.width / 2)) + 8;
          const top = Math.min(...members.map((m) => m.y)) - 16;
          const bottom = Math.max(...members.map((m) => m.y)) + NODE_HEIGHT + 6;
          return (
            <g
              key={`group-${name}`}
              class={`graph-group${litGroups.has(name) ? (focus!.mode === "running" ? " active" : " stopped") : ""}`}
              data-subgraph={name}
            >
              <rect x={left} y={top} width={right - left} height={bottom - top} rx="8" />
              <text x={left + 6} y={top + 11}>
                {name}
              </text>
            </g>
          );
        })}
        {graph.edges.map((edge, i) => {
          const from = nodes.get(edge.source);
          const to = nodes.get(edge.target);
          if (!from || !to) return null;
          const cls = `graph-edge${edge.conditional ? " conditional" : ""}`;
          if (to.y > from.y) {
            return <line key={i} class={cls} x1={from.x} y1={from.y + NODE_HEIGHT} x2={to.x} y2={to.y} marker-end="url(#graph-arrow)" />;
          }
          // Back to an earlier layer (a loop): around the right side of both nodes.
          const side = Math.max(from.x + from.width / 2, to.x + to.width / 2) + 26;
          const path = `M ${from.x + from.width / 2} ${from.y + NODE_HEIGHT / 2} C ${side} ${from.y + NODE_HEIGHT / 2}, ${side} ${to.y + NODE_HEIGHT / 2}, ${to.x + to.width / 2} ${to.y + NODE_HEIGHT / 2}`;
          return <path key={i} class={cls} d={path} fill="none" marker-end="url(#graph-arrow)" />;
        })}
        {[...nodes.values()].map((node) => {
          const state = lit.has(node.id) ? (focus!.mode === "running" ? " active" : " stopped") : "";
          const terminal = node.id === "__start__" || node.id === "__end__" ? " terminal" : "";
          return (
            <g key={node.id} class={`graph-node${state}${terminal}`} data-node={node.id}>
              <rect x={node.x - node.width / 2} y={node.y} width={node.width} height={NODE_HEIGHT} rx={terminal ? 13 : 5} />
              <text x={node.x} y={node.y + NODE_HEIGHT / 2 + 4} text-anchor="middle">
                {node.label}
              </text>
            </g>
          );
        })}
      </svg>
      <figcaption aria-live="polite" aria-label="Graph position" class={focus?.mode === "stopped" ? "graph-stopped" : undefined}>
        {words}
      </figcaption>
    </figure>
  );
}
