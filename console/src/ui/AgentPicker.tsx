// The agent a new conversation runs (it keeps it for good): each agent the
// server offers, with its kind, description and tools (where each comes from,
// and whether its calls wait for a person's approval).
import type { Agent } from "../api/types.ts";

export function AgentPicker({ agents, selected, onSelect }: { agents: Agent[]; selected: string; onSelect: (name: string) => void }) {
  return (
    <fieldset class="agent-picker">
      <legend>Agent</legend>
      <p class="hint">The conversation keeps the agent it starts with.</p>
      <div class="agent-options">
        {agents.map((agent) => (
          <label key={agent.name} class={`agent-option${agent.name === selected ? " selected" : ""}`}>
            <input
              type="radio"
              name="agent"
              value={agent.name}
              checked={agent.name === selected}
              onChange={() => onSelect(agent.name)}
              aria-labelledby={`agent-${agent.name}`}
              aria-describedby={`agent-${agent.name}-details`}
            />
            <span class="agent-body">
              <span class="agent-title">
                <strong id={`agent-${agent.name}`}>{agent.name}</strong> <span class="kind">{agent.kind === "GRAPH" ? "custom graph" : "chat agent"}</span>{" "}
                <span class="hint">model {agent.model}</span>
              </span>
              <span id={`agent-${agent.name}-details`} class="agent-details">
                {agent.description && <span class="agent-description">{agent.description}</span>}
                <AgentTools agent={agent} />
              </span>
            </span>
          </label>
        ))}
      </div>
    </fieldset>
  );
}

function AgentTools({ agent }: { agent: Agent }) {
  if (agent.kind === "GRAPH") return <span class="hint">Its graph's tools are its own; none are listed.</span>;
  if (agent.tools.length === 0) return <span class="hint">No tools.</span>;
  return (
    <ul class="agent-tools" aria-label={`Tools of ${agent.name}`}>
      {agent.tools.map((tool) => (
        <li key={tool.name} title={tool.description}>
          <code>{tool.name}</code> <span class="hint">{tool.source}</span>
          {tool.requiresApproval && <span class="needs-approval"> needs approval</span>}
        </li>
      ))}
    </ul>
  );
}

/** The conversation's agent, as its header shows it. */
export function AgentTag({ name, agent }: { name: string; agent: Agent | null }) {
  if (!agent) {
    return (
      <span class="agent-tag" title="Runs of this conversation are refused until the agent is configured again">
        agent <strong>{name}</strong> <span class="error-text">(no longer configured)</span>
      </span>
    );
  }
  const approvals = agent.tools.filter((t) => t.requiresApproval).map((t) => t.name);
  return (
    <span class="agent-tag" title={agent.description || undefined}>
      agent <strong>{agent.name}</strong> <span class="kind">{agent.kind === "GRAPH" ? "custom graph" : "chat"}</span>
      {approvals.length > 0 && <span class="hint"> · asks before {approvals.join(", ")}</span>}
    </span>
  );
}
