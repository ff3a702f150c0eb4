// The thread's history: one row per message, at the checkpoint that added
// it. Fork makes a new conversation whose thread is this one's up to there
// (this one stays as it is), and the view opens it.
import { useEffect, useState } from "react";
import { useRunledgerClient, type ConversationView } from "@runledger/react";
import { listCheckpoints, type Checkpoint } from "./api.ts";

export interface HistoryProps {
  conversationId: string;
  /** Changes when a run starts or ends: the list is read again. */
  runKey: string;
  fork: ConversationView["fork"];
}

export function History({ conversationId, runKey, fork }: HistoryProps) {
  const client = useRunledgerClient();
  const [rows, setRows] = useState<Checkpoint[] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    listCheckpoints(client, conversationId).then(
      (checkpoints) => {
        if (!current) return;
        const firsts = new Map<string, Checkpoint>();
        for (const c of checkpoints) if (c.lastMessage && !firsts.has(c.lastMessage.id)) firsts.set(c.lastMessage.id, c);
        setRows([...firsts.values()]);
      },
      (error: Error) => current && setProblem(error.message),
    );
    return () => {
      current = false;
    };
  }, [client, conversationId, runKey]);

  const forkAt = async (checkpointId: string) => {
    setProblem(null);
    const forked = await fork(checkpointId);
    if (!forked.ok) setProblem(`Could not fork: ${forked.error.message}`);
  };

  return (
    <section className="history" aria-label="History">
      {rows === null && !problem && <p className="muted">Reading the history…</p>}
      {problem && <p className="notice">{problem}</p>}
      <ol>
        {rows?.map((row) => (
          <li key={row.id} data-checkpoint={row.id} data-last-message={row.lastMessage!.id}>
            <span className="step">step {row.step}</span>
            <span className="last">
              {row.lastMessage!.role.toLowerCase()}: {row.lastMessage!.content || "(tool call)"}
            </span>
            <button type="button" onClick={() => void forkAt(row.id)}>
              Fork here
            </button>
          </li>
        ))}
      </ol>
    </section>
  );
}
